import EmbeddedCloud
import Foundation
import GatewayCore
import GatewayTesting
import Testing

@Suite("field encryption")
struct FieldEncryptionTests {
    static func key(_ id: String, _ byte: UInt8) throws -> EncryptionKey {
        try EncryptionKey(id: id, rawKey: Data(repeating: byte, count: 32))
    }

    static let context = FieldContext(recordType: "Note", recordName: "n1", field: "body")

    /// One value of every kind, each with bytes that are easy to search for.
    static let values: [String: FieldValue] = [
        "string": .string("PLAINTEXT-STRING-7f3a"),
        "int64": .int64(0x5A5A_1234_5678_9ABC),
        "double": .double(31_415.926_535_897_93),
        "timestamp": .timestamp(Timestamp(millisecondsSince1970: 1_790_000_123_456)),
        "bytes": .bytes(Data("PLAINTEXT-BYTES-c0ffee".utf8)),
        "reference": .reference(Reference(recordID: RecordID(recordName: "PLAINTEXT-REF-target", zoneID: SyncFixture.zone))),
        "location": .location(Location(latitude: 47.123_456, longitude: 8.654_321)),
        "list": .list([.string("PLAINTEXT-LIST-one"), .int64(77_777_777_777)]),
    ]

    @Test("every kind of value survives the round trip with its type", arguments: Array(values.keys).sorted())
    func roundTrip(_ kind: String) throws {
        let ring = try KeyRing([Self.key("k1", 1)])
        let value = Self.values[kind]!
        let sealed = try ring.seal(value, context: Self.context)
        #expect(try ring.open(sealed, context: Self.context) == value)
        #expect(try ring.seal(value, context: Self.context) != sealed, "a fresh nonce every time")
    }

    @Test("a ciphertext moved to another field, record or record type is rejected")
    func tampering() throws {
        let ring = try KeyRing([Self.key("k1", 1)])
        let sealed = try ring.seal(.string("secret"), context: Self.context)
        for moved in [
            FieldContext(recordType: "Note", recordName: "n1", field: "title"),
            FieldContext(recordType: "Note", recordName: "n2", field: "body"),
            FieldContext(recordType: "Task", recordName: "n1", field: "body"),
        ] {
            #expect(throws: FieldEncryptionError.self) { try ring.open(sealed, context: moved) }
        }
        var flipped = sealed
        flipped[flipped.count - 1] ^= 0x01
        #expect(throws: FieldEncryptionError.self) { try ring.open(flipped, context: Self.context) }
        #expect(throws: FieldEncryptionError.self) { try ring.open(Data([1, 2, 3]), context: Self.context) }
    }

