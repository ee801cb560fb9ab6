import Foundation
import GatewayCore
import Synchronization

/// An adapter whose store could not be reached when the gateway started: every call tries to
/// open it first, so the adapter fails (and backs off) alone while the others sync, and starts
/// syncing as soon as its server is back, without a restart of the gateway.
///
/// A store that turns out not to match the configuration fails with that ``ConfigError``.
final class ReopeningAdapter: ModelAdapter {
    let configuration: AdapterConfiguration
    private let opened = Mutex<(any ModelAdapter)?>(nil)

    init(_ configuration: AdapterConfiguration) {
        self.configuration = configuration
    }

    var name: String { configuration.name }
    var zoneID: ZoneID { configuration.settings.zoneID }

    /// The store, opened now if it was not yet.
    func store() async throws -> any ModelAdapter {
        if let adapter = opened.withLock({ $0 }) { return adapter }
        do {
            try await configuration.plan.check()
            let adapter = try await configuration.plan.open()
            // Two calls may race to open it; the first one kept wins, the other copy closes with its last reference.
            return opened.withLock { current in
                if let current { return current }
                current = adapter
                return adapter
            }
        } catch let error as ConfigError {
            throw error
        } catch {
            // The store's message may name the adapter already.
            let described = "\(error)"
            let prefix = "adapter \(name): "
            let detail = described.hasPrefix(prefix) ? String(described.dropFirst(prefix.count)) : described
            throw GatewayError(.storeUnavailable, "adapter \(name): cannot open its store: \(detail)", underlying: error)
        }
    }

    /// Whether the store has been opened.
    var isOpen: Bool { opened.withLock { $0 != nil } }

    func loadZoneState() async throws -> Data? { try await store().loadZoneState() }
    func hasChanges() async throws -> Bool { try await store().hasChanges() }
    func pendingChangeCount() async throws -> Int { try await store().pendingChangeCount() }
    func pendingChanges(limit: Int, after version: Int64?) async throws -> PendingChanges {
        try await store().pendingChanges(limit: limit, after: version)
    }
    func localState(for recordIDs: [RecordID]) async throws -> [RecordID: LocalRecordState] { try await store().localState(for: recordIDs) }
    func syncedRecordIDs() async throws -> [RecordID] { try await store().syncedRecordIDs() }
    func apply(_ changes: DownloadedChanges) async throws { try await store().apply(changes) }
    func markUploaded(_ update: SyncStateUpdate) async throws { try await store().markUploaded(update) }
    func failedRecords() async throws -> [FailedRecord] { try await store().failedRecords() }
    func retryFailedRecords() async throws { try await store().retryFailedRecords() }
    func resetSyncState(keepData: Bool) async throws { try await store().resetSyncState(keepData: keepData) }

    /// The store's signals once it is open; until then, a signal each time it opens, so the
    /// service syncs it at once.
    func changeSignals() -> ChangeSignals {
        ChangeSignals { [self] in OpeningSignalSource(adapter: self) }
    }
}

/// Waits for a ``ReopeningAdapter`` to open (trying every few seconds), signals once, then
/// forwards the store's own signals.
private struct OpeningSignalSource: ChangeSignalSource {
    let adapter: ReopeningAdapter
    var inner: ChangeSignals.AsyncIterator?

    mutating func waitForChange() async -> Bool {
        if var inner {
            let next: Void? = await inner.next()
            self.inner = inner
            return next != nil
        }
        var delay = Duration.seconds(1)
        while !Task.isCancelled {
            if let store = try? await adapter.store() {
                var iterator = store.changeSignals().makeAsyncIterator()
                await iterator.start()
                inner = iterator
                return true
            }
            do {
                try await Task.sleep(for: delay)
            } catch {
                return false
            }
            delay = min(delay * 2, .seconds(30))
        }
        return false
    }
}
