import Foundation

/// A pull reader of RFC 8259 JSON text: the caller walks objects and arrays member by member
/// and takes each value as it comes, so a large body (a page of records) becomes the caller's
/// own types without building a ``JSONValue`` tree for it first. ``JSONValue/parse(_:numbers:)``
/// is this reader taking one whole value.
///
/// A reader exists only inside ``read(_:numbers:_:)``, over that call's bytes:
///
/// ```swift
/// let names = try JSONReader.read(data, numbers: .exact) { reader in
///     var names: [String] = []
///     try reader.beginArray()
///     while try reader.nextElement() { names.append(try reader.string()) }
///     return names
/// }
/// ```
///
/// Every method throws ``JSONParseError`` (with the byte, line and column) for text that is not
/// JSON or is not the kind of value asked for. Nesting deeper than ``JSONValue/maximumDepth`` is
/// refused.
public struct JSONReader {
    /// The kind of the next value, from its first character.
    public enum Kind: Sendable, Equatable {
        /// `{`
        case object
        /// `[`
        case array
        /// `"`
        case string
        /// `-` or a digit.
        case number
        /// `true` or `false`.
        case bool
        /// `null`.
        case null
    }

    private let bytes: UnsafeRawBufferPointer
    /// What whole numbers written with a fraction are (see ``JSONNumberStyle``).
    public let numbers: JSONNumberStyle
    /// The byte offset of the next character to read.
    public private(set) var position = 0
    /// Objects and arrays open around the position.
    private var depth = 0
    /// Set by ``beginObject()`` and ``beginArray()``: the next member or element is the first, so
    /// no comma precedes it.
    private var atContainerStart = false

    private init(bytes: UnsafeRawBufferPointer, numbers: JSONNumberStyle) {
        self.bytes = bytes
        self.numbers = numbers
    }

    /// Calls `body` with a reader over `data`; after it returns, only whitespace may follow what it read.
    /// - Throws: ``JSONParseError``, or what `body` throws.
    public static func read<Result>(
        _ data: Data, numbers: JSONNumberStyle, _ body: (inout JSONReader) throws -> Result
    ) throws -> Result {
        try data.withUnsafeBytes { bytes in
            var reader = JSONReader(bytes: bytes, numbers: numbers)
            let result = try body(&reader)
            reader.skipWhitespace()
            guard reader.position == bytes.count else { throw reader.failure("text after the JSON value") }
            return result
        }
    }

    /// An error at the current position.
    public func failure(_ reason: String) -> JSONParseError {
        JSONParseError(in: bytes, at: position, reason: reason)
    }

    // MARK: Structure

    /// The kind of the next value; `nil` at the end of the text or before a character no value starts with.
    public mutating func peek() -> Kind? {
        skipWhitespace()
        guard position < bytes.count else { return nil }
        switch bytes[position] {
        case UInt8(ascii: "{"): return .object
        case UInt8(ascii: "["): return .array
        case UInt8(ascii: "\""): return .string
        case UInt8(ascii: "t"), UInt8(ascii: "f"): return .bool
        case UInt8(ascii: "n"): return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number
        default: return nil
        }
    }

    /// Opens the object that must come next; read its members with ``nextMember()``.
    public mutating func beginObject() throws(JSONParseError) {
        try open(UInt8(ascii: "{"), "an object")
    }

    /// The name of the object's next member, its value to be read next; `nil` after the last
    /// member, with the object closed.
    public mutating func nextMember() throws(JSONParseError) -> String? {
        guard try advance(closing: UInt8(ascii: "}"), "a comma or closing brace missing") else { return nil }
        guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else { throw failure("expected a member name in quotes") }
        let key = try quoted()
        skipWhitespace()
        guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else { throw failure("a colon missing") }
        position += 1
        return key
    }

    /// Opens the array that must come next; step through it with ``nextElement()``.
    public mutating func beginArray() throws(JSONParseError) {
        try open(UInt8(ascii: "["), "an array")
    }

    /// Whether the array has another element, to be read next; `false` after the last, with the array closed.
    public mutating func nextElement() throws(JSONParseError) -> Bool {
        try advance(closing: UInt8(ascii: "]"), "a comma or closing bracket missing")
    }

    private mutating func open(_ bracket: UInt8, _ what: String) throws(JSONParseError) {
        skipWhitespace()
        guard position < bytes.count, bytes[position] == bracket else { throw failure("expected \(what)") }
        guard depth < JSONValue.maximumDepth else { throw failure("nesting deeper than \(JSONValue.maximumDepth) levels") }
        position += 1
        depth += 1
        atContainerStart = true
    }

