import Foundation
import GRDB
import GatewayTesting
import PostgresNIO
import PostgresSupport
import PostgresTesting
import TestScheduling
import Testing

/// The gateway when its PostgreSQL server dies or is not there yet: syncs end instead of hanging,
/// the service keeps going and picks the server up when it is back, and nothing is lost.
@Suite("PostgreSQL servers that die or start late", .serialized, .heavy)
struct ServerRestartTests {
    static func sqliteRows(_ path: String, count: Int) async throws {
        try await DatabaseQueue(path: path).write { db in
            try db.execute(sql: "CREATE TABLE item (id INTEGER PRIMARY KEY, title TEXT, n INTEGER)")
            for index in 0..<count {
                try db.execute(sql: "INSERT INTO item VALUES (?, ?, ?)", arguments: [index, "row \(index)", index * 3])
            }
        }
    }

    /// Polls `condition` while `service` runs, for at most `timeout`; fails with `what` and the
    /// service's log when the service exits or time runs out first.
    static func wait(
        for what: String, while service: ChildProcess, timeout: Duration, log: () -> String, every pause: Duration = .milliseconds(50),
        until condition: () async throws -> Bool
    ) async throws {
        let deadline = ContinuousClock.now + timeout
        while try await !condition() {
            guard service.isRunning, ContinuousClock.now < deadline else { throw ConformanceFailure("\(what):\n\(log())") }
            try await Task.sleep(for: pause)
        }
    }

    static func postgresCount(_ endpoint: PostgresEndpoint) async throws -> Int {
        try await PostgresConnectionPool.withOneConnection(to: endpoint, doing: "counting") { connection in
            let rows = try await connection.query("SELECT count(*)::int8 FROM public.item", logger: connection.logger)
            var count: Int64 = -1
            for try await (value) in rows.decode(Int64.self) { count = value }
            return Int(count)
        }
    }

    static func config(_ database: PostgresEndpoint, gateway: String = "", requestTimeout: String = "5s") -> String {
        """
        gateway: { parallelism: 2, retry: { max_attempts: 2, base_delay: 100ms }, control: { listen: "127.0.0.1:0" }\(gateway) }
        adapters:
          - { name: app, kind: sqlite, path: app.sqlite, zone: Items, tables: [{ table: item }] }
          - { name: crm, kind: postgres, url: "\(database)", zone: Items, request_timeout: \(requestTimeout), tables: [{ table: item }] }
        """
    }

