import Foundation
import Synchronization

/// One figure a scenario produced, with the goal it is held to when it has one.
struct Measurement: Codable {
    /// What was measured, such as "save 100,000 records".
    var name: String
    var value: Double
    /// The unit of `value`, such as "records/s" or "MB".
    var unit: String
    /// The goal, when the issue sets one.
    var goal: Goal?

    struct Goal: Codable {
        /// `atLeast` for rates, `atMost` for times and memory.
        var direction: Direction
        var value: Double

        enum Direction: String, Codable { case atLeast, atMost }

        static func atLeast(_ value: Double) -> Goal { Goal(direction: .atLeast, value: value) }
        static func atMost(_ value: Double) -> Goal { Goal(direction: .atMost, value: value) }

        func isMet(by measured: Double) -> Bool {
            direction == .atLeast ? measured >= value : measured <= value
        }

        var text: String { (direction == .atLeast ? "≥ " : "≤ ") + formatted(value) }
    }

    var verdict: String {
        guard let goal else { return "" }
        return goal.isMet(by: value) ? "met" : "MISSED"
    }
}

func formatted(_ value: Double) -> String {
    value >= 100 ? String(Int(value.rounded())) : String(format: "%.2f", value)
}

/// Peak resident memory of this process so far, in MB (Linux: VmHWM).
func peakResidentMegabytes() -> Double {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
    for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
        let kilobytes = line.split(separator: " ").compactMap { Double($0) }.first ?? 0
        return kilobytes / 1024
    }
    return 0
}

/// Runs `body` and returns its result with the elapsed wall-clock seconds.
func timed<T>(_ body: () async throws -> T) async rethrows -> (T, Double) {
    let clock = ContinuousClock()
    let start = clock.now
    let result = try await body()
    let elapsed = clock.now - start
    return (result, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
}

/// User plus system CPU time of this process so far: less disturbed than wall time by other
/// programs on a shared machine.
func processorSeconds() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1_000_000 }
    return seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

func timedSync<T>(_ body: () throws -> T) rethrows -> (T, Double) {
    let clock = ContinuousClock()
    let start = clock.now
    let result = try body()
    return (result, (clock.now - start) / .seconds(1))
}

/// The peak resident memory of another process (its `VmHWM`), as last sampled while it ran.
final class PeakMemoryWatch: Sendable {
    let pid: pid_t
    private let peakKilobytes = Mutex<Double>(0)

    init(pid: pid_t) { self.pid = pid }

    /// Reads the process's peak so far; a process that has ended leaves the last reading.
    func sample() {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return }
        for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
            let kilobytes = line.split(separator: " ").compactMap { Double($0) }.first ?? 0
            peakKilobytes.withLock { $0 = max($0, kilobytes) }
        }
    }

    var megabytes: Double { peakKilobytes.withLock { $0 } / 1024 }
}
