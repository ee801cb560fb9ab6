/// The users of one cloud store, and the zone-wide shares between them (DESIGN D5).
///
/// The store (the embedded or the PostgreSQL cloud) keeps every user's zones side by side, told
/// apart by their owner. Each request acts as a user through a ``UserCloudDatabase``: that user's
/// private database (the zones they own) and shared database (the zones others shared with them
/// and they accepted). A cloud made before users existed needs no rewrite: its zones, stored
/// under ``ZoneID/defaultOwnerName``, belong to ``defaultUser``.
public struct CloudUsers: Sendable {
    /// The user a gateway or key acts as when its config names none; owns every zone of a
    /// cloud made before users existed.
    public static let defaultUser = "_defaultUser"

    /// The multi-owner store.
    public let store: any CloudDatabase
    /// Who may write the public database (``PublicCloudDatabase``); `nil`: every user.
    public var publicWriters: Set<String>?

    /// The users of `store`, a cloud that keeps every user's zones under their owner names.
    public init(store: any CloudDatabase, publicWriters: Set<String>? = nil) {
        self.store = store
        self.publicWriters = publicWriters
    }

    /// `user`'s view of the container's public database.
    public func publicDatabase(for user: String) -> PublicCloudDatabase {
        PublicCloudDatabase(users: self, user: user)
    }

    /// `user`'s view of the cloud: their private database, their shared database, or both
    /// (`nil`, what a gateway's synchronizer uses: its own zones and the zones shared with it,
    /// told apart by owner as in CloudKit).
    public func database(for user: String, scope: CloudScope?) -> UserCloudDatabase {
        UserCloudDatabase(users: self, user: user, scope: scope)
    }

