import EmbeddedCloud
import Foundation
import GatewayCore
import GatewayTesting
import Testing

private typealias F = SyncFixture

/// A store's own deletion comes back in its next download (the download runs before the upload):
/// it must not delete a record the store created again under the same name meanwhile.
@Suite("Records created again after a delete")
struct RecreateAfterDeleteTests {
    /// Stores `a` and `b` on `fixture`'s zone, both holding record n1 ("one") as synced.
    static func twoStoresHoldingOne(_ fixture: SyncFixture) async throws -> (InMemoryAdapter, InMemoryAdapter) {
        let a = fixture.adapter("a")
        let b = fixture.adapter("b")
        await a.save(F.note("n1", ["title": .string("one")]))
        try await fixture.sync(a)
        try await fixture.sync(b)
        return (a, b)
    }

    @Test("a record a store deletes, syncs, then creates again keeps its new values when its own delete comes back")
    func recreatedBeforeOwnDeletionReturns() async throws {
        let fixture = try SyncFixture()
        let a = fixture.adapter("a")
        await a.save(F.note("n1", ["title": .string("one")]))
        try await fixture.sync(a)
        await a.delete(F.note("n1", [:]).id)
        #expect(try await fixture.sync(a).deletedRemotely == 1)
        await a.save(F.note("n1", ["title": .string("one again")]))
        let recreated = try await fixture.sync(a)
        #expect(recreated.conflictCount == 0, "the store's own deletion is older than the record: no conflict")
        #expect(recreated.uploaded == 1 && recreated.deletedLocally == 0)
        #expect(await a.values["n1"] == ["title": .string("one again")])
        #expect(try await fixture.cloudRecords()["n1"] == ["title": .string("one again")])

        let b = fixture.adapter("b")
        try await fixture.sync(b)
        #expect(await b.values == a.values)
        let quiet = try await fixture.sync(a)
        #expect(quiet.uploaded == 0 && quiet.downloaded == 0 && quiet.deletedLocally == 0)
    }

    @Test("the store's own deletion, back in the next download, leaves no metadata behind")
    func ownDeletionReturns() async throws {
        let fixture = try SyncFixture()
        let a = fixture.adapter("a")
        await a.save(F.note("n1", ["title": .string("one")]))
        await a.save(F.note("n2", ["title": .string("two")]))
        try await fixture.sync(a)
        await a.delete(F.note("n1", [:]).id)
        try await fixture.sync(a)
        #expect(Set(await a.syncedRecordIDs().map(\.recordName)) == ["n1", "n2"], "the confirmed delete is remembered until it comes back")
        let next = try await fixture.sync(a)
        #expect(next.conflictCount == 0 && next.deletedLocally == 0 && next.uploaded == 0)
        #expect(await a.syncedRecordIDs().map(\.recordName) == ["n2"])
    }

    @Test("a delete confirmed by the cloud's deletion, then the record created again, survives a download of the zone from the start")
    func recreatedBeforeFullDownload() async throws {
        let fixture = try SyncFixture()
        let (a, b) = try await Self.twoStoresHoldingOne(fixture)
        await b.delete(F.note("n1", [:]).id)
        try await fixture.sync(b)
        // a deletes it too: its next download brings the deletion, which confirms a's.
        await a.delete(F.note("n1", [:]).id)
        #expect(try await fixture.sync(a).conflictCount == 0)
        await a.save(F.note("n1", ["title": .string("one again")]))
        // The zone position forgotten (a column added to a table does this): the download starts
        // over, and the feed from the start still holds the deletion.
        try await a.commit(SyncStateUpdate(zoneState: ZoneSyncState().encoded()))
        let report = try await fixture.sync(a)
        #expect(report.conflictCount == 0 && report.deletedLocally == 0)
        #expect(await a.values["n1"] == ["title": .string("one again")])
        #expect(try await fixture.cloudRecords()["n1"] == ["title": .string("one again")])
    }

    @Test("a record deleted here and created again elsewhere before this store creates it too joins: the contested field follows the cloud, the others are kept")
    func recreatedOnBothSides() async throws {
        let fixture = try SyncFixture()
        let (a, b) = try await Self.twoStoresHoldingOne(fixture)
        await a.delete(F.note("n1", [:]).id)
        try await fixture.sync(a)
        try await fixture.sync(b)
        await b.save(F.note("n1", ["title": .string("from b")]))
        try await fixture.sync(b)
        await a.save(F.note("n1", ["title": .string("from a"), "rank": .int64(1)]))
        let report = try await fixture.sync(a)
        #expect(report.conflicts[.merged] == 1)
        #expect(await a.values["n1"] == ["title": .string("from b"), "rank": .int64(1)])
        #expect(try await fixture.cloudRecords()["n1"] == ["title": .string("from b"), "rank": .int64(1)])
    }
}
