import Foundation
import GatewayCore

/// A JSON document as a tree, for CloudKit Web Services bodies.
///
/// CloudKit's JSON mixes typed values (`{"value": …, "type": "INT64"}`), per-item errors inside
/// result arrays and keys that vary by endpoint, so bodies are read into this tree and converted
/// by hand. Integers are kept apart from doubles so `INT64` values survive exactly.
public enum JSONValue: Hashable, Sendable, Codable {
    case null
    case bool(Bool)
    case integer(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
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

    /// Parses JSON text (RFC 8259) straight from its UTF-8 bytes. Numbers without a fraction or
    /// exponent that fit in 64 bits are integers, so `INT64` values stay exact; whole numbers
    /// written with a fraction (`35.0`) are integers too, as Foundation's parser made them.
    /// - Throws: `CloudError` `invalidArguments` naming what is wrong and at which byte.
    public static func parse(_ data: Data) throws -> JSONValue {
        try JSONText.parse(data)
    }

    /// The JSON text, with sorted keys so equal trees give equal bytes.
    /// - Throws: `CloudError` `invalidArguments` for a number JSON cannot hold (infinite, NaN).
    public func serialized() throws -> Data {
        try JSONText.serialize(self)
    }

    /// The member `key` of an object; `nil` for other values or a missing key.
    public subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

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

    public var arrayValue: [JSONValue]? {
        if case .array(let value) = self { return value }
        return nil
    }

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
