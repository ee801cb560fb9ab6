import Foundation
import GatewayTesting
import TestScheduling
import Testing

/// The short variants of the reliability harness (`gateway-harness`), run on every `swift test`.
/// The long runs and their results are in BENCHMARKS.md.
@Suite("reliability", .serialized, .heavy)
struct ReliabilityTests {
    struct CrashResult: Decodable {
        var records: Int
        var kills: Int
        var killsByPhase: [String: Int]
        var lost: Int
        var duplicated: Int
        var checksums: [String: String]
    }

    struct ConvergeResult: Decodable {
        var converged: Bool
        var faultySyncs: Int
        var records: Int
        var checksums: [String: String]
    }

    static func harness(_ arguments: [String], in directory: TemporaryDirectory, timeout: Duration = .seconds(600)) async throws -> Int32 {
        let child = try ChildProcess(
            try BuiltExecutable.path("gateway-harness"), arguments: arguments, directory: directory.url.path,
            standardOutput: directory.path("harness.out"), standardError: directory.path("harness.err"))
        return try await child.wait(timeout: timeout)
    }

    struct HistoryResult: Decodable {
        var seeds: Int
        var syncs: Int
        var failedSyncs: Int
        var restores: Int
        var schemaChanges: Int
        var clockSteps: Int
        var anomalies: [String: Int]
        var failingSeeds: [UInt64]
        var passed: Bool
    }

    @Test("random histories over SQLite, JSON, PostgreSQL and plugin stores (writes, restores, replaced stores, schema changes, plugin deaths, clock steps, cloud faults) show no anomaly of any class")
    func histories() async throws {
        let directory = try TemporaryDirectory(prefix: "reliability-history")
        defer { directory.remove() }
        let status = try await Self.harness(
            ["history", "--seeds", "200", "--directory", directory.path("run"), "--plugin", Self.csvPlugin, "--json", directory.path("result.json")],
            // About five minutes in a debug build on two cores; more beside other heavy tests.
            in: directory, timeout: .seconds(1200))
        let log = ((try? String(contentsOfFile: directory.path("harness.out"), encoding: .utf8)) ?? "")
            + ((try? String(contentsOfFile: directory.path("harness.err"), encoding: .utf8)) ?? "")
        #expect(status == 0, "\(log)")
        let result = try JSONDecoder().decode(HistoryResult.self, from: Data(contentsOf: directory.url.appendingPathComponent("result.json")))
        #expect(result.seeds == 200)
        #expect(result.restores > 0 && result.syncs > result.seeds, "the histories restored stores and synced")
        #expect(result.anomalies.count == 9, "every anomaly class is counted: \(result.anomalies)")
        #expect(result.schemaChanges > 0, "the histories added, dropped and renamed columns")
        #expect(result.clockSteps > 0 && result.failedSyncs > 0, "the clock stepped and faults (of the cloud, of the plugin) failed syncs")
        // The documented costs are counted, not failures: `revivedWhole` ("an edit beats a
        // delete"), `lostToRejoin` (a write on a restored store losing a reported rejoin
        // conflict, `join_prefers: cloud`), `revivedByUnansweredEdit` (a delete that followed a
        // save whose answer was lost) and `lostToInterruptedWrite` (an edit of the gateway's
        // unacknowledged write that cannot be told from a stranger's).
        let documentedCosts = ["revivedWhole", "lostToRejoin", "revivedByUnansweredEdit", "lostToInterruptedWrite"]
        for (anomaly, count) in result.anomalies where !documentedCosts.contains(anomaly) {
            #expect(count == 0, "\(anomaly): \(count); \(log)")
        }
        #expect(result.passed && result.failingSeeds.isEmpty, "\(log)")
    }

