import Foundation
import GatewayTesting

/// A `gateway run` (or `gateway cloud serve`) process of a scenario, with its log.
final class GatewayProcess: Sendable {
    let name: String
    let directory: URL
    let arguments: [String]
    let environment: [String: String]
    let gateway: String
    private let child = LockedValue<ChildProcess?>(nil)
    private let starts = LockedValue(0)

    init(name: String, directory: URL, arguments: [String], gateway: String, environment: [String: String] = [:]) {
        self.name = name
        self.directory = directory
        self.arguments = arguments
        self.gateway = gateway
        self.environment = environment
    }

    /// `gateway run --config <config>`.
    static func service(_ name: String, config: String, in directory: URL, gateway: String, environment: [String: String] = [:]) -> GatewayProcess {
        GatewayProcess(name: name, directory: directory, arguments: ["run", "--config", config], gateway: gateway, environment: environment)
    }

    /// The log of the current (or last) start.
    var logPath: String { directory.appendingPathComponent("\(name)-\(starts.get()).log").path }

    func log() -> String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

    /// Starts the process (again).
    func start() throws {
        starts.withLock { $0 += 1 }
        let process = try ChildProcess(
            gateway, arguments: arguments, directory: directory.path,
            environment: ProcessInfo.processInfo.environment.merging(environment) { _, new in new },
            standardOutput: logPath + ".out", standardError: logPath)
        child.set(process)
    }

    var pid: Int32? { child.get()?.pid }

    var isRunning: Bool { child.get()?.isRunning ?? false }

    /// Exit status if the process has ended.
    var exitStatus: Int32? { child.get()?.poll() }

    /// Kills it with SIGKILL and reaps it.
    func kill() async throws {
        guard let process = child.get() else { return }
        process.kill()
        _ = try await process.wait(timeout: .seconds(30))
    }

    /// Sends SIGTERM and waits up to `limit`; returns the exit status and how long it took.
    func stop(within limit: Duration) async throws -> (status: Int32, took: Duration) {
        guard let process = child.get() else { throw HarnessFailure("\(name) was never started") }
        let started = ContinuousClock.now
        process.terminate()
        let status = try await process.wait(timeout: limit)
        return (status, ContinuousClock.now - started)
    }

    /// Waits until the log contains `text` (for example the port a server listens on).
    func waitForLog(_ pattern: Regex<(Substring, Substring)>, timeout: Duration = .seconds(60)) async throws -> String {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let match = log().firstMatch(of: pattern) { return String(match.1) }
            guard isRunning else { throw HarnessFailure("\(name) exited before it was ready:\n\(log().suffix(2000))") }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw HarnessFailure("\(name) did not log what the harness waited for within \(timeout):\n\(log().suffix(2000))")
    }

    /// Resident memory in bytes, from /proc.
    var residentBytes: Int? {
        guard let pid, let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let kilobytes = Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
        else { return nil }
        return kilobytes * 1024
    }

    /// Open file descriptors (sockets included), from /proc.
    var openDescriptors: Int? {
        guard let pid else { return nil }
        return (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd"))?.count
    }
}

/// Where a scenario keeps its files.
struct ScenarioFolder {
    let url: URL

    init(_ root: URL, scenario: String) throws {
        url = root.appendingPathComponent(scenario)
        try? FileManager.default.removeItem(at: url)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    func path(_ name: String) -> String { url.appendingPathComponent(name).path }

    func write(_ name: String, _ text: String) throws {
        try Data(text.utf8).write(to: url.appendingPathComponent(name))
    }
}

/// Random moments and pauses of a scenario.
extension SeededGenerator {
    mutating func pause(_ range: ClosedRange<Double>) -> Duration {
        .milliseconds(Int(Double.random(in: range, using: &self) * 1000))
    }
}