    @Test("gateway sync with PostgreSQL killed mid-sync ends (it used to hang), and the next sync converges", .timeLimit(.minutes(3)))
    func syncSurvivesAKill() async throws {
        let cluster = try await PostgresTestCluster.start(durableCommits: true)
        let database = try await cluster.freshDatabase("killed")
        try await PostgresConnectionPool.execute(
            ["CREATE TABLE public.item (id integer PRIMARY KEY, title text, n bigint)"], on: database, doing: "setup")
        let directory = try TemporaryDirectory(prefix: "pg-killed")
        defer { directory.remove() }
        try await Self.sqliteRows(directory.path("app.sqlite"), count: 20_000)
        // A page's apply after the restart (durable commits, a cluster recovering, the suite's
        // other heavy tests beside it) took over 5 s once; the kill itself ends requests at once.
        try Data(Self.config(database, requestTimeout: "30s").utf8).write(to: directory.url.appendingPathComponent("config.yaml"))

        let sync = try ChildProcess(
            try BuiltExecutable.path("gateway"), arguments: ["sync", "--progress", "json"], directory: directory.url.path,
            standardOutput: directory.path("sync.out"), standardError: directory.path("sync.err"))
        // Kill the server once rows have started to arrive in it.
        let deadline = ContinuousClock.now + .seconds(120)
        while ((try? String(contentsOfFile: directory.path("sync.err"), encoding: .utf8)) ?? "").components(separatedBy: "\"didFetch\"").count < 3 {
            guard sync.isRunning, ContinuousClock.now < deadline else { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        try await cluster.stop(immediately: true)
        try await Task.sleep(for: .milliseconds(500))
        try await cluster.start()
        let status = try await sync.wait(timeout: .seconds(90))
        let output = (try? String(contentsOfFile: directory.path("sync.out"), encoding: .utf8)) ?? ""
        #expect(status == 0 || status == 1, "the sync ended by itself: \(output)")
        if status == 1 { #expect(output.contains("crm"), "the failure names the adapter: \(output)") }

        let again = try await GatewayCLI.run(["sync", "--progress", "none"], in: directory.url)
        #expect(again.status == 0, "\(again)")
        #expect(try await Self.postgresCount(database) == 20_000)
        let quiet = try await GatewayCLI.run(["sync", "--progress", "none"], in: directory.url)
        #expect(quiet.stdout.hasPrefix("Nothing to do"), "\(quiet)")
        await cluster.destroy()
    }

    @Test("gateway sync with an unreachable store syncs the other adapters and names the one that failed")
    func syncWithAStoreDown() async throws {
        let cluster = try await PostgresTestCluster.start()
        let database = try await cluster.freshDatabase("down")
        try await PostgresConnectionPool.execute(
            ["CREATE TABLE public.item (id integer PRIMARY KEY, title text, n bigint)"], on: database, doing: "setup")
        try await cluster.stop(immediately: false)
        let directory = try TemporaryDirectory(prefix: "pg-down")
        defer { directory.remove() }
        try await Self.sqliteRows(directory.path("app.sqlite"), count: 10)
        try Data(Self.config(database).utf8).write(to: directory.url.appendingPathComponent("config.yaml"))
        let result = try await GatewayCLI.run(["sync", "--progress", "none"], in: directory.url)
        #expect(result.status == 1, "\(result)")
        #expect(result.stdout.contains("app") && result.stdout.contains("synced"), "\(result)")
        #expect(result.stdout.contains("adapter crm") && result.stdout.contains("cannot open its store"), "\(result)")
        await cluster.destroy()
    }

    @Test("gateway run started while one store is down syncs the others, and that one as soon as it is back", .timeLimit(.minutes(3)))
    func serviceOpensALateStore() async throws {
        let cluster = try await PostgresTestCluster.start(durableCommits: true)
        let store = try await cluster.freshDatabase("late_one")
        try await PostgresConnectionPool.execute(
            ["CREATE TABLE public.item (id integer PRIMARY KEY, title text, n bigint)"], on: store, doing: "setup")
        try await cluster.stop(immediately: false)
        let directory = try TemporaryDirectory(prefix: "pg-late-store")
        defer { directory.remove() }
        try await Self.sqliteRows(directory.path("app.sqlite"), count: 40)
        try Data(Self.config(store, gateway: ", sync_interval: 1s").utf8).write(to: directory.url.appendingPathComponent("config.yaml"))
        let service = try ChildProcess(
            try BuiltExecutable.path("gateway"), arguments: ["run"], directory: directory.url.path,
            standardOutput: directory.path("run.out"), standardError: directory.path("run.err"))
        defer { if service.isRunning { service.kill() } }
        func log() -> String { (try? String(contentsOfFile: directory.path("run.err"), encoding: .utf8)) ?? "" }
        try await Self.wait(for: "app never synced", while: service, timeout: .seconds(60), log: log) {
            log().contains("adapter=app") && log().contains("adapter synced")
        }
        #expect(log().contains("store cannot be opened yet"), "\(log())")
        // The two adapters sync side by side: crm's failed attempt may be logged after app's sync.
        try await Self.wait(for: "crm never failed alone", while: service, timeout: .seconds(30), log: log) {
            log().contains("adapter=crm") && log().contains("cannot open its store")
        }
        try await cluster.start()
        try await Self.wait(for: "the rows never arrived", while: service, timeout: .seconds(90), log: log, every: .milliseconds(200)) {
            (try? await Self.postgresCount(store)) == 40
        }
        service.terminate()
        #expect(try await service.wait(timeout: .seconds(30)) == 0)
        await cluster.destroy()
    }

    @Test("gateway run started while its PostgreSQL cloud and store are down waits for them, then syncs without a restart", .timeLimit(.minutes(3)))
    func serviceWaitsForServers() async throws {
        let cluster = try await PostgresTestCluster.start(durableCommits: true)
        let store = try await cluster.freshDatabase("late_store")
        let cloud = try await cluster.freshDatabase("late_cloud")
        try await PostgresConnectionPool.execute(
            ["CREATE TABLE public.item (id integer PRIMARY KEY, title text, n bigint)"], on: store, doing: "setup")
        try await cluster.stop(immediately: false)
        let directory = try TemporaryDirectory(prefix: "pg-late")
        defer { directory.remove() }
        try await Self.sqliteRows(directory.path("app.sqlite"), count: 50)
        try Data(
            (Self.config(store, gateway: ", sync_interval: 1s") + "\ncloud: { kind: postgres, url: \"\(cloud)\" }\n").utf8
        ).write(to: directory.url.appendingPathComponent("config.yaml"))
        let service = try ChildProcess(
            try BuiltExecutable.path("gateway"), arguments: ["run"], directory: directory.url.path,
            standardOutput: directory.path("run.out"), standardError: directory.path("run.err"))
        defer { if service.isRunning { service.kill() } }
        func log() -> String { (try? String(contentsOfFile: directory.path("run.err"), encoding: .utf8)) ?? "" }

        // The control server and the first attempt to open the cloud start side by side: wait
        // for both lines, in whichever order they come.
        try await Self.wait(for: "no retry or no control server logged", while: service, timeout: .seconds(60), log: log) {
            log().contains("cannot open the cloud") && log().firstMatch(of: /address=127\.0\.0\.1:(\d+)/) != nil
        }
        let port = try #require(log().firstMatch(of: /address=127\.0\.0\.1:(\d+)/).flatMap { Int($0.1) })
        let waiting = try await LoopbackHTTP.send("GET", port: port, path: "/readyz")
        #expect(waiting.status == 503 && waiting.text.contains("the cloud cannot be opened yet"), "\(waiting.text)")
        #expect(service.isRunning, "the service waits instead of exiting")

        try await cluster.start()
        try await Self.wait(for: "the rows never arrived", while: service, timeout: .seconds(90), log: log, every: .milliseconds(200)) {
            (try? await Self.postgresCount(store)) == 50
        }
        service.terminate()
        #expect(try await service.wait(timeout: .seconds(30)) == 0)
        await cluster.destroy()
    }
}
