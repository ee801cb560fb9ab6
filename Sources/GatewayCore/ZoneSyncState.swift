import Foundation

/// What the synchronizer remembers about an adapter's zone, stored by the adapter as an opaque
/// blob and committed with the data it describes.
public struct ZoneSyncState: Sendable, Equatable, Codable {
    /// The position in the zone's change feed; `nil` before the first download or after a reset.
    public var token: ChangeToken?
    /// The current upload batch size; `nil` means the configured size.
    public var batchSize: Int?
    /// The smallest batch size that failed with `limitExceeded`, which growth stays below.
    public var failedBatchSize: Int?
    /// When ``failedBatchSize`` was recorded; it is forgotten after an hour.
    public var failedBatchSizeAt: Date?
    /// Why the adapter is paused (its zone was deleted under `on_zone_deleted: pause`).
    public var pausedReason: String?

    public init(
        token: ChangeToken? = nil, batchSize: Int? = nil, failedBatchSize: Int? = nil, failedBatchSizeAt: Date? = nil,
        pausedReason: String? = nil
    ) {
        self.token = token
        self.batchSize = batchSize
        self.failedBatchSize = failedBatchSize
        self.failedBatchSizeAt = failedBatchSizeAt
        self.pausedReason = pausedReason
    }

    /// The blob adapters store.
    public func encoded() -> Data {
        // JSON keeps the blob readable when operators inspect a store; it is tiny and written once per batch.
        (try? JSONEncoder().encode(self)) ?? Data()
    }

    /// Decodes a blob made by ``encoded()``; `nil` data is the initial state.
    /// - Throws: ``SyncError`` with code ``SyncError/Code/corruptSyncState`` for damaged blobs.
    public init(decoding data: Data?) throws {
        guard let data else {
            self.init()
            return
        }
        do {
            self = try JSONDecoder().decode(ZoneSyncState.self, from: data)
        } catch {
            throw SyncError(.corruptSyncState, "the adapter's zone state is damaged; reset the adapter", underlying: error)
        }
    }
}
