import Foundation
import GatewayTesting

/// What one fault scenario did and found.
struct ScenarioResult: Encodable {
    var scenario: String
    /// Faults injected, in all and by kind.
    var faults: Int
    var faultsByKind: [String: Int]
    /// Writes the writers committed while the faults went on.
    var writes: Int
    /// Whether every side reached what the writers left, and how long that took after the last fault.
    var settled: Bool
    var settleSeconds: Double
    /// Rows lost and rows that should not exist, at worst over the sides.
    var lost: Int
    var duplicated: Int
    var sides: [SideComparison]
    /// Gateway processes that ended on their own (they must not).
    var gatewaysThatExited: [String]
    /// How each gateway stopped on SIGTERM: status and seconds.
    var stops: [String: String]
    /// What the scenario checked besides the data, each with its verdict.
    var checks: [String: String]

    var passed: Bool {
        settled && lost == 0 && duplicated == 0 && gatewaysThatExited.isEmpty && checks.values.allSatisfy { $0.hasPrefix("ok") }
            && stops.values.allSatisfy { $0.hasPrefix("0 ") }
    }
}

/// The parts every service scenario shares: the gateways, the writers, the faults, the settling.
struct ServiceScenario {
    let name: String
    let folder: ScenarioFolder
    var gateways: [GatewayProcess] = []
    var writers: [ItemWriter] = []
    var preloaded: [String: String] = [:]
    var faultsByKind: [String: Int] = [:]
    var checks: [String: String] = [:]

    init(name: String, root: URL) throws {
        self.name = name
        folder = try ScenarioFolder(root, scenario: name)
    }

    mutating func count(_ kind: String) {
        faultsByKind[kind, default: 0] += 1
        print("\(name): fault \(faultsByKind.values.reduce(0, +)): \(kind)")
    }

    /// Gateways that are not running any more.
    var exited: [String] { gateways.filter { !$0.isRunning }.map { "\($0.name) (status \($0.exitStatus.map(String.init) ?? "?"))" } }

    /// Runs the writers while `faults` runs, then stops them.
    func writing(seed: UInt64, during faults: () async throws -> Void) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (index, writer) in writers.enumerated() {
                group.addTask { await writer.run(seed: seed &+ UInt64(index) &* 7919) }
            }
            do {
                try await faults()
            } catch {
                group.cancelAll()
                throw error
            }
            for writer in writers { writer.stop() }
            try await group.waitForAll()
        }
    }

    /// The part of a dead gateway's log that says why: a trap's message and the crashed thread's
    /// frames come first in the runtime's crash report, before every other thread's, so the end
    /// of the log alone misses them.
    static func lastWords(of log: String) -> String {
        guard let crash = log.range(of: "Program crashed") else { return String(log.suffix(5000)) }
        let before = log[..<crash.lowerBound].suffix(2000)
        let report = log[crash.lowerBound...].prefix(8000)
        return "\(before)\(report)"
    }

    /// Waits for the sides to settle, stops the gateways with SIGTERM, and reports.
    func finish(sides: [(String, Settling.Reader)], settleTimeout: Duration = .seconds(180), stopLimit: Duration = .seconds(30)) async throws
        -> ScenarioResult
    {
        let expected = ExpectedItems(preloaded: preloaded, writers: writers).lines
        let outcome = await Settling.wait(for: expected, sides: sides, timeout: settleTimeout)
        let exitedOnTheirOwn = exited
        // What a gateway that died said last, so that a run whose folder is deleted afterwards, as
        // the tests' are, still tells why.
        for gateway in gateways where !gateway.isRunning {
            print("\(name): \(gateway.name) exited on its own; its last words:\n\(Self.lastWords(of: gateway.log()))")
        }
        var stops: [String: String] = [:]
        for gateway in gateways where gateway.isRunning {
            do {
                let (status, took) = try await gateway.stop(within: stopLimit)
                stops[gateway.name] = "\(status) after \(took.secondsText) s"
            } catch {
                stops[gateway.name] = "did not stop within \(stopLimit) of SIGTERM"
            }
        }
        for side in outcome.sides where side.lost > 0 || side.duplicated > 0 {
            print("\(name): \(side.side): \(side.lost) lost, \(side.duplicated) extra; for example \(side.example ?? "")")
        }
        return ScenarioResult(
            scenario: name, faults: faultsByKind.values.reduce(0, +), faultsByKind: faultsByKind,
            writes: writers.map { $0.counts.get().writes }.reduce(0, +), settled: outcome.settled, settleSeconds: outcome.seconds,
            lost: outcome.lost, duplicated: outcome.duplicated, sides: outcome.sides, gatewaysThatExited: exitedOnTheirOwn, stops: stops,
            checks: checks)
    }
}

/// Rows a store starts with: `count` of them named `<prefix>-init-<i>`.
func preloadRows(_ prefix: String, count: Int, seed: UInt64) -> [(String, String, Int64)] {
    var random = SeededGenerator(seed: seed)
    return (0..<count).map { ("\(prefix)-init-\($0)", "\(prefix) initial \($0)", Int64.random(in: -1_000_000...1_000_000, using: &random)) }
}

extension Array where Element == (String, String, Int64) {
    var lines: [String: String] { Dictionary(uniqueKeysWithValues: map { ($0.0, SQLiteItems.line(title: $0.1, n: $0.2)) }) }
}

extension Duration {
    /// Seconds with two decimals, for reports.
    var secondsText: String {
        String(format: "%.2f", Double(components.seconds) + Double(components.attoseconds) / 1e18)
    }
}
