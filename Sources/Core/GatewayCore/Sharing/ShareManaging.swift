/// Zone-wide shares as one user manages them: the shares of their own zones, and the shares
/// other users offered them. ``UserCloudDatabase`` does it in the store; the CloudKit Web
/// Services client does it through `records/modify`, `records/accept` and the shared database,
/// so `gateway share` works the same against every cloud.
public protocol ShareManaging: Sendable {
    /// The user record name the shares are managed as.
    func shareUserRecordName() async throws -> String

    /// The share of the user's own zone `zoneName`, if it has one.
    func share(of zoneName: String) async throws -> ZoneShare?

    /// Changes (or creates) the share of the user's zone `zoneName` as `change` says and saves
    /// it; another writer's save in between is read again and `change` applied to it.
    /// - Throws: ``CloudError/Code/zoneNotFound`` for a zone the user does not have.
    @discardableResult
    func updateShare(of zoneName: String, _ change: @Sendable (inout ZoneShare) throws -> Void) async throws -> ZoneShare

    /// Stops sharing the user's zone `zoneName`; returns whether it was shared.
    @discardableResult
    func deleteShare(of zoneName: String) async throws -> Bool

    /// Accepts the share of `owner`'s zone `zoneName`, invited or under its public permission.
    /// - Throws: ``CloudError/Code/unknownItem`` when there is no share the user may join.
    @discardableResult
    func acceptShare(of zoneName: String, ownedBy owner: String) async throws -> ZoneShare

    /// Leaves the share of `owner`'s zone `zoneName`; returns whether the user was in it.
    @discardableResult
    func leaveShare(of zoneName: String, ownedBy owner: String) async throws -> Bool

    /// The shares of the user's own zones.
    func ownedShares() async throws -> [ZoneShare]

    /// The shares of other users' zones that the user takes part in (those the cloud can list:
    /// every invitation in the store's clouds, the accepted ones through CloudKit Web Services).
    func joinedShares() async throws -> [ZoneShare]
}

extension UserCloudDatabase: ShareManaging {
    public func shareUserRecordName() async throws -> String { user }

    public func share(of zoneName: String) async throws -> ZoneShare? {
        try await users.share(of: zoneName, ownedBy: user)
    }

    @discardableResult
    public func updateShare(of zoneName: String, _ change: @Sendable (inout ZoneShare) throws -> Void) async throws -> ZoneShare {
        try await users.updateShare(of: zoneName, ownedBy: user, change)
    }

    @discardableResult
    public func deleteShare(of zoneName: String) async throws -> Bool {
        try await users.deleteShare(of: zoneName, ownedBy: user)
    }

    @discardableResult
    public func acceptShare(of zoneName: String, ownedBy owner: String) async throws -> ZoneShare {
        try await users.accept(zoneName, ownedBy: owner, as: user)
    }

    @discardableResult
    public func leaveShare(of zoneName: String, ownedBy owner: String) async throws -> Bool {
        try await users.leave(zoneName, ownedBy: owner, as: user)
    }

    public func ownedShares() async throws -> [ZoneShare] {
        try await users.shares(ownedBy: user)
    }

    public func joinedShares() async throws -> [ZoneShare] {
        try await users.shares(with: user)
    }
}
