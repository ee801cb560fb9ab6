import AdapterKit
import EmbeddedCloud
import Foundation
import GRDB
import GatewayCore
import GatewayTesting
import SQLiteAdapter
import TestScheduling
import Testing

/// A plugin that writes a whole download and dies before answering (a crash, an OOM kill, a
/// timeout can always land there): its rows are the gateway's own write, never the plugin
/// store's edits (DESIGN D4 rule 3).
@Suite("A plugin's unanswered write", .heavy)
struct PluginUnansweredWriteTests {
    /// With `join_prefers: store` the plugin's rows, were they taken for rows it never synced,
    /// would win over the cloud: the case proves the write is recognised, not merely outvoted.
    @Test(
        "rows a plugin wrote before dying are the gateway's own: a row deleted and a row edited meanwhile in SQLite stay so",
        arguments: [(MergePreference.server, JoinPreference.cloud), (.client, .store)])
    func unansweredWrite(prefers: MergePreference, joinPrefers: JoinPreference) async throws {
        let directory = try TemporaryDirectory(prefix: "plugin-unanswered")
        defer { directory.remove() }
        let cloud = try EmbeddedCloud(path: directory.path("cloud.sqlite"))
        let databasePath = directory.path("app.sqlite")
        let database = try DatabaseQueue(path: databasePath)
        try await database.write { db in
            try db.execute(sql: "CREATE TABLE Note (name TEXT PRIMARY KEY, title TEXT, rank INTEGER)")
            try db.execute(sql: "INSERT INTO Note VALUES ('1', 'one', 1), ('2', 'two', 2), ('3', 'three', 3)")
        }
        let options = AdapterSyncOptions(merge: MergeSettings(policy: .merge, prefers: prefers), joinPrefers: joinPrefers)
        let sqlite = Synchronizer(
            cloud: cloud,
            adapters: [
                SyncedAdapter(
                    try SQLiteAdapter(
                        configuration: SQLiteAdapterConfiguration(
                            name: "app", path: databasePath, zoneID: PluginFixtures.zone, tables: [TableMapping(table: "Note")])),
                    options: options)
            ],
            configuration: SyncConfiguration(deviceID: "gateway"))
        let plugin = try PluginFixtures.misbehavingAdapter(in: directory, misbehave: ["method": "write", "how": "write-then-crash"])
        defer { Task { await plugin.close() } }
        let pluginSync = Synchronizer(
            cloud: cloud, adapters: [SyncedAdapter(plugin, options: options)], configuration: SyncConfiguration(deviceID: "gateway"))

        #expect(try await sqlite.sync().succeeded)
        let crashed = try await pluginSync.sync()
        #expect(!crashed.succeeded, "the plugin died before answering its write")
        #expect(try PluginMisbehaviourTests.heldRecords(in: directory) == ["1", "2", "3"], "it had written the whole page")

        try await database.write { db in
            try db.execute(sql: "DELETE FROM Note WHERE name = '2'")
            try db.execute(sql: "UPDATE Note SET title = 'newer in SQLite' WHERE name = '3'")
        }
        #expect(try await sqlite.sync().succeeded)
        try FileManager.default.removeItem(atPath: directory.path("misbehave"))
        let recovered = try await pluginSync.sync()
        #expect(recovered.succeeded)
        #expect(recovered.adapters[0].uploaded == 0 && recovered.adapters[0].deletedRemotely == 0, "nothing of the plugin's was taken for an edit")
        #expect(try await sqlite.sync().succeeded)

        let rows = try await database.read { db in
            try Row.fetchAll(db, sql: "SELECT name, title FROM Note ORDER BY name").map { "\($0["name"] as String)=\($0["title"] as String)" }
        }
        #expect(rows == ["1=one", "3=newer in SQLite"], "the delete and the edit made in SQLite stand")
        #expect(try PluginMisbehaviourTests.heldRecords(in: directory) == ["1", "3"], "the plugin holds what SQLite holds")
        #expect(try await plugin.pendingChangeCount() == 0)
    }
}