    @Test("gateway sync with both adapters at once (the default parallelism), killed with SIGKILL, loses and duplicates nothing")
    func crashWhileParallel() async throws {
        let directory = try TemporaryDirectory(prefix: "reliability-crash-parallel")
        defer { directory.remove() }
        let status = try await Self.harness(
            ["crash", "--records", "4000", "--kills", "6", "--batch-size", "25", "--maximum-skip", "40", "--directory", directory.path("run"), "--json",
             directory.path("result.json")], in: directory)
        let log = (try? String(contentsOfFile: directory.path("harness.out"), encoding: .utf8)) ?? ""
        #expect(status == 0, "\(log)\((try? String(contentsOfFile: directory.path("harness.err"), encoding: .utf8)) ?? "")")
        let result = try JSONDecoder().decode(CrashResult.self, from: Data(contentsOf: directory.url.appendingPathComponent("result.json")))
        #expect(result.kills == 6)
        #expect(result.lost == 0)
        #expect(result.duplicated == 0)
        #expect(Set(result.checksums.values).count == 1, "both stores and the cloud hold identical data")
    }

    @Test("gateway sync killed with SIGKILL in every phase loses and duplicates nothing")
    func crash() async throws {
        let directory = try TemporaryDirectory(prefix: "reliability-crash")
        defer { directory.remove() }
        let status = try await Self.harness(
            ["crash", "--records", "2000", "--kills", "8", "--batch-size", "25", "--each-phase", "--parallelism", "1", "--directory", directory.path("run"), "--json",
             directory.path("result.json")], in: directory)
        let log = (try? String(contentsOfFile: directory.path("harness.out"), encoding: .utf8)) ?? ""
        #expect(status == 0, "\(log)\((try? String(contentsOfFile: directory.path("harness.err"), encoding: .utf8)) ?? "")")
        let result = try JSONDecoder().decode(CrashResult.self, from: Data(contentsOf: directory.url.appendingPathComponent("result.json")))
        #expect(result.kills == 8)
        #expect(Set(result.killsByPhase.keys) == ["download", "apply", "upload", "commit"], "kills land in every phase")
        #expect(result.lost == 0)
        #expect(result.duplicated == 0)
        #expect(Set(result.checksums.keys) == ["a", "b", "cloud"])
        #expect(Set(result.checksums.values).count == 1, "both stores and the cloud hold identical data")
    }

    static let csvPlugin = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("examples/plugins/csv-folder/csv_folder.py").path

    @Test(
        "a SQLite database and the Python CSV plugin: SIGKILL of the gateway, or separately of the plugin, in every phase loses and duplicates nothing",
        arguments: [false, true])
    func crashWithPlugin(killPlugin: Bool) async throws {
        let directory = try TemporaryDirectory(prefix: "reliability-crash-plugin")
        defer { directory.remove() }
        let status = try await Self.harness(
            // 4,000 records: with 2,000 a loaded CI machine finished some phases before the kills aimed at them landed.
            ["crash", "--records", "4000", "--kills", "8", "--batch-size", "25", "--each-phase", "--parallelism", "1", "--plugin", Self.csvPlugin,
             "--directory", directory.path("run"), "--json", directory.path("result.json")] + (killPlugin ? ["--kill-plugin"] : []), in: directory)
        let log = (try? String(contentsOfFile: directory.path("harness.out"), encoding: .utf8)) ?? ""
        #expect(status == 0, "\(log)\((try? String(contentsOfFile: directory.path("harness.err"), encoding: .utf8)) ?? "")")
        let result = try JSONDecoder().decode(CrashResult.self, from: Data(contentsOf: directory.url.appendingPathComponent("result.json")))
        #expect(result.kills == 8)
        #expect(result.killsByPhase.count >= (killPlugin ? 2 : 4), "kills land in the phases: \(result.killsByPhase)")
        #expect(result.lost == 0)
        #expect(result.duplicated == 0)
        #expect(Set(result.checksums.values).count == 1, "the database, the CSV folder and the cloud hold identical data")
    }

