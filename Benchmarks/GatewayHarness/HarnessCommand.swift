import ArgumentParser
import Foundation

struct HarnessCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gateway-harness", abstract: "Proves that syncs lose nothing when killed and converge under faults.",
        subcommands: [Crash.self, Converge.self, Faults.self, Soak.self, History.self])

    /// Runs a subcommand and exits 0 when its checks pass, 1 when they fail.
    static func runHarness(_ arguments: [String]) async {
        do {
            var command = try parseAsRoot(arguments)
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            exit(withError: error)
        }
    }

    static func sibling(_ name: String) -> String {
        URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
            .appendingPathComponent(name).path
    }

    static func report(_ result: some Encodable, to path: String?) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data = try encoder.encode(result)
        print(String(decoding: data, as: UTF8.self))
        if let path { try data.write(to: URL(fileURLWithPath: path)) }
    }

    struct Crash: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Kill `gateway sync` with SIGKILL in every phase, restart until done, count lost and duplicated records.")

        @Option(help: "Records in all, half written in each of the two databases.") var records = 50_000
        @Option(help: "Kills that must land (spread over download, apply, upload, commit).") var kills = 30
        @Option(help: "The gateway's upload batch size; smaller makes more moments to kill in.") var batchSize = 200
        @Option(help: "The gateway's download page size (fetch_limit); smaller makes more moments to kill in.") var fetchLimit = 500
        @Option(help: "The gateway's parallelism (default: the gateway's, every adapter at once); 1 syncs the adapters in order.")
        var parallelism: Int?
        @Option(help: "Phase starts (fetches, applies, uploads, commits) a run may pass before its kill.") var maximumSkip = 24
        @Flag(help: "Aim the runs at each phase in turn (for small runs), instead of at random phase starts.") var eachPhase = false
        @Option(help: "Seed of the data and of the kill moments.") var seed: UInt64 = 1
        @Option(help: "Working folder (replaced).") var directory = ".gateway/harness/crash"
        @Option(help: "The gateway executable; default: the one next to this harness.") var gateway: String?
        @Option(help: "Also write the result as JSON here.") var json: String?
        @Option(help: "Make side b a process plugin running this script (examples/plugins/csv-folder/csv_folder.py) instead of a second SQLite database.")
        var plugin: String?
        @Flag(help: "With --plugin, SIGKILL the plugin process instead of the gateway.") var killPlugin = false

        func run() async throws {
            let result = try await CrashRun(
                records: records, kills: kills, batchSize: batchSize, fetchLimit: fetchLimit, maximumSkip: maximumSkip, eachPhase: eachPhase, parallelism: parallelism, seed: seed, directory: URL(fileURLWithPath: directory),
                gateway: gateway.map { URL(fileURLWithPath: $0).path } ?? HarnessCommand.sibling("gateway"),
                pluginScript: plugin.map { URL(fileURLWithPath: $0).standardizedFileURL.path }, killPlugin: killPlugin
            ).run()
            try HarnessCommand.report(result, to: json)
            let identical = Set(result.checksums.values).count == 1
            guard result.lost == 0, result.duplicated == 0, identical else { throw ExitCode.failure }
        }
    }

    struct Faults: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Make the world fail around running gateways (servers die, networks drop, disks fill, clocks jump); count lost and duplicated rows.",
            discussion: "Scenarios: \(FaultRun.Scenario.allCases.map(\.rawValue).joined(separator: ", ")). Exits 1 when a scenario loses or duplicates a row, a gateway hangs or exits, or a check fails.")

        @Option(name: .customLong("scenario"), help: "A scenario to run (repeatable; default: all).") var scenarios: [FaultRun.Scenario] = []
        @Option(help: "Faults to inject per scenario.") var faults = 20
        @Option(help: "Rows each store starts with.") var preload = 3_000
        @Option(help: "Seed of the data and the fault moments.") var seed: UInt64 = 1
        @Option(help: "Working folder (replaced).") var directory = ".gateway/harness/faults"
        @Option(help: "The gateway executable; default: the one next to this harness.") var gateway: String?
        @Option(help: "Also write the result as JSON here.") var json: String?

        func run() async throws {
            let result = try await FaultRun(
                scenarios: scenarios.isEmpty ? FaultRun.Scenario.allCases : scenarios, faults: faults, preload: preload, seed: seed,
                directory: URL(fileURLWithPath: directory), gateway: gateway.map { URL(fileURLWithPath: $0).path } ?? HarnessCommand.sibling("gateway")
            ).run()
            try HarnessCommand.report(result, to: json)
            guard result.passed else { throw ExitCode.failure }
        }
    }

    struct Soak: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Run two gateway services for minutes under steady writes; report latency per minute, memory, descriptors, connections.")

        @Option(help: "How long the writers write, in minutes.") var minutes = 10.0
        @Option(help: "Writes per second to each of the three stores.") var rate = 10.0
        @Option(help: "Seed of the writes.") var seed: UInt64 = 1
        @Option(help: "Working folder (replaced).") var directory = ".gateway/harness/soak"
        @Option(help: "The gateway executable; default: the one next to this harness.") var gateway: String?
        @Option(help: "Also write the result as JSON here.") var json: String?

        func run() async throws {
            let result = try await SoakRun(
                minutes: minutes, rate: rate, seed: seed, directory: URL(fileURLWithPath: directory),
                gateway: gateway.map { URL(fileURLWithPath: $0).path } ?? HarnessCommand.sibling("gateway")
            ).run()
            try HarnessCommand.report(result, to: json)
            guard result.passed else { throw ExitCode.failure }
        }
    }

    struct History: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Random histories of writes, deletes, backups, restores, replaced stores, schema changes, plugin deaths, gateway crashes and clock steps over SQLite, JSON, PostgreSQL and plugin stores on one zone, under cloud faults; anomalies counted by class.",
            discussion: "PostgreSQL is the server named by GATEWAY_TEST_POSTGRES_URL, or a private cluster started for the run (Debian's postgresql).")

        @Option(help: "How many seeds (one history each), starting at --first-seed.") var seeds: UInt64 = 200
        @Option(help: "The first seed.") var firstSeed: UInt64 = 0
        @Option(help: "Probability of each injected fault per call.") var faultProbability = 0.08
        @Option(help: "Working folder (replaced).") var directory = ".gateway/harness/history"
        @Option(help: "The example plugin of store e.") var plugin = "examples/plugins/csv-folder/csv_folder.py"
        @Option(help: "The gateway executable of the syncs killed mid-way; default: the one next to this harness.") var gateway: String?
        @Option(help: "Also write the result as JSON here.") var json: String?

        func run() async throws {
            let started = ContinuousClock.now
            let result = try await HistoryRun(
                seeds: firstSeed..<(firstSeed + seeds), faultProbability: faultProbability, directory: URL(fileURLWithPath: directory),
                plugin: URL(fileURLWithPath: plugin).standardizedFileURL.path,
                gateway: gateway.map { URL(fileURLWithPath: $0).path } ?? HarnessCommand.sibling("gateway")
            ).run { seed, violations in
                // A seed with a gateway kill may not replay exactly: what it found is printed now.
                guard !violations.isEmpty else { return }
                FileHandle.standardError.write(Data("seed \(seed): \(violations.count) anomalies\n\(violations.map { "  => \($0)\n" }.joined())".utf8))
            }
            let elapsed = ContinuousClock.now - started
            print("\(result.seeds) histories, \(result.steps) steps, \(result.syncs) syncs (\(result.failedSyncs) failed under faults), \(result.restores) restores, \(result.schemaChanges) columns added, dropped or renamed, \(result.clockSteps) clock steps, \(result.gatewayCrashes) gateway processes killed, \(result.conflictsReported) conflicts reported, in \(elapsed)")
            for (anomaly, count) in result.anomalies.sorted(by: { $0.key < $1.key }) { print("  \(anomaly): \(count)") }
            if let failure = result.shortestFailure {
                print("shortest failing history: seed \(failure.seed), \(failure.steps) steps")
                for line in failure.history { print("  \(line)") }
                for line in failure.anomalies { print("  => \(line)") }
            }
            try HarnessCommand.report(result, to: json)
            guard result.passed else { throw ExitCode.failure }
        }
    }

    struct Converge: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Three gateways, one cloud with injected faults, concurrent writers; then quiet rounds must converge.")

        @Option(help: "Gateway processes, each with its own database.") var gateways = 3
        @Option(help: "Ids shared by the writers of every database.") var sharedRecords = 60
        @Option(help: "Writes in all, spread over the databases.") var writes = 300
        @Option(help: "Probability of each injected fault per call.") var faultProbability = 0.08
        @Option(help: "Seed of the writes and the faults.") var seed: UInt64 = 1
        @Option(help: "Working folder (replaced).") var directory = ".gateway/harness/converge"
        @Option(help: "Also write the result as JSON here.") var json: String?

        func run() async throws {
            let result = try await ConvergeRun(
                gateways: gateways, sharedRecords: sharedRecords, writes: writes, faultProbability: faultProbability, seed: seed,
                directory: URL(fileURLWithPath: directory), harness: URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().path
            ).run()
            try HarnessCommand.report(result, to: json)
            guard result.converged else { throw ExitCode.failure }
        }
    }
}
