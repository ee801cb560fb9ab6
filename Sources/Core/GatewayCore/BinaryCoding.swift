import Foundation

/// Appends primitive values to a byte buffer in the gateway's compact binary layout
/// (little-endian fixed-width numbers, LEB128 lengths).
public struct BinaryWriter: Sendable {
    /// The bytes written so far.
    public private(set) var bytes: [UInt8]

    /// An empty writer that reserves `capacity` bytes.
    public init(capacity: Int = 256) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// Appends one byte.
    public mutating func writeByte(_ byte: UInt8) { bytes.append(byte) }

    /// Appends bytes as they are, with no length in front.
    public mutating func writeBytes(_ raw: some Sequence<UInt8>) { bytes.append(contentsOf: raw) }

    /// Empties the buffer, keeping its storage for the next use.
    public mutating func reset() { bytes.removeAll(keepingCapacity: true) }

    /// Appends an unsigned integer in LEB128 form: seven bits a byte, small values in one byte.
    public mutating func writeVarint(_ value: UInt64) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    /// Appends a signed integer as eight bytes, little-endian.
    public mutating func writeInt64(_ value: Int64) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    /// Appends a double's eight IEEE 754 bytes, little-endian.
    public mutating func writeDouble(_ value: Double) {
        writeInt64(Int64(bitPattern: value.bitPattern))
    }

    /// Appends a string's UTF-8 bytes after their length.
    public mutating func writeString(_ value: String) {
        var value = value
        value.withUTF8 { utf8 in
            writeVarint(UInt64(utf8.count))
            bytes.append(contentsOf: utf8)
        }
    }

    /// Appends bytes after their length.
    public mutating func writeData(_ value: Data) {
        writeVarint(UInt64(value.count))
        bytes.append(contentsOf: value)
    }
}

/// Reads what ``BinaryWriter`` wrote, checking every length against the input.
///
/// The reader borrows the buffer: use it only inside the `withUnsafeBytes` call that produced it.
public struct BinaryReader {
    private let buffer: UnsafeRawBufferPointer
    /// How many bytes have been consumed.
    public private(set) var offset = 0

    /// A reader at the start of `buffer`, which must outlive it.
    public init(_ buffer: UnsafeRawBufferPointer) {
        self.buffer = buffer
    }

    /// Whether every byte has been read.
    public var isAtEnd: Bool { offset == buffer.count }

    private mutating func take(_ count: Int) throws(BinaryDecodingError) -> UnsafeRawBufferPointer {
        guard count >= 0, count <= buffer.count - offset else {
            throw BinaryDecodingError(offset: offset, reason: "needs \(count) bytes, \(buffer.count - offset) left")
        }
        let slice = UnsafeRawBufferPointer(rebasing: buffer[offset..<offset + count])
        offset += count
        return slice
    }

    /// Reads one byte.
    public mutating func readByte() throws(BinaryDecodingError) -> UInt8 {
        guard offset < buffer.count else {
            throw BinaryDecodingError(offset: offset, reason: "unexpected end of data")
        }
        defer { offset += 1 }
        return buffer[offset]
    }

    /// Reads an unsigned LEB128 integer; more than ten bytes is an error.
    public mutating func readVarint() throws(BinaryDecodingError) -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let byte = try readByte()
            guard shift < 64 else { throw BinaryDecodingError(offset: offset, reason: "varint too long") }
            result |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return result }
            shift += 7
        }
    }

    /// Reads a length prefix and checks that that many bytes follow.
    public mutating func readLength() throws(BinaryDecodingError) -> Int {
        let value = try readVarint()
        guard value <= UInt64(buffer.count - offset) else {
            throw BinaryDecodingError(offset: offset, reason: "length \(value) exceeds the data")
        }
        return Int(value)
    }

    /// Reads an integer written by ``BinaryWriter/writeInt64(_:)``.
    public mutating func readInt64() throws(BinaryDecodingError) -> Int64 {
        let raw = try take(8)
        return Int64(littleEndian: raw.loadUnaligned(as: Int64.self))
    }

    /// Reads a double written by ``BinaryWriter/writeDouble(_:)``.
    public mutating func readDouble() throws(BinaryDecodingError) -> Double {
        Double(bitPattern: UInt64(bitPattern: try readInt64()))
    }

    /// Reads a string written by ``BinaryWriter/writeString(_:)`` (invalid UTF-8 is repaired, as
    /// `String(decoding:as:)` does).
    public mutating func readString() throws(BinaryDecodingError) -> String {
        let raw = try take(try readLength())
        return String(decoding: raw, as: UTF8.self)
    }

    /// Reads bytes written by ``BinaryWriter/writeData(_:)``.
    public mutating func readData() throws(BinaryDecodingError) -> Data {
        Data(try take(try readLength()))
    }

    /// A length-prefixed string's bytes, without making a string of them.
    public mutating func readStringBytes() throws(BinaryDecodingError) -> UnsafeRawBufferPointer {
        try take(try readLength())
    }

    /// Moves past a length-prefixed string or data value without copying it.
    public mutating func skipLengthPrefixed() throws(BinaryDecodingError) {
        _ = try take(try readLength())
    }
}

/// Bytes that are not a valid encoding.
public struct BinaryDecodingError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public enum Code: String, Sendable, CaseIterable, CustomStringConvertible {
        /// The bytes break the format (truncated, an unknown tag, trailing bytes).
        case corruptData
        /// The bytes were written in a format version this release does not know (a newer one).
        case unsupportedVersion

        /// The code's name, as logs, metrics and JSON show it.
        public var name: String { rawValue }
        public var description: String { rawValue }
    }

    /// What is wrong with the bytes.
    public var code: Code
    /// Where in the input the problem was found.
    public var offset: Int
    /// What was wrong.
    public var reason: String

    /// An error at byte `offset`, saying what was expected there.
    public init(_ code: Code = .corruptData, offset: Int, reason: String) {
        self.code = code
        self.offset = offset
        self.reason = reason
    }

    public var description: String { "corrupt binary data at byte \(offset): \(reason)" }
}
