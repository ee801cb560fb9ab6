import EmbeddedCloud
import Foundation
import GatewayCore
import GatewayTesting
import SQLiteAdapter
import Testing

/// One store synced through two clouds (two configurations pointing at it): going back to the
/// first cloud stops instead of recovering the zone again with the other cloud's ancestors.
@Suite("A store between two clouds")
struct StoreBetweenTwoCloudsTests {
    @Test("a store that synced through another cloud since stops when it comes back, its edits and deletes kept; a cloud that lost the zone is still refilled")
    func goingBackStops() async throws {
        let directory = try TemporaryDirectory(prefix: "two-clouds")
        defer { directory.remove() }
        let first = try EmbeddedCloud(path: directory.path("first.sqlite"))
        let second = try EmbeddedCloud(path: directory.path("second.sqlite"))
        let store = try SQLiteFile(directory, name: "a.sqlite", schema: Notes.schema)
        let other = try SQLiteFile(directory, name: "b.sqlite", schema: Notes.schema)
        for index in 1...3 { try store.execute(#"INSERT INTO "Note" VALUES (?, ?, ?)"#, ["r\(index)", "t\(index)", index]) }
        func gateway(_ cloud: EmbeddedCloud, _ file: SQLiteFile, options: AdapterSyncOptions = AdapterSyncOptions()) throws -> Synchronizer {
            Synchronizer(
                cloud: cloud, adapters: [SyncedAdapter(try Notes.adapter(file, name: "a"), options: options)],
                configuration: SyncConfiguration(deviceID: file.path))
        }
        #expect(try await gateway(first, store).sync().succeeded)
        #expect(try await gateway(first, other).sync().succeeded)
        try store.execute(#"UPDATE "Note" SET title = 'EDITED' WHERE name = 'r1'; DELETE FROM "Note" WHERE name = 'r3'"#)

        // The second cloud has no such zone: to the store it is a cloud that lost it, refilled.
        let elsewhere = try await gateway(second, store).sync().adapters[0]
        #expect(elsewhere.outcome == .synced && elsewhere.zoneRecovery != nil, "\(elsewhere.outcome)")
        #expect(try await zoneContents(of: second, zone: Notes.zone).keys.sorted() == ["r1", "r2"])

        // Back to the first cloud, which still holds the zone the store left.
        let back = try await gateway(first, store).sync().adapters[0]
        guard case .failed(.storeSyncedElsewhere, let message) = back.outcome else {
            Issue.record("the store synced again: \(back.outcome)")
            return
        }
        #expect(message.contains("gateway reset --adapter a"), "\(message)")
        let held = try Notes.contents(store)
        #expect(held["r1"]?["title"] == .string("EDITED") && held["r3"] == nil, "nothing was undone: \(held)")
        #expect(try await zoneContents(of: first, zone: Notes.zone)["r1"]?["title"] == .string("t1"), "nothing was sent either")

        // The way out the message gives: reset, then the store's values win.
        try await Notes.adapter(store, name: "a").resetSyncState(keepData: true)
        let moved = try await gateway(first, store, options: AdapterSyncOptions(joinPrefers: .store)).sync().adapters[0]
        #expect(moved.outcome == .synced, "\(moved.outcome)")
        #expect(try await gateway(first, other).sync().succeeded)
        #expect(try Notes.contents(other)["r1"]?["title"] == .string("EDITED"))
    }
}
