import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An exclusive lock on `state_dir/gateway.lock`, held while a process syncs, so two gateway
/// processes on one state folder never sync at once. The kernel releases it when the process
/// dies, so a crash never leaves it stuck.
public final class ProcessLock: Sendable {
    public let path: String
    private let descriptor: Int32

    /// Takes the lock without waiting.
    /// - Throws: ``GatewayError/Code/alreadyRunning`` when another process holds it.
    public init(stateDirectory: String) throws {
        path = URL(fileURLWithPath: stateDirectory).appendingPathComponent("gateway.lock").path
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw GatewayError(.stateUnavailable, "cannot open the lock file \(path): \(String(cString: strerror(errno)))")
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let reason = errno
            close(descriptor)
            if reason == EWOULDBLOCK {
                let holder = (try? String(contentsOfFile: path, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
                let named = holder.flatMap(Int32.init).map { " (process \($0))" } ?? ""
                throw GatewayError(
                    .alreadyRunning,
                    "another gateway process\(named) is syncing with state folder \(stateDirectory); wait for it to finish, or stop `gateway run`")
            }
            throw GatewayError(.stateUnavailable, "cannot lock \(path): \(String(cString: strerror(reason)))")
        }
        let pid = "\(getpid())\n"
        _ = ftruncate(descriptor, 0)
        _ = pid.withCString { write(descriptor, $0, strlen($0)) }
        self.descriptor = descriptor
    }

    deinit {
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }

    /// The process that holds the lock of `stateDirectory` now (a `gateway run` or `gateway
    /// sync`), or `nil` when none does; takes and writes nothing.
    public static func holder(stateDirectory: String) -> Int32? {
        let path = URL(fileURLWithPath: stateDirectory).appendingPathComponent("gateway.lock").path
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        if flock(descriptor, LOCK_SH | LOCK_NB) == 0 {
            flock(descriptor, LOCK_UN)
            return nil
        }
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        return Int32(text.trimmingCharacters(in: .whitespacesAndNewlines))
    }
}
