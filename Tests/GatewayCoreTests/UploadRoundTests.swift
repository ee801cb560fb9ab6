import Foundation
import Testing

@testable import GatewayCore

/// The upload's rules for the cloud's answers and its own bounds, without a store or a cloud.
@Suite("upload round and progress")
struct UploadRoundTests {
    static let zone = ZoneID(zoneName: "Z")
    static let configuration = SyncConfiguration(deviceID: "test")
    static func id(_ name: String) -> RecordID { RecordID(recordName: name, zoneID: zone) }
    static func note(_ name: String) -> Record { Record(id: id(name), recordType: "Note", fields: ["title": .string(name)]) }
    static func synced(_ name: String, tag: String) -> Data {
        var record = note(name)
        record.changeTag = tag
        return RecordMetadata(syncedRecord: record).encoded()
    }

    /// A round of saves of `saves` (new records) and deletes of `deletes` (synced ones), at
    /// versions 1, 2, … in that order.
    static func round(saves: [String], deletes: [String] = [], localDeletes: [String] = []) throws -> UploadRound {
        var version: Int64 = 0
        func next() -> Int64 {
            version += 1
            return version
        }
        let pending = PendingChanges(
            saves: saves.map { PendingSave(record: note($0), metadata: nil, version: next()) },
            deletes: deletes.map { PendingDelete(recordID: id($0), metadata: synced($0, tag: "t-\($0)"), version: next()) }
                + localDeletes.map { PendingDelete(recordID: id($0), metadata: nil, version: next()) })
        let batch = try UploadBatch(pending, configuration: configuration, writerStamp: "device:adapter", encryption: nil)
        return UploadRound(batch: batch, size: 10)
    }

    static func saved(_ name: String, tag: String) -> RecordOperationResult {
        var record = note(name)
        record.changeTag = tag
        return .saved(record)
    }

    static func failed(_ name: String, _ code: CloudError.Code, server: Record? = nil) -> RecordOperationResult {
        .failed(id(name), CloudError(code, "refused", recordID: id(name), serverRecord: server))
    }

    @Test("saves and deletes settle at the version read; a save's metadata carries the server's tag, a delete's says it was deleted here")
    func settled() throws {
        var round = try Self.round(saves: ["a"], deletes: ["b"])
        var progress = UploadProgress(budget: 10)
        var report = AdapterSyncReport(adapter: "x", outcome: .synced)
        try round.sort([Self.saved("a", tag: "new"), .deleted(Self.id("b"))], progress: &progress, report: &report, configuration: Self.configuration)
        #expect(round.update.settled == [Self.id("a"): 1, Self.id("b"): 2])
        #expect(try RecordMetadata(decoding: try #require(round.update.metadata[Self.id("a")])).changeTag == "new")
        #expect(round.update.removedMetadata.isEmpty)
        #expect(try RecordMetadata(decoding: try #require(round.update.metadata[Self.id("b")])).deletedHere, "a confirmed delete is remembered")
        #expect(round.settled == 2)
        #expect(report.uploaded == 1 && report.deletedRemotely == 1)
    }

    @Test("a delete of a record the cloud never had settles without a request")
    func localDelete() throws {
        let round = try Self.round(saves: [], localDeletes: ["gone"])
        #expect(round.batch.operations.isEmpty)
        #expect(round.update.settled == [Self.id("gone"): 1])
        #expect(round.settled == 1)
    }

    @Test("conflicts wait to be merged: with the server's record, or looked up without it; a save's unknownItem is a conflict with nothing, a delete's settles")
    func conflicts() throws {
        var round = try Self.round(saves: ["with", "without", "vanished"], deletes: ["deleted"])
        var progress = UploadProgress(budget: 10)
        var report = AdapterSyncReport(adapter: "x", outcome: .synced)
        let server = Self.note("with")
        try round.sort(
            [
                Self.failed("with", .serverRecordChanged, server: server), Self.failed("without", .serverRecordChanged),
                Self.failed("vanished", .unknownItem), Self.failed("deleted", .unknownItem),
            ], progress: &progress, report: &report, configuration: Self.configuration)
        #expect(round.conflicts.map(\.0) == [Self.id("with"), Self.id("vanished")])
        #expect(round.conflicts[0].1?.id == server.id && round.conflicts[1].1 == nil)
        #expect(round.lookups == [Self.id("without")])
        #expect(round.update.settled == [Self.id("deleted"): 4])
        #expect(try RecordMetadata(decoding: try #require(round.update.metadata[Self.id("deleted")])).deletedHere)
        #expect(round.settled == 1)
        #expect(report.uploaded == 0 && report.failedRecords == 0)
    }

