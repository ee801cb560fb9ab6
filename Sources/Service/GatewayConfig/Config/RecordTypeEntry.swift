/// One entry of a kind's `record_types` list for stores without tables (JSON folders, plugins):
/// `record_type` plus the shared record-type keys (merge overrides, `encrypted`, `assets`,
/// `force_data`).
public struct RecordTypeEntry: Decodable, Sendable {
    /// The record type and its settings.
    public var settings: RecordTypeSettings

    enum Keys: String, CodingKey { case recordType = "record_type" }

    /// Reads one entry: `record_type` (required) and the shared record-type keys.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        settings = try RecordTypeSettings(from: decoder)
        settings.recordType = try container.decode(String.self, forKey: .recordType)
    }
}
