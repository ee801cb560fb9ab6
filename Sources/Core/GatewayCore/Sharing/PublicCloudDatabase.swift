import Foundation

/// One user's view of the container's public database: one zone, `_defaultZone`, that every user
/// reads, and that the users ``CloudUsers/publicWriters`` allows (every user by default) write.
/// As in CloudKit it has no change feed: it is read by lookups and queries
/// (``fetchChanges(in:since:limit:)`` is refused), and the gateway does not sync it.
public struct PublicCloudDatabase: CloudDatabase, RecordScanning {
    /// The public database's one zone, as callers name it.
    public static let zone = ZoneID(zoneName: "_defaultZone")
    /// The owner the store keeps the public zone under: a name no user can have (it has a space).
    static let storedOwner = "public database"
    /// The public zone as the store keeps it.
    public static let stored = ZoneID(zoneName: "_defaultZone", ownerName: storedOwner)

    /// The store and its rules.
    public let users: CloudUsers
    /// The user record name the view acts as.
    public let user: String

    private var store: any CloudDatabase { users.store }
    private var mayWrite: Bool { users.publicWriters?.contains(user) ?? true }

    public var limits: CloudLimits { store.limits }

    private func require(_ zone: ZoneID) throws {
        guard zone.zoneName == Self.zone.zoneName, zone.ownerName == ZoneID.defaultOwnerName || zone.ownerName == Self.storedOwner else {
            throw CloudError(.zoneNotFound, "the public database has one zone, _defaultZone; \(zone) is not in it")
        }
    }

    public func zones() async throws -> [ZoneID] { [Self.zone] }

    public func createZone(_ zone: ZoneID) async throws {
        try require(zone)
    }

    public func deleteZone(_ zone: ZoneID) async throws {
        throw CloudError(.permissionFailure, "the public database's zone cannot be deleted")
    }

    public func fetchChanges(in zone: ZoneID, since token: ChangeToken?, limit: Int) async throws -> ZoneChanges {
        throw CloudError(.invalidArguments, "the public database has no change feed, as in CloudKit; query it (records/query) or look records up")
    }

    public func currentChangeToken(in zone: ZoneID) async throws -> ChangeToken {
        try require(zone)
        try await existing()
        return try await store.currentChangeToken(in: Self.stored)
    }

    /// Makes the stored zone on first use.
    private func existing() async throws {
        do {
            _ = try await store.currentChangeToken(in: Self.stored)
        } catch let error as CloudError where error.code == .zoneNotFound {
            try await store.createZone(Self.stored)
        }
    }

    public func modify(_ operations: [RecordOperation], in zone: ZoneID, atomic: Bool) async throws -> [RecordOperationResult] {
        try require(zone)
        let refusal: (RecordOperation) -> CloudError? = { operation in
            if !mayWrite {
                return CloudError(.permissionFailure, "\(user) may read the public database but not write it", recordID: operation.recordID)
            }
            if ZoneShare.isShareRecord(named: operation.recordID.recordName) || operation.record?.recordType == ZoneShare.recordType {
                return CloudError(.invalidArguments, "the public database has no shares", recordID: operation.recordID)
            }
            return nil
        }
        let refusals = operations.map(refusal)
        if refusals.contains(where: { $0 != nil }) {
            return zip(operations, refusals).map { operation, refused in
                .failed(
                    operation.recordID,
                    refused ?? CloudError(.batchRequestFailed, "another record of this request was refused", recordID: operation.recordID))
            }
        }
        try await existing()
        return try await store.modify(operations.map { $0.moved(to: Self.stored) }, in: Self.stored, atomic: atomic).map { $0.moved(to: Self.zone) }
    }

    public func lookup(_ recordIDs: [RecordID]) async throws -> [Record?] {
        let inZone = recordIDs.map { (try? require($0.zoneID)) != nil }
        let asked = zip(recordIDs, inZone).filter(\.1).map { $0.0.moved(to: Self.stored) }
        guard !asked.isEmpty else { return recordIDs.map { _ in nil } }
        var found: IndexingIterator<[Record?]>
        do {
            found = try await store.lookup(asked).makeIterator()
        } catch let error as CloudError where error.code == .zoneNotFound {
            return recordIDs.map { _ in nil }
        }
        return inZone.map { isIn in isIn ? found.next()!?.moved(to: Self.zone) : nil }
    }

    public func scanRecords(in zone: ZoneID, ofType recordType: String, after recordName: String?, limit: Int) async throws -> [Record] {
        try require(zone)
        guard let scanning = store as? any RecordScanning else { throw CloudError(.invalidArguments, "this cloud does not answer queries") }
        do {
            return try await scanning.scanRecords(in: Self.stored, ofType: recordType, after: recordName, limit: limit).map { $0.moved(to: Self.zone) }
        } catch let error as CloudError where error.code == .zoneNotFound {
            return []
        }
    }

    public func uploadAsset(_ data: Data) async throws -> AssetReference {
        guard mayWrite else { throw CloudError(.permissionFailure, "\(user) may read the public database but not write it") }
        return try await store.uploadAsset(data)
    }

    public func downloadAsset(_ reference: AssetReference) async throws -> Data { try await store.downloadAsset(reference) }

    public func changeSignals(in zone: ZoneID) -> ChangeSignals { store.changeSignals(in: Self.stored) }

    public func checkAccount() async throws { try await store.checkAccount() }
}
