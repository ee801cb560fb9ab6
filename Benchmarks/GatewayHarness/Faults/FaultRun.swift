import ArgumentParser
import Foundation

/// `gateway-harness faults`: runs the fault scenarios one after another and adds them up.
struct FaultRun {
    enum Scenario: String, CaseIterable, ExpressibleByArgument, Sendable {
        case postgresStore = "postgres-store"
        case postgresCloud = "postgres-cloud"
        case endpoint
        case network
        case disk
        case clock
    }

    struct Result: Encodable {
        var faults: Int
        var lost: Int
        var duplicated: Int
        var scenarios: [ScenarioResult]
        var seconds: Double
        var passed: Bool { scenarios.allSatisfy(\.passed) }
    }

    let scenarios: [Scenario]
    let faults: Int
    let preload: Int
    let seed: UInt64
    let directory: URL
    let gateway: String

    func run() async throws -> Result {
        let started = ContinuousClock.now
        try? FileManager.default.removeItem(at: directory)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let servers = ServerDeaths(root: directory, gateway: gateway, seed: seed)
        var results: [ScenarioResult] = []
        for scenario in scenarios {
            let result: ScenarioResult
            switch scenario {
            case .postgresStore: result = try await servers.postgresStore(faults: faults, preload: preload)
            case .postgresCloud: result = try await servers.postgresCloud(faults: faults, preload: preload)
            case .endpoint: result = try await servers.endpoint(faults: faults, preload: preload)
            case .clock: result = try await ClockFaults(root: directory, gateway: gateway, seed: seed).run(faults: faults, preload: preload)
            case .disk: result = try await DiskFaults(root: directory, gateway: gateway, seed: seed).run(faults: faults, preload: preload)
            case .network: result = try await NetworkFaults(root: directory, gateway: gateway, seed: seed).run(faults: faults, preload: preload)
            }
            print("\(scenario.rawValue): \(result.faults) faults, \(result.lost) lost, \(result.duplicated) duplicated, settled \(result.settled) in \(result.settleSeconds) s, \(result.passed ? "passed" : "FAILED")")
            results.append(result)
        }
        return Result(
            faults: results.map(\.faults).reduce(0, +), lost: results.map(\.lost).reduce(0, +),
            duplicated: results.map(\.duplicated).reduce(0, +), scenarios: results,
            seconds: Double((ContinuousClock.now - started).components.seconds))
    }
}
