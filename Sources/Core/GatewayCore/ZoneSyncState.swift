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
    /// A full refetch after an expired token is under way: the token stays `nil` until it
    /// completes and local records the cloud no longer has have been reconciled, so an interrupted
    /// refetch starts over instead of skipping the reconciliation.
    public var refetching: Bool
    /// Downloaded records the store refused, by record name (``RefusedDownload``): left as the
    /// store holds them, kept out of uploads, and looked up again at the end of every download.
    public var refused: [String: RefusedDownload]
    /// The token the store held in the zone it last left: found deleted or created again, it was
    /// recovered under `on_zone_deleted` into the zone it syncs with now. A cloud that still
    /// takes this token holds that earlier zone, so the store is going back and forth between
    /// two clouds (``SyncError/Code/storeSyncedElsewhere``).
    public var leftZoneToken: ChangeToken?

    /// How many refused downloads a zone keeps. A page that would refuse more fails as a whole:
    /// so many refusals say the store's shape does not fit the zone (a column the cloud's records
    /// lack, a key this gateway does not have), which the operator must fix, not records to wait.
    public static let maximumRefusedDownloads = 100

    /// A state; a new adapter starts with no token and the configured batch size.
    public init(
        token: ChangeToken? = nil, batchSize: Int? = nil, failedBatchSize: Int? = nil, failedBatchSizeAt: Date? = nil,
        pausedReason: String? = nil, refetching: Bool = false, refused: [String: RefusedDownload] = [:], leftZoneToken: ChangeToken? = nil
    ) {
        self.token = token
        self.batchSize = batchSize
        self.failedBatchSize = failedBatchSize
        self.failedBatchSizeAt = failedBatchSizeAt
        self.pausedReason = pausedReason
        self.refetching = refetching
        self.refused = refused
        self.leftZoneToken = leftZoneToken
    }

    private enum CodingKeys: String, CodingKey {
        case token, batchSize, failedBatchSize, failedBatchSizeAt, pausedReason, refetching, refused, leftZoneToken
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        token = try container.decodeIfPresent(ChangeToken.self, forKey: .token)
        batchSize = try container.decodeIfPresent(Int.self, forKey: .batchSize)
        failedBatchSize = try container.decodeIfPresent(Int.self, forKey: .failedBatchSize)
        failedBatchSizeAt = try container.decodeIfPresent(Date.self, forKey: .failedBatchSizeAt)
        pausedReason = try container.decodeIfPresent(String.self, forKey: .pausedReason)
        refetching = try container.decodeIfPresent(Bool.self, forKey: .refetching) ?? false
        refused = try container.decodeIfPresent([String: RefusedDownload].self, forKey: .refused) ?? [:]
        leftZoneToken = try container.decodeIfPresent(ChangeToken.self, forKey: .leftZoneToken)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(token, forKey: .token)
        try container.encodeIfPresent(batchSize, forKey: .batchSize)
        try container.encodeIfPresent(failedBatchSize, forKey: .failedBatchSize)
        try container.encodeIfPresent(failedBatchSizeAt, forKey: .failedBatchSizeAt)
        try container.encodeIfPresent(pausedReason, forKey: .pausedReason)
        try container.encode(refetching, forKey: .refetching)
        // Absent when empty, so a zone without refusals keeps the blob it always had.
        if !refused.isEmpty { try container.encode(refused, forKey: .refused) }
        try container.encodeIfPresent(leftZoneToken, forKey: .leftZoneToken)
    }

    /// The blob adapters store.
    public func encoded() -> Data {
        // JSON keeps the blob readable when operators inspect a store; it is tiny and written once
        // per batch. Sorted keys make equal states equal bytes.
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return (try? encoder.encode(self)) ?? Data()
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
