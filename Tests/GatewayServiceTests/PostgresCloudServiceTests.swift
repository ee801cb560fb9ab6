import Foundation
import GRDB
import GatewayTesting
import PostgresNIO
import PostgresSupport
import PostgresTesting
import TestScheduling
import Testing

/// The gateway with PostgreSQL on both sides: as a store behind the `postgres` adapter, and as
/// the cloud that gateways on different machines share (here, separate processes with separate
/// state folders on one machine).
@Suite("PostgreSQL stores and clouds end to end", .heavy)
struct PostgresCloudServiceTests {
    static let sqliteSchema = "CREATE TABLE item (name TEXT PRIMARY KEY, title TEXT, rank INTEGER);"

    /// Where a gateway keeps its rows.
    enum Store {
        case sqlite(seedRows: Int)
        case postgres(PostgresEndpoint, schema: String)
    }

    /// A gateway's folder: its config, its store and its state folder.
    struct GatewayFolder {
        let directory: TemporaryDirectory
        let store: Store
        var database: String { directory.path("items.sqlite") }

        init(_ label: String, cloudURL: String, store: Store, deviceID: String? = nil) async throws {
            directory = try TemporaryDirectory(prefix: "gateway-pg-\(label)")
            self.store = store
            let device = deviceID.map { ", device_id: \($0)" } ?? ""
            let adapter: String
            switch store {
            case .sqlite(let seedRows):
                adapter = "{ name: items, kind: sqlite, path: items.sqlite, zone: Items, poll_interval: 100ms, tables: [{ table: item }] }"
                try await DatabaseQueue(path: directory.path("items.sqlite")).write { db in
                    try db.execute(sql: PostgresCloudServiceTests.sqliteSchema)
                    for index in 0..<seedRows {
                        try db.execute(
                            sql: "INSERT INTO item (name, title, rank) VALUES (?, ?, ?)", arguments: ["seed-\(index)", "seed \(index)", index])
                    }
                }
            case .postgres(let endpoint, let schema):
                adapter = "{ name: items, kind: postgres, url: \"\(endpoint)\", schema: \(schema), zone: Items, tables: [{ table: item }] }"
                try await PostgresCloudServiceTests.execute(
                    on: endpoint, "CREATE SCHEMA \(schema)", "CREATE TABLE \(schema).item (name text PRIMARY KEY, title text, rank integer)")
            }
            let config = """
                gateway: { sync_interval: 1s, batch_size: 100, control: { listen: "127.0.0.1:0" }\(device) }
                cloud: { kind: postgres, url: "\(cloudURL)", schema: shared_cloud }
                adapters:
                  - \(adapter)
                """
            try Data(config.utf8).write(to: directory.url.appendingPathComponent("config.yaml"))
        }

        func start() throws -> ChildProcess {
            try ChildProcess(
                try BuiltExecutable.path("gateway"), arguments: ["run"], directory: directory.url.path,
                standardOutput: directory.path("run.out"), standardError: directory.path("run.err"))
        }

        /// Every row as `name|title|rank`, sorted.
        func contents() async throws -> [String] {
            switch store {
            case .sqlite:
                return try await PostgresCloudServiceTests.sqliteContents(database)
            case .postgres(let endpoint, let schema):
                return try await PostgresCloudServiceTests.postgresContents(endpoint, table: "\(schema).item")
            }
        }

        var log: String { (try? String(contentsOfFile: directory.path("run.err"), encoding: .utf8)) ?? "" }
    }

    static func sqliteContents(_ path: String, table: String = "item") async throws -> [String] {
        try await DatabaseQueue(path: path).read { db in
            try Row.fetchAll(db, sql: "SELECT name, title, rank FROM \(table) ORDER BY name").map { row in
                "\(row[0] as String)|\((row[1] as String?) ?? "")|\((row[2] as Int64?).map(String.init) ?? "")"
            }.sorted()
        }
    }

    static func postgresContents(_ endpoint: PostgresEndpoint, table: String) async throws -> [String] {
        let rows = try await PostgresConnectionPool.withOneConnection(to: endpoint, doing: "reading \(table)") { connection in
            let rows = try await connection.query(
                PostgresQuery(unsafeSQL: "SELECT name, title, rank::int8 FROM \(table) ORDER BY name COLLATE \"C\""), logger: connection.logger)
            var lines: [String] = []
            for try await (name, title, rank) in rows.decode((String, String?, Int64?).self) {
                lines.append("\(name)|\(title ?? "")|\(rank.map(String.init) ?? "")")
            }
            return lines
        }
        return rows.sorted()
    }