    /// Whether `name` can be a user record name: 1 to 255 printable ASCII characters without
    /// spaces or slashes, not CloudKit's placeholder for the caller.
    public static func isValidUserName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 255 && name != ZoneID.defaultOwnerName
            && name.unicodeScalars.allSatisfy { $0.isASCII && $0.value > 0x20 && $0.value < 0x7F && $0 != "/" && $0 != "\\" }
    }

    // MARK: - Names as stored

    /// The owner name the store keeps `user`'s zones under.
    public static func storedOwner(of user: String) -> String {
        user == defaultUser ? ZoneID.defaultOwnerName : user
    }

    /// The user a stored owner name stands for.
    public static func user(ofStoredOwner owner: String) -> String {
        owner == ZoneID.defaultOwnerName ? defaultUser : owner
    }

    /// A zone as the store names it, as `user` names it: their own with
    /// ``ZoneID/defaultOwnerName``, others' with their owner's user record name.
    public static func zone(_ stored: ZoneID, asSeenBy user: String) -> ZoneID {
        stored.ownerName == storedOwner(of: user)
            ? ZoneID(zoneName: stored.zoneName) : ZoneID(zoneName: stored.zoneName, ownerName: self.user(ofStoredOwner: stored.ownerName))
    }

    // MARK: - Shares

    /// The share of `zoneName` owned by `owner`, if it has one.
    public func share(of zoneName: String, ownedBy owner: String) async throws -> ZoneShare? {
        let zone = ZoneID(zoneName: zoneName, ownerName: Self.storedOwner(of: owner))
        guard let record = try await store.lookup([RecordID(recordName: ZoneShare.recordName, zoneID: zone)])[0] else { return nil }
        return try ZoneShare(record: record, zoneName: zoneName, owner: owner)
    }

    /// The shares of every zone, each with its stored zone, read in one lookup.
    func allShares() async throws -> [(zone: ZoneID, share: ZoneShare)] {
        let zones = try await store.zones()
        guard !zones.isEmpty else { return [] }
        let records = try await store.lookup(zones.map { RecordID(recordName: ZoneShare.recordName, zoneID: $0) })
        var shares: [(ZoneID, ZoneShare)] = []
        for (zone, record) in zip(zones, records) {
            guard let record, let share = try? ZoneShare(record: record, zoneName: zone.zoneName, owner: Self.user(ofStoredOwner: zone.ownerName)) else {
                continue
            }
            shares.append((zone, share))
        }
        return shares
    }

    /// The share whose ``ZoneShare/shortGUID`` is `shortGUID`, if any.
    public func share(withShortGUID shortGUID: String) async throws -> ZoneShare? {
        try await allShares().first { $0.share.shortGUID == shortGUID }?.share
    }

    /// The shares `user` owns.
    public func shares(ownedBy user: String) async throws -> [ZoneShare] {
        try await allShares().filter { $0.share.owner == user }.map(\.share)
    }

    /// The shares `user` takes part in (accepted or not), or could join under their public
    /// permission when `includingPublic`.
    public func shares(with user: String, includingPublic: Bool = false) async throws -> [ZoneShare] {
        try await allShares().map(\.share).filter { share in
            share.owner != user && (share.participant(user) != nil || (includingPublic && share.publicPermission != .none))
        }
    }

    /// Changes (or creates) the share of `owner`'s zone `zoneName` as `change` says, and saves it;
    /// another writer's save in between is read again and `change` applied to it.
    /// - Throws: ``CloudError/Code/zoneNotFound`` for a zone `owner` does not have.
    @discardableResult
    public func updateShare(of zoneName: String, ownedBy owner: String, _ change: (inout ZoneShare) throws -> Void) async throws -> ZoneShare {
        let zone = ZoneID(zoneName: zoneName, ownerName: Self.storedOwner(of: owner))
        do {
            _ = try await store.currentChangeToken(in: zone)  // the zone must exist
        } catch let error as CloudError where error.code == .zoneNotFound {
            throw CloudError(
                .zoneNotFound, "\(owner) has no zone \(zoneName); a zone is shared by its owner (one shared with you is theirs to share)",
                underlying: error)
        }
        return try await ZoneShare.update(
            zoneName: zoneName, owner: owner, in: zone, read: { try await share(of: zoneName, ownedBy: owner) },
            save: { try await store.modify([$0], in: zone, atomic: true)[0] }, change)
    }

    /// Deletes the share of `owner`'s zone `zoneName`: every participant loses the zone.
    /// Returns whether there was one.
    @discardableResult
    public func deleteShare(of zoneName: String, ownedBy owner: String) async throws -> Bool {
        let zone = ZoneID(zoneName: zoneName, ownerName: Self.storedOwner(of: owner))
        guard try await share(of: zoneName, ownedBy: owner) != nil else { return false }
        let result = try await store.modify([.forceDelete(RecordID(recordName: ZoneShare.recordName, zoneID: zone))], in: zone, atomic: true)[0]
        if let error = result.error { throw error }
        return true
    }

    /// `user` accepts the share of `owner`'s zone `zoneName`: as an invited participant, or
    /// under the share's public permission. The zone joins `user`'s shared database.
    /// - Throws: ``CloudError/Code/unknownItem`` when the zone has no share `user` may join.
    @discardableResult
    public func accept(_ zoneName: String, ownedBy owner: String, as user: String) async throws -> ZoneShare {
        guard user != owner else { throw CloudError(.invalidArguments, "a user does not accept shares of their own zones (\(user) is the owner named)") }
        // One answer for a zone that does not exist, is not shared, or is shared with others only:
        // who has which zones is not the asker's to learn.
        let refusal = CloudError(.unknownItem, "no share of zone \(zoneName) of \(owner) invites \(user); ask its owner to add them")
        let current: ZoneShare?
        do {
            current = try await share(of: zoneName, ownedBy: owner)
        } catch let error as CloudError where error.code == .zoneNotFound {
            throw refusal
        }
        guard let current, current.participant(user) != nil || current.publicPermission != .none else { throw refusal }
        return try await updateShare(of: zoneName, ownedBy: owner) { share in
            if let index = share.participants.firstIndex(where: { $0.userRecordName == user }) {
                share.participants[index].acceptance = .accepted
            } else if share.publicPermission != .none {
                share.participants.append(ShareParticipant(userRecordName: user, permission: share.publicPermission, acceptance: .accepted, role: .publicUser))
            } else {
                throw refusal
            }
        }
    }

    /// `user` leaves the share of `owner`'s zone `zoneName`: the zone leaves their shared
    /// database. Returns whether they were in it.
    @discardableResult
    public func leave(_ zoneName: String, ownedBy owner: String, as user: String) async throws -> Bool {
        // A zone that does not exist answers as one the user is not in: not the asker's to learn.
        let current: ZoneShare?
        do {
            current = try await share(of: zoneName, ownedBy: owner)
        } catch let error as CloudError where error.code == .zoneNotFound {
            return false
        }
        guard let share = current, share.participant(user) != nil else { return false }
        try await updateShare(of: zoneName, ownedBy: owner) { $0.removeParticipant(user) }
        return true
    }
}

/// A cloud that can say which zones other users shared with its user: what the shared
/// database's adapter templates are made from.
public protocol SharedZoneListing: Sendable {
    /// The zones shared with the user and accepted, each named with its owner's user record name.
    func sharedZones() async throws -> [ZoneID]
}

/// Which of a user's databases a request acts on (CloudKit's database scopes less the public one).
public enum CloudScope: String, Sendable, Hashable, CaseIterable {
    /// The zones the user owns.
    case `private`
    /// The zones others shared with the user, which the user accepted.
    case shared
}
