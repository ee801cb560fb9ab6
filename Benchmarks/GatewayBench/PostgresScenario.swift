import EmbeddedCloud
import Foundation
import GRDB
import GatewayCore
import GatewayTesting
import PostgresAdapter
import PostgresNIO
import PostgresSupport
import PostgresTesting
import SQLiteAdapter

/// N rows from a SQLite file into PostgreSQL through the gateway (file → embedded cloud →
/// PostgreSQL adapter), against `pgloader` migrating the same table in one hop, in the same run.
///
/// The server is the tests' private cluster (or `GATEWAY_TEST_POSTGRES_URL`); `pgloader` comes
/// from Debian's package of that name. Without it the pgloader figures are left out and said so.
struct PostgresInitialSyncScenario: Scenario {
    let name = "postgres-initial"
    let summary = "PostgreSQL: N rows (6 columns) SQLite → embedded cloud → PostgreSQL through the gateway, vs pgloader's one hop"

    static let table = """
        CREATE TABLE %@.note (id bigint PRIMARY KEY, title text, body text, views bigint, score double precision,
                              created_at timestamptz, done boolean)
        """

    func run(records: Int, workDirectory: URL) async throws -> [Measurement] {
        let database = try await PostgresTestServer.freshDatabase("bench")
        try await PostgresConnectionPool.execute(
            ["CREATE SCHEMA app", "CREATE SCHEMA app_parallel"] + ["app", "app_parallel"].map { Self.table.replacingOccurrences(of: "%@", with: $0) },
            on: database, doing: "setting up")
        let source = workDirectory.appendingPathComponent("source.sqlite").path
        try BenchNotes.makeDatabase(source, rows: records)
        let parallelSeconds = try await syncInParallel(records: records, database: database, workDirectory: workDirectory)
        let (sequential, upSeconds, downSeconds) = try await syncInOrder(records: records, source: source, database: database, workDirectory: workDirectory)
        var measurements = [
            Measurement(name: "upload \(records) rows (SQLite → cloud)", value: upSeconds, unit: "s"),
            Measurement(name: "download \(records) rows (cloud → PostgreSQL)", value: downSeconds, unit: "s"),
            Measurement(name: "hops one after the other", value: sequential, unit: "s"),
            Measurement(name: "one gateway, both adapters at once", value: parallelSeconds, unit: "s"),
            Measurement(name: "gateway end to end", value: Double(records) / parallelSeconds, unit: "rows/s"),
        ]
        guard let pgloader = Self.pgloaderPath() else {
            print("  pgloader is not installed (Debian: apt-get install pgloader); its figures are left out")
            return measurements
        }
        let pgloaderSeconds = try await Self.runPgloader(pgloader, source: source, database: database, workDirectory: workDirectory)
        let pgloaderLog = (try? String(contentsOfFile: workDirectory.appendingPathComponent("pgloader.log").path, encoding: .utf8)) ?? ""
        // pgloader picks the schema itself (for SQLite, after the file); find where it put the table.
        let schemas = try await Self.count(
            on: database, "information_schema.tables WHERE table_name = 'note' AND table_schema NOT IN ('app', 'app_parallel')", column: "string_agg(table_schema, ',')")
        let loaded = (try? await Self.count(on: database, "\"\(schemas)\".note")) ?? -1
        guard loaded == records else { throw BenchmarkError("pgloader loaded \(loaded) rows, expected \(records):\n\(pgloaderLog)") }
        measurements += [
            Measurement(name: "pgloader, one hop", value: pgloaderSeconds, unit: "s"),
            Measurement(name: "hops one after the other ÷ pgloader", value: sequential / pgloaderSeconds, unit: "×"),
            Measurement(name: "gateway time ÷ pgloader time", value: parallelSeconds / pgloaderSeconds, unit: "×", goal: .atMost(2)),
        ]
        return measurements
    }

    /// Two gateways, one per hop, synced one after the other: the file up into the embedded
    /// cloud, then the cloud down into `app.note`. Each hop's time includes opening its stores,
    /// as a `gateway sync` run does (the SQLite adapter's first open queues the table's rows).
    private func syncInOrder(records: Int, source: String, database: PostgresEndpoint, workDirectory: URL) async throws
        -> (total: Double, up: Double, down: Double)
    {
        let cloudPath = workDirectory.appendingPathComponent("cloud.sqlite").path
        let (uploaded, upSeconds) = try await timed {
            let up = BenchNotes.synchronizer(try EmbeddedCloud(path: cloudPath), try BenchNotes.adapter(source, name: "source"), device: "source")
            return try await BenchNotes.sync(up)
        }
        let (downloaded, downSeconds) = try await timed {
            let target = try await Self.target(in: "app", of: database)
            let down = Synchronizer(
                cloud: try EmbeddedCloud(path: cloudPath), adapters: [SyncedAdapter(target)], configuration: SyncConfiguration(deviceID: "target"))
            let report = try await BenchNotes.sync(down)
            await target.close()
            return report
        }
        guard uploaded.uploaded == records, downloaded.downloaded == records else {
            throw BenchmarkError("moved \(uploaded.uploaded) up and \(downloaded.downloaded) down, expected \(records)")
        }
        let copied = try await Self.count(on: database, "app.note")
        guard copied == records else { throw BenchmarkError("PostgreSQL has \(copied) rows, expected \(records)") }
        return (upSeconds + downSeconds, upSeconds, downSeconds)
    }

