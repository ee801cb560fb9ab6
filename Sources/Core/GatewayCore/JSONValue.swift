import Foundation

/// A JSON document as a tree: CloudKit Web Services bodies, the plugin protocol's messages and
/// the JSON files adapter's documents.
///
/// Integers are kept apart from doubles so 64-bit integers survive exactly. How whole numbers
/// written with a fraction (`35.0`) are read and written is the caller's choice
/// (``JSONNumberStyle``): CloudKit's wire treats them as integers, a JSON document on disk keeps
/// them as the doubles they were written as.
public enum JSONValue: Hashable, Sendable, Codable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A number without a fraction or exponent that fits in 64 bits.
    case integer(Int64)
    /// Any other finite number.
    case double(Double)
    /// A string.
    case string(String)
    /// An array.
    case array([JSONValue])
    /// An object; a member named twice keeps its last value. Parsing refuses an object whose
    /// member names differ only in Unicode normalization, which a `String`-keyed dictionary
    /// cannot hold apart.
    case object([String: JSONValue])

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .integer(value)
        } else if let value = try? container.decode(Double.self) {
            self = .double(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .integer(let value): try container.encode(value)
        case .double(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    /// The member `key` of an object; `nil` for other values or a missing key.
    public subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    /// The text of a string; `nil` for other values.
    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The value of a boolean; `nil` for other values.
    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// The value as an integer: integers, whole doubles and numeric strings (`numbersAsStrings`).
    public var int64Value: Int64? {
        switch self {
        case .integer(let value): value
        case .double(let value): value.rounded() == value && abs(value) < 9.2e18 ? Int64(value) : nil
        case .string(let text): Int64(text)
        default: nil
        }
    }

    /// The value as a double: numbers and numeric strings.
    public var doubleValue: Double? {
        switch self {
        case .integer(let value): Double(value)
        case .double(let value): value
        case .string(let text): Double(text)
        default: nil
        }
    }

    /// The elements of an array; `nil` for other values.
    public var arrayValue: [JSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

    /// The members of an object; `nil` for other values.
    public var objectValue: [String: JSONValue]? {
        if case .object(let value) = self { return value }
        return nil
    }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}
