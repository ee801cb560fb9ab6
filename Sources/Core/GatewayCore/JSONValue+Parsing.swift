import Foundation

/// How whole numbers written with a fraction or exponent (`35.0`, `1e3`) are read and written.
public enum JSONNumberStyle: Sendable {
    /// As written: `35.0` is a double, and doubles are written with a fraction. For documents
    /// people edit, so a file's `35.0` stays `35.0`; a whole number beyond the 64-bit integer
    /// range is an error rather than a double that is another number.
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
        do {
            return try JSONReader.read(data, numbers: numbers) { reader in try reader.value() }
        } catch let error as JSONParseError {
            throw error
        } catch {
            preconditionFailure("reading a JSON value throws only JSONParseError")
        }
    }
}
