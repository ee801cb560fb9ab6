import GatewayCore
import NIOCore

/// Rows in the text format of `COPY … FROM STDIN`: values separated by tabs, rows ended by a
/// newline, `\N` for NULL, and backslash, newline, carriage return and tab escaped in values.
public struct PostgresCopyText: Sendable {
    public private(set) var buffer: ByteBuffer
    private var atRowStart = true

    public init(reservingBytes capacity: Int = 4096) {
        buffer = ByteBufferAllocator().buffer(capacity: capacity)
    }

    /// Appends one value of the current row (`nil`: NULL).
    public mutating func append(_ value: String?) {
        if !atRowStart { buffer.writeInteger(UInt8(ascii: "\t")) }
        atRowStart = false
        guard let value else {
            buffer.writeStaticString("\\N")
            return
        }
        let utf8 = value.utf8
        // Most values need no escape: write them whole.
        if !utf8.contains(where: { $0 == UInt8(ascii: "\\") || $0 == 10 || $0 == 13 || $0 == 9 }) {
            buffer.writeString(value)
            return
        }
        var escaped: [UInt8] = []
        escaped.reserveCapacity(utf8.count + 8)
        for byte in utf8 {
            switch byte {
            case UInt8(ascii: "\\"): escaped += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
            case 10: escaped += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case 13: escaped += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
            case 9: escaped += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
            default: escaped.append(byte)
            }
        }
        buffer.writeBytes(escaped)
    }

    /// Appends one `bytea` value of the current row, in its hex input form (`\x…`), escaped.
    public mutating func appendHex(_ bytes: UnsafeRawBufferPointer) {
        if !atRowStart { buffer.writeInteger(UInt8(ascii: "\t")) }
        atRowStart = false
        buffer.writeStaticString("\\\\x")
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: bytes.count * 2) { target in
            HexDigits.write(bytes, into: target.bindMemory(to: UInt8.self))
        }
    }

    /// Ends the current row.
    public mutating func endRow() {
        buffer.writeInteger(UInt8(ascii: "\n"))
        atRowStart = true
    }
}