    static func execute(on endpoint: PostgresEndpoint, _ statements: String...) async throws {
        try await PostgresConnectionPool.execute(statements, on: endpoint, doing: "a test statement")
    }

    @Test("two gateway processes converge through a PostgreSQL cloud while programs write to both stores; a twin is locked out")
    func twoGateways() async throws {
        let cloud = try await PostgresTestServer.freshDatabase("two_gateways")
        let a = try await GatewayFolder("a", cloudURL: "\(cloud)", store: .sqlite(seedRows: 300))
        let b = try await GatewayFolder("b", cloudURL: "\(cloud)", store: .postgres(cloud, schema: "app_b"), deviceID: "twin-device")
        defer {
            a.directory.remove()
            b.directory.remove()
        }
        let gatewayA = try a.start()
        let gatewayB = try b.start()
        defer {
            if gatewayA.isRunning { gatewayA.kill() }
            if gatewayB.isRunning { gatewayB.kill() }
        }

        let sqliteWriter = try ChildProcess(
            try BuiltExecutable.path("SQLiteWriter"), arguments: [a.database, "item", "w", "80", "10"],
            standardOutput: a.directory.path("writer.out"), standardError: a.directory.path("writer.err"))
        let postgresWriter = try ChildProcess(
            try BuiltExecutable.path("PostgresWriter"), arguments: ["\(cloud)", "app_b", "item", "p", "80", "10"],
            standardOutput: b.directory.path("writer.out"), standardError: b.directory.path("writer.err"))
        #expect(try await sqliteWriter.wait(timeout: .seconds(120)) == 0)
        #expect(
            try await postgresWriter.wait(timeout: .seconds(120)) == 0,
            "\((try? String(contentsOfFile: b.directory.path("writer.out"), encoding: .utf8)) ?? "")")
        // Edit on b rows that came from a, once they are there.
        let arrival = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < arrival, try await !b.contents().contains("seed-2|seed 2|2") {
            try await Task.sleep(for: .milliseconds(100))
        }
        try await Self.execute(on: cloud, "UPDATE app_b.item SET title = 'edited on b' WHERE name IN ('seed-1', 'seed-2')")

