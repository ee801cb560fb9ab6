import Foundation
import GatewayTesting

/// `gateway run --log-format json` started in a test folder, with its log on standard error.
struct RunningGateway {
    let process: ChildProcess
    let errorPath: String

    /// Starts the service in `directory` (its `config.yaml`), logging to `<name>.err`.
    init(in directory: TemporaryDirectory, name: String = "run") throws {
        errorPath = directory.path("\(name).err")
        process = try ChildProcess(
            try BuiltExecutable.path("gateway"), arguments: ["run", "--log-format", "json"], directory: directory.url.path,
            standardOutput: directory.path("\(name).out"), standardError: errorPath)
    }

    /// What the service has logged so far.
    func log() -> String { (try? String(contentsOfFile: errorPath, encoding: .utf8)) ?? "" }

    /// Waits until `condition` holds, reading what the service (another process) wrote; fails
    /// naming `what` and quoting the log after 60 s.
    func waitFor(_ what: String, _ condition: () async throws -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            if try await condition() { return }
            try await Task.sleep(for: .milliseconds(50))  // paces the reads of another process's files
        }
        throw ConformanceFailure("\(what) did not happen within 60 s; the service logged:\n\(log())")
    }
}
