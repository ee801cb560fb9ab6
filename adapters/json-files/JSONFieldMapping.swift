import Foundation
import GatewayCore

/// JSON documents ↔ record fields.
///
/// Strings, integers and doubles map to themselves (a double is always written with a `.`);
/// `true`/`false` become 1/0 and are written back as booleans where the document had a boolean;
/// `null` is a null field (a key the document lacks is an unknown one); arrays are lists; an object that is not tagged is kept as its JSON
/// text and written back as an object where the document had one. Tagged objects:
/// `{"$date": "ISO-8601"}` (or milliseconds), `{"$bytes": base64}`, `{"$ref": "name"}` (with an
/// action: `{"$ref": {"recordName", "action"}}`), `{"$double": "NaN"}` (or `"Infinity"`,
/// `"-Infinity"`: doubles no JSON number holds), `{"$location": {"latitude", "longitude", …}}`
/// (with every part the location has) and `{"$file": "relative/path"}`, whose file's bytes are the
/// field (sent as an asset) and are written back to that file.
struct JSONFieldMapping {
    /// The adapter's folder; `$file` paths are relative to it and may not leave it.
    let directory: URL
    let zoneID: ZoneID

    struct Problem: Error {
        var message: String
    }

    func fields(of object: [String: JSONValue]) throws(Problem) -> [String: FieldValue] {
        var fields: [String: FieldValue] = [:]
        for (name, value) in object {
            if let field = try field(value, name: name) { fields[name] = field }
        }
        return fields
    }

    /// The fields of a document as a record: a key set to `null` is a null field (a save clears
    /// it in the cloud); a key the document lacks is unknown and left as the cloud holds it.
    func namedFields(of object: [String: JSONValue]) throws(Problem) -> [String: FieldValue?] {
        var fields: [String: FieldValue?] = [:]
        for (name, value) in object { fields[name] = .some(try field(value, name: name)) }
        return fields
    }

    private func field(_ value: JSONValue, name: String) throws(Problem) -> FieldValue? {
        switch value {
        case .null: return nil
        case .bool(let flag): return .int64(flag ? 1 : 0)
        case .integer(let number): return .int64(number)
        case .double(let number): return .double(number)
        case .string(let text): return .string(text)
        case .array(let values):
            var list: [FieldValue] = []
            for element in values {
                guard let converted = try field(element, name: name) else {
                    throw Problem(message: "field \(name) holds a list with null, which records cannot store")
                }
                list.append(converted)
            }
            return .list(list)
        case .object(let members):
            if members.count == 1, let (tag, content) = members.first, tag.hasPrefix("$") {
                return try tagged(tag, content, name: name)
            }
            return .string(JSONValue.object(members).prettyText().trimmingCharacters(in: .newlines))
        }
    }

