/// The monotonic time the synchronizer measures stalls and stop deadlines on.
///
/// The live clock is `ContinuousClock`; tests inject one they step by hand (`ManualSyncClock` in
/// `GatewayTesting`), so a six-second stall limit is tested without waiting six seconds.
public protocol SyncClock: Sendable {
    /// The current instant.
    var now: ContinuousClock.Instant { get }

    /// Waits `duration` on this clock; throws `CancellationError` when the task is cancelled.
    func sleep(for duration: Duration) async throws
}

/// `ContinuousClock`: real time.
public struct LiveSyncClock: SyncClock {
    /// Real time.
    public init() {}

    public var now: ContinuousClock.Instant { .now }

    public func sleep(for duration: Duration) async throws {
        try await Task.sleep(for: duration)
    }
}
