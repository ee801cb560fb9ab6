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
        try Data(config.utf8).write(to: directory.appendingPathComponent("config.yaml"))
        let log = directory.appendingPathComponent("gateway.log").path
        let gateway = try executable()
        let (status, seconds) = try await timed {
            try await ChildProcess(
                gateway, arguments: ["sync", "--config", "config.yaml", "--progress", "none"], directory: directory.path,
                standardOutput: log, standardError: log
            ).wait(timeout: .seconds(1800))
        }
        guard status == 0 else {
            throw BenchmarkError("gateway sync failed (\(status)): \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
        }
        return seconds
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
        records: Int, source: String, workDirectory: URL, goal: Double, prepare: (URL) throws -> String,
        copied: (URL) async throws -> Int
    ) async throws -> [Measurement] {
        var rates: [Double] = []
        for round in 0..<rounds {
            let directory = try freshRun(round, of: source, in: workDirectory)
            let seconds = try await sync(config: try prepare(directory), in: directory)
            let arrived = try await copied(directory)
            guard arrived == records else { throw BenchmarkError("the destination has \(arrived) rows, expected \(records)") }
            print(String(format: "  run %d: %.2f s, %.0f rows/s", round + 1, seconds, Double(records) / seconds))
            rates.append(Double(records) / seconds)
            try? FileManager.default.removeItem(at: directory)
        }
        return [
            Measurement(name: "gateway sync, whole process, median of \(rounds)", value: Double(records) / median(rates), unit: "s"),
            Measurement(name: "rows/s, median of \(rounds)", value: median(rates), unit: "rows/s", goal: .atLeast(goal)),
            Measurement(name: "rows/s, slowest run", value: rates.min() ?? 0, unit: "rows/s"),
        ]
    }
}

/// SQLite → PostgreSQL with `gateway sync` as a whole process, against `pgloader` as a whole
/// process on the same file, alternating in the same minutes: the figure a new user sees.
struct PostgresWholeProcessScenario: Scenario {
    let name = "postgres-process"
    let summary = "PostgreSQL: `gateway sync` as a whole process, SQLite → cloud → PostgreSQL, vs `pgloader` as a whole process, 5 pairs alternating"

    func run(records: Int, workDirectory: URL) async throws -> [Measurement] {
        guard let pgloader = PostgresInitialSyncScenario.pgloaderPath() else {
            throw BenchmarkError("pgloader is not installed (Debian: apt-get install pgloader)")
        }
        let database = try await PostgresTestServer.freshDatabase("bench_process")
        let source = workDirectory.appendingPathComponent("source.sqlite").path
        try BenchNotes.makeDatabase(source, rows: records)
        var gatewaySeconds: [Double] = []
        var pgloaderSeconds: [Double] = []
        var ratios: [Double] = []
        for round in 0..<GatewayProcess.rounds {
            let schema = "app_\(round)"
            try await PostgresConnectionPool.execute(
                ["DROP SCHEMA IF EXISTS \(schema) CASCADE", "CREATE SCHEMA \(schema)", PostgresInitialSyncScenario.table.replacingOccurrences(of: "%@", with: schema)],
                on: database, doing: "setting up")
            let directory = try GatewayProcess.freshRun(round, of: source, in: workDirectory)
            let config = """
                gateway: { state_dir: state }
                cloud: { kind: embedded, path: cloud.sqlite }
                adapters:
                  - { name: app, kind: sqlite, path: source.sqlite, zone: BenchNotes, tables: [{ table: note }] }
                  - name: crm
                    kind: postgres
                    url: "postgres://\(database.username)@\(database.host):\(database.port)/\(database.database)"
                    schema: \(schema)
                    zone: BenchNotes
                    tables: [{ table: note }]
                """
            // Alternate which goes first, so neither always runs on a warmer machine.
            var gateway = 0.0
            var loader = 0.0
            if round.isMultiple(of: 2) {
                gateway = try await GatewayProcess.sync(config: config, in: directory)
                loader = try await PostgresInitialSyncScenario.runPgloader(pgloader, source: source, database: database, workDirectory: directory)
            } else {
                loader = try await PostgresInitialSyncScenario.runPgloader(pgloader, source: source, database: database, workDirectory: directory)
                gateway = try await GatewayProcess.sync(config: config, in: directory)
            }
            let copied = try await PostgresInitialSyncScenario.count(on: database, "\(schema).note")
            guard copied == records else { throw BenchmarkError("the gateway left \(copied) rows in \(schema).note, expected \(records)") }
            print(String(format: "  pair %d: gateway %.2f s, pgloader %.2f s, ratio %.2f×", round + 1, gateway, loader, gateway / loader))
            gatewaySeconds.append(gateway)
            pgloaderSeconds.append(loader)
            ratios.append(gateway / loader)
            try? FileManager.default.removeItem(at: directory)
        }
        return [
            Measurement(name: "gateway sync, whole process, median of \(GatewayProcess.rounds)", value: GatewayProcess.median(gatewaySeconds), unit: "s"),
            Measurement(name: "pgloader, whole process, median of \(GatewayProcess.rounds)", value: GatewayProcess.median(pgloaderSeconds), unit: "s"),
            Measurement(name: "gateway ÷ pgloader, median of the pairs' ratios", value: GatewayProcess.median(ratios), unit: "×", goal: .atMost(2)),
            Measurement(name: "gateway ÷ pgloader, best pair", value: ratios.min() ?? 0, unit: "×"),
            Measurement(name: "gateway ÷ pgloader, worst pair", value: ratios.max() ?? 0, unit: "×"),
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
        return try await GatewayProcess.timedRuns(records: records, source: source, workDirectory: workDirectory, goal: 30_000) { directory in
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

    func run(records: Int, workDirectory: URL) async throws -> [Measurement] {
        let script = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
            .appendingPathComponent("examples/plugins/csv-folder/csv_folder.py").path
        guard FileManager.default.fileExists(atPath: script) else {
            throw BenchmarkError("run gateway-bench from the repository's root: \(script) is missing")
        }
        let source = workDirectory.appendingPathComponent("source.sqlite").path
        try BenchNotes.makeDatabase(source, rows: records)
        return try await GatewayProcess.timedRuns(records: records, source: source, workDirectory: workDirectory, goal: 20_000) { _ in
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
