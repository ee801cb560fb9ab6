import Synchronization

/// Runs async operations one at a time, in the order they arrive.
///
/// The kit's operations read the store, then commit what they saw to the state database; two of
/// them interleaved could commit a stale view over a newer one, so each runs alone. Stores that
/// can serve one request at a time (a plugin process) use one too.
public final class KitGate: Sendable {
    /// A gate with nothing running.
    public init() {}

    private struct State {
        var busy = false
        var waiting: [CheckedContinuation<Void, Never>] = []
    }
    private let state = Mutex(State())

    /// Runs `body` once every operation that arrived earlier has finished.
    public func run<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        await enter()
        defer { leave() }
        return try await body()
    }

    private func enter() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let resumeNow = state.withLock { state -> Bool in
                if state.busy {
                    state.waiting.append(continuation)
                    return false
                }
                state.busy = true
                return true
            }
            if resumeNow { continuation.resume() }
        }
    }

    private func leave() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if state.waiting.isEmpty {
                state.busy = false
                return nil
            }
            return state.waiting.removeFirst()
        }
        next?.resume()
    }
}
