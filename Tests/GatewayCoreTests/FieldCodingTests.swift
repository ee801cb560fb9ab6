import Foundation
import GatewayCore
import GatewayTesting
import Testing

@Suite("Binary field coding")
struct FieldCodingTests {
    /// A random value of any kind; lists nest up to `depth`.
    static func randomValue(_ random: inout SeededGenerator, depth: Int = 0) -> FieldValue {
        let zone = ZoneID(zoneName: "Z\(Int.random(in: 0..<3, using: &random))", ownerName: "owner")
        switch Int.random(in: 0..<(depth < 3 ? 10 : 9), using: &random) {
        case 0: return .string(randomString(&random))
        case 1: return .int64(Int64.random(in: .min ... .max, using: &random))
        case 2: return .double(Double.random(in: -1e300...1e300, using: &random))
        case 3: return .timestamp(Timestamp(millisecondsSince1970: Int64.random(in: -1 << 50 ... 1 << 50, using: &random)))
        case 4: return .bytes(Data((0..<Int.random(in: 0..<40, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }))
        case 5:
            let action = [Reference.Action.none, .deleteSelf, .validate][Int.random(in: 0..<3, using: &random)]
            return .reference(Reference(recordID: RecordID(recordName: randomString(&random), zoneID: zone), action: action))
        case 6:
            let url = Bool.random(using: &random) ? "https://example.invalid/\(randomString(&random))" : nil
            return .asset(AssetReference(checksum: AssetChecksum.of(Data(randomString(&random).utf8)), size: Int64.random(in: 0...1 << 40, using: &random), downloadURL: url))
        case 7:
            func maybe() -> Double? { Bool.random(using: &random) ? Double.random(in: -500...500, using: &random) : nil }
            return .location(Location(
                latitude: Double.random(in: -90...90, using: &random), longitude: Double.random(in: -180...180, using: &random),
                horizontalAccuracy: maybe(), verticalAccuracy: maybe(), altitude: maybe(), speed: maybe(), course: maybe(),
                timestamp: Bool.random(using: &random) ? Timestamp(millisecondsSince1970: 42) : nil))
        case 8: return .encrypted(Data((0..<Int.random(in: 0..<60, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }))
        default: return .list((0..<Int.random(in: 0..<5, using: &random)).map { _ in randomValue(&random, depth: depth + 1) })
        }
    }

    static func randomString(_ random: inout SeededGenerator) -> String {
        let alphabet = Array("abcXYZ019 _-/.é✓🌍\u{0}\n\"")
        return String((0..<Int.random(in: 0..<20, using: &random)).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &random)] })
    }

    static func randomFields(seed: UInt64) -> [String: FieldValue] {
        var random = SeededGenerator(seed: seed)
        var fields: [String: FieldValue] = [:]
        for index in 0..<Int.random(in: 0..<12, using: &random) {
            fields["f\(index)_\(randomString(&random))"] = randomValue(&random)
        }
        return fields
    }

    @Test("a fingerprint is FNV-1a over the value's identity encoding, however it is computed", arguments: 0..<300)
    func fingerprintMatchesEncoding(seed: UInt64) {
        var random = SeededGenerator(seed: seed)
        let value = Self.randomValue(&random)
        #expect(FieldFingerprint(value) == FieldFingerprint.byEncoding(value))
    }

    @Test("fingerprints stay what earlier releases stored in metadata")
    func fingerprintsArePinned() {
        // FNV-1a and SplitMix64 over the encodings, computed outside Swift.
        #expect(FieldFingerprint(.string("abc")).value == 0x24e5_9e95_d607_ca0a)
        #expect(FieldFingerprint(.int64(42)).value == 0x61a9_bca9_ee17_99d4)
        #expect(FieldFingerprint(.double(0.5)).value == 0xb155_8bec_c0a4_6ddd)
        #expect(FieldFingerprint(.timestamp(Timestamp(millisecondsSince1970: 1_700_000_000_000))).value == 0xfd75_a3e0_3092_96a4)
    }

    @Test("synced metadata encoded from a record directly is the blob the metadata value encodes, and decodes to it", arguments: 0..<200)
    func syncedMetadataBlob(seed: UInt64) throws {
        let fields = Self.randomFields(seed: seed)
        let record = Record(
            id: RecordID(recordName: "r\(seed)", zoneID: ZoneID(zoneName: "Z")), recordType: "T\(seed % 3)",
            changeTag: seed.isMultiple(of: 4) ? nil : "tag\(seed)", fields: fields)
        let metadata = RecordMetadata(syncedRecord: record)
        let direct = RecordMetadata.encoded(syncedRecord: record)
        #expect(direct == metadata.encoded())
        #expect(try RecordMetadata(decoding: direct) == metadata)
        // Null positions in the layout (as after the reserved fields are cleared) are left out.
        if !record.values.isEmpty {
            var cleared = record
            cleared[position: Int(seed) % record.values.count] = nil
            #expect(RecordMetadata.encoded(syncedRecord: cleared) == RecordMetadata(syncedRecord: cleared).encoded())
        }
        let sorted = FieldFingerprint.sorted(of: fields)
        #expect(sorted.map(\.key) == fields.keys.sorted())
        #expect(Dictionary(uniqueKeysWithValues: sorted.map { ($0.key, $0.value) }) == FieldFingerprint.of(fields))
    }

    @Test("every field set round-trips exactly", arguments: 0..<300)
    func roundTrip(seed: UInt64) throws {
        let fields = Self.randomFields(seed: seed)
        let encoded = FieldCoding.encode(fields)
        #expect(try FieldCoding.decode(encoded) == fields)
        for value in fields.values {
            #expect(try FieldCoding.decodeValue(FieldCoding.encode(value)) == value)
        }
    }

    @Test("a record's encoded size is counted exactly without encoding it", arguments: 0..<300)
    func encodedSizeIsExact(seed: UInt64) {
        var random = SeededGenerator(seed: seed)
        var fields: [String: FieldValue?] = Self.randomFields(seed: seed)
        // Lengths past one varint byte, and fields the layout names without a value.
        if seed % 3 == 0 { fields["long"] = .string(String(repeating: "é", count: Int.random(in: 64...20_000, using: &random))) }
        if seed % 4 == 0 { fields["blob"] = .bytes(Data(count: Int.random(in: 128...70_000, using: &random))) }
        if seed % 5 == 0 { fields["cleared"] = .some(nil) }
        let record = Record(id: RecordID(recordName: "r", zoneID: ZoneID(zoneName: "Z")), recordType: "T", namedFields: fields)
        #expect(FieldCoding.encodedSize(of: record) == FieldCoding.encode(record).count)
    }

    @Test("the encoding is canonical: insertion order does not matter")
    func canonical() {
        var forward: [String: FieldValue] = [:]
        var backward: [String: FieldValue] = [:]
        let names = (0..<50).map { "field\($0)" }
        for name in names { forward[name] = .string(name) }
        for name in names.reversed() { backward[name] = .string(name) }
        #expect(FieldCoding.encode(forward) == FieldCoding.encode(backward))
    }

    @Test("truncated or damaged input is an error, never a crash", arguments: 0..<40)
    func damagedInput(seed: UInt64) {
        let encoded = FieldCoding.encode(Self.randomFields(seed: seed))
        for length in 0..<encoded.count {
            #expect(throws: BinaryDecodingError.self) { try FieldCoding.decode(Array(encoded.prefix(length))) }
        }
        var random = SeededGenerator(seed: seed)
        for _ in 0..<200 {
            var damaged = encoded
            damaged[Int.random(in: 0..<damaged.count, using: &random)] = UInt8.random(in: 0...255, using: &random)
            _ = try? FieldCoding.decode(damaged)
        }
        #expect(throws: BinaryDecodingError.self) { try FieldCoding.decode(encoded + [0]) }
    }

    @Test("deeply nested lists beyond the bound are refused")
    func nestingBound() {
        var value = FieldValue.list([])
        for _ in 0..<40 { value = .list([value]) }
        #expect(throws: BinaryDecodingError.self) { try FieldCoding.decodeValue(FieldCoding.encode(value)) }
    }
}