    /// One gateway with both adapters on the zone and `parallelism: 2`, as `gateway sync` runs it:
    /// the PostgreSQL adapter downloads each batch the SQLite adapter uploads, in one sync, into
    /// `app_parallel.note` (a fresh source file and cloud, so nothing is shared with the first run).
    private func syncInParallel(records: Int, database: PostgresEndpoint, workDirectory: URL) async throws -> Double {
        let source = workDirectory.appendingPathComponent("source-parallel.sqlite").path
        try BenchNotes.makeDatabase(source, rows: records)
        let cloudPath = workDirectory.appendingPathComponent("cloud-parallel.sqlite").path
        // Timed from opening the cloud and both stores, as a `gateway sync` run does.
        let (report, seconds) = try await timed {
            let cloud = try EmbeddedCloud(path: cloudPath)
            let target = try await Self.target(in: "app_parallel", of: database)
            let gateway = Synchronizer(
                cloud: cloud, adapters: [SyncedAdapter(try BenchNotes.adapter(source, name: "source")), SyncedAdapter(target)],
                configuration: SyncConfiguration(deviceID: "gateway", parallelism: 2))
            let report = try await gateway.sync()
            await target.close()
            return report
        }
        guard report.succeeded, report.adapters[0].uploaded == records, report.adapters[1].downloaded == records else {
            throw BenchmarkError(
                "one parallel sync moved \(report.adapters[0].uploaded) up and \(report.adapters[1].downloaded) down, expected \(records): \(report.adapters.map(\.outcome))")
        }
        let copied = try await Self.count(on: database, "app_parallel.note")
        guard copied == records else { throw BenchmarkError("PostgreSQL has \(copied) rows, expected \(records)") }
        return seconds
    }

    /// The PostgreSQL adapter on `schema.note`, on the bench zone.
    private static func target(in schema: String, of database: PostgresEndpoint) async throws -> PostgresAdapter {
        try await PostgresAdapter.open(
            PostgresAdapterConfiguration(
                name: "target", endpoint: database, schema: schema, zoneID: BenchNotes.zone, tables: [PostgresTableMapping(table: "note")]))
    }

    static func pgloaderPath() -> String? {
        ["/usr/bin/pgloader", "/usr/local/bin/pgloader"].first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Times pgloader migrating the `note` table (schema and data) into the database's public schema.
    static func runPgloader(
        _ pgloader: String, source: String, database: PostgresEndpoint, workDirectory: URL, table: String = "note"
    ) async throws -> Double {
        let script = workDirectory.appendingPathComponent("load.pgl")
        let target = "postgresql://\(database.username)@\(database.host):\(database.port)/\(database.database)"
        try Data(
            """
            LOAD DATABASE FROM sqlite://\(source) INTO \(target)
            WITH include drop, create tables, create indexes, reset sequences
            INCLUDING ONLY TABLE NAMES LIKE '\(table)';
            """.utf8
        ).write(to: script)
        let log = workDirectory.appendingPathComponent("pgloader.log").path
        let (status, seconds) = try await timed {
            try await ChildProcess(
                pgloader, arguments: ["--no-ssl-cert-verification", script.path], directory: workDirectory.path, standardOutput: log,
                standardError: log
            ).wait(timeout: .seconds(1800))
        }
        guard status == 0 else {
            throw BenchmarkError("pgloader failed (\(status)): \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
        }
        return seconds
    }

    static func count(on endpoint: PostgresEndpoint, _ table: String) async throws -> Int {
        Int(try await Self.count(on: endpoint, table, column: "count(*)::text")) ?? -1
    }

    static func count(on endpoint: PostgresEndpoint, _ table: String, column: String) async throws -> String {
        try await PostgresConnectionPool.withOneConnection(to: endpoint, doing: "counting") { connection in
            let rows = try await connection.query(PostgresQuery(unsafeSQL: "SELECT \(column) FROM \(table)"), logger: connection.logger)
            var text = ""
            for try await (value) in rows.decode(String?.self) { text = value ?? "" }
            return text
        }
    }
}
