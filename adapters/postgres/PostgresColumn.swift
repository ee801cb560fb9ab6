import Foundation
import GatewayCore

/// A column of a synced table as the catalog describes it, and how its values travel: every
/// value is read as text by SQL (``readSQL(_:)``) and written from a text parameter
/// (``writeSQL(_:)``), so one code path serves every type exactly.
struct PostgresColumn: Sendable, Equatable {
    /// How values of a PostgreSQL type map to field values.
    indirect enum Kind: Sendable, Equatable {
        /// smallint, integer, bigint → `int64`.
        case integer
        /// numeric, kept exact as its text → `string`.
        case numeric
        /// real, double precision → `double`.
        case real
        /// boolean → `int64` 0 or 1 (CloudKit has no boolean).
        case boolean
        /// bytea → `bytes`.
        case bytes
        /// timestamp with time zone → `timestamp` (milliseconds, the finer part dropped: a
        /// download that brings the same millisecond keeps the row's value); `infinity` and
        /// `-infinity` → `string`.
        case timestampWithZone
        /// timestamp without time zone, taken as UTC → `timestamp`, as `timestampWithZone`.
        case timestamp
        /// date, midnight UTC → `timestamp`.
        case date
        /// json, jsonb → `string` holding the JSON text.
        case json
        /// An array of another kind → `list` when a list holds it exactly (one dimension from 1,
        /// no NULL element); any other array → `string` holding its text form (`{{1,2},{3,4}}`),
        /// which the column reads back as it was.
        case array(Kind)
        /// text, varchar, char, uuid, enums and any other type, through its text form → `string`.
        case text

        static func from(typeName: String, category: String, elementName: String?, elementCategory: String?) -> Kind {
            if category == "A", let elementName, let elementCategory {
                return .array(from(typeName: elementName, category: elementCategory, elementName: nil, elementCategory: nil))
            }
            switch typeName {
            case "int2", "int4", "int8": return .integer
            case "numeric": return .numeric
            case "float4", "float8": return .real
            case "bool": return .boolean
            case "bytea": return .bytes
            case "timestamptz": return .timestampWithZone
            case "timestamp": return .timestamp
            case "date": return .date
            case "json", "jsonb": return .json
            default: return .text
            }
        }
    }

    var name: String
    var kind: Kind
    /// The type as SQL writes it (`format_type`, with its modifier: `character varying(8)`).
    var sqlType: String
    /// The type's own name, schema-qualified and quoted (`pg_catalog."varchar"`), for casts: a
    /// cast to the type without its modifier, so that the column's assignment checks the length
    /// or precision and refuses what does not fit. A cast to `sqlType` would cut a long text to
    /// the length (`varchar(8)`, `char(3)`, `bit(3)`) silently, and a key so cut would name
    /// another row.
    var castType: String

    /// A column named `name` of `kind`, whose type SQL writes `sqlType` and casts to `castType`
    /// (by default `sqlType`, for types without a modifier).
    init(name: String, kind: Kind, sqlType: String, castType: String? = nil) {
        self.name = name
        self.kind = kind
        self.sqlType = sqlType
        self.castType = castType ?? sqlType
    }

    var quoted: String { SQLQuoting.identifier(name) }

    /// SQL giving the value of this column of `row` (an alias, `NEW` or `OLD`) as text.
    func readSQL(_ row: String) -> String {
        let value = "\(row).\(quoted)"
        switch kind {
        case .bytes: return "encode(\(value), 'hex')"
        case .timestampWithZone, .timestamp:
            // Milliseconds rounded down, never up: 23:59:59.9999 stays on its day. (Truncated
            // first, so the product is exact whether `extract` gives numeric or float8.)
            return
                "CASE WHEN isfinite(\(value)) THEN round(extract(epoch from date_trunc('milliseconds', \(value))) * 1000)::bigint::text ELSE \(value)::text END"
        case .date: return "CASE WHEN isfinite(\(value)) THEN (extract(epoch from \(value)) * 1000)::bigint::text ELSE \(value)::text END"
        case .array(let element):
            // `L` and a JSON list for what a list holds exactly; `T` and the array's own text form
            // for the rest (several dimensions, NULL elements, bounds other than 1), checked in
            // order (`array_position` refuses several dimensions). Elements a JSON number or
            // object would change (numeric's scale, json's text) travel as their text.
            let elements = [Kind.numeric, .json, .text].contains(element) ? "\(value)::text[]" : value
            // A JSON number reads `-0` as the integer 0: such an array keeps its text form too.
            let negativeZero = element == .real ? " WHEN array_position(\(value)::text[], '-0') IS NOT NULL THEN 'T' || \(value)::text" : ""
            return "CASE WHEN \(value) IS NULL THEN NULL WHEN cardinality(\(value)) = 0 THEN 'L[]'"
                + " WHEN array_ndims(\(value)) <> 1 OR array_lower(\(value), 1) <> 1 THEN 'T' || \(value)::text"
                + " WHEN array_position(\(value), NULL) IS NOT NULL THEN 'T' || \(value)::text" + negativeZero
                + " ELSE 'L' || to_jsonb(\(elements))::text END"
        default: return "\(value)::text"
        }
    }

