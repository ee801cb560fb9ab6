import AdapterKit
import CloudKitWeb
import Foundation
import GatewayCore
import GatewayTesting
import Logging
import Testing

@testable import PluginAdapter

/// A `write` message's records are written straight to bytes; they must be exactly the text the
/// JSON tree of ``PluginMessages/encode(_:zone:)`` serializes to, which plugins already parse.
@Suite("Plugin message writing")
struct PluginMessageWritingTests {
    static let zone = ZoneID(zoneName: "Notes", ownerName: "owner")

    static func randomText(_ random: inout SeededGenerator) -> String {
        let alphabet = Array("abcXYZ019 _-/.é✓🌍\u{0}\u{1}\u{1F}\u{7F}\n\t\"\\\u{2028}")
        return String((0..<Int.random(in: 0..<16, using: &random)).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &random)] })
    }

    static func randomValue(_ random: inout SeededGenerator, depth: Int = 0) -> FieldValue {
        switch Int.random(in: 0..<(depth < 2 ? 9 : 8), using: &random) {
        case 0: return .string(randomText(&random))
        case 1: return .int64([0, -1, .min, .max, Int64.random(in: -1000...1000, using: &random)][Int.random(in: 0..<5, using: &random)])
        case 2: return .double([35.0, -0.0, 0.1, 1e300, -2.5e-300, Double.random(in: -1e6...1e6, using: &random)][Int.random(in: 0..<6, using: &random)])
        case 3: return .timestamp(Timestamp(millisecondsSince1970: Int64.random(in: -1 << 45 ... 1 << 45, using: &random)))
        case 4: return .bytes(Data((0..<Int.random(in: 0..<24, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }))
        case 5: return .reference(Reference(recordID: RecordID(recordName: "r" + randomText(&random), zoneID: zone), action: .deleteSelf))
        case 6:
            return .location(
                Location(
                    latitude: Double.random(in: -90...90, using: &random), longitude: Double.random(in: -180...180, using: &random),
                    horizontalAccuracy: Bool.random(using: &random) ? 5 : nil, verticalAccuracy: nil, altitude: nil, speed: nil, course: nil,
                    timestamp: nil))
        case 7: return .encrypted(Data((0..<Int.random(in: 0..<24, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }))
        default: return .list((0..<Int.random(in: 0..<4, using: &random)).map { _ in randomValue(&random, depth: depth + 1) })
        }
    }

    @Test("a record written straight to bytes is the serialized JSON object, for any fields", arguments: 0..<400)
    func recordBytes(seed: UInt64) throws {
        var random = SeededGenerator(seed: seed)
        var fields: [String: FieldValue?] = [:]
        // Names that sort differently by case, accents and digits; some fields null.
        let names = ["a", "B", "b", "Z", "é", "e", "10", "9", "_x", "x y", "ß", "\u{1F30D}"] + (0..<4).map { _ in "f" + Self.randomText(&random) }
        for name in names.shuffled(using: &random).prefix(Int.random(in: 0...names.count, using: &random)) {
            fields[name] = Bool.random(using: &random) ? .some(nil) : Self.randomValue(&random)
        }
        let record = Record(
            id: RecordID(recordName: "note/" + Self.randomText(&random), zoneID: Self.zone), recordType: "Note" + Self.randomText(&random), namedFields: fields)
        var written = JSONWriter(capacity: 16)
        let expected: Result<Data, CloudError> = Result { () throws(CloudError) in try PluginMessages.encode(record, zone: Self.zone).serialized() }
        let direct: Result<[UInt8], CloudError> = Result { () throws(CloudError) in
            try PluginMessages.write(record, zone: Self.zone, into: &written)
            return written.bytes
        }
        switch (expected, direct) {
        case (.success(let tree), .success(let bytes)): #expect(Array(tree) == bytes)
        case (.failure(let treeError), .failure(let directError)): #expect(treeError.code == directError.code)
        default: Issue.record("one way wrote the record, the other failed: \(expected) against \(direct)")
        }
    }

    /// The fields a record object of the row form carries, decoded.
    static func decodedFields(_ object: JSONValue) throws -> [String: FieldValue] {
        var fields: [String: FieldValue] = [:]
        for (name, field) in object["fields"]?.objectValue ?? [:] {
            fields[name] = try CloudKitFieldCoding.decode(field, in: zone, name: name)
        }
        return fields
    }

    @Test(
        "the tables form carries each record's fields as the row form does; records whose field types differ from their table's go in the row form",
        arguments: 0..<300)
    func tablesCarryTheRowForm(seed: UInt64) throws {
        var random = SeededGenerator(seed: seed)
        // A page of a few types whose fields mostly keep one type, sometimes not.
        let names = ["a", "B", "é", "10", "9", "x y"]
        let records = (0..<Int.random(in: 0..<30, using: &random)).map { index -> Record in
            var fields: [String: FieldValue?] = [:]
            for name in names.shuffled(using: &random).prefix(Int.random(in: 0...names.count, using: &random)) {
                let steady: FieldValue = name == "a" ? .string(Self.randomText(&random)) : .int64(Int64(index))
                fields[name] = Int.random(in: 0..<5, using: &random) == 0 ? .some(nil) : Bool.random(using: &random) ? steady : Self.randomValue(&random)
            }
            return Record(
                id: RecordID(recordName: "r\(index)" + Self.randomText(&random), zoneID: Self.zone),
                recordType: ["Note", "Tag", "Ünï"][Int.random(in: 0..<3, using: &random)], namedFields: fields)
        }
        var written = JSONWriter(capacity: 16)
        let leftOut: [Int]
        do {
            leftOut = try PluginMessages.writeTables(records[...], zone: Self.zone, into: &written)
        } catch {
            // Only a value JSON cannot hold; the row form refuses the same record.
            #expect(throws: CloudError.self) { try PluginMessages.encode(records.first { $0.id.recordName == error.recordName }!, zone: Self.zone) }
            return
        }
        let tables = try JSONValue.parse(Data(written.bytes), numbers: .exact)
        var carried: [String: (type: String, fields: [String: FieldValue])] = [:]
        var order: [String] = []
        for table in tables.arrayValue ?? [] {
            let fields = table["fields"]?.arrayValue?.compactMap(\.stringValue) ?? []
            let types = table["types"]?.arrayValue?.compactMap(\.stringValue) ?? []
            #expect(fields == fields.sorted() && Set(fields).count == fields.count && types.count == fields.count)
            let type = try #require(table["recordType"]?.stringValue)
            for row in table["rows"]?.arrayValue ?? [] {
                let cells = try #require(row.arrayValue)
                #expect(cells.count == fields.count + 1)
                let name = try #require(cells.first?.stringValue)
                var values: [String: FieldValue] = [:]
                for (index, cell) in cells.dropFirst().enumerated() where cell != .null {
                    let field: JSONValue = .object(["type": .string(types[index]), "value": cell])
                    values[fields[index]] = try CloudKitFieldCoding.decode(field, in: Self.zone, name: fields[index])
                }
                #expect(carried[name] == nil)
                carried[name] = (type, values)
                order.append(name)
            }
        }
        // Every record once: in a table or left out for the row form, never both.
        #expect(Set(carried.keys).isDisjoint(with: leftOut.map { records[$0].id.recordName }))
        #expect(carried.count + leftOut.count == records.count)
        #expect(leftOut == leftOut.sorted())
        #expect(order == records.map(\.id.recordName).filter { carried[$0] != nil }.sorted { first, second in
            // Tables come in the order their types first appear; rows keep the page's order.
            let position = { (name: String) in records.firstIndex { $0.id.recordName == name }! }
            let typeOrder = { (name: String) in records.firstIndex { $0.recordType == carried[name]!.type }! }
            return (typeOrder(first), position(first)) < (typeOrder(second), position(second))
        })
        for record in records {
            guard let table = carried[record.id.recordName] else { continue }
            let row = try JSONValue.parse(try PluginMessages.encode(record, zone: Self.zone).serialized(), numbers: .exact)
            #expect(table.type == record.recordType)
            #expect(table.fields == (try Self.decodedFields(row)))
        }
    }

    @Test("a record key written straight to bytes is the serialized JSON object")
    func keyBytes() throws {
        for (name, type) in [("a", "Note"), ("\"quoted\"\n", "T\u{0}ype"), ("é✓🌍", "\\")] {
            let key = KitRecordKey(recordName: name, recordType: type)
            var written = JSONWriter(capacity: 16)
            PluginMessages.write(key, into: &written)
            let tree: JSONValue = .object(["recordName": .string(name), "recordType": .string(type)])
            #expect(Array(try tree.serialized()) == written.bytes)
        }
    }
}

