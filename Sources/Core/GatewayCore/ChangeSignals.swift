import Synchronization
/// An endless sequence that yields each time a store (a cloud zone, an adapter's database)
/// changes after iteration began. It ends when the iterating task is cancelled.
///
/// A signal is only a hint to sync soon: several changes may coalesce into one signal. Sources
/// that can be pushed (PostgreSQL `NOTIFY`) and sources that must poll fit the same shape, so the
/// scheduler treats them alike. The sequence starts no task of its own: all waiting happens in the
/// iterating task.
public struct ChangeSignals: AsyncSequence, Sendable {
    public typealias Element = Void
    public typealias Failure = Never

    private let makeSource: @Sendable () -> any ChangeSignalSource

    /// Signals produced by a fresh source per iterator.
    public init(_ makeSource: @escaping @Sendable () -> any ChangeSignalSource) {
        self.makeSource = makeSource
    }

    /// Signals found by polling: `probe` returns a value that changes whenever the store changes
    /// (a sequence number, a version), and a signal is yielded whenever it differs from the last
    /// value seen. The first probe only sets the baseline. Probe errors count as "no change" and
    /// polling goes on, so a store that is briefly unreachable does not end the sequence.
    /// - Parameters:
    ///   - interval: how long to wait between two probes.
    ///   - clock: what the interval is waited on (a test's own, to step it).
    ///   - probe: reads the value that changes with the store.
    public static func polling<Stamp: Equatable & Sendable>(
        every interval: Duration, clock: any SyncClock = LiveSyncClock(), probe: @escaping @Sendable () async throws -> Stamp
    ) -> ChangeSignals {
        ChangeSignals { PollingChangeSource(interval: interval, clock: clock, probe: probe) }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(source: makeSource())
    }

    /// Waits for the next change.
    public struct AsyncIterator: AsyncIteratorProtocol {
        var source: any ChangeSignalSource

        public mutating func next() async -> Void? {
            await source.waitForChange() ? () : nil
        }

        /// Starts watching now instead of at the first ``next()``: every change after this call
        /// is signalled. Callers that must not miss a change made right after they begin (a
        /// test, or work started just after subscribing) call it first.
        public mutating func start() async {
            await source.start()
        }
    }
}

/// Where a ``ChangeSignals`` sequence gets its signals from; implement it for push-based stores.
public protocol ChangeSignalSource {
    /// Waits until the store changes. Returns `false` when the signals have ended (the task was
    /// cancelled or the source closed), `true` after a change.
    mutating func waitForChange() async -> Bool

    /// Starts watching (takes a baseline, subscribes) so that every later change is reported.
    /// Called at most once, before the first ``waitForChange()``; sources that start lazily in
    /// ``waitForChange()`` need not implement it.
    mutating func start() async
}

extension ChangeSignalSource {
    public mutating func start() async {}
}

/// Polls a probe at a fixed interval and reports when its value changes.
struct PollingChangeSource<Stamp: Equatable & Sendable>: ChangeSignalSource {
    let interval: Duration
    let clock: any SyncClock
    let probe: @Sendable () async throws -> Stamp
    var last: Stamp?
    var hasBaseline = false

    init(interval: Duration, clock: any SyncClock, probe: @escaping @Sendable () async throws -> Stamp) {
        self.interval = interval
        self.clock = clock
        self.probe = probe
    }

    mutating func start() async {
        guard !hasBaseline else { return }
        last = try? await probe()
        hasBaseline = true
    }

    mutating func waitForChange() async -> Bool {
        await start()
        while !Task.isCancelled {
            do {
                try await clock.sleep(for: interval)
            } catch {
                return false
            }
            guard let current = try? await probe() else { continue }
            if current != last {
                last = current
                return true
            }
        }
        return false
    }
}

extension ChangeSignals {
    /// Signals that never fire; the sequence ends when the iterating task is cancelled. For
    /// stores that cannot tell when they change: the service's interval syncs find their changes.
    public static var never: ChangeSignals {
        ChangeSignals { SilentChangeSource() }
    }
}

/// Waits for cancellation and reports no change.
struct SilentChangeSource: ChangeSignalSource {
    mutating func waitForChange() async -> Bool {
        while !Task.isCancelled {
            do { try await Task.sleep(for: .seconds(3_600)) } catch { return false }
        }
        return false
    }
}
