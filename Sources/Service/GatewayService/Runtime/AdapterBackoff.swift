import GatewayConfig
import GatewayCore
import Synchronization

/// Which adapters the service may sync now: an adapter whose sync failed waits before it is
/// tried again, doubling the wait with each failure in a row, so a broken store neither blocks
/// the others nor floods its logs. A success clears its record.
public final class AdapterBackoff: Sendable {
    /// The first wait after a failure.
    public let baseDelay: Duration
    /// The longest wait.
    public let maxDelay: Duration
    private let failures = Mutex<[String: (count: Int, retryAt: ContinuousClock.Instant)]>([:])

    public init(baseDelay: Duration, maxDelay: Duration) {
        self.baseDelay = baseDelay
        self.maxDelay = max(baseDelay, maxDelay)
    }

    /// The wait after `count` failures in a row: base, 2 × base, 4 × base, … up to the maximum.
    public func delay(afterFailures count: Int) -> Duration {
        guard count > 0 else { return .zero }
        var delay = baseDelay
        for _ in 1..<min(count, 62) {
            delay *= 2
            if delay >= maxDelay { return maxDelay }
        }
        return min(delay, maxDelay)
    }

    /// The adapters of `names` that are not waiting at `now`, in their order.
    public func eligible(_ names: [String], at now: ContinuousClock.Instant) -> [String] {
        failures.withLock { failures in names.filter { failures[$0].map { now >= $0.retryAt } ?? true } }
    }

    /// When the adapter may be tried again, `nil` when it is not waiting.
    public func retryAt(_ name: String) -> ContinuousClock.Instant? {
        failures.withLock { $0[name]?.retryAt }
    }

    /// The earliest moment a waiting adapter may be tried again, `nil` when none waits.
    public func nextRetry() -> ContinuousClock.Instant? {
        failures.withLock { $0.values.map(\.retryAt).min() }
    }

    /// Records the outcome of each adapter in a report finished at `now`.
    public func record(_ report: SyncReport, at now: ContinuousClock.Instant) {
        failures.withLock { failures in
            for adapter in report.adapters {
                if case .failed = adapter.outcome {
                    let count = (failures[adapter.adapter]?.count ?? 0) + 1
                    failures[adapter.adapter] = (count, now + delay(afterFailures: count))
                } else {
                    failures[adapter.adapter] = nil
                }
            }
        }
    }
}
