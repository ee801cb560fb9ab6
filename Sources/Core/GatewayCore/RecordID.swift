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

    /// Names are equal when their bytes are. `String`'s own `==` is canonical equivalence, which
    /// holds "é" and "e\u{301}" equal; CloudKit, SQLite, PostgreSQL and file systems keep them
    /// apart, so two such records must stay two here too.
    public static func == (lhs: RecordID, rhs: RecordID) -> Bool {
        ExactText.equal(lhs.recordName, rhs.recordName) && lhs.zoneID == rhs.zoneID
    }

    // Records of one zone dominate every collection the sync builds, so hashing the name alone
    // is as selective and a third of the work; equality still compares the zone.
    public func hash(into hasher: inout Hasher) {
        ExactText.hash(recordName, into: &hasher)
    }
}
