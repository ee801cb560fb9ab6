import Foundation
import GatewayCore

/// Shortcuts for tests of any adapter.
extension ModelAdapter {
    /// Records the adapter's pending saves as uploaded unchanged (metadata of the values read,
    /// versions settled), as a sync does once the cloud saved them; returns the records settled.
    @discardableResult
    public func markPendingSavesUploaded(limit: Int = 1_000) async throws -> [Record] {
        let saves = try await pendingChanges(limit: limit).saves
        var update = SyncStateUpdate(zoneState: try await loadZoneState() ?? Data())
        for save in saves {
            update.settled[save.record.id] = save.version
            update.metadata[save.record.id] = RecordMetadata(syncedRecord: save.record).encoded()
        }
        try await commit(update)
        return saves.map(\.record)
    }
}
