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
        // The local store names "removed" without a value: it cleared the field.
        var named = local.mapValues { Optional($0) }
        named["removed"] = .some(nil)
        let localRecord = Record(id: Self.id, recordType: "T", namedFields: named)
        let context = ConflictContext(recordID: Self.id, ancestor: Self.fingerprints(base), local: localRecord, server: Self.record(server))
        let resolution = ThreeWayMergeProbe.resolve(context, prefers: prefers)
        let expected: [String: FieldValue] = [
            "same": .int64(1), "local": .int64(2), "server": .int64(4), "both": prefers == .server ? .int64(5) : .int64(3),
            "added": .string("L"), "serverAdded": .string("S"),
        ]
        #expect(resolution == .fields(expected))
    }

    @Test("a field the local record does not name is unknown to its store, never a removal", arguments: MergePreference.allCases)
    func unknownFields(prefers: MergePreference) throws {
        let base: [String: FieldValue] = ["title": .string("one"), "color": .string("red")]
        // An older schema: the store has no column "color", and edited the title.
        let local = Self.record(["title": .string("edited")])
        let server = Self.record(["title": .string("one"), "color": .string("blue")])
        let context = ConflictContext(recordID: Self.id, ancestor: Self.fingerprints(base), local: local, server: server)
        #expect(!context.changedLocally("color"))
        #expect(ThreeWayMergeProbe.resolve(context, prefers: prefers) == .fields(["title": .string("edited"), "color": .string("blue")]))
    }

    @Test("a record both sides hold without a common ancestor merges its fields; contested fields and deletions follow join_prefers")
    func joins() throws {
        let local = Self.record(["title": .string("backup"), "only": .int64(1)])
        let server = Self.record(["title": .string("newer"), "extra": .int64(2)])
        let context = ConflictContext(recordID: Self.id, ancestor: nil, local: local, server: server)
        #expect(
            ThreeWayMergeProbe.join(context, prefers: .cloud)
                == .fields(["title": .string("newer"), "only": .int64(1), "extra": .int64(2)]))
        #expect(
            ThreeWayMergeProbe.join(context, prefers: .store)
                == .fields(["title": .string("backup"), "only": .int64(1), "extra": .int64(2)]))
        let deleted = ConflictContext(recordID: Self.id, ancestor: nil, local: local, server: nil)
        #expect(ThreeWayMergeProbe.join(deleted, prefers: .cloud) == .server, "a deletion in the cloud is not undone by a restored row")
        #expect(ThreeWayMergeProbe.join(deleted, prefers: .store) == .local)
        let same = ConflictContext(recordID: Self.id, ancestor: nil, local: server, server: server)
        #expect(ThreeWayMergeProbe.join(same, prefers: .cloud) == .server)
    }

    @Test("a version counts as this replica's own only when its metadata's intents recognise every value")
    func recognition() {
        var metadata = RecordMetadata(changeTag: "t1", recordType: "T", fingerprints: Self.fingerprints(["title": .string("one")]))
        #expect(metadata.recognizes(Self.record(["title": .string("one")])))
        #expect(!metadata.recognizes(Self.record(["title": .string("edited")])), "a value it never sent")
        metadata.recordSending(["title": .string("edited")])
        #expect(metadata.recognizes(Self.record(["title": .string("edited")])))
        #expect(!metadata.recognizes(Self.record(["title": .string("edited"), "rank": .int64(1)])))
    }

    @Test("edits beat deletes and bring the record back whole; untouched deletions win")
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
        // A record of two fields, one edited: it comes back whole (a store's NOT NULL columns
        // could not hold it with the other field gone).
        let wide: [String: FieldValue] = ["a": .int64(1), "b": .int64(1)]
        let wideAncestor = Self.fingerprints(wide)
        let editedA = Self.record(["a": .int64(2), "b": .int64(1)])
        #expect(
            ThreeWayMergeProbe.resolve(ConflictContext(recordID: Self.id, ancestor: wideAncestor, local: nil, server: editedA), prefers: .server)
                == .server, "the remote edit brings the record back whole")
        #expect(
            ThreeWayMergeProbe.resolve(ConflictContext(recordID: Self.id, ancestor: wideAncestor, local: editedA, server: nil), prefers: .server)
                == .local, "the local edit brings the record back whole")
    }

    @Test("metadata round-trips, with unconfirmed sent values; damage is a clear error")
    func metadataCoding() throws {
        var metadata = RecordMetadata(changeTag: "t1", recordType: "Note", fingerprints: Self.fingerprints(["a": .int64(1)]))
        metadata.recordSending(["a": .int64(2), "b": .string("x")])
        metadata.recordSending(["a": .int64(2)])
        #expect(metadata.sent.count == 2, "a value sent twice is remembered once")
        let decoded = try RecordMetadata(decoding: metadata.encoded())
        #expect(decoded == metadata)
        var forgotten = metadata
        (forgotten.formerChangeTag, forgotten.changeTag) = (forgotten.changeTag, nil)
        #expect(try RecordMetadata(decoding: forgotten.encoded()) == forgotten, "a forgotten tag round-trips as the former one")
        let deletion = try RecordMetadata(decoding: RecordMetadata.encodedDeletion())
        #expect(deletion.deletedHere && deletion.changeTag == nil && !deletion.hasSyncedVersion, "a confirmed delete round-trips")
        #expect(try RecordMetadata(decoding: forgotten.encoded()).hasSyncedVersion, "its fingerprints still make an ancestor")
        for _ in 0..<20 { metadata.recordSending(["a": .int64(Int64.random(in: 0...1_000_000))]) }
        for _ in 0..<100 { metadata.recordSending(["a": .int64(Int64.random(in: 0...1_000_000))]) }
        #expect(metadata.sent.count == RecordMetadata.sentValuesKept)
        let error = #expect(throws: SyncError.self) { try RecordMetadata(decoding: Data([9, 9, 9])) }
        #expect(error?.code == .corruptSyncState)
        #expect(throws: SyncError.self) { try ZoneSyncState(decoding: Data("{".utf8)) }
    }

    @Test("superseded values: an update carries the values it replaces and those before, newest first, capped; the blob keeps them and reads old blobs")
    func supersededValues() throws {
        let synced = RecordMetadata(
            changeTag: "t1", recordType: "T", fingerprints: Self.fingerprints(["a": .int64(1), "b": .int64(1), "c": .int64(1)]),
            superseded: [7, 8])
        let sent = FieldFingerprint.sorted(of: Self.record(["a": .int64(2), "b": .int64(1)]))
        let carried = synced.superseding(sent: sent, cleared: ["c"])
        #expect(carried.count == 4, "a changed, c cleared, b unchanged, then the two carried: \(carried)")
        #expect(Array(carried.suffix(2)) == [7, 8])
        let after = RecordMetadata(changeTag: "t2", recordType: "T", fingerprints: [:], superseded: carried)
        #expect(after.supersedes("a", .int64(1)) && after.supersedes("c", .int64(1)))
        #expect(!after.supersedes("b", .int64(1)) && !after.supersedes("a", .int64(2)))
        #expect(try RecordMetadata(decoding: after.encoded()) == after)

        let many = RecordMetadata(changeTag: "t", recordType: "T", fingerprints: [:], superseded: Array(1...UInt64(RecordMetadata.supersededValuesKept)))
        let grown = RecordMetadata(changeTag: "t", recordType: "T", fingerprints: ["x": FieldFingerprint(.int64(1))], superseded: many.superseded)
            .superseding(sent: [(key: "x", value: FieldFingerprint(.int64(2)))], cleared: [])
        #expect(grown.count == RecordMetadata.supersededValuesKept, "the oldest falls off")
        #expect(grown.first != 1 && !grown.contains(UInt64(RecordMetadata.supersededValuesKept)))

        // A blob written before superseded values existed decodes with none.
        let old = RecordMetadata(changeTag: "t1", recordType: "T", fingerprints: Self.fingerprints(["a": .int64(1)]))
        #expect(try RecordMetadata(decoding: old.encoded()).superseded.isEmpty)
        #expect(RecordMetadata.encoded(syncedRecord: Self.record(["a": .int64(1)])) == RecordMetadata(syncedRecord: Self.record(["a": .int64(1)])).encoded())
    }

    @Test("a local value the server's version superseded loses to it under any preference, and a whole-record client policy yields")
    func supersededLocalValue() {
        let ancestor = Self.fingerprints(["a": .int64(1)])
        let superseded = RecordMetadata(changeTag: "t", recordType: "T", fingerprints: Self.fingerprints(["a": .int64(2)]))
            .superseding(sent: [(key: "a", value: FieldFingerprint(.int64(3)))], cleared: [])
        let context = ConflictContext(
            recordID: Self.id, ancestor: ancestor, local: Self.record(["a": .int64(2)]), server: Self.record(["a": .int64(3)]), superseded: superseded)
        #expect(context.supersededLocally("a"))
        #expect(context.locallySuperseded)
        for prefers in MergePreference.allCases {
            #expect(ThreeWayMergeProbe.resolve(context, prefers: prefers) == .server)
        }
        #expect((try? ThreeWayMerge.resolve(context, settings: MergeSettings(policy: .client), resolvers: [:])) == .server)
        let fresh = ConflictContext(
            recordID: Self.id, ancestor: ancestor, local: Self.record(["a": .int64(5)]), server: Self.record(["a": .int64(3)]), superseded: superseded)
        #expect(ThreeWayMergeProbe.resolve(fresh, prefers: .client) == .local, "a value the zone never held is a concurrent edit")
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

    static func join(_ context: ConflictContext, prefers: JoinPreference) -> ConflictResolution {
        ThreeWayMerge.join(context, prefers: prefers)
    }
}
