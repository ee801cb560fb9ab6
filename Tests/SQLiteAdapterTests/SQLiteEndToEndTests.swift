import EmbeddedCloud
import Foundation
import GRDB
import GatewayCore
import GatewayTesting
import SQLiteAdapter
import TestScheduling
import Testing

@Suite("SQLite end to end", .heavy)
struct SQLiteEndToEndTests {
    static func launchWriter(path: String, prefix: String, count: Int, pauseMilliseconds: Int) throws -> ChildProcess {
        try ChildProcess(
            try BuiltExecutable.path("SQLiteWriter"), arguments: [path, "Note", prefix, "\(count)", "\(pauseMilliseconds)"])
    }

    static func cloudContents(_ cloud: EmbeddedCloud) async throws -> [String: [String: FieldValue]] {
        try await zoneContents(of: cloud, zone: Notes.zone)
    }

    @Test("two databases converge through the embedded cloud while a third program writes", arguments: MergePolicy.allCases.filter { $0 != .custom })
    func twoDatabases(policy: MergePolicy) async throws {
        let directory = try TemporaryDirectory(prefix: "sqlite-e2e")
        defer { directory.remove() }
        let cloud = try EmbeddedCloud(path: directory.path("cloud.sqlite"))
        let fileA = try SQLiteFile(directory, name: "a.sqlite", schema: Notes.schema)
        let fileB = try SQLiteFile(directory, name: "b.sqlite", schema: Notes.schema)
        for index in 0..<20 { try fileA.execute(#"INSERT INTO "Note" VALUES (?, ?, ?)"#, ["seed-\(index)", "seeded", index]) }
        for index in 10..<15 { try fileB.execute(#"INSERT INTO "Note" VALUES (?, ?, ?)"#, ["seed-\(index)", "seeded", index]) }
        try fileA.execute(#"INSERT INTO "Note" VALUES ('shared', 'from A', 1)"#)
        try fileB.execute(#"INSERT INTO "Note" VALUES ('shared', 'from B', 1)"#)

        let options = AdapterSyncOptions(batchSize: 16, merge: MergeSettings(policy: policy, prefers: .server))
        let a = Synchronizer(
            cloud: cloud, adapters: [SyncedAdapter(try Notes.adapter(fileA, name: "a"), options: options)],
            configuration: SyncConfiguration(deviceID: "gateway-a"))
        let b = Synchronizer(
            cloud: cloud, adapters: [SyncedAdapter(try Notes.adapter(fileB, name: "b"), options: options)],
            configuration: SyncConfiguration(deviceID: "gateway-b"))
        #expect(try await a.sync().succeeded)
        let first = try await b.sync()
        #expect(first.succeeded)
        // The five rows seeded alike on both sides agree, so only the shared row is a conflict.
        #expect(first.adapters[0].conflictCount == 1, "the shared row, written differently on both sides, met")
        #expect(first.adapters[0].uploaded <= 1, "identical seeded rows are not uploaded again")

        let writer = try Self.launchWriter(path: fileA.path, prefix: "w", count: 60, pauseMilliseconds: 3)
        var rounds = 0
        while writer.isRunning {
            rounds += 1
            #expect(try await a.sync().succeeded)
            try fileB.execute(#"UPDATE "Note" SET rank = rank + 100 WHERE name = ?"#, ["seed-\(rounds % 20)"])
            #expect(try await b.sync().succeeded)
        }
        #expect(try await writer.wait() == 0)
        for _ in 0..<3 {
            #expect(try await a.sync().succeeded)
            #expect(try await b.sync().succeeded)
        }

        let contentsA = try Notes.contents(fileA)
        let contentsB = try Notes.contents(fileB)
        #expect(contentsA == contentsB)
        #expect(try await Self.cloudContents(cloud) == contentsA)
        #expect(contentsA.keys.filter { $0.hasPrefix("w-") }.count == 60, "every row of the third program arrived")
        #expect(contentsA.count == 81)
        let shared = contentsA["shared"]?["title"]
        // The two rows were never synced together: join_prefers (the cloud's, by default)
        // decides the title whatever the merge policy.
        #expect(shared == .string("from A"), "the version already in the cloud won")
        let pendingA = try await a.adapters[0].adapter.pendingChangeCount()
        let pendingB = try await b.adapters[0].adapter.pendingChangeCount()
        #expect(pendingA == 0 && pendingB == 0)
    }

    @Test("a row a store inserts under a name another store created and deleted meanwhile is kept and uploaded; a store joining the zone takes the deletion")
    func insertAfterAnotherStoresDelete() async throws {
        let directory = try TemporaryDirectory(prefix: "sqlite-e2e")
        defer { directory.remove() }
        let cloud = try EmbeddedCloud(path: directory.path("cloud.sqlite"))
        let files = try ["a", "b", "c"].map { try SQLiteFile(directory, name: "\($0).sqlite", schema: Notes.schema) }
        let gateways = try files.enumerated().map { index, file in
            Synchronizer(
                cloud: cloud, adapters: [SyncedAdapter(try Notes.adapter(file, name: "s\(index)"))],
                configuration: SyncConfiguration(deviceID: "g\(index)"))
        }
        try files[0].execute(#"INSERT INTO "Note" VALUES ('seed', 's', 1)"#)
        #expect(try await gateways[0].sync().succeeded)
        #expect(try await gateways[1].sync().succeeded)
        // b creates and deletes "r60" while a does not sync; then a inserts its own "r60".
        try files[1].execute(#"INSERT INTO "Note" VALUES ('r60', 'from b', 1)"#)
        #expect(try await gateways[1].sync().succeeded)
        try files[1].execute(#"DELETE FROM "Note" WHERE name = 'r60'"#)
        #expect(try await gateways[1].sync().succeeded)
        try files[0].execute(#"INSERT INTO "Note" VALUES ('r60', 'mine', 2)"#)
        let report = try await gateways[0].sync().adapters[0]
        #expect(report.outcome == .synced && report.deletedLocally == 0 && report.uploaded == 1, "\(report)")
        #expect(try Notes.contents(files[0])["r60"] == ["title": .string("mine"), "rank": .int64(2)])
        #expect(try await gateways[1].sync().succeeded)
        #expect(try Notes.contents(files[1])["r60"] == ["title": .string("mine"), "rank": .int64(2)])

        // A store joining the zone with a row the zone deleted takes the deletion (join_prefers).
        try files[2].execute(#"INSERT INTO "Note" VALUES ('gone', 'stale', 1)"#)
        try files[0].execute(#"INSERT INTO "Note" VALUES ('gone', 'x', 1)"#)
        #expect(try await gateways[0].sync().succeeded)
        try files[0].execute(#"DELETE FROM "Note" WHERE name = 'gone'"#)
        #expect(try await gateways[0].sync().succeeded)
        #expect(try await gateways[2].sync().succeeded)
        #expect(try Notes.contents(files[2])["gone"] == nil, "the joining store took the zone's deletion")
    }

    @Test("two databases seeded with the same rows converge without duplicates or conflicts lost")
    func sameSeed() async throws {
        let directory = try TemporaryDirectory(prefix: "sqlite-e2e")
        defer { directory.remove() }
        let cloud = try EmbeddedCloud(path: directory.path("cloud.sqlite"))
        let files = try (0..<2).map { try SQLiteFile(directory, name: "s\($0).sqlite", schema: Notes.schema) }
        for file in files {
            for index in 0..<50 { try file.execute(#"INSERT INTO "Note" VALUES (?, 'same', ?)"#, ["r\(index)", index]) }
        }
        for (index, file) in files.enumerated() {
            let synchronizer = Synchronizer(
                cloud: cloud, adapters: [SyncedAdapter(try Notes.adapter(file, name: "s\(index)"))],
                configuration: SyncConfiguration(deviceID: "g\(index)"))
            #expect(try await synchronizer.sync().succeeded)
            #expect(try await synchronizer.adapters[0].adapter.pendingChangeCount() == 0)
        }
        #expect(try await Self.cloudContents(cloud).count == 50)
        #expect(try Notes.contents(files[0]) == Notes.contents(files[1]))
    }
}