    @Test("rotation: the first key encrypts, every key decrypts; an unknown key id is named")
    func rotation() throws {
        let old = try KeyRing([Self.key("k1", 1)])
        let rotated = try KeyRing([Self.key("k2", 2), Self.key("k1", 1)])
        let fromOld = try old.seal(.string("kept"), context: Self.context)
        #expect(try rotated.open(fromOld, context: Self.context) == .string("kept"))
        let fromNew = try rotated.seal(.string("new"), context: Self.context)
        #expect(fromNew[2..<4] == Data("k2".utf8), "new values name the new key")
        #expect {
            try old.open(fromNew, context: Self.context)
        } throws: { error in
            (error as? FieldEncryptionError)?.missingKey == "k2"
        }
        let wrong = try KeyRing([Self.key("k1", 9)])
        #expect(throws: FieldEncryptionError.self) { try wrong.open(fromOld, context: Self.context) }
    }

    @Test("keys must be 32 bytes with unique ids")
    func keyValidation() throws {
        #expect(throws: FieldEncryptionError.self) { try EncryptionKey(id: "k", rawKey: Data(count: 16)) }
        #expect(throws: FieldEncryptionError.self) { try EncryptionKey(id: "", rawKey: Data(count: 32)) }
        #expect(throws: FieldEncryptionError.self) { try KeyRing([]) }
        #expect(throws: FieldEncryptionError.self) { try KeyRing([Self.key("k", 1), Self.key("k", 2)]) }
    }

    static func options(_ ring: KeyRing) -> AdapterSyncOptions {
        AdapterSyncOptions(encryption: FieldEncryption(keyRing: ring, fields: ["Note": Set(values.keys).union(["body"])]))
    }

    /// Every byte of the cloud's files (database and WAL).
    static func cloudBytes(_ fixture: SyncFixture) throws -> Data {
        let names = try FileManager.default.contentsOfDirectory(atPath: fixture.directory.url.path).filter { $0.hasPrefix("cloud.sqlite") }
        return try names.reduce(into: Data()) { $0.append(try Data(contentsOf: fixture.directory.url.appendingPathComponent($1))) }
    }

    @Test("the cloud's files hold no plaintext of an encrypted field, and a second store reads every value back")
    func noPlaintextInTheCloud() async throws {
        let fixture = try SyncFixture()
        let ring = try KeyRing([Self.key("k1", 1)])
        let a = fixture.adapter("a")
        let b = fixture.adapter("b")
        var fields = Self.values
        fields["clear"] = .string("VISIBLE-CLEAR-TEXT")
        await a.save(SyncFixture.note("n1", fields))
        #expect(try await fixture.sync(a, options: Self.options(ring)).outcome == .synced)
        #expect(try await fixture.sync(b, options: Self.options(ring)).outcome == .synced)
        #expect(await b.values["n1"] == fields)

        let bytes = try Self.cloudBytes(fixture)
        #expect(bytes.range(of: Data("VISIBLE-CLEAR-TEXT".utf8)) != nil, "the search finds what is stored in clear")
        for (kind, value) in Self.values {
            let needles: [Data] =
                switch value {
                case .string(let text): [Data(text.utf8)]
                case .bytes(let data): [data]
                case .reference(let reference): [Data(reference.recordID.recordName.utf8)]
                case .list: [Data("PLAINTEXT-LIST-one".utf8)]
                default: [Data(FieldCoding.encode(value).dropFirst())]
                }
            for needle in needles { #expect(bytes.range(of: needle) == nil, "\(kind) is stored in clear") }
        }
        let stored = try await fixture.cloudRecords()["n1"]!
        for name in Self.values.keys {
            guard case .encrypted = stored[name] else {
                Issue.record("\(name) is not encrypted in the cloud")
                continue
            }
        }
    }

    @Test("a store without the key stops with an error naming record and field; nothing is applied and the token stays")
    func missingKey() async throws {
        let fixture = try SyncFixture()
        let a = fixture.adapter("a")
        await a.save(SyncFixture.note("n1", ["body": .string("secret"), "title": .string("t")]))
        #expect(try await fixture.sync(a, options: Self.options(try KeyRing([Self.key("k1", 1)]))).outcome == .synced)

        for options in [Self.options(try KeyRing([Self.key("other", 3)])), AdapterSyncOptions()] {
            let b = fixture.adapter("b")
            let report = try await fixture.sync(b, options: options)
            guard case .failed(let code, let message) = report.outcome else {
                Issue.record("the sync did not fail: \(report.outcome)")
                continue
            }
            #expect(code == .undecryptableField)
            #expect(message.contains("record n1"))
            #expect(message.contains("field body"), "only body is encrypted")
            #expect(!message.contains("secret"))
            #expect(await b.values.isEmpty, "nothing was applied")
            #expect(await b.loadZoneState() == nil, "the change token did not move")
        }
        // Another key under the writer's id: the value does not open with the key it names, which
        // is that record's problem (an altered value looks the same). The record is left out and
        // reported; adding a key is no answer, comparing the keys is.
        await a.save(SyncFixture.note("n2", ["title": .string("plain")]))
        #expect(try await fixture.sync(a, options: Self.options(try KeyRing([Self.key("k1", 1)]))).outcome == .synced)
        let c = fixture.adapter("c")
        let ring = try KeyRing([Self.key("k1", 9)])
        let report = try await fixture.sync(c, options: Self.options(ring))
        #expect(report.outcome == .synced, "\(report.outcome)")
        #expect(report.failedRecords == 1)
        #expect(await c.values.keys.sorted() == ["n2"], "the rest of the zone arrives")
        let refused = try #require(report.refusedAtEnd.first)
        #expect(refused.recordID.recordName == "n1" && refused.failure.code == "undecryptableField")
        #expect(!refused.failure.message.contains("Add the key"), "\(refused.failure.message)")
        #expect(refused.failure.message.contains("gateway keygen --fingerprint"), "\(refused.failure.message)")
        #expect(!refused.failure.message.contains("secret"))
        // Given the writer's key, the next sync looks the record up and opens it.
        let fixed = try await fixture.sync(c, options: Self.options(try KeyRing([Self.key("k1", 1)])))
        #expect(fixed.outcome == .synced && fixed.failedRecords == 0 && fixed.refusedAtEnd.isEmpty)
        #expect(await c.values["n1"]?["body"] == .string("secret"))
    }

    @Test("after rotation old values stay readable and are re-encrypted with the new key when next saved")
    func rotationThroughTheCloud() async throws {
        let fixture = try SyncFixture()
        let a = fixture.adapter("a")
        let oldRing = try KeyRing([Self.key("k1", 1)])
        let newRing = try KeyRing([Self.key("k2", 2), Self.key("k1", 1)])
        await a.save(SyncFixture.note("n1", ["body": .string("first")]))
        await a.save(SyncFixture.note("n2", ["body": .string("untouched")]))
        #expect(try await fixture.sync(a, options: Self.options(oldRing)).outcome == .synced)

        let b = fixture.adapter("b")
        #expect(try await fixture.sync(b, options: Self.options(newRing)).outcome == .synced)
        #expect(await b.values["n1"]?["body"] == .string("first"))
        await b.save(SyncFixture.note("n1", ["body": .string("second")]))
        #expect(try await fixture.sync(b, options: Self.options(newRing)).outcome == .synced)

        let stored = try await fixture.cloudRecords()
        guard case .encrypted(let n1)? = stored["n1"]?["body"], case .encrypted(let n2)? = stored["n2"]?["body"] else {
            Issue.record("bodies are not encrypted")
            return
        }
        #expect(n1[2..<4] == Data("k2".utf8), "the edited record uses the new key")
        #expect(n2[2..<4] == Data("k1".utf8), "the untouched record keeps the old one")
        #expect(try await fixture.sync(a, options: Self.options(newRing)).outcome == .synced)
        #expect(await a.values["n1"]?["body"] == .string("second"))
    }
}
