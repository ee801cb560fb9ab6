import Foundation

/// How whole numbers written with a fraction or exponent (`35.0`, `1e3`) are read and written.
public enum JSONNumberStyle: Sendable {
    /// As written: `35.0` is a double, and doubles are written with a fraction. For documents
    /// people edit, so a file's `35.0` stays `35.0`.
    case exact
    /// As integers when they are whole and exact in a double (`35.0` reads and writes as `35`):
    /// CloudKit Web Services' rule, for clients that write every number as a double.
    case wholeDoublesAsIntegers
}

/// Where and why a text stopped being valid JSON.
public struct JSONParseError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The byte offset of the problem, from 0.
    public var offset: Int
    /// The line of the problem, from 1.
    public var line: Int
    /// The column of the problem in characters, from 1.
    public var column: Int
    /// What was wrong ("a comma or closing brace missing").
    public var reason: String

    init(in bytes: UnsafeRawBufferPointer, at offset: Int, reason: String) {
        self.offset = offset
        self.reason = reason
        // Counted only when parsing fails, so valid documents pay nothing for it.
        var line = 1
        var column = 1
        for byte in UnsafeRawBufferPointer(rebasing: bytes[..<min(offset, bytes.count)]) {
            if byte == UInt8(ascii: "\n") {
                line += 1
                column = 1
            } else if byte & 0xC0 != 0x80 {
                column += 1
            }
        }
        self.line = line
        self.column = column
    }

    /// The reason with its line and column.
    public var description: String { "\(reason) at line \(line), column \(column)" }
}

extension JSONValue {
    /// Deeper documents are refused instead of exhausting the stack.
    public static let maximumDepth = 256

    /// Parses JSON text (RFC 8259) straight from its UTF-8 bytes: no Foundation trees, no
    /// `Codable` per value. Numbers without a fraction or exponent that fit in 64 bits are
    /// integers; `numbers` says what whole numbers written with a fraction are.
    /// - Throws: ``JSONParseError`` naming what is wrong and where.
    public static func parse(_ data: Data, numbers: JSONNumberStyle) throws(JSONParseError) -> JSONValue {
        let result: Result<JSONValue, JSONParseError> = data.withUnsafeBytes { bytes in
            var reader = Reader(bytes: bytes, numbers: numbers)
            do throws(JSONParseError) {
                reader.skipWhitespace()
                let value = try reader.value(depth: 0)
                reader.skipWhitespace()
                guard reader.position == bytes.count else { throw reader.failure("text after the JSON value") }
                return .success(value)
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }
}

/// A recursive-descent reader of RFC 8259 JSON.
private struct Reader {
    let bytes: UnsafeRawBufferPointer
    let numbers: JSONNumberStyle
    var position = 0

    init(bytes: UnsafeRawBufferPointer, numbers: JSONNumberStyle) {
        self.bytes = bytes
        self.numbers = numbers
    }

    func failure(_ what: String) -> JSONParseError {
        JSONParseError(in: bytes, at: position, reason: what)
    }

    mutating func skipWhitespace() {
        while position < bytes.count {
            switch bytes[position] {
            case 0x20, 0x09, 0x0A, 0x0D: position += 1
            default: return
            }
        }
    }

    private mutating func expect(_ literal: StaticString, _ value: JSONValue) throws(JSONParseError) -> JSONValue {
        let count = literal.utf8CodeUnitCount
        guard position + count <= bytes.count else { throw failure("an unfinished literal") }
        for offset in 0..<count where bytes[position + offset] != literal.utf8Start[offset] { throw failure("an unknown literal") }
        position += count
        return value
    }

    mutating func value(depth: Int) throws(JSONParseError) -> JSONValue {
        guard depth <= JSONValue.maximumDepth else { throw failure("nesting deeper than \(JSONValue.maximumDepth) levels") }
        guard position < bytes.count else { throw failure("the end of the text where a value belongs") }
        switch bytes[position] {
        case UInt8(ascii: "{"): return try object(depth: depth)
        case UInt8(ascii: "["): return try array(depth: depth)
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): return try expect("true", .bool(true))
        case UInt8(ascii: "f"): return try expect("false", .bool(false))
        case UInt8(ascii: "n"): return try expect("null", .null)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
        default: throw failure("an unexpected character")
        }
    }

    private mutating func object(depth: Int) throws(JSONParseError) -> JSONValue {
        position += 1
        // Room for a record's usual fields, so small objects are not grown key by key.
        var members: [String: JSONValue] = Dictionary(minimumCapacity: 8)
        skipWhitespace()
        if position < bytes.count && bytes[position] == UInt8(ascii: "}") {
            position += 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else { throw failure("expected a member name in quotes") }
            let key = try string()
            skipWhitespace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else { throw failure("a colon missing") }
            position += 1
            skipWhitespace()
            members[key] = try value(depth: depth + 1)
            skipWhitespace()
            guard position < bytes.count else { throw failure("an unfinished object") }
            if bytes[position] == UInt8(ascii: ",") {
                position += 1
                continue
            }
            guard bytes[position] == UInt8(ascii: "}") else { throw failure("a comma or closing brace missing") }
            position += 1
            return .object(members)
        }
    }

    private mutating func array(depth: Int) throws(JSONParseError) -> JSONValue {
        position += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if position < bytes.count && bytes[position] == UInt8(ascii: "]") {
            position += 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try value(depth: depth + 1))
            skipWhitespace()
            guard position < bytes.count else { throw failure("an unfinished array") }
            if bytes[position] == UInt8(ascii: ",") {
                position += 1
                continue
            }
            guard bytes[position] == UInt8(ascii: "]") else { throw failure("a comma or closing bracket missing") }
            position += 1
            return .array(elements)
        }
    }

    private mutating func number() throws(JSONParseError) -> JSONValue {
        let start = position
        var isInteger = true
        if bytes[position] == UInt8(ascii: "-") { position += 1 }
        guard position < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position]) else { throw failure("a number without digits") }
        if bytes[position] == UInt8(ascii: "0") {
            position += 1
        } else {
            skipDigits()
        }
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
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<position]), as: UTF8.self)
        if isInteger, let integer = Int64(text) { return .integer(integer) }
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

    mutating func string() throws(JSONParseError) -> String {
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
