/// Identifies a record: its name, unique within its zone, and the zone.
public struct RecordID: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The record's name. Opaque to the cloud; adapters derive it from primary keys or file names.
    public var recordName: String
    /// The zone that holds the record.
    public var zoneID: ZoneID

    /// The record named `recordName` in `zoneID`.
    public init(recordName: String, zoneID: ZoneID) {
        self.recordName = recordName
        self.zoneID = zoneID
    }

    public var description: String { "\(zoneID.zoneName)/\(recordName)" }

    // Records of one zone dominate every collection the sync builds, so hashing the name alone
    // is as selective and a third of the work; equality still compares the zone.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(recordName)
    }
}