    private func tagged(_ tag: String, _ content: JSONValue, name: String) throws(Problem) -> FieldValue {
        switch (tag, content) {
        case ("$date", .string(let text)):
            guard let timestamp = ISO8601Timestamps.parse(text) else { throw Problem(message: "field \(name): $date is not ISO-8601") }
            return .timestamp(timestamp)
        case ("$date", .integer(let milliseconds)):
            return .timestamp(Timestamp(millisecondsSince1970: milliseconds))
        case ("$double", .string(let text)):
            // What no JSON number holds: NaN and the infinities a double field may have.
            guard ["NaN", "Infinity", "-Infinity"].contains(text), let number = Double(text) else {
                throw Problem(message: "field \(name): $double holds NaN, Infinity or -Infinity (other numbers are plain)")
            }
            return .double(number)
        case ("$bytes", .string(let text)):
            guard let data = Data(base64Encoded: text) else { throw Problem(message: "field \(name): $bytes is not base64") }
            return .bytes(data)
        case ("$ref", .string(let target)):
            return .reference(Reference(recordID: RecordID(recordName: target, zoneID: zoneID)))
        case ("$ref", .object(let members)):
            // A reference with an action: {"recordName": …, "action": "DELETE_SELF" or "VALIDATE"}.
            guard case .string(let target)? = members["recordName"] else {
                throw Problem(message: "field \(name): $ref needs a recordName")
            }
            var action = Reference.Action.none
            if let value = members["action"] {
                guard case .string(let text) = value, let known = Reference.Action(rawValue: text) else {
                    throw Problem(message: "field \(name): $ref's action is NONE, DELETE_SELF or VALIDATE")
                }
                action = known
            }
            return .reference(Reference(recordID: RecordID(recordName: target, zoneID: zoneID), action: action))
        case ("$location", .object(let members)):
            guard case .double(let latitude)? = members["latitude"].map(Self.asDouble),
                case .double(let longitude)? = members["longitude"].map(Self.asDouble)
            else { throw Problem(message: "field \(name): $location needs latitude and longitude") }
            func optional(_ key: String) throws(Problem) -> Double? {
                guard let value = members[key] else { return nil }
                guard case .double(let number) = Self.asDouble(value) else { throw Problem(message: "field \(name): $location's \(key) is not a number") }
                return number
            }
            var timestamp: Timestamp?
            if let value = members["timestamp"] {
                guard case .string(let text) = value, let parsed = ISO8601Timestamps.parse(text) else {
                    throw Problem(message: "field \(name): $location's timestamp is not ISO-8601")
                }
                timestamp = parsed
            }
            return .location(
                Location(
                    latitude: latitude, longitude: longitude, horizontalAccuracy: try optional("horizontalAccuracy"),
                    verticalAccuracy: try optional("verticalAccuracy"), altitude: try optional("altitude"), speed: try optional("speed"),
                    course: try optional("course"), timestamp: timestamp))
        case ("$file", .string(let path)):
            guard let url = resolve(path) else {
                throw Problem(message: "field \(name): $file must be a relative path inside the folder")
            }
            guard let data = FileManager.default.contents(atPath: url.path) else {
                throw Problem(message: "field \(name): the file \(path) of $file cannot be read")
            }
            return .bytes(data)
        default:
            throw Problem(message: "field \(name): unknown or malformed tag \(tag)")
        }
    }

    private static func asDouble(_ value: JSONValue) -> JSONValue {
        if case .integer(let number) = value { return .double(Double(number)) }
        return value
    }

    /// `path` inside the folder, or `nil` when it would leave it, also through a link.
    func resolve(_ path: String) -> URL? {
        guard !path.isEmpty, !path.hasPrefix("/"), !path.contains("\0") else { return nil }
        // Links are followed before the check: a folder or file inside may point out of it, and a
        // download would write there. Only what exists can be followed (the rest is made as
        // folders and a file by the write), so the path's longest existing part is resolved.
        var existing = directory.appendingPathComponent(path).standardizedFileURL
        var made: [String] = []
        while !FileManager.default.fileExists(atPath: existing.path), existing.path != "/" {
            made.insert(existing.lastPathComponent, at: 0)
            existing.deleteLastPathComponent()
        }
        var url = existing.resolvingSymlinksInPath()
        for component in made { url.appendPathComponent(component) }
        let root = directory.standardizedFileURL.resolvingSymlinksInPath().path
        let inside = url.path.dropFirst(root.count + 1)
        guard url.path.hasPrefix(root + "/"), inside.split(separator: "/").first != ".gateway" else { return nil }
        return url
    }

    /// The JSON object for the record's fields, shaped like `previous` where a field's form is ambiguous
    /// (booleans, nested objects, `$file`). Files of `$file` fields are written here.
    /// A field the record names without a value is written `null` where `previous` holds a value
    /// there (a merge that cleared it); elsewhere it is left out, which reads back the same (a key
    /// the document lacks is one the cloud holds empty here), so documents get no keys for empty
    /// fields, the gateway's own reserved fields among them (null keys an earlier release wrote go
    /// with the next write). Fields the record does not name are left out.
    func object(for record: Record, previous: [String: JSONValue]?) throws -> [String: JSONValue] {
        var files: [PendingFile] = []
        let object = try object(for: record, previous: previous, files: &files, mayWrite: { _ in true })
        for file in files { try AtomicFile.write(file.data, to: file.url) }
        return object
    }

    /// A file a `$file` field's new bytes are to be written to.
    struct PendingFile {
        let path: String
        let url: URL
        let data: Data
    }

