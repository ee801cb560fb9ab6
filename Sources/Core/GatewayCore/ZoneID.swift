/// Identifies a record zone: a named partition of the cloud database with its own change feed.
///
/// Zones are the unit the synchronizer binds adapters to; each adapter syncs exactly one zone.
public struct ZoneID: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The owner name CloudKit uses for zones that belong to the current user.
    public static let defaultOwnerName = "__defaultOwner__"

    /// The zone's name, unique per owner.
    public var zoneName: String
    /// The user record name that owns the zone; ``defaultOwnerName`` for the caller's own zones.
    public var ownerName: String

    /// The zone `zoneName` of `ownerName` (the current user by default, as in CloudKit).
    public init(zoneName: String, ownerName: String = ZoneID.defaultOwnerName) {
        self.zoneName = zoneName
        self.ownerName = ownerName
    }

    public var description: String {
        ownerName == Self.defaultOwnerName ? zoneName : "\(zoneName) (owner \(ownerName))"
    }
}
