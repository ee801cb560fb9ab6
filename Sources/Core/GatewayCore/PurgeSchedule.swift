import Synchronization

/// When a cloud last purged expired tombstones: writes purge on their own about once an
/// interval, without a background task. The interval is an hour, or half the retention when that
/// is shorter, so a short retention is honoured within about half its length.
package final class PurgeSchedule: Sendable {
    private let interval: Duration
    private let last = Mutex<ContinuousClock.Instant?>(nil)

    package init(interval: Duration = .seconds(3600)) {
        self.interval = interval
    }

    /// The schedule for tombstones kept for `retention`.
    package convenience init(retention: Duration) {
        self.init(interval: min(.seconds(3600), retention / 2))
    }

    /// Whether a purge is due now; when it is, the next one is an interval away.
    package func takeIfDue() -> Bool {
        last.withLock { last in
            let now = ContinuousClock.now
            if let last, now - last < interval { return false }
            last = now
            return true
        }
    }
}
