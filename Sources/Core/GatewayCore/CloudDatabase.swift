import Foundation

/// A CloudKit-style record store: zones of records with a change feed, conditional writes and
/// content-addressed assets.
///
/// Every implementation (the embedded SQLite cloud, the PostgreSQL cloud, the CloudKit Web
/// Services client) has the same observable semantics, proven by the cloud conformance suite in
/// `GatewayTesting`. Whole-request failures throw ``CloudError``; per-record failures are
/// ``RecordOperationResult/failed(_:_:)`` results.
public protocol CloudDatabase: Sendable {
    /// The limits this cloud enforces.
    var limits: CloudLimits { get }

    /// All zones of the database.
    func zones() async throws -> [ZoneID]

    /// Creates a zone; creating an existing zone succeeds and changes nothing.
    func createZone(_ zone: ZoneID) async throws

    /// Deletes a zone with all its records. Tokens issued for it expire.
    /// - Throws: ``CloudError/Code/zoneNotFound`` when the zone does not exist.
    func deleteZone(_ zone: ZoneID) async throws

    /// Returns changes after `token` (from the beginning when `nil`) in commit order, at most
    /// `limit` of them (clamped to ``CloudLimits/maxResultsPerFetch``). Paging with the returned
    /// token never skips or repeats a change.
    /// - Throws: ``CloudError/Code/zoneRecreated`` for a token from before the zone was deleted
    ///   and created again (``CloudError/Code/changeTokenExpired`` from a cloud that cannot tell);
    ///   ``CloudError/Code/changeTokenExpired`` for one older than the tombstones kept;
    ///   ``CloudError/Code/zoneNotFound``.
    func fetchChanges(in zone: ZoneID, since token: ChangeToken?, limit: Int) async throws -> ZoneChanges

    /// A token at the end of `zone`'s feed as it is now: fetching since it returns only later
    /// changes. CloudKit hands these out with each zone (`zones/list`, `zones/lookup`).
    /// - Throws: ``CloudError/Code/zoneNotFound``.
    func currentChangeToken(in zone: ZoneID) async throws -> ChangeToken

    /// Applies `operations` to records of `zone` and returns one result per operation, in order.
    /// With `atomic`, either every operation succeeds or none is applied.
    /// - Throws: ``CloudError/Code/limitExceeded`` when the request has too many operations or is
    ///   too large; ``CloudError/Code/invalidArguments`` when a record appears twice or is not in
    ///   `zone`; ``CloudError/Code/zoneNotFound``.
    func modify(_ operations: [RecordOperation], in zone: ZoneID, atomic: Bool) async throws
        -> [RecordOperationResult]

    /// The current version of each record, `nil` for records that do not exist, in the order asked.
    func lookup(_ recordIDs: [RecordID]) async throws -> [Record?]

    /// Stores an asset's bytes and returns the reference to put in a record field. Identical bytes
    /// return the same reference and are stored once.
    /// - Throws: ``CloudError/Code/limitExceeded`` when the asset is larger than ``CloudLimits/maxAssetSize``.
    func uploadAsset(_ data: Data) async throws -> AssetReference

    /// Returns an asset's bytes after checking them against the reference's checksum and size.
    /// - Throws: ``CloudError/Code/assetNotAvailable`` when the bytes are missing or do not match.
    func downloadAsset(_ reference: AssetReference) async throws -> Data

    /// Signals whenever `zone` changes, including changes made by other processes and gateways.
    func changeSignals(in zone: ZoneID) -> ChangeSignals

    /// Checks the account and credentials before a sync, as CloudKit requires of its clients.
    /// The default does nothing, for clouds without accounts.
    /// - Throws: ``CloudError/Code/notAuthenticated`` when the credentials are missing or expired,
    ///   with what to do in the message.
    func checkAccount() async throws

    /// Releases what the cloud holds (connections, files) when the process is done with it;
    /// calls after it may fail. The default does nothing.
    func close() async
}

extension CloudDatabase {
    public func checkAccount() async throws {}

    /// Does nothing: the cloud holds nothing that its last reference does not release.
    public func close() async {}
}
