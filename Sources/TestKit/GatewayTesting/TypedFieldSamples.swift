import GatewayCore

/// Values a SQL column may hold only as text, as the cloud sends them: for tests of stores that
/// must give them back whole after another column of the row is edited.
public enum TypedFieldSamples {
    /// `tags` (a list), `place` (a location with accuracy and altitude), `parent` (a reference to
    /// record `p` of `zone` that deletes its child with it), `at` (a timestamp) and `n` = 1.
    public static func fields(zone: ZoneID) -> [String: FieldValue] {
        [
            "tags": .list([.string("x"), .int64(2)]),
            "place": .location(Location(latitude: 48.85, longitude: 2.35, horizontalAccuracy: 5, altitude: 35.5)),
            "parent": .reference(Reference(recordID: RecordID(recordName: "p", zoneID: zone), action: .deleteSelf)),
            "at": .timestamp(Timestamp(millisecondsSince1970: 1_700_000_000_123)),
            "n": .int64(1),
        ]
    }
}
