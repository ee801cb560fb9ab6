import Foundation
import GatewayCore
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A program run as a real child process, started with `posix_spawn` and reaped with `waitpid`.
///
/// Tests use it instead of Foundation's `Process`, whose exit notification can go missing on
/// Linux when many children exit at once, leaving a test waiting forever.
public final class ChildProcess: Sendable {
    /// The child's process id.
    public let pid: pid_t
    private let exitStatus = Mutex<Int32?>(nil)

    /// Starts `executable`.
    /// - Parameters:
    ///   - executable: the program's path.
    ///   - arguments: its arguments, without the program's name.
    ///   - directory: the child's working directory (the current one when `nil`).
    ///   - environment: the child's whole environment (this process's when `nil`).
    ///   - standardOutput: the file the output goes to (discarded when `nil`).
    ///   - standardError: the file the error output goes to (discarded when `nil`).
    ///   - descriptors: more descriptors the child gets, by its number: this process's
    ///     descriptor `value` becomes the child's `key` (a pipe to talk to it, say). The child
    ///     inherits no other descriptor of this process.
    public init(
        _ executable: String, arguments: [String], directory: String? = nil, environment: [String: String]? = nil,
        standardOutput: String? = nil, standardError: String? = nil, descriptors: [Int32: Int32] = [:]
    ) throws {
        let variables = (environment ?? ProcessInfo.processInfo.environment).map { "\($0.key)=\($0.value)" }
        let kept = (descriptors.keys.max() ?? 2) + 1
        let spawned = ProcessSpawning.spawn(
            executable, arguments: arguments, directory: directory, environment: variables, keptBelow: max(3, kept)
        ) { actions in
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
            posix_spawn_file_actions_addopen(&actions, 1, standardOutput ?? "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            posix_spawn_file_actions_addopen(&actions, 2, standardError ?? "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            for (child, parent) in descriptors.sorted(by: { $0.key < $1.key }) {
                posix_spawn_file_actions_adddup2(&actions, parent, child)
            }
        }
        switch spawned {
        case .success(let pid): self.pid = pid
        case .failure(let failure): throw ConformanceFailure("cannot start \(executable): \(failure.reason)")
        }
    }

    /// The exit status once the child has exited (128 + signal when a signal ended it), without
    /// waiting.
    public func poll() -> Int32? {
        exitStatus.withLock { cached in
            if let cached { return cached }
            var status: Int32 = 0
            guard waitpid(pid, &status, WNOHANG) == pid else { return nil }
            let low = status & 0x7f
            cached = low == 0 ? (status >> 8) & 0xff : 128 + low
            return cached
        }
    }

    /// Whether the child is still running.
    public var isRunning: Bool { poll() == nil }

    /// Waits for the child to exit; after `timeout` it is killed and the wait fails.
    public func wait(timeout: Duration = .seconds(120)) async throws -> Int32 {
        let deadline = ContinuousClock.now + timeout
        while true {
            if let status = poll() { return status }
            guard ContinuousClock.now < deadline else {
                kill()
                _ = try? await waitAfterKill()
                throw ConformanceFailure("process \(pid) did not exit within \(timeout); it was killed")
            }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    private func waitAfterKill() async throws -> Int32 {
        while true {
            if let status = poll() { return status }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    /// Sends SIGKILL.
    public func kill() {
        sendSignal(pid, SIGKILL)
    }

    /// Sends SIGTERM, asking the child to stop gracefully.
    public func terminate() {
        sendSignal(pid, SIGTERM)
    }

    /// Sends `signal` (SIGUSR1 asks `gateway run` for a sync).
    public func send(_ signal: Int32) {
        sendSignal(pid, signal)
    }
}

private func sendSignal(_ pid: pid_t, _ signal: Int32) {
    _ = kill(pid, signal)
}
