import EmbeddedCloud
import Foundation
import GatewayCore
import GatewayTesting
import PostgresAdapter
import PostgresNIO
import PostgresSupport
import PostgresTesting
import TestScheduling
import Testing

/// A download of many pages into PostgreSQL, where the next page's lookup runs on another pooled
/// connection while the current page is applied.
@Suite("PostgreSQL download pipeline", .heavy)
struct PostgresDownloadPipelineTests {
    static let zone = ZoneID(zoneName: "Pipeline")
    static let table = "CREATE TABLE %@.item (id bigint PRIMARY KEY, title text, rank bigint)"

    @Test("many pages arrive whole with one or two pooled connections, and a local edit in a later page is merged once", arguments: [1, 2])
    func manyPages(connections: Int) async throws {
        let endpoint = try await PostgresTestServer.freshDatabase("pipeline")
        try await PostgresConnectionPool.execute(
            [
                "CREATE SCHEMA source", "CREATE SCHEMA replica", Self.table.replacingOccurrences(of: "%@", with: "source"),
                Self.table.replacingOccurrences(of: "%@", with: "replica"),
                "INSERT INTO source.item SELECT g, 'title ' || g, g FROM generate_series(1, 300) g",
            ], on: endpoint, doing: "setting up")
        let directory = try TemporaryDirectory(prefix: "pg-pipeline")
        defer { directory.remove() }
        let cloud = try EmbeddedCloud(path: directory.path("cloud.sqlite"))
        let tables = [PostgresTableMapping(table: "item")]
        let source = try await PostgresAdapter.open(
            PostgresAdapterConfiguration(name: "source", endpoint: endpoint, schema: "source", zoneID: Self.zone, tables: tables))
        let replica = try await PostgresAdapter.open(
            PostgresAdapterConfiguration(
                name: "replica", endpoint: endpoint, schema: "replica", zoneID: Self.zone, tables: tables,
                maximumConnections: connections))
        // The replica already holds its own version of row 250, which a later page brings.
        try await PostgresConnectionPool.execute(
            ["INSERT INTO replica.item VALUES (250, 'local title', 2500)"], on: endpoint, doing: "a local edit")

        let pages = SyncConfiguration(deviceID: "test", fetchLimit: 40)
        let up = try await Synchronizer(cloud: cloud, adapters: [SyncedAdapter(source)], configuration: pages).sync().adapters[0]
        #expect(up.outcome == .synced && up.uploaded == 300)
        // The local version was never synced: join_prefers, not the merge policy, decides.
        let localWins = AdapterSyncOptions(merge: MergeSettings(policy: .merge, prefers: .client), joinPrefers: .store)
        let down = try await Synchronizer(
            cloud: cloud, adapters: [SyncedAdapter(replica, options: localWins)], configuration: pages
        ).sync().adapters[0]
        #expect(down.outcome == .synced, "\(String(describing: down.error))")
        #expect(down.downloaded == 299, "every row but the one merged with the local edit")
        #expect(down.conflicts == [.localWon: 1])
        #expect(down.uploaded == 1, "the local edit won and went up")
        let back = try await Synchronizer(cloud: cloud, adapters: [SyncedAdapter(source)], configuration: pages).sync().adapters[0]
        #expect(back.downloaded == 1)

        let digest = "SELECT string_agg(id || ':' || title || ':' || rank, ',' ORDER BY id) FROM %@.item"
        let digests = try await PostgresConnectionPool.withOneConnection(to: endpoint, doing: "comparing") { connection in
            var texts: [String] = []
            for schema in ["source", "replica"] {
                let rows = try await connection.query(
                    PostgresQuery(unsafeSQL: digest.replacingOccurrences(of: "%@", with: schema)), logger: connection.logger)
                for try await (text) in rows.decode(String.self) { texts.append(text) }
            }
            return texts
        }
        #expect(digests.count == 2 && digests[0] == digests[1], "both schemas hold the same rows")
        #expect(digests.first?.contains("250:local title:2500") == true)
        #expect(try await replica.hasChanges() == false)
        await source.close()
        await replica.close()
    }
}
