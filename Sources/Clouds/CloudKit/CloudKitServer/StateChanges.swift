import Synchronization

/// Wakes those waiting for a condition on some state whenever that state changes, so that
/// callers (tests, mostly) wait on the change itself instead of polling it.
final class StateChanges: Sendable {
    private struct Waiters {
        var parked: [Int: CheckedContinuation<Void, Never>] = [:]
        var next = 0
        var generation = 0
    }

    private let waiters = Mutex(Waiters())

    /// The state changed: every waiter looks at its condition again.
    func changed() {
        let woken = waiters.withLock { waiters in
            waiters.generation += 1
            defer { waiters.parked = [:] }
            return Array(waiters.parked.values)
        }
        for waiter in woken { waiter.resume() }
    }

    /// Returns once `condition` holds, or when the task is cancelled.
    func wait(until condition: @Sendable () -> Bool) async {
        while !Task.isCancelled {
            let (id, generation) = waiters.withLock { waiters in
                waiters.next += 1
                return (waiters.next, waiters.generation)
            }
            if condition() { return }
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    // A change since the condition was read resumes at once, so none is missed.
                    let now = waiters.withLock { waiters -> Bool in
                        guard waiters.generation == generation, !Task.isCancelled else { return true }
                        waiters.parked[id] = continuation
                        return false
                    }
                    if now { continuation.resume() }
                }
            } onCancel: {
                waiters.withLock { $0.parked.removeValue(forKey: id) }?.resume()
            }
        }
    }
}