@Suite("Plugin write messages")
struct PluginWriteMessageTests {
    @Test("saves and deletes split over messages of max_records_per_message each arrive once, saves before deletes", arguments: [1, 3, 4, 7, 12, 100])
    func chunkedWrite(perMessage: Int) async throws {
        let directory = try TemporaryDirectory()
        let configuration = PluginConfiguration(
            adapterName: "csv", zoneID: PluginFixtures.zone, command: "python3", arguments: [PluginFixtures.csvFolder],
            settings: .object(["directory": .string(directory.path("csv")), "record_types": .array([.string("Note")])]),
            maxRecordsPerMessage: perMessage)
        let store = PluginStore(configuration: configuration, logger: Logger(label: "test.plugin"))
        do {
            try await writeAndReadBack(store)
        } catch {
            await store.close()
            throw error
        }
        await store.close()
    }

    @Test("a conditional write leaves a record another program edited since the gateway's read as it is, answered held back; the others are written")
    func conditionalWrite() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let configuration = PluginConfiguration(
            adapterName: "csv", zoneID: PluginFixtures.zone, command: "python3", arguments: [PluginFixtures.csvFolder],
            settings: .object(["directory": .string(directory.path("csv")), "record_types": .array([.string("Note")])]))
        let store = PluginStore(configuration: configuration, logger: Logger(label: "test.plugin"))
        do {
            _ = try await store.write(saves: ["a", "b", "c"].map { PluginFixtures.note($0, "first") }, deletes: [])
            let read = try await store.read(["a", "b", "c"].map { KitRecordKey(recordName: $0, recordType: "Note") })
            var versions: [String: String?] = [:]
            for entry in read { versions[entry.key.recordName] = entry.version }
            #expect(versions.count == 3)
            // Another program edits b and creates d after the gateway's read.
            try await store.writeAsAnotherProgram(saves: [PluginFixtures.note("b", "edited by hand"), PluginFixtures.note("d", "made by hand")], deletes: [])
            versions["d"] = .some(nil)
            let answers = try await store.write(
                saves: ["a", "b", "d"].map { PluginFixtures.note($0, "from the cloud") }, deletes: [KitRecordKey(recordName: "c", recordType: "Note")],
                expecting: versions)
            #expect(Set(answers.filter(\.isHeldBack).map(\.key.recordName)) == ["b", "d"])
            let after = try await store.read(["a", "b", "c", "d"].map { KitRecordKey(recordName: $0, recordType: "Note") })
            let titles = Dictionary(uniqueKeysWithValues: after.compactMap { entry in entry.record.map { (entry.key.recordName, $0["title"]) } })
            #expect(titles == ["a": .string("from the cloud"), "b": .string("edited by hand"), "d": .string("made by hand")])
        } catch {
            await store.close()
            throw error
        }
        await store.close()
    }

    private func writeAndReadBack(_ store: PluginStore) async throws {
        let first = (0..<8).map { PluginFixtures.note("n\($0)", "first \"\($0)\"") }
        _ = try await store.write(saves: first, deletes: [])
        // Four rewritten, four new; five deleted, one of them also saved in the same write.
        let saves = (4..<12).map { PluginFixtures.note("n\($0)", "second\n\($0)") }
        let deletes = [0, 1, 2, 3, 4].map { KitRecordKey(recordName: "n\($0)", recordType: "Note") }
        let stored = try await store.write(saves: saves, deletes: deletes)
        #expect(Set(stored.map(\.key.recordName)) == Set(saves.map(\.id.recordName)))
        let held = try await store.read((0..<12).map { KitRecordKey(recordName: "n\($0)", recordType: "Note") })
        let titles = Dictionary(uniqueKeysWithValues: held.compactMap { entry in entry.record.map { (entry.key.recordName, $0["title"]) } })
        #expect(titles == Dictionary(uniqueKeysWithValues: (5..<12).map { ("n\($0)", FieldValue.string("second\n\($0)")) }))
    }

    @Test("a record name that cannot travel is refused naming the record and the rule it breaks")
    func unsendableNames() {
        #expect(PluginStore.unsendableReason("Note.1") == nil)
        #expect(PluginStore.unsendableReason(String(repeating: "é", count: 127)) == nil, "254 bytes")
        #expect(PluginStore.unsendableReason("") == "a record whose name is empty")
        #expect(PluginStore.unsendableReason("a\nb") == "record 'a\\u{a}b': its name holds a control character (at character 2), which a record name cannot")
        let long = String(repeating: "x", count: 300)
        #expect(PluginStore.unsendableReason(long) == "record '\(String(repeating: "x", count: 64))…': its name is 300 bytes long, over the 255 a record name may take")
    }
}
