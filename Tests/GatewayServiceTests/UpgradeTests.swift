import Foundation
import GRDB
import GatewayTesting
import PostgresNIO
import PostgresSupport
import PostgresTesting
import Testing

/// Files written by the previous release (the cloud file, a SQLite store with its sync state, a
/// JSON folder with its state, and a PostgreSQL store dumped with its state schema and triggers,
/// all with changes made after their last sync) open and sync after the upgrade, losing nothing.
/// `Tests/Fixtures/previous-release/make-fixture.sh` made them, with that release's gateway.
@Suite("Upgrading from the previous release")
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

        let zones = try await GatewayCLI.run(["zones", "--json"], in: directory.url, environment: environment)
        #expect(zones.status == 0 && zones.stdout.contains("Docs"), "\(zones)")
        let status = try await GatewayCLI.run(["status", "--fail-on-changes"], in: directory.url, environment: environment)
        #expect(status.status == 0, "nothing pending after the upgrade: \(status)")
    }
}
