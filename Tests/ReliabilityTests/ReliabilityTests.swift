import Foundation
import GatewayTesting
import Testing

/// The short variants of the reliability harness (`gateway-harness`), run on every `swift test`.
/// The long runs and their results are in BENCHMARKS.md.
@Suite("reliability", .serialized)
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

    static func harness(_ arguments: [String], in directory: TemporaryDirectory) async throws -> Int32 {
        let child = try ChildProcess(
            try BuiltExecutable.path("gateway-harness"), arguments: arguments, directory: directory.url.path,
            standardOutput: directory.path("harness.out"), standardError: directory.path("harness.err"))
        return try await child.wait(timeout: .seconds(600))
    }

    @Test("gateway sync killed with SIGKILL in every phase loses and duplicates nothing")
    func crash() async throws {
        let directory = try TemporaryDirectory(prefix: "reliability-crash")
        defer { directory.remove() }
        let status = try await Self.harness(
            ["crash", "--records", "2000", "--kills", "8", "--batch-size", "25", "--each-phase", "--directory", directory.path("run"), "--json",
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
