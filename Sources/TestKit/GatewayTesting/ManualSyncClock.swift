import GatewayCore
import Synchronization

/// A `SyncClock` that moves only when a test steps it: sleeps end when ``advance(by:)`` passes
/// their deadline, so stall limits and stop deadlines are tested without waiting for them.
public final class ManualSyncClock: SyncClock {
    private struct Sleeper {
        let deadline: ContinuousClock.Instant
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now: ContinuousClock.Instant
        var sleepers: [Int: Sleeper] = [:]
        var nextID = 0
        /// Tests waiting until this many sleeps are pending.
        var watchers: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state: Mutex<State>

    /// A clock standing at the current instant.
    public init() {
        state = Mutex(State(now: .now))
    }

    public var now: ContinuousClock.Instant { state.withLock { $0.now } }

    /// How many sleeps are waiting for the clock.
    public var pendingSleeps: Int { state.withLock { $0.sleepers.count } }

    public func sleep(for duration: Duration) async throws {
        guard duration > .zero else { return try Task.checkCancellation() }
        let id = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let (resumeNow, ready) = state.withLock { state -> (Bool, [CheckedContinuation<Void, Never>]) in
                    if Task.isCancelled { return (true, []) }
                    state.sleepers[id] = Sleeper(deadline: state.now + duration, continuation: continuation)
                    return (false, Self.takeSatisfied(&state))
                }
                ready.forEach { $0.resume() }
                if resumeNow { continuation.resume(throwing: CancellationError()) }
            }
        } onCancel: {
            let sleeper = state.withLock { $0.sleepers.removeValue(forKey: id) }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves the clock on by `duration` and ends every sleep whose deadline it reaches.
    public func advance(by duration: Duration) {
        let due = state.withLock { state -> [CheckedContinuation<Void, any Error>] in
            state.now += duration
            let now = state.now
            let due = state.sleepers.filter { $0.value.deadline <= now }
            for id in due.keys { state.sleepers[id] = nil }
            return due.values.map(\.continuation)
        }
        due.forEach { $0.resume() }
    }

    /// Returns once at least `count` sleeps are waiting for the clock: a test steps the clock
    /// after the code under test has started to wait on it.
    public func waitForPendingSleeps(_ count: Int) async {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Bool in
                if state.sleepers.count >= count { return true }
                state.watchers.append((count, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    private static func takeSatisfied(_ state: inout State) -> [CheckedContinuation<Void, Never>] {
        let count = state.sleepers.count
        let ready = state.watchers.filter { $0.count <= count }.map(\.continuation)
        state.watchers.removeAll { $0.count <= count }
        return ready
    }
}
