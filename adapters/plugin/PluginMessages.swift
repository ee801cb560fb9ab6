import AdapterKit
import CloudKitWeb
import GatewayCore

/// The protocol's message bodies: records to and from JSON (fields in CloudKit Web Services'
/// `{"value": …, "type": …}` form, bytes in base64).
enum PluginMessages {
    /// The protocol version this gateway speaks.
    static let protocolVersion: Int64 = 1

    /// Writes `record` as the JSON object ``encode(_:zone:)`` gives, byte for byte (members and
    /// fields in sorted order), without building the object first: building it was most of what
    /// the gateway did per record between two plugin answers.
    static func write(_ record: Record, zone: ZoneID, into writer: inout JSONWriter) throws(CloudError) {
        writer.beginObject()
        writer.key("fields")
        writer.beginObject()
        let (names, values) = (record.layout.fieldNames, record.values)
        // The layout's canonical order is the fields sorted by name, as an object's members are.
        for position in record.layout.canonicalOrder {
            guard let value = values[position] else { continue }
            writer.key(names[position])
            try CloudKitFieldCoding.write(value, in: zone, into: &writer)
        }
        writer.endObject()
        writer.key("recordName")
        writer.string(record.id.recordName)
        writer.key("recordType")
        writer.string(record.recordType)
        writer.endObject()
    }

    /// A record whose values cannot be written (a double JSON cannot hold).
    struct UnsendableRecord: Error {
        var recordName: String
        var underlying: CloudError
    }

    /// Writes the `tables` member of a `write` message (the `tables` capability): the records of
    /// each type as one table, its fields (sorted) and their wire types once, then one row per
    /// record: its name, then each field's `value` as the row form writes it, `null` where the
    /// record has no value. A field's type is the first value's met; a record holding a field of
    /// another type is left out of the tables, for the row form.
    /// - Returns: the indices (of `records`) of the records left out, in order.
    static func writeTables(_ records: ArraySlice<Record>, zone: ZoneID, into writer: inout JSONWriter) throws(UnsendableRecord) -> [Int] {
        var groups: [(type: String, members: [Int])] = []
        var groupOfType: [String: Int] = [:]
        for index in records.indices {
            let type = records[index].recordType
            if let group = groupOfType[type] {
                groups[group].members.append(index)
            } else {
                groupOfType[type] = groups.count
                groups.append((type, [index]))
            }
        }
        var leftOut: [Int] = []
        writer.beginArray()
        for group in groups {
            var columnTypes: [String: String] = [:]
            var columnNames = Set<String>()
            var tabled: [Int] = []
            var names: [String] = []
            for index in group.members {
                var fits = true
                names.removeAll(keepingCapacity: true)
                records[index].forEachField { name, value in
                    let type = CloudKitFieldCoding.wireType(of: value)
                    if let column = columnTypes[name] {
                        if column != type { fits = false }
                    } else {
                        columnTypes[name] = type
                    }
                    names.append(name)
                }
                if fits {
                    tabled.append(index)
                    columnNames.formUnion(names)
                } else {
                    leftOut.append(index)
                }
            }
            guard !tabled.isEmpty else { continue }
            let columns = RecordLayout(columnNames.sorted())
            var mappings = LayoutMappings(target: columns)
            writer.beginObject()
            writer.key("fields")
            writer.beginArray()
            for name in columns.fieldNames { writer.string(name) }
            writer.endArray()
            writer.key("recordType")
            writer.string(group.type)
            writer.key("rows")
            writer.beginArray()
            for index in tabled {
                let record = records[index]
                let mapping = mappings.mapping(from: record.layout)
                writer.beginArray()
                writer.string(record.id.recordName)
                for source in mapping.sourcePositions {
                    guard let source, let value = record.values[source] else {
                        writer.null()
                        continue
                    }
                    do {
                        try CloudKitFieldCoding.writeValue(value, in: zone, into: &writer)
                    } catch {
                        throw UnsendableRecord(recordName: record.id.recordName, underlying: error)
                    }
                }
                writer.endArray()
            }
            writer.endArray()
            writer.key("types")
            writer.beginArray()
            for name in columns.fieldNames { writer.string(columnTypes[name] ?? "") }
            writer.endArray()
            writer.endObject()
        }
        writer.endArray()
        return leftOut.sorted()
    }

    /// Writes `key` as `{"recordName": …, "recordType": …}`.
    static func write(_ key: KitRecordKey, into writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("recordName")
        writer.string(key.recordName)
        writer.key("recordType")
        writer.string(key.recordType)
        writer.endObject()
    }

