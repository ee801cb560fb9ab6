import Synchronization

/// What the adapters of one parallel sync do in the zones they share: which of them are in the
/// middle of a pass, and how many records each has uploaded.
///
/// An ordered sync downloads, for each adapter, what the adapters before it uploaded to its zone.
/// A parallel one keeps that promise this way: an adapter that finishes a pass while a sibling on
/// its zone is still busy waits, and syncs again each time that sibling has uploaded a page's worth
/// of records (and once more when it is done), so pages flow from one store to the other while the
/// sibling is still uploading, without a pass per upload batch.
final class ZoneActivity: Sendable {
    private struct Waiter {
        let id: Int
        let zone: ZoneID
        let continuation: CheckedContinuation<Look, Never>
    }

    private struct State {
        var zones: [String: ZoneID] = [:]
        /// Each adapter's place in the sync's order.
        var order: [String: Int] = [:]
        /// Adapters whose first pass has not started yet.
        var notStarted: Set<String> = []
        var busy: Set<String> = []
        var uploads: [String: Int] = [:]
        var waiters: [Waiter] = []
        var nextWaiter = 0

        func siblings(of adapter: String) -> [String] {
            guard let zone = zones[adapter] else { return [] }
            return zones.compactMap { $0.key != adapter && $0.value == zone ? $0.key : nil }
        }

        /// Whether `sibling` may still upload what `adapter` must download: it is in a pass, or
        /// it comes before `adapter` in the sync's order and has not started yet (its turn is
        /// given first, but its task may not have run yet). A later sibling not started yet is
        /// not waited for: it may need the slot `adapter` holds.
        func mayUpload(_ sibling: String, before adapter: String) -> Bool {
            busy.contains(sibling) || (notStarted.contains(sibling) && (order[sibling] ?? 0) < (order[adapter] ?? 0))
        }

        func siblingUploads(of adapter: String) -> Int {
            siblings(of: adapter).reduce(0) { $0 + uploads[$1, default: 0] }
        }

        /// Wakes everyone waiting on `zone`: they check again what they wait for.
        mutating func wake(_ zone: ZoneID?) -> [CheckedContinuation<Look, Never>] {
            let woken = waiters.filter { $0.zone == zone }
            waiters.removeAll { $0.zone == zone }
            return woken.map(\.continuation)
        }
    }

    private let state = Mutex(State())

    /// - Parameter adapters: the adapters of the sync, by name, with their zones.
    init(adapters: [(name: String, zone: ZoneID)]) {
        state.withLock { state in
            for (index, (name, zone)) in adapters.enumerated() {
                state.zones[name] = zone
                state.order[name] = index
                state.notStarted.insert(name)
            }
        }
    }

    /// How many waits are parked (tests wait for a wait to start instead of sleeping).
    var parkedWaits: Int { state.withLock { $0.waiters.count } }

    /// The adapter starts a pass: it may upload until ``finishedPass(_:)``.
    func startedPass(_ adapter: String) {
        state.withLock { state in
            state.notStarted.remove(adapter)
            state.busy.insert(adapter)
        }
    }

    /// The adapter's pass ended; siblings waiting for it look again.
    /// (Also for an adapter stopped before its turn, which never starts a pass.)
    func finishedPass(_ adapter: String) {
        let woken = state.withLock { state in
            state.notStarted.remove(adapter)
            state.busy.remove(adapter)
            return state.wake(state.zones[adapter])
        }
        for continuation in woken { continuation.resume(returning: .again) }
    }

    /// The adapter committed an upload batch that saved or deleted `records` records in the cloud.
    func uploaded(_ records: Int, by adapter: String) {
        let woken = state.withLock { state in
            state.uploads[adapter, default: 0] += records
            return state.wake(state.zones[adapter])
        }
        for continuation in woken { continuation.resume(returning: .again) }
    }

    /// How many records the adapter's siblings (other adapters on its zone) have uploaded so far.
    func siblingUploads(of adapter: String) -> Int {
        state.withLock { $0.siblingUploads(of: adapter) }
    }

    /// Waits until the adapter's siblings have uploaded `enough` records more than `seen` (returns
    /// `true`: there is a page to download), or until no sibling is in a pass any more: then it
    /// returns whether anything came after `seen`. Cancellation returns `false`.
    func waitForSiblings(of adapter: String, after seen: Int, enough: Int = 1) async -> Bool {
        while true {
            let id = state.withLock { state -> Int in
                state.nextWaiter += 1
                return state.nextWaiter
            }
            let next = await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Look, Never>) in
                    // Checked and registered under one lock, so no upload or finished pass is missed.
                    let now = state.withLock { state -> Look? in
                        guard let zone = state.zones[adapter] else { return .done }
                        let new = state.siblingUploads(of: adapter) - seen
                        if Task.isCancelled { return .done }
                        if new >= max(1, enough) { return .download }
                        if !state.siblings(of: adapter).contains(where: { state.mayUpload($0, before: adapter) }) {
                            return new > 0 ? .download : .done
                        }
                        state.waiters.append(Waiter(id: id, zone: zone, continuation: continuation))
                        return nil
                    }
                    if let now { continuation.resume(returning: now) }
                }
            } onCancel: {
                let cancelled = state.withLock { state in
                    let found = state.waiters.first { $0.id == id }
                    state.waiters.removeAll { $0.id == id }
                    return found?.continuation
                }
                cancelled?.resume(returning: .done)
            }
            switch next {
            case .download: return true
            case .done: return false
            case .again: continue
            }
        }
    }
}

/// What a waiting adapter does next.
private enum Look: Sendable {
    /// Siblings uploaded enough, or finished with something new: sync again.
    case download
    /// No sibling is busy and nothing new came, or the sync is cancelled.
    case done
    /// Something changed; check again.
    case again
}
