// The benchmark harness. Build and run it in release mode:
//   swift run -c release gateway-bench [scenario ...] [--records N] [--json PATH]
// With no scenario it runs them all. It prints a table and writes the figures as JSON.
import Foundation
import SQLiteSupport

protocol Scenario {
    var name: String { get }
    var summary: String { get }
    func run(records: Int, workDirectory: URL) async throws -> [Measurement]
}

struct BenchmarkError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

nonisolated(unsafe) let scenarios: [any Scenario] = [
    EmbeddedCloudScenario(), SQLiteInitialSyncScenario(), SQLiteIncrementalScenario(), SQLiteInsertScenario(),
    SQLiteEncryptionScenario(), SQLiteAssetsScenario(), JSONInitialSyncScenario(), JSONRescanScenario(), PostgresInitialSyncScenario(), PostgresWholeProcessScenario(), PostgresCloudProcessScenario(), PostgresInsertScenario(), PostgresPoolScenario(), CloudRoundTripProcessScenario(), PluginProcessScenario(), PluginMemoryScenario(), ResolverProcessScenario(), ProcessorProcessScenario(),
    ServiceLatencyScenario(), EndpointLatencyScenario(),
    CloudKitInitialSyncScenario(),
    SQLiteMemoryScenario(),
]

struct Options {
    var selected: [String] = []
    var records = 100_000
    var jsonPath = "bench-results/latest.json"

    init(_ arguments: [String]) throws {
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            switch argument {
            case "--records":
                guard let value = iterator.next().flatMap(Int.init), value > 0 else { throw BenchmarkError("--records needs a positive number") }
                records = value
            case "--json":
                guard let value = iterator.next() else { throw BenchmarkError("--json needs a path") }
                jsonPath = value
            case "--help", "-h":
                print("usage: gateway-bench [scenario ...] [--records N] [--json PATH]\nscenarios:")
                for scenario in scenarios { print("  \(scenario.name): \(scenario.summary)") }
                exit(0)
            default:
                guard scenarios.contains(where: { $0.name == argument }) else {
                    throw BenchmarkError("unknown scenario \(argument); known: \(scenarios.map(\.name).joined(separator: ", "))")
                }
                selected.append(argument)
            }
        }
    }
}

struct Report: Codable {
    var date: String
    var machine: String
    var records: Int
    var results: [String: [Measurement]]
}

func machineDescription() -> String {
    let cpu = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8))?
        .split(separator: "\n").first { $0.hasPrefix("model name") }?
        .split(separator: ":").last?.trimmingCharacters(in: .whitespaces) ?? "unknown CPU"
    return "\(ProcessInfo.processInfo.activeProcessorCount) cores, \(cpu), \(ProcessInfo.processInfo.physicalMemory / 1_073_741_824) GiB"
}

// As `gateway` runs: SQLite's process-wide settings before any connection opens.
SQLiteProcessSettings.apply()
do {
    let options = try Options(Array(CommandLine.arguments.dropFirst()))
    #if DEBUG
        print("warning: this is a debug build; figures are only meaningful with `swift run -c release gateway-bench`")
    #endif
    var report = Report(date: ISO8601DateFormatter().string(from: Date()), machine: machineDescription(), records: options.records, results: [:])
    print("machine: \(report.machine)")
    for scenario in scenarios where options.selected.contains(scenario.name) || (options.selected.isEmpty && !["sqlite-memory", "plugin-memory"].contains(scenario.name)) {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("gateway-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        print("\n\(scenario.name): \(scenario.summary)")
        let measurements = try await scenario.run(records: options.records, workDirectory: work)
        report.results[scenario.name] = measurements
        for measurement in measurements {
            let goal = measurement.goal.map { "goal \($0.text)" } ?? ""
            print("  \(measurement.name.padding(toLength: 44, withPad: " ", startingAt: 0)) \(formatted(measurement.value).leftPadded(10)) \(measurement.unit.padding(toLength: 10, withPad: " ", startingAt: 0)) \(goal.padding(toLength: 16, withPad: " ", startingAt: 0)) \(measurement.verdict)")
        }
    }
    print("\npeak resident memory: \(formatted(peakResidentMegabytes())) MB")
    let url = URL(fileURLWithPath: options.jsonPath)
    try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
    try encoder.encode(report).write(to: url)
    print("figures written to \(options.jsonPath)")
} catch {
    FileHandle.standardError.write(Data("gateway-bench: \(error)\n".utf8))
    exit(1)
}

extension String {
    func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }
}