    /// Steps past the comma before the next member or element; `false` (container closed) at `closing`.
    private mutating func advance(closing: UInt8, _ missing: String) throws(JSONParseError) -> Bool {
        skipWhitespace()
        guard position < bytes.count else { throw failure(closing == UInt8(ascii: "}") ? "an unfinished object" : "an unfinished array") }
        let first = atContainerStart
        atContainerStart = false
        if bytes[position] == closing {
            position += 1
            depth -= 1
            return false
        }
        if !first {
            guard bytes[position] == UInt8(ascii: ",") else { throw failure(missing) }
            position += 1
            skipWhitespace()
        }
        return true
    }

    // MARK: Values

    /// The next value, whole, as a tree.
    public mutating func value() throws(JSONParseError) -> JSONValue {
        switch peek() {
        case .object:
            try beginObject()
            // Room for a record's usual fields, so small objects are not grown key by key.
            var members: [String: JSONValue] = Dictionary(minimumCapacity: 8)
            while let key = try nextMember() {
                // A name given twice keeps its last value. Names that differ only in Unicode
                // normalization are one key to a Swift dictionary but two names to JSON: keeping
                // one would lose the other's value without a word, so they are refused.
                if members.updateValue(try value(), forKey: key) != nil, let stored = members.index(forKey: key),
                    !ExactText.equal(members.keys[stored], key)
                {
                    throw failure("two member names of one object differ only in Unicode normalization (composed and decomposed forms of the same characters); rename one")
                }
            }
            return .object(members)
        case .array:
            try beginArray()
            var elements: [JSONValue] = []
            while try nextElement() { elements.append(try value()) }
            return .array(elements)
        case .string: return .string(try quoted())
        case .number: return try number()
        case .bool, .null: return try literal()
        case nil:
            throw failure(position < bytes.count ? "an unexpected character" : "the end of the text where a value belongs")
        }
    }

    /// Steps over the next value, whatever it is.
    public mutating func skipValue() throws(JSONParseError) {
        switch peek() {
        case .object:
            try beginObject()
            while try nextMember() != nil { try skipValue() }
        case .array:
            try beginArray()
            while try nextElement() { try skipValue() }
        default:
            _ = try value()
        }
    }

    /// The next value, which must be a string.
    public mutating func string() throws(JSONParseError) -> String {
        guard peek() == .string else { throw failure("expected a string") }
        return try quoted()
    }

    private mutating func literal() throws(JSONParseError) -> JSONValue {
        let (text, value): (StaticString, JSONValue) =
            switch bytes[position] {
            case UInt8(ascii: "t"): ("true", .bool(true))
            case UInt8(ascii: "f"): ("false", .bool(false))
            default: ("null", .null)
            }
        let count = text.utf8CodeUnitCount
        guard position + count <= bytes.count else { throw failure("an unfinished literal") }
        for offset in 0..<count where bytes[position + offset] != text.utf8Start[offset] { throw failure("an unknown literal") }
        position += count
        return value
    }

    private mutating func skipWhitespace() {
        while position < bytes.count {
            switch bytes[position] {
            case 0x20, 0x09, 0x0A, 0x0D: position += 1
            default: return
            }
        }
    }

