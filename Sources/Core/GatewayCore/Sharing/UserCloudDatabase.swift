import Foundation

/// One user's view of a multi-user cloud store (``CloudUsers``): what a gateway configured with
/// that user, or a request signed with that user's key, sees and may do.
///
/// Zones are named as CloudKit names them to their caller: the caller's own zones with
/// ``ZoneID/defaultOwnerName``, zones shared with them with their owner's user record name. The
/// caller's own zones are theirs to read and write. Another user's zone can be read only once
/// its share (``ZoneShare``) lists the caller as an accepted participant (anything else reads as
/// ``CloudError/Code/zoneNotFound``), and written only with ``SharePermission/readWrite``: every
/// other write fails per record with ``CloudError/Code/permissionFailure``, and so does any write
/// of the share record by a participant. Every access to a shared zone reads its share, so a
/// revoked participant loses the zone at once.
public struct UserCloudDatabase: CloudDatabase, RecordScanning, SharedZoneListing {
    /// The store and its shares.
    public let users: CloudUsers
    /// The user record name the view acts as.
    public let user: String
    /// The database the view serves; `nil` for both, told apart by zone owner.
    public let scope: CloudScope?

    private var store: any CloudDatabase { users.store }
    private var storedSelf: String { CloudUsers.storedOwner(of: user) }

    public var limits: CloudLimits { store.limits }

    // MARK: - Names

    /// `zone` as the store keeps it.
    public func storedZone(_ zone: ZoneID) -> ZoneID {
        if zone.ownerName == ZoneID.defaultOwnerName || zone.ownerName == user { return ZoneID(zoneName: zone.zoneName, ownerName: storedSelf) }
        return ZoneID(zoneName: zone.zoneName, ownerName: CloudUsers.storedOwner(of: zone.ownerName))
    }

    /// A stored zone as the caller names it.
    public func viewedZone(_ stored: ZoneID) -> ZoneID {
        CloudUsers.zone(stored, asSeenBy: user)
    }

    /// Whether the store names the caller's zones as the caller does (the default user's), so
    /// records need no renaming on the way through.
    private var namesAsStored: Bool { storedSelf == ZoneID.defaultOwnerName }

    // MARK: - Access

    /// What the caller may do in a stored zone: `nil` when it is theirs; the share's permission
    /// when another user's zone is shared with them.
    /// - Throws: ``CloudError/Code/zoneNotFound`` when the zone is not in the view's database.
    private func access(_ stored: ZoneID, named zone: ZoneID) async throws -> SharePermission? {
        if stored.ownerName == storedSelf {
            guard scope != .shared else {
                throw CloudError(.zoneNotFound, "zone \(zone.zoneName) is \(user)'s own: it is in the private database, not the shared one")
            }
            return nil
        }
        guard scope != .private else {
            throw CloudError(.zoneNotFound, "zone \(zone) is not in \(user)'s private database")
        }
        let owner = CloudUsers.user(ofStoredOwner: stored.ownerName)
        let share: ZoneShare?
        do {
            share = try await users.share(of: stored.zoneName, ownedBy: owner)
        } catch let error as CloudError where error.code == .zoneNotFound {
            share = nil
        }
        guard let permission = share?.permission(of: user) else {
            throw CloudError(.zoneNotFound, "zone \(zone.zoneName) of \(owner) is not shared with \(user), or the share was not accepted")
        }
        return permission
    }

    // MARK: - CloudDatabase

    public func zones() async throws -> [ZoneID] {
        var zones: [ZoneID] = []
        if scope != .shared {
            zones += try await store.zones().filter { $0.ownerName == storedSelf }.map(viewedZone)
        }
        if scope != .private { zones += try await sharedZones() }
        return zones
    }

    /// The zones of other users shared with this one and accepted, named with their owners.
    public func sharedZones() async throws -> [ZoneID] {
        try await users.allShares().filter { $0.share.owner != user && $0.share.permission(of: user) != nil }.map { viewedZone($0.zone) }
    }

    public func createZone(_ zone: ZoneID) async throws {
        let stored = storedZone(zone)
        guard stored.ownerName == storedSelf, scope != .shared else {
            throw CloudError(.permissionFailure, "zones are created in their owner's private database; \(user) cannot create \(zone)")
        }
        try await store.createZone(stored)
    }

    /// Deletes one of the caller's zones; for a zone shared with the caller, leaves its share,
    /// as deleting a zone in CloudKit's shared database does.
    public func deleteZone(_ zone: ZoneID) async throws {
        let stored = storedZone(zone)
        if try await access(stored, named: zone) == nil {
            try await store.deleteZone(stored)
        } else {
            try await users.leave(stored.zoneName, ownedBy: CloudUsers.user(ofStoredOwner: stored.ownerName), as: user)
        }
    }

    public func fetchChanges(in zone: ZoneID, since token: ChangeToken?, limit: Int) async throws -> ZoneChanges {
        let stored = storedZone(zone)
        _ = try await access(stored, named: zone)
        var changes = try await store.fetchChanges(in: stored, since: token, limit: limit)
        guard stored != zone else { return changes }
        for index in changes.modified.indices { changes.modified[index].id.zoneID = zone }
        for index in changes.deleted.indices { changes.deleted[index].zoneID = zone }
        return changes
    }

    public func currentChangeToken(in zone: ZoneID) async throws -> ChangeToken {
        let stored = storedZone(zone)
        _ = try await access(stored, named: zone)
        return try await store.currentChangeToken(in: stored)
    }

