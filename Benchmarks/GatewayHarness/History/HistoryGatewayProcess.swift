import Foundation
import GatewayTesting

#if canImport(Glibc)
import Glibc
#endif

/// A `gateway sync` process over one store of a history, killed with SIGKILL at a random moment
/// of its sync: the gateway crashing (an OOM kill, a power cut) at any step of a history.
struct HistoryGatewayProcess {
    /// The `gateway` executable.
    let gateway: String
    /// The history's folder: the configuration, the events and the gateway's `state_dir` go there.
    let folder: URL
    /// The merge preference of the history's in-process syncs, so both sync alike.
    let prefers: String

    /// The state folder the gateway process uses; kit stores keep their state in its `adapters/`.
    static func stateDirectory(in folder: URL) -> URL { folder.appendingPathComponent("gw") }

    /// What a run came to.
    enum Ending: Equatable {
        /// SIGKILL landed after the `n`-th phase start (download, apply, upload or commit).
        case killed(afterPhaseStarts: Int)
        /// The sync ended before its kill point, with this exit status.
        case finished(status: Int32)
    }

    /// How a run ended, and the records it reported conflicts for before it did.
    struct Outcome {
        var ending: Ending
        var conflicts: [String]
    }

    /// Runs `gateway sync` over the adapter `entry` (YAML of one `adapters` item) and kills it
    /// `delay` after the `skip + 1`-th phase start it reports, waiting for the plugin it may have
    /// started to end too (a killed gateway's plugin finishes its request, reads the end of its
    /// input and exits, before a restarted gateway starts another).
    func crashingSync(entry: String, skip: Int, delay: Duration, run: Int) async throws -> Outcome {
        let state = Self.stateDirectory(in: folder)
        try FileManager.default.createDirectory(at: state.appendingPathComponent("adapters"), withIntermediateDirectories: true)
        let config = folder.appendingPathComponent("crash-\(run).yaml")
        let text = """
            gateway:
              state_dir: \(Self.quoted(state.path))
              device_id: gateway
              batch_size: 3
              merge_policy: merge
              merge_prefers: \(prefers)
              retry:
                max_attempts: 2
            cloud:
              kind: embedded
              path: \(Self.quoted(folder.appendingPathComponent("cloud.sqlite").path))
            adapters:
            \(entry)
            """
        try Data(text.utf8).write(to: config)
        let events = folder.appendingPathComponent("crash-\(run).events").path
        let child = try ChildProcess(
            gateway, arguments: ["sync", "--config", config.path, "--progress", "json"], directory: folder.path,
            standardOutput: folder.appendingPathComponent("crash-\(run).out").path, standardError: events)
        var offset = 0
        var seen = 0
        let deadline = ContinuousClock.now + .seconds(120)
        while ContinuousClock.now < deadline {
            if let status = child.poll() { return Outcome(ending: .finished(status: status), conflicts: Self.conflicts(in: events)) }
            let data = (try? Data(contentsOf: URL(fileURLWithPath: events))) ?? Data()
            if data.count > offset, let end = data.lastIndex(of: UInt8(ascii: "\n")), end >= offset {
                for line in data[offset...end].split(separator: UInt8(ascii: "\n")) {
                    guard let event = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any],
                        CrashRun.Phase(startedBy: event) != nil
                    else { continue }
                    seen += 1
                    guard seen > skip else { continue }
                    try await Task.sleep(for: delay)
                    let plugins = HarnessData.children(of: child.pid)
                    child.kill()
                    let status = try await child.wait()
                    try await Self.waitForExit(of: plugins)
                    return Outcome(
                        ending: status == 128 + SIGKILL ? .killed(afterPhaseStarts: seen) : .finished(status: status),
                        conflicts: Self.conflicts(in: events))
                }
                offset = end + 1
            }
            try await Task.sleep(for: .microseconds(200))
        }
        child.kill()
        _ = try await child.wait()
        throw HarnessFailure("gateway sync of \(config.path) neither reached its kill point nor ended in 120 s")
    }

    /// The records of the conflicts a run reported (`--progress json` events).
    private static func conflicts(in events: String) -> [String] {
        let data = (try? Data(contentsOf: URL(fileURLWithPath: events))) ?? Data()
        return data.split(separator: UInt8(ascii: "\n")).compactMap { line in
            guard let event = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any], event["event"] as? String == "conflict"
            else { return nil }
            return event["record"] as? String
        }
    }

    /// Waits until each of `pids` has exited (an orphan that the container's init does not reap
    /// stays a zombie: that counts as exited).
    private static func waitForExit(of pids: [Int32]) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        for pid in pids {
            while ContinuousClock.now < deadline {
                guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                    let state = stat.split(separator: ")").last?.split(separator: " ").first, state != "Z"
                else { break }
                try await Task.sleep(for: .milliseconds(2))
            }
        }
    }

    /// A YAML double-quoted scalar (a JSON string is one).
    static func quoted(_ text: String) -> String {
        String(decoding: try! JSONEncoder().encode(text), as: UTF8.self)
    }
}
