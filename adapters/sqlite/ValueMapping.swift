import Foundation
import GRDB
import GatewayCore

/// Converts between SQLite values and field values, by column kind.
///
/// Reading keeps SQLite's storage class (an integer stored in a TEXT column stays an integer);
/// only date kinds turn values into timestamps. Values SQLite cannot hold natively (lists,
/// locations) are stored as JSON text, references as the referenced record's name; a NaN as the
/// text `NaN`, which a `real` column reads back as NaN.
enum ValueMapping {
    static func field(_ value: DatabaseValue, kind: ColumnKind) -> FieldValue? {
        switch value.storage {
        case .null:
            return nil
        case .int64(let int):
            switch kind {
            case .unixSeconds: return .timestamp(Timestamp(millisecondsSince1970: int &* 1000))
            case .unixMilliseconds: return .timestamp(Timestamp(millisecondsSince1970: int))
            default: return .int64(int)
            }
        case .double(let double):
            switch kind {
            case .unixSeconds: return .timestamp(Timestamp(millisecondsSince1970: Int64((double * 1000).rounded())))
            case .unixMilliseconds: return .timestamp(Timestamp(millisecondsSince1970: Int64(double.rounded())))
            default: return .double(double)
            }
        case .string(let string):
            if kind == .iso8601, let timestamp = ISO8601Timestamps.parse(string) { return .timestamp(timestamp) }
            // SQLite stores a NaN as NULL: a real column keeps it as this text (see below).
            if kind == .real, string == "NaN" { return .double(.nan) }
            return .string(string)
        case .blob(let data):
            return .bytes(data)
        }
    }

    static func databaseValue(_ field: FieldValue?, kind: ColumnKind) -> DatabaseValue {
        guard let field else { return .null }
        switch field {
        case .string(let string): return string.databaseValue
        case .int64(let int): return int.databaseValue
        case .double(let double):
            // Bound as a double, NaN would be stored as NULL: an empty field, which the next
            // upload of the row would send as a cleared one.
            return double.isNaN ? "NaN".databaseValue : double.databaseValue
        case .bytes(let data), .encrypted(let data): return data.databaseValue
        case .timestamp(let timestamp):
            let milliseconds = timestamp.millisecondsSince1970
            switch kind {
            case .unixMilliseconds:
                return milliseconds.databaseValue
            case .unixSeconds, .integer, .real, .boolean:
                return milliseconds % 1000 == 0
                    ? (milliseconds / 1000).databaseValue : (Double(milliseconds) / 1000).databaseValue
            case .iso8601, .text, .blob:
                return ISO8601Timestamps.format(timestamp).databaseValue
            }
        case .reference(let reference):
            return reference.recordID.recordName.databaseValue
        case .asset(let asset):
            return asset.checksum.databaseValue
        case .list, .location:
            return json(field).databaseValue
        }
    }

    /// A JSON rendering of values SQLite has no type for; binary values in base64.
    static func json(_ field: FieldValue) -> String {
        field.jsonText { $0.base64EncodedString() }
    }
}
