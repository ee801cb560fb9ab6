import Synchronization

/// What one adapter's sync is waiting on, and when it last made progress: the record the stall
/// guard reads to tell a slow sync from a stuck one, and to say what a stuck one waits for.
///
/// Every call the synchronizer makes to the store or the cloud is registered for as long as it
/// runs; its end counts as progress.
public final class SyncActivity: Sendable {
    private struct State {
        var lastProgress: ContinuousClock.Instant
        var waits: [Int: (what: String, since: ContinuousClock.Instant)] = [:]
        var nextID = 0
    }

    private let state: Mutex<State>
    private let clock: any SyncClock

    /// Nothing synced yet; time is read from `clock`.
    public init(clock: any SyncClock = LiveSyncClock()) {
        self.clock = clock
        state = Mutex(State(lastProgress: clock.now))
    }

    /// Registers a call that has started; pass the result to ``end(_:)``.
    func begin(_ what: String) -> Int {
        let now = clock.now
        return state.withLock { state in
            state.nextID += 1
            state.waits[state.nextID] = (what, now)
            return state.nextID
        }
    }

    /// The call has returned (or thrown): that is progress.
    func end(_ id: Int) {
        let now = clock.now
        state.withLock { state in
            state.waits[id] = nil
            state.lastProgress = now
        }
    }

    /// Runs `body` as the registered call `what`.
    func during<T>(_ what: String, _ body: () async throws -> T) async throws -> T {
        let id = begin(what)
        defer { end(id) }
        return try await body()
    }

    /// A wait of known length is about to start (a backoff before a retry): the time without
    /// progress is counted from its end, so a long `retryAfter` is not taken for a stall.
    func expectDelay(_ delay: Duration) {
        let end = clock.now + delay
        state.withLock { state in
            if end > state.lastProgress { state.lastProgress = end }
        }
    }

    /// How long ago the last progress was (negative during an expected delay).
    public var idle: Duration {
        let now = clock.now
        return state.withLock { now - $0.lastProgress }
    }

    /// The oldest call still running, described for an error message, or `nil` when none runs.
    public var oldestWait: String? {
        let now = clock.now
        return state.withLock { state in
            guard let oldest = state.waits.values.min(by: { $0.since < $1.since }) else { return nil }
            return "\(oldest.what) (running for \(Self.rounded(now - oldest.since)))"
        }
    }

    /// A duration to the second, for messages.
    static func rounded(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        if seconds == 0 { return "\(attoseconds / 1_000_000_000_000_000)ms" }
        return seconds >= 60 ? "\(seconds / 60)m\(seconds % 60)s" : "\(seconds)s"
    }
}
