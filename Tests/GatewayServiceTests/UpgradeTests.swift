import EmbeddedCloud
import Foundation
import GRDB
import GatewayConfig
import GatewayCore
import GatewayKinds
import GatewayTesting
import PostgresNIO
import PostgresSupport
import PostgresTesting
import TestScheduling
import Testing

/// Files written by the previous release (the cloud file, a SQLite store with its sync state, a
/// JSON folder with its state, and a PostgreSQL store dumped with its state schema and triggers,
/// all with changes made after their last sync) open and sync after the upgrade, losing nothing.
/// `Tests/Fixtures/previous-release/make-fixture.sh` made them, with that release's gateway.
@Suite("Upgrading from the previous release", .heavy)
struct UpgradeTests {
    static let fixtures = Repository.root.appendingPathComponent("Tests/Fixtures/previous-release")

    static func sqliteNotes(_ path: String) async throws -> [String] {
        try await DatabaseQueue(path: path).read { db in
            try Row.fetchAll(db, sql: "SELECT id, title, n FROM note ORDER BY id").map { "\($0[0] as Int64)|\($0[1] as String? ?? "")|\($0[2] as Int64? ?? 0)" }
        }
    }

    static func postgresNotes(_ endpoint: PostgresEndpoint) async throws -> [String] {
        try await PostgresConnectionPool.withOneConnection(to: endpoint, doing: "reading notes") { connection in
            let rows = try await connection.query("SELECT id, title, n FROM public.note ORDER BY id", logger: connection.logger)
            var lines: [String] = []
            for try await (id, title, n) in rows.decode((Int, String?, Int64?).self) { lines.append("\(id)|\(title ?? "")|\(n ?? 0)") }
            return lines
        }
    }

    static func postgresScalars(_ endpoint: PostgresEndpoint, _ sql: String) async throws -> [String] {
        try await PostgresConnectionPool.withOneConnection(to: endpoint, doing: "reading the catalog") { connection in
            let rows = try await connection.query(PostgresQuery(unsafeSQL: sql), logger: connection.logger)
            var values: [String] = []
            for try await value in rows.decode(String.self) { values.append(value) }
            return values
        }
    }

    @Test("the previous release's cloud file and adapter state open and sync, and the changes made before the upgrade arrive everywhere")
    func upgrade() async throws {
        let directory = try TemporaryDirectory(prefix: "upgrade")
        defer { directory.remove() }
        for name in ["cloud.sqlite", "notes.sqlite", "docs", "config.yaml"] {
            try FileManager.default.copyItem(at: Self.fixtures.appendingPathComponent(name), to: directory.url.appendingPathComponent(name))
        }
        let store = try await PostgresTestServer.freshDatabase("upgrade")
        try await PostgresTestServer.runScript(Self.fixtures.appendingPathComponent("postgres-store.sql").path, on: store)
        let environment = ["STORE_URL": store.description]

        // `gateway status` reads the earlier release's layouts without upgrading them.
        let before = try await GatewayCLI.run(["status"], in: directory.url, environment: environment)
        #expect(before.status == 0, "\(before)")
        #expect(before.stdout.contains("note: crm: set up by an earlier release of the gateway; the next sync upgrades its tables"), "\(before)")
        #expect(
            try await Self.postgresScalars(store, "SELECT tgname::text FROM pg_trigger WHERE tgrelid = 'public.note'::regclass AND tgname LIKE '_gateway_capture_%'")
                .isEmpty, "status installed nothing in PostgreSQL")

        // Opening the stores replaces the previous release's row-level trigger with this one's
        // statement-level triggers, without queuing the table's rows again: the three changes
        // made before the upgrade stay the only pending ones.
        let configuration = try GatewayConfiguration.load(
            file: directory.path("config.yaml"), registry: .builtIn,
            environment: ProcessInfo.processInfo.environment.merging(environment) { _, new in new })
        _ = try await GatewayStores.open(configuration.adapters)
        // The JSON folder's state moved onto the adapter kit: into the state directory, with the
        // old file kept aside; the edit made before the upgrade is its one pending change.
        #expect(FileManager.default.fileExists(atPath: directory.path("docs/.gateway/state.sqlite.migrated")))
        #expect(!FileManager.default.fileExists(atPath: directory.path("docs/.gateway/state.sqlite")))
        let docsState = try await DatabaseQueue(path: directory.path("state/adapters/docs.sqlite")).read { db in
            (try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM metadata") ?? 0, try String.fetchAll(db, sql: "SELECT record_name FROM changes"))
        }
        #expect(docsState.0 == 2, "both documents keep their sync metadata")
        #expect(docsState.1 == ["welcome"], "only the edited document is pending")
        #expect(try await Self.postgresScalars(store, "SELECT record_name FROM gateway.changes ORDER BY record_name") == ["1001", "1002", "900"])
        #expect(
            try await Self.postgresScalars(store, "SELECT tgname::text FROM pg_trigger WHERE tgrelid = 'public.note'::regclass ORDER BY tgname")
                == ["_gateway_capture_delete", "_gateway_capture_insert", "_gateway_capture_truncate", "_gateway_capture_update"])

