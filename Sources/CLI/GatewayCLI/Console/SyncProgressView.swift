import Foundation
import GatewayCore
import Synchronization

/// Shows a sync's progress: a redrawn bar with counts and rate on a terminal, plain lines (at most
/// one a second per adapter) otherwise, so logs stay readable.
public final class SyncProgressView: Sendable {
    private struct AdapterProgress {
        var name = ""
        var started = ContinuousClock.now
        var downloaded = 0
        var uploadDone = 0
        var uploadTotal = 0
        var conflicts = 0
        var lastLine = ContinuousClock.now
    }

    private let interactive: Bool
    private let write: @Sendable (String) -> Void
    private let state = Mutex<[String: AdapterProgress]>([:])

    /// - Parameters:
    ///   - interactive: draw a bar that redraws in place (a terminal) rather than lines.
    ///   - write: where the text goes (standard error for the CLI).
    public init(interactive: Bool, write: @escaping @Sendable (String) -> Void) {
        self.interactive = interactive
        self.write = write
    }

    /// Whether standard error is a terminal that can redraw a line.
    public static var standardErrorIsTerminal: Bool {
        isatty(STDERR_FILENO) == 1 && ProcessInfo.processInfo.environment["TERM"] != "dumb"
    }

    /// Takes one event from the synchronizer. Adapters of a parallel sync keep their own counts;
    /// the bar shows the adapter of the latest event.
    public func handle(_ event: SyncEvent) {
        let output: String? = state.withLock { adapters in
            let now = ContinuousClock.now
            let name = event.adapterName
            switch event {
            case .adapterStarted(let adapter):
                adapters[adapter] = AdapterProgress(name: adapter, started: now, lastLine: now)
                return interactive ? nil : "\(adapter): syncing\n"
            case .didFetch(_, let written, let deleted):
                adapters[name]?.downloaded += written + deleted
            case .willUpload(_, let pending):
                adapters[name]?.uploadTotal = pending
                adapters[name]?.uploadDone = 0
                if !interactive, pending > 0 { return "\(name): uploading \(pending) change(s)\n" }
            case .progress(_, let done, let total):
                adapters[name]?.uploadDone = done
                adapters[name]?.uploadTotal = total
            case .conflict(_, let recordID, let policy, let resolution):
                adapters[name]?.conflicts += 1
                // Lines name the record, as the service log does: whose edit lost is the question
                // an operator asks after a conflict.
                if !interactive {
                    return "\(name): conflict \(TerminalText.printable(recordID.recordName)) policy=\(policy.rawValue) resolution=\(resolution.rawValue)\n"
                }
            case .retrying(let adapter, let error, let attempt, let delay):
                return (interactive ? "\r\u{1B}[2K" : "") + "\(adapter): \(error.code) from the cloud; retry \(attempt) in \(delay)\n"
            case .adapterFinished(let report):
                adapters[report.adapter] = nil
                if interactive { return "\r\u{1B}[2K" }
                return "\(report.adapter): done\n"
            case .willFetch, .willApply, .willCommit, .didUpload, .batchSizeChanged:
                break
            }
            guard var progress = adapters[name] else { return nil }
            if interactive { return "\r\u{1B}[2K" + Self.bar(progress, now: now) }
            guard now - progress.lastLine >= .seconds(1) else { return nil }
            progress.lastLine = now
            adapters[name] = progress
            return Self.line(progress, now: now) + "\n"
        }
        if let output { write(output) }
    }

    private static func rate(_ progress: AdapterProgress, now: ContinuousClock.Instant) -> Int {
        let elapsed = (now - progress.started) / .milliseconds(1) / 1_000
        guard elapsed > 0.2 else { return 0 }
        return Int(Double(progress.downloaded + progress.uploadDone) / elapsed)
    }

    private static func line(_ progress: AdapterProgress, now: ContinuousClock.Instant) -> String {
        "\(progress.name): downloaded \(progress.downloaded), uploaded \(progress.uploadDone)/\(progress.uploadTotal), "
            + "conflicts \(progress.conflicts), \(rate(progress, now: now)) records/s"
    }

    private static func bar(_ progress: AdapterProgress, now: ContinuousClock.Instant) -> String {
        let width = 24
        let filled = progress.uploadTotal > 0 ? width * min(progress.uploadDone, progress.uploadTotal) / progress.uploadTotal : 0
        let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
        return "\(progress.name) [\(bar)] up \(progress.uploadDone)/\(progress.uploadTotal)  down \(progress.downloaded)  "
            + "conflicts \(progress.conflicts)  \(rate(progress, now: now)) rec/s"
    }
}
