import Foundation

extension FieldValue {
    /// The value as JSON text, for stores that keep it in a JSON or text column because they have
    /// no type for it (lists, locations): strings, numbers, timestamps in ISO 8601, references by
    /// record name, assets by checksum; `bytes` writes a binary value as a JSON string's content
    /// (base64 for SQLite, `\\x` hex for PostgreSQL's `bytea` text). A non-finite double, which no
    /// JSON number holds, is the string `"NaN"`, `"Infinity"` or `"-Infinity"` (PostgreSQL's
    /// `float8` reads these), never `null`, which would read as no value.
    package func jsonText(bytes: (Data) -> String) -> String {
        switch self {
        case .string(let string): String(decoding: (try? JSONEncoder().encode(string)) ?? Data(), as: UTF8.self)
        case .int64(let int): String(int)
        case .double(let double): double.isFinite ? String(double) : double.isNaN ? "\"NaN\"" : double > 0 ? "\"Infinity\"" : "\"-Infinity\""
        case .timestamp(let timestamp): "\"\(ISO8601Timestamps.format(timestamp))\""
        case .bytes(let data), .encrypted(let data): "\"\(bytes(data))\""
        case .reference(let reference): FieldValue.string(reference.recordID.recordName).jsonText(bytes: bytes)
        case .asset(let asset): FieldValue.string(asset.checksum).jsonText(bytes: bytes)
        case .location(let location): "{\"latitude\":\(location.latitude),\"longitude\":\(location.longitude)}"
        case .list(let values): "[" + values.map { $0.jsonText(bytes: bytes) }.joined(separator: ",") + "]"
        }
    }
}