    /// SQL turning the text `parameter` (such as `$3`) into a value of this column.
    func writeSQL(_ parameter: String) -> String {
        // A timestamp comes as milliseconds, or as text the type reads itself (`infinity`, a
        // date and time from another store).
        let milliseconds = "\(parameter) ~ '^-?[0-9]+$'"
        switch kind {
        case .bytes: return "decode(\(parameter), 'hex')"
        case .timestampWithZone:
            return "CASE WHEN \(milliseconds) THEN to_timestamp(\(parameter)::float8 / 1000) ELSE \(parameter)::timestamptz END"
        case .timestamp:
            return "CASE WHEN \(milliseconds) THEN (to_timestamp(\(parameter)::float8 / 1000) AT TIME ZONE 'UTC') ELSE \(parameter)::timestamp END"
        case .date:
            return "CASE WHEN \(milliseconds) THEN (to_timestamp(\(parameter)::float8 / 1000) AT TIME ZONE 'UTC')::date ELSE \(parameter)::date END"
        case .array:
            // A list, or text holding a JSON array (what a store without arrays, such as SQLite,
            // keeps of a list and sends back), goes through JSON; other text is the array's own
            // form (`{…}`, or `[0:1]={…}` with bounds).
            return "CASE WHEN left(\(parameter), 1) = 'L' OR (left(\(parameter), 2) = 'T[' AND substr(\(parameter), 2) !~ '^\\[-?[0-9]+:')"
                + " THEN ARRAY(SELECT jsonb_array_elements_text(substr(\(parameter), 2)::jsonb))::\(castType)"
                + " ELSE substr(\(parameter), 2)::\(castType) END"
        default: return "\(parameter)::\(castType)"
        }
    }

    /// SQL for the value an update leaves in this column of the existing row `existing` (such as
    /// `t."stamp"`) when the download brings `incoming`: a timestamp whose finer part the field
    /// could not carry keeps it while the field holds the same millisecond.
    func updateSQL(existing: String, incoming: String) -> String {
        switch kind {
        case .timestampWithZone, .timestamp:
            return "CASE WHEN date_trunc('milliseconds', \(existing)) IS NOT DISTINCT FROM \(incoming) THEN \(existing) ELSE \(incoming) END"
        default: return incoming
        }
    }

    /// SQL giving the key text of this column of `row`, as record names hold it.
    func keyTextSQL(_ row: String) -> String {
        kind == .bytes ? "encode(\(row).\(quoted), 'hex')" : "\(row).\(quoted)::text"
    }

    /// SQL turning key text back into this column's value.
    func keyFromTextSQL(_ text: String) -> String {
        kind == .bytes ? "decode(\(text), 'hex')" : "(\(text))::\(castType)"
    }

    // MARK: Values

    /// The field for the text form of a value.
    func field(fromText text: String) -> FieldValue? {
        Self.field(fromText: text, kind: kind)
    }

    static func field(fromText text: String, kind: Kind) -> FieldValue? {
        switch kind {
        case .integer: return Int64(text).map(FieldValue.int64)
        case .real: return Double(text).map(FieldValue.double)
        case .boolean: return .int64(text == "true" || text == "t" ? 1 : 0)
        case .bytes: return Data(hex: text).map(FieldValue.bytes)
        case .timestampWithZone, .timestamp, .date:
            // `infinity` and `-infinity` have no millisecond: they travel as their text.
            return Int64(text).map { .timestamp(Timestamp(millisecondsSince1970: $0)) } ?? .string(text)
        case .numeric, .json, .text: return .string(text)
        case .array(let element):
            // See ``readSQL(_:)``: `L` and a JSON list, or `T` and the array's text form.
            if text.hasPrefix("T") { return .string(String(text.dropFirst())) }
            guard text.hasPrefix("L"), let values = try? JSONDecoder().decode([JSONScalar].self, from: Data(text.utf8.dropFirst())) else {
                return nil
            }
            return .list(values.compactMap { $0.field(kind: element) })
        }
    }