    @Test("transient failures stay pending; permanent ones are marked failed and not read again in the pass")
    func failures() throws {
        for transient in [CloudError.Code.networkFailure, .serviceUnavailable, .zoneBusy, .requestRateLimited, .batchRequestFailed] {
            var round = try Self.round(saves: ["a"])
            var progress = UploadProgress(budget: 10)
            var report = AdapterSyncReport(adapter: "x", outcome: .synced)
            try round.sort([Self.failed("a", transient)], progress: &progress, report: &report, configuration: Self.configuration)
            #expect(round.update.settled.isEmpty && round.update.failures.isEmpty && round.settled == 0, "\(transient)")
            #expect(progress.failed.isEmpty)
        }
        var round = try Self.round(saves: ["a"])
        var progress = UploadProgress(budget: 10)
        var report = AdapterSyncReport(adapter: "x", outcome: .synced)
        try round.sort([Self.failed("a", .invalidArguments)], progress: &progress, report: &report, configuration: Self.configuration)
        let failure = try #require(round.update.failures[Self.id("a")])
        #expect(failure.version == 1 && failure.code == "invalidArguments")
        #expect(round.update.settled.isEmpty, "a failed record stays pending")
        #expect(round.settled == 1 && report.failedRecords == 1)
        #expect(progress.failed == [Self.id("a")])
    }

    @Test("an exhausted quota stops the round; a deleted zone or lost authentication fails it")
    func stops() throws {
        var round = try Self.round(saves: ["a", "b"])
        var progress = UploadProgress(budget: 10)
        var report = AdapterSyncReport(adapter: "x", outcome: .synced)
        try round.sort(
            [Self.saved("a", tag: "t"), Self.failed("b", .quotaExceeded)], progress: &progress, report: &report, configuration: Self.configuration)
        #expect(round.quotaError?.code == .quotaExceeded)
        #expect(round.update.settled == [Self.id("a"): 1], "what was saved still settles")
        for fatal in [CloudError.Code.zoneNotFound, .userDeletedZone, .notAuthenticated] {
            var round = try Self.round(saves: ["a"])
            let error = #expect(throws: CloudError.self) {
                try round.sort([Self.failed("a", fatal)], progress: &progress, report: &report, configuration: Self.configuration)
            }
            #expect(error?.code == fatal)
        }
    }

    @Test("the budget bounds what a pass sends; a batch sent back does not count")
    func budget() {
        #expect(UploadProgress.budget(pendingAtStart: 1, batchSize: 200) == 201)
        var progress = UploadProgress(budget: 10)
        #expect(progress.maySend)
        progress.took(6)
        #expect(progress.mayReadAhead(after: 3))
        #expect(!progress.mayReadAhead(after: 4))
        progress.took(4)
        #expect(!progress.maySend)
        progress.tookBack(4)
        #expect(progress.maySend && progress.sent == 6)
    }

    @Test("rounds that settle nothing give up after ten in a row; one that settles resets the count")
    func idleRounds() throws {
        var progress = UploadProgress(budget: 1_000)
        let idle = try Self.round(saves: ["a"])
        let settling = try Self.round(saves: [], localDeletes: ["gone"])
        for _ in 0..<(UploadProgress.maximumIdleRounds - 1) { try progress.settled(idle, adapter: "x") }
        try progress.settled(settling, adapter: "x")
        #expect(progress.idleRounds == 0)
        for _ in 0..<(UploadProgress.maximumIdleRounds - 1) { try progress.settled(idle, adapter: "x") }
        let error = #expect(throws: SyncError.self) { try progress.settled(idle, adapter: "x") }
        #expect(error?.code == .conflictsUnresolved)
    }

    @Test("a round whose records meet their first conflict in the pass is progress; the same records meeting conflicts again are idle")
    func firstConflictsAreProgress() throws {
        var progress = UploadProgress(budget: 1_000)
        for batch in 0..<(3 * UploadProgress.maximumIdleRounds) {
            var round = try Self.round(saves: ["n\(batch)"])
            round.conflicts = [(Self.id("n\(batch)"), Self.note("n\(batch)"))]
            try progress.settled(round, adapter: "x")
        }
        #expect(progress.idleRounds == 0, "every batch met conflicts over records new to them")
        var again = try Self.round(saves: ["n0"])
        again.conflicts = [(Self.id("n0"), Self.note("n0"))]
        for _ in 0..<(UploadProgress.maximumIdleRounds - 1) { try progress.settled(again, adapter: "x") }
        let error = #expect(throws: SyncError.self) { try progress.settled(again, adapter: "x") }
        #expect(error?.code == .conflictsUnresolved)
    }
}