        let deadline = ContinuousClock.now + .seconds(90)
        var converged = false
        while ContinuousClock.now < deadline {
            let (left, right) = (try await a.contents(), try await b.contents())
            if left.count == 460 && left == right {
                converged = true
                break
            }
            try await Task.sleep(for: .milliseconds(250))
        }
        let (left, right) = (try await a.contents(), try await b.contents())
        #expect(
            converged,
            "a has \(left.count) rows, b \(right.count); only in a: \(Set(left).subtracting(right).sorted().prefix(5)), only in b: \(Set(right).subtracting(left).sorted().prefix(5))")
        let final = try await a.contents()
        #expect(final.filter { $0.contains("edited on b") }.count == 2)
        #expect(final.contains("p-1|updated by p|1"), "the PostgreSQL writer's rows reached SQLite")
        #expect(final.contains("w-1|updated by w|1"))

        // Another machine's gateway with the same device id (the same state) is locked out by
        // the cloud's advisory lock, although its state folder is a different one.
        let twin = try await GatewayFolder("twin", cloudURL: "\(cloud)", store: .sqlite(seedRows: 0), deviceID: "twin-device")
        defer { twin.directory.remove() }
        let locked = try await GatewayCLI.run(["sync"], in: twin.directory.url)
        #expect(locked.status == 75, "\(locked)")
        #expect(locked.stderr.contains("device id twin-device"), "\(locked)")

        gatewayA.terminate()
        gatewayB.terminate()
        #expect(try await gatewayA.wait(timeout: .seconds(30)) == 0, "\(a.log)")
        #expect(try await gatewayB.wait(timeout: .seconds(30)) == 0, "\(b.log)")
        let afterStop = try await GatewayCLI.run(["sync"], in: twin.directory.url)
        #expect(afterStop.status == 0, "the lock is released when its holder stops: \(afterStop)")
    }

    @Test("SQLite and PostgreSQL stores converge through the embedded cloud, with types, edits and deletes")
    func sqliteAndPostgres() async throws {
        let database = try await PostgresTestServer.freshDatabase("sqlite_postgres")
        let directory = try TemporaryDirectory(prefix: "gateway-sqlite-postgres")
        defer { directory.remove() }
        try await DatabaseQueue(path: directory.path("app.sqlite")).write { db in
            try db.execute(
                sql: """
                    CREATE TABLE item (name TEXT PRIMARY KEY, title TEXT, rank INTEGER, price REAL, done BOOLEAN, due DATETIME, data BLOB);
                    INSERT INTO item VALUES ('a', 'Alpha', 1, 1.5, 1, '2026-01-02T03:04:05.678Z', x'00ff10');
                    INSERT INTO item VALUES ('b', 'Beta', 2, NULL, 0, NULL, NULL);
                    INSERT INTO item VALUES ('c|d', 'Gamma ☃', -3, 2.25, 1, '1999-12-31T23:59:59.000Z', x'');
                    """)
        }
        try await Self.execute(
            on: database, "CREATE SCHEMA crm",
            """
            CREATE TABLE crm.item (name text PRIMARY KEY, title varchar(40), rank bigint, price double precision, done boolean,
                                   due timestamptz, data bytea)
            """)
        let config = """
            adapters:
              - { name: app, kind: sqlite, path: app.sqlite, zone: Items, tables: [{ table: item }] }
              - { name: crm, kind: postgres, url: "\(database)", schema: crm, zone: Items, tables: [{ table: item }] }
            """
        try Data(config.utf8).write(to: directory.url.appendingPathComponent("config.yaml"))
        let first = try await GatewayCLI.run(["sync"], in: directory.url)
        #expect(first.status == 0, "\(first)")
        #expect(first.stdout.contains("crm      Items           3         0"), "\(first)")
        let second = try await GatewayCLI.run(["sync"], in: directory.url)
        #expect(second.stdout.hasPrefix("Nothing to do"), "\(second)")

        let columns = "name, title, rank, price, done, due, data"
        let pool = PostgresConnectionPool(endpoint: database, maximumConnections: 1)
        let rows = try await pool.withConnection(doing: "reading") { connection in
            let rows = try await connection.query(
                PostgresQuery(
                    unsafeSQL: """
                        SELECT name, title, rank, price::text, done::text, to_char(due AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.MS'),
                               encode(data, 'hex') FROM crm.item ORDER BY name
                        """), logger: connection.logger)
            var lines: [String] = []
            for try await (name, title, rank, price, done, due, data)
                in rows.decode((String, String?, Int64?, String?, String?, String?, String?).self)
            {
                lines.append([name, title, rank.map(String.init), price, done, due, data].map { $0 ?? "∅" }.joined(separator: " "))
            }
            return lines
        }
        #expect(
            rows == [
                "a Alpha 1 1.5 true 2026-01-02 03:04:05.678 00ff10", "b Beta 2 ∅ false ∅ ∅",
                "c|d Gamma ☃ -3 2.25 true 1999-12-31 23:59:59.000 ",
            ], "\(columns)")

        // Edits and deletes made in PostgreSQL by another program come back to SQLite.
        try await pool.withConnection(doing: "editing") { connection in
            try await connection.query("UPDATE crm.item SET title = 'Beta edited', done = true WHERE name = 'b'", logger: connection.logger)
            try await connection.query("DELETE FROM crm.item WHERE name = 'a'", logger: connection.logger)
            try await connection.query(
                "INSERT INTO crm.item (name, title, rank) VALUES ('new', 'From PostgreSQL', 9)", logger: connection.logger)
        }
        await pool.close()
        // Adapters sync in config order: crm uploads in the first run, app downloads in the next.
        for _ in 0..<2 {
            let run = try await GatewayCLI.run(["sync"], in: directory.url)
            #expect(run.status == 0, "\(run)")
        }
        let sqlite = try await DatabaseQueue(path: directory.path("app.sqlite")).read { db in
            try Row.fetchAll(db, sql: "SELECT name, title, done FROM item ORDER BY name").map { "\($0[0] as String) \($0[1] as String?  ?? "∅") \($0[2] as Int64? ?? -1)" }
        }
        #expect(sqlite == ["b Beta edited 1", "c|d Gamma ☃ 1", "new From PostgreSQL -1"])
        let fourth = try await GatewayCLI.run(["sync"], in: directory.url)
        #expect(fourth.stdout.hasPrefix("Nothing to do"), "\(fourth)")
    }

    @Test("gateway run over HTTP: status and metrics show SQLite and PostgreSQL changes before they sync, and not after")
    func serviceStatusForPostgres() async throws {
        let database = try await PostgresTestServer.freshDatabase("service_status")
        try await Self.execute(on: database, "CREATE TABLE public.note (id integer PRIMARY KEY, title text)")
        let directory = try TemporaryDirectory(prefix: "gateway-pg-service")
        defer { directory.remove() }
        // A long debounce holds the change back long enough to be seen pending.
        try await DatabaseQueue(path: directory.path("app.sqlite")).write { db in
            try db.execute(sql: "CREATE TABLE note (id INTEGER PRIMARY KEY, title TEXT)")
        }
        let config = """
            gateway: { sync_interval: 1h, debounce: 10m, control: { listen: "127.0.0.1:0", token: "${GATEWAY_TOKEN}" } }
            adapters:
              - { name: crm, kind: postgres, url: "\(database)", zone: Notes, tables: [{ table: note }] }
              - { name: app, kind: sqlite, path: app.sqlite, zone: AppNotes, tables: [{ table: note }] }
            """
        try Data(config.utf8).write(to: directory.url.appendingPathComponent("config.yaml"))
        let service = try ChildProcess(
            try BuiltExecutable.path("gateway"), arguments: ["run"], directory: directory.url.path,
            environment: ProcessInfo.processInfo.environment.merging(["GATEWAY_TOKEN": "pg-token"]) { _, new in new },
            standardOutput: directory.path("run.out"), standardError: directory.path("run.err"))
        defer { if service.isRunning { service.kill() } }
        func log() -> String { (try? String(contentsOfFile: directory.path("run.err"), encoding: .utf8)) ?? "" }
        let deadline = ContinuousClock.now + .seconds(60)
        // The control server and the first sync start side by side: wait for both lines.
        while !log().contains("sync finished") || log().firstMatch(of: /address=127\.0\.0\.1:(\d+)/) == nil {
            guard ContinuousClock.now < deadline, service.isRunning else { throw ConformanceFailure("the service did not start:\n\(log())") }
            try await Task.sleep(for: .milliseconds(50))
        }
        let port = try #require(log().firstMatch(of: /address=127\.0\.0\.1:(\d+)/).flatMap { Int($0.1) })
        func status() async throws -> ServiceStatusSnapshot {
            try JSONDecoder().decode(ServiceStatusSnapshot.self, from: try await LoopbackHTTP.send("GET", port: port, path: "/status").body)
        }
        func metrics() async throws -> String { try await LoopbackHTTP.send("GET", port: port, path: "/metrics").text }
        // Startup may bring follow-up syncs (the cloud signals the zones the first sync created):
        // wait until no sync has run for 3 s, so none of them takes the changes below.
        func syncCount() async throws -> String {
            try await metrics().split(separator: "\n").first { $0.hasPrefix("gateway_syncs_total{") }.map(String.init) ?? ""
        }
        var quiet = try await syncCount()
        while true {
            guard ContinuousClock.now < deadline else { throw ConformanceFailure("the service kept syncing:\n\(log())") }
            try await Task.sleep(for: .seconds(3))
            let now = try await syncCount()
            if now == quiet { break }
            quiet = now
        }

        try await Self.execute(on: database, "INSERT INTO public.note VALUES (1, 'written in PostgreSQL')")
        try await DatabaseQueue(path: directory.path("app.sqlite")).write { db in
            try db.execute(sql: "INSERT INTO note VALUES (1, 'written in SQLite')")
        }
        let pending = try await status()
        #expect(pending.hasChanges)
        #expect(pending.adapters.map(\.pendingChanges) == [1, 1])
        let before = try await metrics()
        #expect(before.contains("gateway_has_changes{adapter=\"crm\"} 1"), "\(before)")
        #expect(before.contains("gateway_has_changes{adapter=\"app\"} 1"), "\(before)")
        #expect(try await LoopbackHTTP.send("POST", port: port, path: "/sync").status == 401, "POST needs the token")

        let synced = try await LoopbackHTTP.send("POST", port: port, path: "/sync?wait=1", headers: ["Authorization": "Bearer pg-token"])
        #expect(synced.status == 200, "\(synced.text)")
        let after = try await status()
        #expect(!after.hasChanges)
        #expect(after.adapters.map(\.pendingChanges) == [0, 0])
        let text = try await metrics()
        for adapter in ["crm", "app"] {
            #expect(text.contains("gateway_has_changes{adapter=\"\(adapter)\"} 0"), "\(text)")
            #expect(text.contains("gateway_records_uploaded_total{adapter=\"\(adapter)\"} 1"), "\(text)")
        }
        // Every ask for a sync is counted by what asked: the start, and the POST above.
        for trigger in ["start", "http"] {
            #expect(text.contains("gateway_sync_requests_total{trigger=\"\(trigger)\"}"), "\(text)")
        }
        service.terminate()
        #expect(try await service.wait(timeout: .seconds(30)) == 0)
    }

    /// The parts of `/status` this suite reads.
    struct ServiceStatusSnapshot: Decodable {
        struct Adapter: Decodable {
            var name: String
            var pendingChanges: Int
        }
        var hasChanges: Bool
        var adapters: [Adapter]
    }
}