    /// An element of an array column, as `to_jsonb` writes it.
    enum JSONScalar: Decodable {
        case bool(Bool), int(Int64), double(Double), string(String)

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let value = try? container.decode(Bool.self) {
                self = .bool(value)
            } else if let value = try? container.decode(Int64.self) {
                self = .int(value)
            } else if let value = try? container.decode(Double.self) {
                self = .double(value)
            } else {
                self = .string(try container.decode(String.self))
            }
        }

        func field(kind: Kind) -> FieldValue? {
            switch self {
            case .bool(let value): return .int64(value ? 1 : 0)
            case .int(let value): return kind == .real ? .double(Double(value)) : kind == .numeric ? .string(String(value)) : .int64(value)
            case .double(let value): return kind == .numeric ? .string(String(value)) : .double(value)
            case .string(let value):
                if kind == .bytes { return Data(hex: value.hasPrefix("\\x") ? String(value.dropFirst(2)) : value).map(FieldValue.bytes) }
                return .string(value)
            }
        }
    }

    /// The text parameter for a field value (`nil` for SQL NULL).
    func text(for field: FieldValue?) -> String? {
        guard let field else { return nil }
        if case .array = kind {
            // Marked as ``writeSQL(_:)`` reads it: a list as JSON, anything else as the array's
            // text form.
            if case .list = field { return "L" + Self.json(field) }
            return "T" + (PostgresColumn(name: name, kind: .text, sqlType: "text").text(for: field) ?? "")
        }
        switch field {
        case .string(let string): return string
        case .int64(let int):
            if kind == .boolean { return int != 0 ? "true" : "false" }
            return String(int)
        case .double(let double):
            if double.isNaN { return "NaN" }
            if double.isInfinite { return double > 0 ? "Infinity" : "-Infinity" }
            return kind == .integer && double == double.rounded() ? String(Int64(double)) : String(double)
        case .bytes(let data), .encrypted(let data):
            return kind == .bytes ? data.hexText : data.base64EncodedString()
        case .timestamp(let timestamp):
            switch kind {
            case .timestampWithZone, .timestamp, .date, .integer, .real, .numeric: return String(timestamp.millisecondsSince1970)
            default: return ISO8601Timestamps.format(timestamp)
            }
        case .reference(let reference): return reference.recordID.recordName
        case .asset(let asset): return asset.checksum
        case .location, .list: return Self.json(field)
        }
    }

    /// What a field value is in `COPY`'s text format for this column: the type's own input text.
    enum CopyValue {
        /// The text (`nil`: NULL), before COPY's escaping.
        case text(String?)
        /// This value goes through ``writeSQL(_:)`` only (an array column, a timestamp out of
        /// years 1–9999, a kind the column's input would read differently): no COPY for its page.
        case unsupported
    }

    /// Timestamps `COPY` takes as ISO 8601 text: years 1 through 9999.
    static let copyableTimestamps: ClosedRange<Int64> = -62_135_596_800_000...253_402_300_799_999

    /// The value as `COPY` reads it for this column, with the same result as binding
    /// ``text(for:)`` through ``writeSQL(_:)``.
    func copyValue(for field: FieldValue?) -> CopyValue {
        guard let field else { return .text(nil) }
        switch (kind, field) {
        case (.array, _):
            return .unsupported
        case (.bytes, .bytes(let data)), (.bytes, .encrypted(let data)):
            return .text("\\x" + data.hexText)
        case (.bytes, _):
            return .unsupported
        case (.timestampWithZone, .timestamp(let timestamp)), (.timestamp, .timestamp(let timestamp)):
            guard Self.copyableTimestamps.contains(timestamp.millisecondsSince1970) else { return .unsupported }
            return .text(ISO8601Timestamps.format(timestamp))
        case (.date, .timestamp(let timestamp)):
            guard Self.copyableTimestamps.contains(timestamp.millisecondsSince1970) else { return .unsupported }
            return .text(String(ISO8601Timestamps.format(timestamp).prefix(10)))
        case (.timestampWithZone, _), (.timestamp, _), (.date, _):
            return .unsupported
        default:
            return .text(text(for: field))
        }
    }

    /// A key text (from a record name) as `COPY` reads it for this column.
    func copyKeyText(_ text: String) -> String {
        kind == .bytes ? "\\x" + text : text
    }

    /// A JSON rendering, for arrays, json columns and values with no column type; binary values
    /// in `bytea`'s hex text.
    static func json(_ field: FieldValue) -> String {
        field.jsonText { #"\\x"# + $0.hexText }
    }
}
