import Synchronization

/// Runs one adapter's sync pass so that a pass that stops making progress, or that does not stop
/// when the sync is cancelled, ends anyway with an error naming what it waits for.
///
/// Every store and cloud call has a time limit of its own (`request_timeout`, `busy_timeout`),
/// so a pass that makes no progress for ``SyncConfiguration/stallTimeout`` is stuck on a call
/// that ignores its limit: a library bug, a filesystem that blocks forever. The guard then
/// cancels the pass and, if it does not end within ``SyncConfiguration/stopTimeout``, reports it
/// failed and leaves it behind. The pass runs in an unstructured task for that reason alone:
/// structured concurrency cannot return while a child still runs. A pass left behind keeps its
/// adapter out of later syncs until it ends (``AbandonedPasses``), so two passes never write the
/// same store at once.
struct StallGuard {
    let adapter: String
    let activity: SyncActivity
    /// No progress for this long fails the pass; `nil` never does.
    let stallTimeout: Duration?
    /// How long a cancelled pass may take to stop before it is left behind.
    let stopTimeout: Duration
    /// The clock stalls and stop deadlines are measured on.
    var clock: any SyncClock = LiveSyncClock()

    /// Runs `pass`; returns its report, or a failure report when it was given up (then the
    /// still-running pass is returned as `abandoned`).
    func run(_ pass: @escaping @Sendable () async -> AdapterSyncReport) async -> (report: AdapterSyncReport, abandoned: PassHandle?) {
        let handle = PassHandle(clock: clock)
        let task = Task { handle.finish(await pass()) }
        handle.attach(task)
        let (adapter, activity, stopTimeout) = (adapter, activity, stopTimeout)
        let report = await withTaskCancellationHandler {
            await withTaskGroup(of: AdapterSyncReport?.self) { group in
                group.addTask { await handle.wait() }
                if let stallTimeout { group.addTask { await watch(handle, limit: stallTimeout); return nil } }
                var report: AdapterSyncReport?
                while report == nil, let next = await group.next() { report = next }
                group.cancelAll()
                // The first child always returns a report.
                return report ?? AdapterSyncReport(adapter: adapter, outcome: .failed(code: .interrupted, message: "the pass ended without a report"))
            }
        } onCancel: {
            let waiting = activity.oldestWait.map { " while waiting for \($0)" } ?? ""
            handle.stop(
                within: stopTimeout,
                giving: SyncError(
                    .interrupted,
                    "the sync was stopped and did not end within \(SyncActivity.rounded(stopTimeout))\(waiting); what was committed stays, the rest stays pending",
                    adapter: adapter))
        }
        return (report, handle.isFinished ? nil : handle)
    }

    /// Looks at the pass's progress a few times per `limit` until it has made none for `limit`,
    /// then stops it; returns then, or when cancelled (the pass ended).
    private func watch(_ handle: PassHandle, limit: Duration) async {
        let interval = min(max(limit / 5, .milliseconds(20)), .seconds(1))
        while true {
            do { try await clock.sleep(for: interval) } catch { return }
            guard activity.idle >= limit else { continue }
            let waiting = activity.oldestWait.map { "; it was waiting for \($0)" } ?? ""
            handle.stop(
                within: stopTimeout,
                giving: SyncError(
                    .stalled,
                    "the sync made no progress for \(SyncActivity.rounded(limit)) (stall_timeout)\(waiting). What was committed stays; the rest is retried by the next sync",
                    adapter: adapter))
            return
        }
    }
}

/// A pass run by ``StallGuard``: its outcome, and the task running it.
final class PassHandle: Sendable {
    private struct State {
        var report: AdapterSyncReport?
        var givenUp: AdapterSyncReport?
        var waiter: CheckedContinuation<AdapterSyncReport, Never>?
        var task: Task<Void, Never>?
        /// Why the pass was stopped, when the guard stopped it.
        var stopReason: SyncError?
        var finished = false
    }

    private let state = Mutex(State())
    private let clock: any SyncClock

    /// A pass whose stop deadline runs on `clock`.
    init(clock: any SyncClock) {
        self.clock = clock
    }

    /// Whether the pass has returned.
    var isFinished: Bool { state.withLock { $0.finished } }

    func attach(_ task: Task<Void, Never>) {
        state.withLock { $0.task = task }
    }

    /// The pass returned `report`.
    /// The pass returned `report`. A pass the guard stopped that ends failing reports why the
    /// guard stopped it (that says what it waited for), not the interruption that followed.
    func finish(_ report: AdapterSyncReport) {
        let waiter = state.withLock { state -> (CheckedContinuation<AdapterSyncReport, Never>?, AdapterSyncReport)? in
            state.finished = true
            guard state.givenUp == nil else { return nil }
            var report = report
            if let reason = state.stopReason, case .failed = report.outcome {
                // A pass stopped from outside that ended in time was interrupted, not left behind.
                let reported =
                    reason.code == .interrupted
                    ? SyncError(.interrupted, "the sync was stopped before it ended; what was committed stays, the rest stays pending", adapter: reason.adapter)
                    : reason
                report.outcome = .failed(code: reported.code, message: reported.message)
                report.error = reported
            }
            state.report = report
            defer { state.waiter = nil }
            return (state.waiter, report)
        }
        if let (continuation, report) = waiter { continuation?.resume(returning: report) }
    }

    /// Waits for the pass's report, or for the report it was given up with.
    func wait() async -> AdapterSyncReport {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> AdapterSyncReport? in
                if let report = state.givenUp ?? state.report { return report }
                state.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    /// Cancels the pass; unless it returns within `timeout`, gives it up with `error`.
    func stop(within timeout: Duration, giving error: SyncError) {
        let task = state.withLock { state -> Task<Void, Never>? in
            guard state.stopReason == nil, !state.finished else { return nil }
            state.stopReason = error
            return state.task
        }
        guard let task else { return }
        task.cancel()
        // Unstructured on purpose: the deadline must run out although the sync that asked for the
        // stop is itself being cancelled.
        Task { [self, clock] in
            try? await clock.sleep(for: timeout)
            giveUp(error)
        }
    }

    private func giveUp(_ error: SyncError) {
        let waiter = state.withLock { state -> (CheckedContinuation<AdapterSyncReport, Never>?, AdapterSyncReport)? in
            guard !state.finished, state.givenUp == nil else { return nil }
            var report = AdapterSyncReport(adapter: error.adapter ?? "", outcome: .failed(code: error.code, message: error.message))
            report.error = error
            state.givenUp = report
            defer { state.waiter = nil }
            return (state.waiter, report)
        }
        if let (continuation, report) = waiter { continuation?.resume(returning: report) }
    }
}

/// Passes given up while still running, by adapter: their adapter sits out until they end.
final class AbandonedPasses: Sendable {
    private let passes = Mutex<[String: (handle: PassHandle, error: SyncError?)]>([:])

    func leave(_ handle: PassHandle, of adapter: String, error: SyncError?) {
        passes.withLock { $0[adapter] = (handle, error) }
    }

    /// Why `adapter` cannot sync now: a pass of it left behind is still running.
    func blocking(_ adapter: String) -> SyncError? {
        passes.withLock { passes in
            guard let entry = passes[adapter] else { return nil }
            if entry.handle.isFinished {
                passes[adapter] = nil
                return nil
            }
            return SyncError(
                .stalled,
                "an earlier sync of this adapter is still stuck (\(entry.error?.message ?? "it did not stop")); the adapter syncs again once that call returns",
                adapter: adapter)
        }
    }
}