    static func encode(_ record: Record, zone: ZoneID) throws(CloudError) -> JSONValue {
        var fields: [String: JSONValue] = [:]
        var failure: CloudError?
        record.forEachField { name, value in
            guard failure == nil else { return }
            do throws(CloudError) {
                fields[name] = try CloudKitFieldCoding.encode(value, in: zone)
            } catch {
                failure = error
            }
        }
        if let failure { throw failure }
        return .object(["recordName": .string(record.id.recordName), "recordType": .string(record.recordType), "fields": .object(fields)])
    }

    /// A record the plugin sent, or the problem that keeps it out of sync.
    enum Decoded {
        case entry(KitEntry)
        case problem(KitProblem)
    }

    /// Reads one record object of a `list`, `read` or `write` answer.
    /// - Throws: a description when the object has no usable record name (nothing to blame).
    /// `recordTypes` maps each declared type to the fields its handshake declared: a declared
    /// field a record leaves out is null; a field neither declared nor sent is unknown to the
    /// plugin and left as the cloud holds it; `null` or `{"value": null}` is a null field.
    static func decodeRecord(_ json: JSONValue, recordTypes: [String: [String]], zone: ZoneID) throws(MessageProblem) -> Decoded {
        guard case .object(let members) = json else { throw MessageProblem("a record that is not a JSON object") }
        guard let name = members["recordName"]?.stringValue else { throw MessageProblem("a record without a string recordName") }
        if let reason = PluginStore.unsendableReason(name) { throw MessageProblem(reason) }
        if members["heldBack"]?.boolValue == true {
            // Left as it was: its version moved since the one the write expected.
            guard let type = members["recordType"]?.stringValue else { throw MessageProblem("a held-back record without a string recordType") }
            return .entry(.heldBack(KitRecordKey(recordName: name, recordType: type)))
        }
        if let problem = members["problem"], problem != .null {
            // The store holds the record but cannot offer it (a row it cannot read): the kit keeps
            // what it last read, so it is neither uploaded nor taken for deleted.
            guard let message = problem["message"]?.stringValue else {
                throw MessageProblem("a record problem without a string message")
            }
            let code = problem["code"]?.stringValue ?? "storeProblem"
            return .problem(KitProblem(recordName: name, code: code.isEmpty ? "storeProblem" : code, message: message))
        }
        guard let type = members["recordType"]?.stringValue else {
            return .problem(KitProblem(recordName: name, code: "invalidRecord", message: "the plugin sent record \(name) without a recordType"))
        }
        guard let declaredFields = recordTypes[type] else {
            return .problem(
                KitProblem(
                    recordName: name, code: "unknownRecordType",
                    message: "the plugin sent record \(name) of type \(type), which its handshake did not declare"))
        }
        let key = KitRecordKey(recordName: name, recordType: type)
        let version = members["version"]?.stringValue
        guard let fieldsValue = members["fields"], fieldsValue != .null else {
            guard version != nil else {
                return .problem(KitProblem(recordName: name, code: "invalidRecord", message: "the plugin sent record \(name) with neither fields nor version"))
            }
            return .entry(KitEntry(key: key, record: nil, version: version))
        }
        guard case .object(let encoded) = fieldsValue else {
            return .problem(KitProblem(recordName: name, code: "invalidRecord", message: "the plugin sent record \(name) whose fields are not an object"))
        }
        var fields: [String: FieldValue?] = [:]
        for field in declaredFields { fields[field] = .some(nil) }
        for (field, value) in encoded {
            guard !field.isEmpty, field.utf8.count <= 255 else {
                return .problem(
                    KitProblem(recordName: name, code: "invalidRecord", message: "the plugin sent record \(name) with an empty or over-long field name"))
            }
            if value == .null || value["value"] == .null {
                fields[field] = .some(nil)
                continue
            }
            do {
                fields[field] = try CloudKitFieldCoding.decode(value, in: zone, name: field)
            } catch {
                return .problem(
                    KitProblem(recordName: name, code: "invalidField", message: "the plugin sent record \(name): \(error.message)"))
            }
        }
        return .entry(
            KitEntry(key: key, record: Record(id: RecordID(recordName: name, zoneID: zone), recordType: type, namedFields: fields), version: version))
    }

    struct MessageProblem: Error {
        var text: String
        init(_ text: String) { self.text = text }
    }
}