    public func modify(_ operations: [RecordOperation], in zone: ZoneID, atomic: Bool) async throws -> [RecordOperationResult] {
        let stored = storedZone(zone)
        let permission = try await access(stored, named: zone)
        var operations = operations
        if permission == nil, let index = operations.firstIndex(where: { $0.record.map { ZoneShare.isShareRecord(named: $0.id.recordName) } ?? false }) {
            operations[index] = try await withAcceptanceKept(operations[index], zone: stored)
        }
        // What is refused, per operation: a participant's write without read-write permission,
        // any participant's write of the share, and an owner's share record that is not one.
        var refusals: [CloudError?] = []
        refusals.reserveCapacity(operations.count)
        for operation in operations {
            let id = operation.recordID
            if let permission {
                if permission != .readWrite {
                    refusals.append(CloudError(.permissionFailure, "\(user) may only read zone \(zone.zoneName): its share is read-only", recordID: id))
                } else if ZoneShare.isShareRecord(named: id.recordName) || operation.record?.recordType == ZoneShare.recordType {
                    refusals.append(CloudError(.permissionFailure, "only the owner of zone \(zone.zoneName) changes its share", recordID: id))
                } else {
                    refusals.append(nil)
                }
            } else if let record = operation.record, ZoneShare.isShareRecord(named: id.recordName) || record.recordType == ZoneShare.recordType {
                do {
                    _ = try ZoneShare(record: record, zoneName: zone.zoneName, owner: user)
                    refusals.append(nil)
                } catch let error as CloudError {
                    refusals.append(error)
                }
            } else {
                refusals.append(nil)
            }
        }
        if refusals.allSatisfy({ $0 == nil }) {
            if namesAsStored, stored == zone { return try await store.modify(operations, in: stored, atomic: atomic) }
            let results = try await store.modify(operations.map { $0.moved(to: stored) }, in: stored, atomic: atomic)
            return results.map { $0.moved(to: zone) }
        }
        if atomic {
            return zip(operations, refusals).map { operation, refusal in
                .failed(
                    operation.recordID,
                    refusal ?? CloudError(.batchRequestFailed, "another record of this atomic request was refused", recordID: operation.recordID))
            }
        }
        let allowed = zip(operations, refusals).filter { $0.1 == nil }.map { $0.0.moved(to: stored) }
        let results: [RecordOperationResult] = allowed.isEmpty ? [] : try await store.modify(allowed, in: stored, atomic: false)
        var sent = results.map { $0.moved(to: zone) }.makeIterator()
        return zip(operations, refusals).map { operation, refusal in
            refusal.map { .failed(operation.recordID, $0) } ?? sent.next()!
        }
    }

    /// The owner's save of the share with each participant's acceptance as the participant left
    /// it: only they accept, so an owner cannot put a zone in someone's shared database.
    private func withAcceptanceKept(_ operation: RecordOperation, zone stored: ZoneID) async throws -> RecordOperation {
        guard let record = operation.record, var share = try? ZoneShare(record: record, zoneName: stored.zoneName, owner: user) else { return operation }
        let existing = try? await users.share(of: stored.zoneName, ownedBy: user)
        for index in share.participants.indices {
            let before = existing?.participant(share.participants[index].userRecordName)
            share.participants[index].acceptance = before?.acceptance ?? .pending
            if let role = before?.role { share.participants[index].role = role }
        }
        var normalized = share.record(in: record.id.zoneID)
        normalized.id = record.id
        normalized.changeTag = record.changeTag
        return operation.replacingRecord(with: normalized)
    }

    public func lookup(_ recordIDs: [RecordID]) async throws -> [Record?] {
        var readable: [ZoneID: Bool] = [:]
        var asked: [RecordID] = []
        asked.reserveCapacity(recordIDs.count)
        for id in recordIDs {
            let stored = storedZone(id.zoneID)
            if readable[id.zoneID] == nil {
                do {
                    _ = try await access(stored, named: id.zoneID)
                    readable[id.zoneID] = true
                } catch let error as CloudError where error.code == .zoneNotFound {
                    readable[id.zoneID] = false
                }
            }
            asked.append(id.moved(to: stored))
        }
        let readableIDs = zip(recordIDs, asked).filter { readable[$0.0.zoneID] == true }
        var found = try await store.lookup(readableIDs.map(\.1)).makeIterator()
        return recordIDs.map { id in
            guard readable[id.zoneID] == true, let record = found.next()! else { return nil }
            return record.moved(to: id.zoneID)
        }
    }

    public func uploadAsset(_ data: Data) async throws -> AssetReference { try await store.uploadAsset(data) }

    public func downloadAsset(_ reference: AssetReference) async throws -> Data { try await store.downloadAsset(reference) }

    public func changeSignals(in zone: ZoneID) -> ChangeSignals { store.changeSignals(in: storedZone(zone)) }

    public func checkAccount() async throws { try await store.checkAccount() }

    public func close() async { await store.close() }

    // MARK: - RecordScanning

    public func scanRecords(in zone: ZoneID, ofType recordType: String, after recordName: String?, limit: Int) async throws -> [Record] {
        guard let scanning = store as? any RecordScanning else {
            throw CloudError(.invalidArguments, "this cloud does not answer queries")
        }
        let stored = storedZone(zone)
        _ = try await access(stored, named: zone)
        return try await scanning.scanRecords(in: stored, ofType: recordType, after: recordName, limit: limit).map { $0.moved(to: zone) }
    }
}
