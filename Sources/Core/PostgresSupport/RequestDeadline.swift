import NIOCore
import PostgresNIO
import Synchronization

/// The deadline of one operation on a pooled connection: when it passes, the connection is
/// closed, which fails the statement in flight (PostgreSQL rolls back an open transaction), and
/// the operation reports ``PostgresFailure/Code/timedOut``.
final class RequestDeadline: Sendable {
    let timeout: Duration
    private let passed = Atomic<Bool>(false)

    init(after timeout: Duration) {
        self.timeout = timeout
    }

    /// Whether the deadline passed and closed the connection.
    var hasPassed: Bool { passed.load(ordering: .acquiring) }

    /// Schedules the closing of `connection` on its event loop; cancel the result when the
    /// operation ends in time.
    func arm(closing connection: PostgresConnection) -> Scheduled<Void> {
        let components = timeout.components
        let nanoseconds = components.seconds.multipliedReportingOverflow(by: 1_000_000_000)
        let amount: TimeAmount =
            nanoseconds.overflow ? .hours(24 * 365) : .nanoseconds(nanoseconds.partialValue + components.attoseconds / 1_000_000_000)
        return connection.eventLoop.scheduleTask(in: amount) { [self] in
            self.passed.store(true, ordering: .releasing)
            let closing: EventLoopFuture<Void> = connection.close()
            _ = closing
        }
    }

    /// The failure an operation that ran past the deadline reports.
    func failure(doing what: String, on endpoint: PostgresEndpoint, underlying: (any Error)? = nil) -> PostgresFailure {
        PostgresFailure(
            .timedOut,
            "\(what) on \(endpoint) did not finish within \(timeout) (request_timeout); the connection was closed and its transaction rolled back. Is the server or the network stalled?",
            underlying: underlying)
    }
}