    private mutating func number() throws(JSONParseError) -> JSONValue {
        let start = position
        let negative = bytes[position] == UInt8(ascii: "-")
        if negative { position += 1 }
        guard position < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position]) else { throw failure("a number without digits") }
        // The magnitude of an integer, accumulated as the digits are stepped over.
        var magnitude: UInt64 = 0
        var overflowed = false
        if bytes[position] == UInt8(ascii: "0") {
            position += 1
        } else {
            while position < bytes.count, case let digit = bytes[position] &- UInt8(ascii: "0"), digit < 10 {
                let (times10, overflow1) = magnitude.multipliedReportingOverflow(by: 10)
                let (sum, overflow2) = times10.addingReportingOverflow(UInt64(digit))
                overflowed = overflowed || overflow1 || overflow2
                magnitude = sum
                position += 1
            }
        }
        var isInteger = true
        if position < bytes.count && bytes[position] == UInt8(ascii: ".") {
            isInteger = false
            position += 1
            guard skipDigits() > 0 else { throw failure("a fraction without digits") }
        }
        if position < bytes.count && (bytes[position] == UInt8(ascii: "e") || bytes[position] == UInt8(ascii: "E")) {
            isInteger = false
            position += 1
            if position < bytes.count && (bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-")) { position += 1 }
            guard skipDigits() > 0 else { throw failure("an exponent without digits") }
        }
        if isInteger && !overflowed {
            if !negative, magnitude <= UInt64(Int64.max) { return .integer(Int64(magnitude)) }
            if negative, magnitude <= UInt64(Int64.max) + 1 { return .integer(magnitude == UInt64(Int64.max) + 1 ? .min : -Int64(magnitude)) }
        }
        if isInteger && numbers == .exact {
            // Read as a double it would be another number, which a write of the record (another
            // field's edit) would then put in the file in its place.
            position = start
            throw failure("a whole number beyond the 64-bit integer range, which no field holds exactly (write it as a string)")
        }
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<position]), as: UTF8.self)
        guard let double = Double(text), double.isFinite else { throw failure("a number out of range") }
        // A whole number written with a fraction or exponent (35.0, 1e3) is an integer, as
        // clients that write every number as a double mean it to be.
        if numbers == .wholeDoublesAsIntegers && double.rounded() == double && abs(double) <= 9.007199254740992e15 {
            return .integer(Int64(double))
        }
        return .double(double)
    }

    @discardableResult
    private mutating func skipDigits() -> Int {
        let start = position
        while position < bytes.count && (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position]) { position += 1 }
        return position - start
    }

    /// The string starting at the quote under the position.
    private mutating func quoted() throws(JSONParseError) -> String {
        position += 1
        let start = position
        var isASCII = true
        // The common case: no escapes, so the bytes between the quotes are the string.
        while position < bytes.count {
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                // ASCII needs no validation, and decoding it skips the generic validating path.
                let text =
                    isASCII
                    ? String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<position]), as: UTF8.self)
                    : try validated(start..<position)
                position += 1
                return text
            }
            if byte == UInt8(ascii: "\\") { break }
            guard byte >= 0x20 else { throw failure("a control character in a string") }
            isASCII = isASCII && byte < 0x80
            position += 1
        }
        var scalars: [UInt8] = Array(UnsafeRawBufferPointer(rebasing: bytes[start..<position]))
        while position < bytes.count {
            let byte = bytes[position]
            switch byte {
            case UInt8(ascii: "\""):
                position += 1
                guard let text = String(validating: scalars, as: UTF8.self) else { throw failure("a string that is not UTF-8") }
                return text
            case UInt8(ascii: "\\"):
                position += 1
                guard position < bytes.count else { throw failure("an unfinished escape") }
                let escaped = bytes[position]
                position += 1
                switch escaped {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): scalars.append(escaped)
                case UInt8(ascii: "b"): scalars.append(0x08)
                case UInt8(ascii: "f"): scalars.append(0x0C)
                case UInt8(ascii: "n"): scalars.append(0x0A)
                case UInt8(ascii: "r"): scalars.append(0x0D)
                case UInt8(ascii: "t"): scalars.append(0x09)
                case UInt8(ascii: "u"):
                    var code = try hex4()
                    if (0xD800..<0xDC00).contains(code) {
                        guard position + 1 < bytes.count, bytes[position] == UInt8(ascii: "\\"), bytes[position + 1] == UInt8(ascii: "u") else {
                            throw failure("a lone surrogate")
                        }
                        position += 2
                        let low = try hex4()
                        guard (0xDC00..<0xE000).contains(low) else { throw failure("a lone surrogate") }
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00..<0xE000).contains(code) {
                        throw failure("a lone surrogate")
                    }
                    guard let scalar = Unicode.Scalar(code) else { throw failure("an invalid code point") }
                    scalars.append(contentsOf: String(Character(scalar)).utf8)
                default: throw failure("an unknown escape")
                }
            default:
                guard byte >= 0x20 else { throw failure("a control character in a string") }
                scalars.append(byte)
                position += 1
            }
        }
        throw failure("an unfinished string")
    }

    private func validated(_ range: Range<Int>) throws(JSONParseError) -> String {
        guard let text = String(validating: UnsafeRawBufferPointer(rebasing: bytes[range]), as: UTF8.self) else {
            throw failure("a string that is not UTF-8")
        }
        return text
    }

    private mutating func hex4() throws(JSONParseError) -> UInt32 {
        guard position + 4 <= bytes.count else { throw failure("an unfinished \\u escape") }
        var code: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[position]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw failure("a bad \\u escape")
            }
            code = code << 4 | digit
            position += 1
        }
        return code
    }
}