        let first = try await GatewayCLI.run(["sync", "--progress", "none"], in: directory.url, environment: environment)
        #expect(first.status == 0, "\(first)")
        let second = try await GatewayCLI.run(["sync", "--progress", "none"], in: directory.url, environment: environment)
        #expect(second.status == 0, "\(second)")
        let quiet = try await GatewayCLI.run(["sync", "--progress", "none"], in: directory.url, environment: environment)
        #expect(quiet.stdout.hasPrefix("Nothing to do"), "\(quiet)")

        let sqlite = try await Self.sqliteNotes(directory.path("notes.sqlite"))
        let postgres = try await Self.postgresNotes(store)
        #expect(sqlite == postgres, "both stores hold the same notes")
        // 60 + 40 rows; 7 deleted before; 6 and 1002 deleted, 500 and 900 added since the last sync.
        let expectedCount = 100 - 3 + 2
        #expect(sqlite.count == expectedCount)
        #expect(sqlite.contains("5|edited in SQLite before the upgrade|35"))
        #expect(sqlite.contains("1001|edited in PostgreSQL before the upgrade|1"))
        #expect(sqlite.contains("500|new in SQLite before the upgrade|1"))
        #expect(sqlite.contains("900|new in PostgreSQL before the upgrade|2"))
        #expect(!sqlite.contains { $0.hasPrefix("6|") || $0.hasPrefix("7|") || $0.hasPrefix("1002|") })

        let docs = try await zoneContents(of: EmbeddedCloud(path: directory.path("cloud.sqlite")), zone: ZoneID(zoneName: "Docs"))
        #expect(docs["welcome"]?["title"] == .string("Welcome, edited before the upgrade"), "the JSON edit reached the cloud")
        #expect(docs.count == 2)

        let zones = try await GatewayCLI.run(["zones", "--json"], in: directory.url, environment: environment)
        #expect(zones.status == 0 && zones.stdout.contains("Docs"), "\(zones)")
        let status = try await GatewayCLI.run(["status", "--fail-on-changes"], in: directory.url, environment: environment)
        #expect(status.status == 0, "nothing pending after the upgrade: \(status)")
        try await PostgresConnectionPool.withOneConnection(to: store, doing: "writing after the upgrade") { connection in
            _ = try await connection.query("UPDATE public.note SET title = 'edited after the upgrade' WHERE id = 1001", logger: connection.logger)
        }
        let captured = try await GatewayCLI.run(["status", "--fail-on-changes"], in: directory.url, environment: environment)
        #expect(captured.status != 0, "a write after the upgrade is captured: \(captured)")

        // The previous release's cloud has no users: its zones are the default user's, who can
        // share them, and another user's gateway on the same cloud file syncs the share.
        let other = try TemporaryDirectory(prefix: "upgrade-participant")
        defer { other.remove() }
        try Data(
            """
            cloud: { kind: embedded, path: "\(directory.path("cloud.sqlite"))", user: dora }
            adapters:
              - { name: shared, kind: json, database: shared, directory: "shared/{owner}/{zone}", seed: empty, layout: file-per-record }
            """.utf8
        ).write(to: other.url.appendingPathComponent("config.yaml"))
        try FileManager.default.createDirectory(at: other.url.appendingPathComponent("empty"), withIntermediateDirectories: true)
        #expect(try await GatewayCLI.run(["share", "add", "Docs", "dora"], in: directory.url, environment: environment).status == 0)
        #expect(try await GatewayCLI.run(["share", "accept", "_defaultUser", "Docs"], in: other.url).status == 0)
        let participant = try await GatewayCLI.run(["sync"], in: other.url)
        #expect(participant.status == 0 && participant.stdout.contains("shared._defaultUser.Docs"), "\(participant)")
        let files = try FileManager.default.subpathsOfDirectory(atPath: other.path("shared/_defaultUser/Docs")).filter { $0.hasPrefix("Article/") }
        #expect(files.count == 2, "both documents of the upgraded cloud reached the other user: \(files)")
    }
}
