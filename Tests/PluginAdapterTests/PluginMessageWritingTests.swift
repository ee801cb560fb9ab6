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
}
