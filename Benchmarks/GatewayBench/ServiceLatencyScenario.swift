import EmbeddedCloud
import Foundation
import GRDB
import GatewayCore
import GatewayTesting
import PostgresNIO
import PostgresSupport
import PostgresTesting

/// Change-to-cloud latency in service mode: the real `gateway run` (built next to this
/// benchmark) syncs a store with the embedded cloud while single-row changes are written to the
/// store one at a time; each latency runs from the change's commit until the record is readable
/// in the cloud. SQLite is watched by polling (the default 100 ms), PostgreSQL by NOTIFY.
struct ServiceLatencyScenario: Scenario {
    let name = "service-latency"
    let summary = "service mode: change-to-cloud latency of 200 single-row changes (N is ignored), SQLite polling and PostgreSQL NOTIFY"
    let changes = 200

    func run(records _: Int, workDirectory: URL) async throws -> [Measurement] {
        let gateway = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
            .appendingPathComponent("gateway").path
        guard FileManager.default.isExecutableFile(atPath: gateway) else {
            throw BenchmarkError("build the gateway next to the benchmark first: swift build -c release --product gateway")
        }
        var measurements: [Measurement] = []

        let sqliteFolder = workDirectory.appendingPathComponent("sqlite")
        try FileManager.default.createDirectory(at: sqliteFolder, withIntermediateDirectories: true)
        var waiting = Configuration()
        waiting.busyMode = .timeout(30)  // the gateway's transactions hold the write lock for a moment
        let database = try DatabaseQueue(path: sqliteFolder.appendingPathComponent("app.sqlite").path, configuration: waiting)
        try await database.write { db in try db.execute(sql: "CREATE TABLE item (id INTEGER PRIMARY KEY, title TEXT)") }
        let sqlite = try await latencies(
            gateway: gateway, folder: sqliteFolder,
            adapter: "{ name: app, kind: sqlite, path: app.sqlite, zone: Latency, tables: [{ table: item }] }"
        ) { index in
            try await database.write { db in try db.execute(sql: "INSERT INTO item (id, title) VALUES (?, 'change')", arguments: [index]) }
        }
        measurements += Self.percentiles(sqlite, store: "SQLite (polling every 100 ms)", p99Goal: 500)

        let endpoint = try await PostgresTestServer.freshDatabase("latency")
        let pool = PostgresConnectionPool(endpoint: endpoint, maximumConnections: 1)
        try await pool.withConnection(doing: "creating the table") { connection in
            try await connection.query("CREATE TABLE public.item (id integer PRIMARY KEY, title text)", logger: connection.logger)
        }
        let postgresFolder = workDirectory.appendingPathComponent("postgres")
        try FileManager.default.createDirectory(at: postgresFolder, withIntermediateDirectories: true)
        let postgres = try await latencies(
            gateway: gateway, folder: postgresFolder,
            adapter: "{ name: app, kind: postgres, url: \"\(endpoint)\", zone: Latency, tables: [{ table: item }] }"
        ) { index in
            try await pool.withConnection(doing: "a change") { connection in
                _ = try await connection.query("INSERT INTO public.item (id, title) VALUES (\(index), 'change')", logger: connection.logger)
            }
        }
        await pool.close()
        measurements += Self.percentiles(postgres, store: "PostgreSQL (NOTIFY)", p99Goal: 250)
        return measurements
    }

    static func percentiles(_ samples: [Double], store: String, p99Goal: Double) -> [Measurement] {
        let sorted = samples.sorted()
        func percentile(_ p: Double) -> Double { sorted[min(sorted.count - 1, Int((p * Double(sorted.count)).rounded(.up)) - 1)] }
        return [
            Measurement(name: "\(store): p50", value: percentile(0.5), unit: "ms"),
            Measurement(name: "\(store): p99", value: percentile(0.99), unit: "ms", goal: .atMost(p99Goal)),
            Measurement(name: "\(store): max", value: sorted.last ?? 0, unit: "ms"),
        ]
    }

    /// Starts `gateway run` on a config with `adapter` and the embedded cloud, makes the changes
    /// one at a time and returns each one's latency in milliseconds.
    private func latencies(
        gateway: String, folder: URL, adapter: String, change: (Int) async throws -> Void
    ) async throws -> [Double] {
        let config = """
            gateway: { sync_interval: 1h, control: { listen: "127.0.0.1:0" } }
            cloud: { kind: embedded, path: cloud.sqlite }
            adapters:
              - \(adapter)
            """
        try Data(config.utf8).write(to: folder.appendingPathComponent("config.yaml"))
        let service = try ChildProcess(
            gateway, arguments: ["run"], directory: folder.path, standardOutput: folder.appendingPathComponent("run.out").path,
            standardError: folder.appendingPathComponent("run.err").path)
        defer { if service.isRunning { service.kill() } }
        let zone = ZoneID(zoneName: "Latency")
        // The service creates the cloud and the zone in its first sync.
        let started = ContinuousClock.now
        while try await !Self.zoneExists(folder.appendingPathComponent("cloud.sqlite").path, zone) {
            guard service.isRunning, ContinuousClock.now - started < .seconds(60) else {
                throw BenchmarkError("the service did not start: \((try? String(contentsOf: folder.appendingPathComponent("run.err"), encoding: .utf8)) ?? "")")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        let cloud = try EmbeddedCloud(path: folder.appendingPathComponent("cloud.sqlite").path)
        var samples: [Double] = []
        for index in 1...changes {
            try await change(index)
            let committed = ContinuousClock.now
            let id = RecordID(recordName: "\(index)", zoneID: zone)
            while try await cloud.lookup([id])[0] == nil {
                guard ContinuousClock.now - committed < .seconds(30) else { throw BenchmarkError("change \(index) never reached the cloud") }
                try await Task.sleep(for: .milliseconds(1))
            }
            let elapsed = ContinuousClock.now - committed
            samples.append(Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15)
            // Changes arrive one by one, not in a burst that one sync would take together.
            try await Task.sleep(for: .milliseconds(Int.random(in: 20...60)))
        }
        service.terminate()
        _ = try await service.wait(timeout: .seconds(30))
        return samples
    }

    private static func zoneExists(_ path: String, _ zone: ZoneID) async throws -> Bool {
        guard FileManager.default.fileExists(atPath: path) else { return false }
        return (try? await EmbeddedCloud(path: path).zones().contains(zone)) ?? false
    }
}