    struct FaultResult: Decodable {
        struct Scenario: Decodable {
            var scenario: String
            var faults: Int
            var settled: Bool
            var lost: Int
            var duplicated: Int
            var gatewaysThatExited: [String]
            var stops: [String: String]
            var checks: [String: String]
        }
        var scenarios: [Scenario]
    }

    @Test(
        "gateways survive servers that die, networks that drop, disks that fill and clocks that jump, losing nothing",
        arguments: ["postgres-store", "postgres-cloud", "endpoint", "network", "disk", "clock"])
    func faults(scenario: String) async throws {
        let directory = try TemporaryDirectory(prefix: "reliability-\(scenario)")
        defer { directory.remove() }
        let status = try await Self.harness(
            ["faults", "--scenario", scenario, "--faults", "4", "--preload", "500", "--directory", directory.path("run"), "--json",
             directory.path("result.json")], in: directory)
        let output = ["harness.out", "harness.err"].map { (try? String(contentsOfFile: directory.path($0), encoding: .utf8)) ?? "" }.joined()
        #expect(status == 0, "\(output.suffix(12000))")
        let result = try JSONDecoder().decode(FaultResult.self, from: Data(contentsOf: directory.url.appendingPathComponent("result.json")))
        let run = try #require(result.scenarios.first)
        #expect(run.scenario == scenario)
        #expect(run.faults >= 4, "every planned fault was injected")
        #expect(run.settled, "every side reached what the writers left")
        #expect(run.lost == 0)
        #expect(run.duplicated == 0)
        #expect(run.gatewaysThatExited.isEmpty, "no gateway exited on its own")
        #expect(run.stops.values.allSatisfy { $0.hasPrefix("0 ") }, "every gateway stopped on SIGTERM with status 0: \(run.stops)")
        #expect(run.checks.values.allSatisfy { $0.hasPrefix("ok") }, "\(run.checks)")
    }

    struct SoakResult: Decodable {
        var writes: Int
        var settled: Bool
        var lost: Int
        var duplicated: Int
        var gatewaysThatExited: [String]
        var latency: [Latency]
        struct Latency: Decodable { var changes: Int }
    }

    @Test("two gateway services under steady writes for half a minute: every row arrives, latency is measured")
    func soak() async throws {
        let directory = try TemporaryDirectory(prefix: "reliability-soak")
        defer { directory.remove() }
        let status = try await Self.harness(
            ["soak", "--minutes", "0.5", "--rate", "5", "--directory", directory.path("run"), "--json", directory.path("result.json")], in: directory)
        #expect(status == 0, "\((try? String(contentsOfFile: directory.path("harness.out"), encoding: .utf8)) ?? "")")
        let result = try JSONDecoder().decode(SoakResult.self, from: Data(contentsOf: directory.url.appendingPathComponent("result.json")))
        #expect(result.writes > 100)
        #expect(result.settled && result.lost == 0 && result.duplicated == 0)
        #expect(result.gatewaysThatExited.isEmpty)
        #expect(result.latency.map(\.changes).reduce(0, +) > 0, "the cloud's feed showed the writes arriving")
    }

    @Test("three gateway processes under injected faults and concurrent writers converge")
    func converge() async throws {
        let directory = try TemporaryDirectory(prefix: "reliability-converge")
        defer { directory.remove() }
        let status = try await Self.harness(
            ["converge", "--directory", directory.path("run"), "--json", directory.path("result.json"), "--fault-probability", "0.12"],
            in: directory)
        #expect(status == 0, "\((try? String(contentsOfFile: directory.path("harness.out"), encoding: .utf8)) ?? "")")
        let result = try JSONDecoder().decode(ConvergeResult.self, from: Data(contentsOf: directory.url.appendingPathComponent("result.json")))
        #expect(result.converged)
        #expect(result.faultySyncs >= 3, "every gateway synced under faults at least once")
        #expect(Set(result.checksums.keys) == ["cloud", "db0", "db1", "db2"])
        #expect(Set(result.checksums.values).count == 1)
        #expect(result.records > 0)
    }
}