    /// ``object(for:previous:)`` that leaves the files of `$file` fields to write to `files`.
    /// A path `mayWrite` refuses (another document names the same file) gets the bytes inline
    /// (`$bytes`) instead: written there, they would change the other record too.
    func object(
        for record: Record, previous: [String: JSONValue]?, files: inout [PendingFile], mayWrite: (String) throws -> Bool
    ) throws -> [String: JSONValue] {
        var object: [String: JSONValue] = [:]
        let names = record.layout.fieldNames
        for position in names.indices {
            guard let value = record.values[position] else {
                if let held = previous?[names[position]], held != .null { object[names[position]] = .null }
                continue
            }
            if case .bytes(let data) = value, case .object(let members)? = previous?[names[position]], case .string(let path)? = members["$file"],
                members.count == 1, let url = resolve(path)
            {
                if try mayWrite(path) {
                    files.append(PendingFile(path: path, url: url, data: data))
                    object[names[position]] = .object(["$file": .string(path)])
                } else {
                    object[names[position]] = .object(["$bytes": .string(data.base64EncodedString())])
                }
                continue
            }
            object[names[position]] = try json(value, previous: previous?[names[position]])
        }
        return object
    }

    /// The paths the `$file` fields of `object` name.
    static func linkedFiles(of object: [String: JSONValue]) -> [String] {
        object.values.compactMap { value in
            guard case .object(let members) = value, members.count == 1, case .string(let path)? = members["$file"] else { return nil }
            return path
        }
    }

    private func json(_ value: FieldValue, previous: JSONValue?) throws -> JSONValue {
        switch value {
        case .string(let text):
            if case .object? = previous, let data = text.data(using: .utf8), case .object(let members)? = try? JSONValue.parse(data, numbers: .exact) {
                return .object(members)
            }
            return .string(text)
        case .int64(let number):
            if case .bool? = previous, number == 0 || number == 1 { return .bool(number == 1) }
            return .integer(number)
        case .double(let number):
            guard number.isFinite else { return .object(["$double": .string(number.isNaN ? "NaN" : number > 0 ? "Infinity" : "-Infinity")]) }
            return .double(number)
        case .timestamp(let timestamp): return .object(["$date": .string(ISO8601Timestamps.format(timestamp))])
        case .bytes(let data):
            return .object(["$bytes": .string(data.base64EncodedString())])
        case .reference(let reference):
            guard reference.action != .none else { return .object(["$ref": .string(reference.recordID.recordName)]) }
            return .object(["$ref": .object(["recordName": .string(reference.recordID.recordName), "action": .string(reference.action.rawValue)])])
        case .location(let location):
            // Every part the location has: one written back without them would lose them everywhere.
            var members: [String: JSONValue] = ["latitude": .double(location.latitude), "longitude": .double(location.longitude)]
            let optional: [(String, Double?)] = [
                ("horizontalAccuracy", location.horizontalAccuracy), ("verticalAccuracy", location.verticalAccuracy),
                ("altitude", location.altitude), ("speed", location.speed), ("course", location.course),
            ]
            for case (let key, let value?) in optional { members[key] = .double(value) }
            if let timestamp = location.timestamp { members["timestamp"] = .string(ISO8601Timestamps.format(timestamp)) }
            return .object(["$location": .object(members)])
        case .list(let values):
            return .array(try values.map { try json($0, previous: nil) })
        case .asset(let reference):
            return .object(["$asset": .string(reference.checksum)])
        case .encrypted(let data):
            return .object(["$encrypted": .string(data.base64EncodedString())])
        }
    }
}

/// Writes files whole or not at all: a temporary file in the same folder, fsync, rename.
enum AtomicFile {
    static func write(_ data: Data, to url: URL) throws {
        let temporary = try prepare(data, for: url)
        try commit(temporary, to: url)
    }

    /// Writes `data` to a synced temporary file next to `url`, creating the folder.
    static func prepare(_ data: Data, for url: URL) throws -> URL {
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        let temporary = url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).\(UUID().uuidString).tmp")
        guard FileManager.default.createFile(atPath: temporary.path, contents: nil) else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: temporary.path])
        }
        do {
            let handle = try FileHandle(forWritingTo: temporary)
            try handle.write(contentsOf: data)
            try handle.synchronize()
            try handle.close()
            return temporary
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            throw error
        }
    }

    /// Moves a prepared temporary file into place.
    static func commit(_ temporary: URL, to url: URL) throws {
        if rename(temporary.path, url.path) != 0 {
            try? FileManager.default.removeItem(at: temporary)
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: url.path])
        }
    }
}
