import Foundation
import GRDB
import GatewayTesting
import PostgresNIO
import PostgresSupport
import PostgresTesting

/// `gateway sync` timed as a user runs it: a whole process, from start to exit, opening its
/// stores and installing their triggers on the way, over the `gateway` executable built next to
/// this harness. Each run gets a fresh copy of the source file, a fresh cloud file and state
/// directory, so every run is an initial sync of the same rows.
enum GatewayProcess {
    /// The `gateway` executable of the same build as this harness.
    static func executable() throws -> String {
        let own = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        let path = own.deletingLastPathComponent().appendingPathComponent("gateway").path
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw BenchmarkError("no gateway executable next to gateway-bench at \(path); build both: swift build -c release")
        }
        return path
    }

    /// Runs `gateway sync` on `config` (YAML text) in a fresh `directory`, and returns its
    /// wall-clock seconds from start to exit.
    static func sync(config: String, in directory: URL) async throws -> Double {
        try await syncMeasured(config: config, in: directory).seconds
    }

    /// Runs `gateway sync` on `config` in `directory`, and returns its wall-clock seconds and the
    /// gateway process's own peak resident memory in MB (its `VmHWM`, read every 50 ms while it
    /// runs; a plugin's process is not counted).
    static func syncMeasured(config: String, in directory: URL) async throws -> (seconds: Double, peakMegabytes: Double) {
        try Data(config.utf8).write(to: directory.appendingPathComponent("config.yaml"))
        let log = directory.appendingPathComponent("gateway.log").path
        let gateway = try executable()
        let clock = ContinuousClock()
        let start = clock.now
        let process = try ChildProcess(
            gateway, arguments: ["sync", "--config", "config.yaml", "--progress", "none"], directory: directory.path,
            standardOutput: log, standardError: log)
        let peak = PeakMemoryWatch(pid: process.pid)
        let status = try await withThrowingTaskGroup(of: Int32?.self) { group in
            group.addTask { try await process.wait(timeout: .seconds(1800)) }
            group.addTask {
                while !Task.isCancelled {
                    peak.sample()
                    try? await Task.sleep(for: .milliseconds(50))
                }
                return nil
            }
            defer { group.cancelAll() }
            while let result = try await group.next() {
                if let status = result { return status }
            }
            return -1
        }
        let elapsed = clock.now - start
        guard status == 0 else {
            throw BenchmarkError("gateway sync failed (\(status)): \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
        }
        return (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18, peak.megabytes)
    }

    /// A fresh directory holding a copy of `source` as `source.sqlite`.
    static func freshRun(_ index: Int, of source: String, in workDirectory: URL) throws -> URL {
        let directory = workDirectory.appendingPathComponent("run-\(index)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: source, toPath: directory.appendingPathComponent("source.sqlite").path)
        return directory
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.count.isMultiple(of: 2) ? (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2 : sorted[sorted.count / 2]
    }

    /// How many pairs or runs the whole-process scenarios time.
    static let rounds = 5

    /// Times `rounds` initial syncs of `records` rows from `source` on fresh copies: `prepare`
    /// readies a run's folder and returns its config, `copied` counts the rows that arrived.
    /// Returns the median, slowest-run and duration figures, the median held to `goal` rows/s.
    static func timedRuns(
        records: Int, source: String, workDirectory: URL, goal: Double, runs: Int = rounds, memoryGoal: Double? = nil,
        prepare: (URL) throws -> String, copied: (URL) async throws -> Int
    ) async throws -> [Measurement] {
        var rates: [Double] = []
        var peak = 0.0
        for round in 0..<runs {
            let directory = try freshRun(round, of: source, in: workDirectory)
            let (seconds, megabytes) = try await syncMeasured(config: try prepare(directory), in: directory)
            let arrived = try await copied(directory)
            guard arrived == records else { throw BenchmarkError("the destination has \(arrived) rows, expected \(records)") }
            print(String(format: "  run %d: %.2f s, %.0f rows/s, gateway peak RSS %.1f MB", round + 1, seconds, Double(records) / seconds, megabytes))
            rates.append(Double(records) / seconds)
            peak = max(peak, megabytes)
            try? FileManager.default.removeItem(at: directory)
        }
        return [
            Measurement(name: "gateway sync, whole process, median of \(runs)", value: Double(records) / median(rates), unit: "s"),
            Measurement(name: "rows/s, median of \(runs)", value: median(rates), unit: "rows/s", goal: .atLeast(goal)),
            Measurement(name: "rows/s, slowest run", value: rates.min() ?? 0, unit: "rows/s"),
            Measurement(name: "gateway peak RSS, \(records) rows", value: peak, unit: "MB", goal: memoryGoal.map { .atMost($0) }),
        ]
    }
}

/// SQLite → PostgreSQL with `gateway sync` as a whole process, against `pgloader` as a whole
/// process on the same file: the figure a new user sees. Each pair runs `pgloader` first, then
/// the gateway with default settings, each into a fresh database, on a table of four columns
/// (`notes(id bigint primary key, title text, body text, n bigint)`).
struct PostgresWholeProcessScenario: Scenario {
    let name = "postgres-process"
    let summary = "PostgreSQL: `gateway sync` as a whole process, SQLite → embedded cloud → PostgreSQL, vs `pgloader` as a whole process, 5 pairs (pgloader first)"

    static let columns = "id bigint PRIMARY KEY, title text, body text, n bigint"

    /// A SQLite file with `rows` rows of `notes`.
    static func makeSource(_ path: String, rows: Int) throws {
        let database = try DatabaseQueue(path: path)
        try database.write { db in
            try db.execute(sql: "CREATE TABLE notes (\(columns))")
            try db.execute(
                sql: """
                    WITH RECURSIVE seq(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM seq WHERE i < ?)
                    INSERT INTO notes SELECT i, 'Note number ' || i, 'Lorem ipsum dolor sit amet, consectetur adipiscing elit. ' || i, i * 7 FROM seq
                    """, arguments: [rows])
        }
    }

    func run(records: Int, workDirectory: URL) async throws -> [Measurement] {
        guard let pgloader = PostgresInitialSyncScenario.pgloaderPath() else {
            throw BenchmarkError("pgloader is not installed (Debian: apt-get install pgloader)")
        }
        let source = workDirectory.appendingPathComponent("source.sqlite").path
        try Self.makeSource(source, rows: records)
        var gatewaySeconds: [Double] = []
        var pgloaderSeconds: [Double] = []
        var ratios: [Double] = []
        for round in 0..<GatewayProcess.rounds {
            let loaded = try await PostgresTestServer.freshDatabase("bench_pgloader")
            let synced = try await PostgresTestServer.freshDatabase("bench_gateway")
            try await PostgresConnectionPool.execute(["CREATE TABLE notes (\(Self.columns))"], on: synced, doing: "setting up")
            let directory = try GatewayProcess.freshRun(round, of: source, in: workDirectory)
            let config = """
                gateway: { state_dir: state }
                adapters:
                  - { name: app, kind: sqlite, path: source.sqlite, zone: Notes, tables: [{ table: notes }] }
                  - { name: crm, kind: postgres, url: "postgres://\(synced.username)@\(synced.host):\(synced.port)/\(synced.database)", zone: Notes, tables: [{ table: notes }] }
                """
            let loader = try await PostgresInitialSyncScenario.runPgloader(
                pgloader, source: source, database: loaded, workDirectory: directory, table: "notes")
            let gateway = try await GatewayProcess.sync(config: config, in: directory)
            let copied = try await PostgresInitialSyncScenario.count(on: synced, "notes")
            guard copied == records else { throw BenchmarkError("the gateway left \(copied) rows in notes, expected \(records)") }
            print(String(format: "  pair %d: pgloader %.2f s, gateway %.2f s, ratio %.2f×", round + 1, loader, gateway, gateway / loader))
            gatewaySeconds.append(gateway)
            pgloaderSeconds.append(loader)
            ratios.append(gateway / loader)
            try? FileManager.default.removeItem(at: directory)
        }
        return [
            Measurement(name: "gateway sync, whole process, median of \(GatewayProcess.rounds)", value: GatewayProcess.median(gatewaySeconds), unit: "s"),
            Measurement(name: "pgloader, whole process, median of \(GatewayProcess.rounds)", value: GatewayProcess.median(pgloaderSeconds), unit: "s"),
            Measurement(name: "gateway ÷ pgloader, median of the pairs' ratios", value: GatewayProcess.median(ratios), unit: "×", goal: .atMost(1)),
            Measurement(name: "gateway ÷ pgloader, best pair", value: ratios.min() ?? 0, unit: "×"),
            Measurement(name: "gateway ÷ pgloader, worst pair", value: ratios.max() ?? 0, unit: "×"),
        ]
    }
}

/// SQLite → PostgreSQL cloud with `gateway sync` as whole processes: one gateway uploading a
/// file into its zone, then `gateways` of them at once, each with its own file and zone, all on
/// one cloud. Every run starts on a fresh cloud database.
struct PostgresCloudProcessScenario: Scenario {
    let name = "postgres-cloud"
    let summary = "PostgreSQL cloud: `gateway sync` as whole processes, SQLite file → PostgreSQL cloud; one gateway (5 runs), then 20 at once, a zone each"

    static let gateways = 20

    func run(records: Int, workDirectory: URL) async throws -> [Measurement] {
        let source = workDirectory.appendingPathComponent("source.sqlite").path
        try PostgresWholeProcessScenario.makeSource(source, rows: records)
        func config(_ cloud: PostgresEndpoint, zone: String) -> String {
            """
            gateway: { state_dir: state }
            cloud: { kind: postgres, url: "postgres://\(cloud.username)@\(cloud.host):\(cloud.port)/\(cloud.database)" }
            adapters:
              - { name: app, kind: sqlite, path: source.sqlite, zone: \(zone), tables: [{ table: notes }] }
            """
        }
        func uploaded(_ cloud: PostgresEndpoint) async throws -> Int {
            try await PostgresInitialSyncScenario.count(on: cloud, "gateway_cloud.records")
        }
        var rates: [Double] = []
        for round in 0..<GatewayProcess.rounds {
            let cloud = try await PostgresTestServer.freshDatabase("bench_cloud")
            let directory = try GatewayProcess.freshRun(round, of: source, in: workDirectory)
            let seconds = try await GatewayProcess.sync(config: config(cloud, zone: "Notes"), in: directory)
            guard try await uploaded(cloud) == records else { throw BenchmarkError("the cloud holds \(try await uploaded(cloud)) records, expected \(records)") }
            print(String(format: "  one gateway, run %d: %.2f s, %.0f rows/s", round + 1, seconds, Double(records) / seconds))
            rates.append(Double(records) / seconds)
            try? FileManager.default.removeItem(at: directory)
        }
        let single = GatewayProcess.median(rates)

        let cloud = try await PostgresTestServer.freshDatabase("bench_cloud_many")
        // The cloud's schema is made once before the crowd starts, as on a cloud in use.
        let first = try GatewayProcess.freshRun(1000, of: source, in: workDirectory)
        try Data(config(cloud, zone: "Warmup").utf8).write(to: first.appendingPathComponent("config.yaml"))
        _ = try await GatewayProcess.sync(config: config(cloud, zone: "Warmup"), in: first)
        let warmup = try await uploaded(cloud)
        let directories = try (0..<Self.gateways).map { try GatewayProcess.freshRun(2000 + $0, of: source, in: workDirectory) }
        let (_, seconds) = try await timed {
            try await withThrowingTaskGroup(of: Double.self) { group in
                for (index, directory) in directories.enumerated() {
                    group.addTask { try await GatewayProcess.sync(config: config(cloud, zone: "Notes\(index)"), in: directory) }
                }
                try await group.waitForAll()
            }
        }
        let total = try await uploaded(cloud) - warmup
        guard total == records * Self.gateways else { throw BenchmarkError("the cloud holds \(total) new records, expected \(records * Self.gateways)") }
        let aggregate = Double(total) / seconds
        print(String(format: "  %d gateways at once: %.2f s, %.0f rows/s in aggregate", Self.gateways, seconds, aggregate))
        for directory in directories + [first] { try? FileManager.default.removeItem(at: directory) }
        return [
            Measurement(name: "one gateway, rows/s, median of \(GatewayProcess.rounds)", value: single, unit: "rows/s", goal: .atLeast(50_000)),
            Measurement(name: "one gateway, rows/s, slowest run", value: rates.min() ?? 0, unit: "rows/s"),
            Measurement(name: "\(Self.gateways) gateways at once, rows/s in aggregate", value: aggregate, unit: "rows/s", goal: .atLeast(50_000)),
            Measurement(name: "\(Self.gateways) gateways ÷ one gateway", value: aggregate / single, unit: "×", goal: .atLeast(1)),
        ]
    }
}

/// SQLite → embedded cloud → SQLite with `gateway sync` as a whole process: one gateway, a source
/// file and an empty replica on one zone, run 5 times on fresh copies.
struct CloudRoundTripProcessScenario: Scenario {
    let name = "sqlite-process"
    let summary = "SQLite: `gateway sync` as a whole process, file → embedded cloud → file, 5 runs"

    func run(records: Int, workDirectory: URL) async throws -> [Measurement] {
        let source = workDirectory.appendingPathComponent("source.sqlite").path
        try BenchNotes.makeDatabase(source, rows: records)
        return try await GatewayProcess.timedRuns(records: records, source: source, workDirectory: workDirectory, goal: 100_000) { directory in
            try BenchNotes.makeDatabase(directory.appendingPathComponent("replica.sqlite").path, rows: 0)
            return """
                gateway: { state_dir: state }
                cloud: { kind: embedded, path: cloud.sqlite }
                adapters:
                  - { name: app, kind: sqlite, path: source.sqlite, zone: BenchNotes, tables: [{ table: note }] }
                  - { name: replica, kind: sqlite, path: replica.sqlite, zone: BenchNotes, tables: [{ table: note }] }
                """
        } copied: { directory in
            try await DatabaseQueue(path: directory.appendingPathComponent("replica.sqlite").path).read { db in
                try Int.fetchOne(db, sql: "SELECT count(*) FROM note") ?? 0
            }
        }
    }
}

/// SQLite → embedded cloud → the example Python CSV plugin, with `gateway sync` as a whole
/// process, run 5 times on fresh copies: what the plugin protocol costs end to end.
struct PluginProcessScenario: Scenario {
    let name = "plugin-process"
    let summary = "Plugin: `gateway sync` as a whole process, SQLite file → embedded cloud → Python CSV plugin, 5 runs"
    /// Runs of the scenario; one for the memory scenario.
    var runs = GatewayProcess.rounds
    /// The gateway's peak resident memory it is held to, when it is.
    var memoryGoal: Double?

    func run(records: Int, workDirectory: URL) async throws -> [Measurement] {
        let script = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
            .appendingPathComponent("examples/plugins/csv-folder/csv_folder.py").path
        guard FileManager.default.fileExists(atPath: script) else {
            throw BenchmarkError("run gateway-bench from the repository's root: \(script) is missing")
        }
        let source = workDirectory.appendingPathComponent("source.sqlite").path
        try BenchNotes.makeDatabase(source, rows: records)
        return try await GatewayProcess.timedRuns(
            records: records, source: source, workDirectory: workDirectory, goal: 25_000, runs: runs, memoryGoal: memoryGoal
        ) { _ in
            """
            gateway: { state_dir: state }
            cloud: { kind: embedded, path: cloud.sqlite }
            adapters:
              - { name: app, kind: sqlite, path: source.sqlite, zone: BenchNotes, tables: [{ table: note }] }
              - name: csv
                kind: plugin
                command: python3
                args: ["\(script)"]
                zone: BenchNotes
                settings: { directory: csv, record_types: [note] }
            """
        } copied: { directory in
            try String(contentsOf: directory.appendingPathComponent("csv/note.csv"), encoding: .utf8).split(separator: "\n").count - 1
        }
    }
}

/// The plugin scenario once, for the gateway's peak memory: run it with `--records 1000000`.
struct PluginMemoryScenario: Scenario {
    let name = "plugin-memory"
    let summary = "Plugin: the gateway's peak resident memory in one `plugin-process` run (use --records 1000000)"

    func run(records: Int, workDirectory: URL) async throws -> [Measurement] {
        try await PluginProcessScenario(runs: 1, memoryGoal: 100).run(records: records, workDirectory: workDirectory)
    }
}
