import Foundation

/// A decorator of another adapter: every call goes to ``forwardingTarget()`` unless the
/// decorator implements it itself.
///
/// A decorator changes one or two calls (opens its store lazily, counts commits, makes a call
/// hang in a test) and names only those; the forwarding of the rest is written once, here.
/// ``ModelAdapter/name`` and ``ModelAdapter/zoneID`` are the decorator's own.
public protocol ForwardingAdapter: ModelAdapter {
    /// The adapter calls go to. Asked once per call, so a decorator may open it lazily or
    /// replace it between calls.
    func forwardingTarget() async throws -> any ModelAdapter
}

extension ForwardingAdapter {
    public func loadZoneState() async throws -> Data? { try await forwardingTarget().loadZoneState() }

    public func pendingChanges(limit: Int, after version: Int64?) async throws -> PendingChanges {
        try await forwardingTarget().pendingChanges(limit: limit, after: version)
    }

    public func localState(for recordIDs: [RecordID]) async throws -> [RecordID: LocalRecordState] {
        try await forwardingTarget().localState(for: recordIDs)
    }

    public func syncedRecordIDs() async throws -> [RecordID] { try await forwardingTarget().syncedRecordIDs() }

    public func apply(_ changes: DownloadedChanges) async throws { try await forwardingTarget().apply(changes) }

    public func commit(_ update: SyncStateUpdate) async throws { try await forwardingTarget().commit(update) }

    public func resetSyncState(keepData: Bool) async throws { try await forwardingTarget().resetSyncState(keepData: keepData) }

    public func hasChanges() async throws -> Bool { try await forwardingTarget().hasChanges() }

    public func pendingChangeCount() async throws -> Int { try await forwardingTarget().pendingChangeCount() }

    public func failedRecords() async throws -> [FailedRecord] { try await forwardingTarget().failedRecords() }

    public func retryFailedRecords() async throws { try await forwardingTarget().retryFailedRecords() }

    /// The target's signals, once it can be reached (tried again every second until then).
    public func changeSignals() -> ChangeSignals {
        ChangeSignals { [self] in ForwardedChangeSource(forwarding: self) }
    }

    /// Closes the target, when it can be reached.
    public func close() async {
        await (try? forwardingTarget())?.close()
    }
}

/// Reaches a forwarding adapter's target, then forwards its signals.
private struct ForwardedChangeSource<Decorator: ForwardingAdapter>: ChangeSignalSource {
    let forwarding: Decorator
    var inner: ChangeSignals.AsyncIterator?

    mutating func start() async {
        _ = await reachTarget()
    }

    mutating func waitForChange() async -> Bool {
        guard await reachTarget(), var inner else { return false }
        let next: Void? = await inner.next()
        self.inner = inner
        return next != nil
    }

    /// Whether the target's signals are being forwarded; `false` when the task was cancelled first.
    private mutating func reachTarget() async -> Bool {
        while inner == nil {
            if let target = try? await forwarding.forwardingTarget() {
                var iterator = target.changeSignals().makeAsyncIterator()
                await iterator.start()
                inner = iterator
                return true
            }
            do { try await Task.sleep(for: .seconds(1)) } catch { return false }
        }
        return true
    }
}
