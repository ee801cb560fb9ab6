import Foundation
import GatewayCore
import Testing

@Suite("Three-way merge and record metadata")
struct MergeEngineTests {
    static let id = RecordID(recordName: "r", zoneID: ZoneID(zoneName: "Z"))

    static func record(_ fields: [String: FieldValue]) -> Record {
        Record(id: id, recordType: "T", fields: fields)
    }

    static func fingerprints(_ fields: [String: FieldValue]) -> [String: FieldFingerprint] {
        fields.mapValues(FieldFingerprint.init)
    }

    @Test("field-level rules: one side changed, both changed, added and removed fields", arguments: MergePreference.allCases)
    func fieldRules(prefers: MergePreference) throws {
        let base: [String: FieldValue] = ["same": .int64(1), "local": .int64(1), "server": .int64(1), "both": .int64(1), "removed": .int64(1)]
        var local = base
        local["local"] = .int64(2)
        local["both"] = .int64(3)
        local["added"] = .string("L")
        local["removed"] = nil
        var server = base
        server["server"] = .int64(4)
        server["both"] = .int64(5)
        server["serverAdded"] = .string("S")
        let context = ConflictContext(recordID: Self.id, ancestor: Self.fingerprints(base), local: Self.record(local), server: Self.record(server))
        let resolution = ThreeWayMergeProbe.resolve(context, prefers: prefers)
        let expected: [String: FieldValue] = [
            "same": .int64(1), "local": .int64(2), "server": .int64(4), "both": prefers == .server ? .int64(5) : .int64(3),
            "added": .string("L"), "serverAdded": .string("S"),
        ]
        #expect(resolution == .fields(expected))
    }

    @Test("edits beat deletes; untouched deletions win")
    func deletes() {
        let base: [String: FieldValue] = ["a": .int64(1)]
        let edited = Self.record(["a": .int64(2)])
        let untouched = Self.record(base)
        let ancestor = Self.fingerprints(base)
        func resolve(_ local: Record?, _ server: Record?) -> ConflictResolution {
            ThreeWayMergeProbe.resolve(ConflictContext(recordID: Self.id, ancestor: ancestor, local: local, server: server), prefers: .server)
        }
        #expect(resolve(nil, edited) == .server, "a remote edit beats a local delete")
        #expect(resolve(nil, untouched) == .local, "a local delete of an untouched record wins")
        #expect(resolve(edited, nil) == .local, "a local edit beats a remote delete")
        #expect(resolve(untouched, nil) == .server, "a remote delete of an untouched record wins")
        #expect(resolve(nil, nil) == .server)
    }

    @Test("metadata round-trips, with unconfirmed sent values; damage is a clear error")
    func metadataCoding() throws {
        var metadata = RecordMetadata(changeTag: "t1", recordType: "Note", fingerprints: Self.fingerprints(["a": .int64(1)]))
        metadata.recordSending(["a": .int64(2), "b": .string("x")])
        metadata.recordSending(["a": .int64(2)])
        #expect(metadata.sent.count == 2, "a value sent twice is remembered once")
        let decoded = try RecordMetadata(decoding: metadata.encoded())
        #expect(decoded == metadata)
        for _ in 0..<20 { metadata.recordSending(["a": .int64(Int64.random(in: 0...1_000_000))]) }
        for _ in 0..<100 { metadata.recordSending(["a": .int64(Int64.random(in: 0...1_000_000))]) }
        #expect(metadata.sent.count == RecordMetadata.sentValuesKept)
        let error = #expect(throws: SyncError.self) { try RecordMetadata(decoding: Data([9, 9, 9])) }
        #expect(error?.code == .corruptSyncState)
        #expect(throws: SyncError.self) { try ZoneSyncState(decoding: Data("{".utf8)) }
    }

    @Test("the ancestor counts a server value this replica sent as seen by both")
    func ancestorWithSentValues() {
        var metadata = RecordMetadata(changeTag: "t1", recordType: "T", fingerprints: Self.fingerprints(["a": .int64(1), "b": .int64(1)]))
        metadata.recordSending(["a": .int64(2), "b": .int64(2)])
        let ancestor = metadata.ancestor(against: Self.record(["a": .int64(2), "b": .int64(9)]))
        #expect(ancestor["a"] == FieldFingerprint(.int64(2)), "the server holds what was sent")
        #expect(ancestor["b"] == FieldFingerprint(.int64(1)), "someone else's value: the old ancestor")
    }
}

/// Calls the merge the synchronizer uses.
enum ThreeWayMergeProbe {
    static func resolve(_ context: ConflictContext, prefers: MergePreference) -> ConflictResolution {
        (try? ThreeWayMerge.resolve(context, settings: MergeSettings(policy: .merge, prefers: prefers), resolvers: [:])) ?? .server
    }
}
