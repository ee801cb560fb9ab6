import Foundation

extension Data {
    /// Bytes from hex text (either case), or `nil`.
    package init?(hex: String) {
        let digits = Array(hex.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var bytes = [UInt8]()
        bytes.reserveCapacity(digits.count / 2)
        func value(_ digit: UInt8) -> UInt8? {
            switch digit {
            case 48...57: digit - 48
            case 65...70: digit - 55
            case 97...102: digit - 87
            default: nil
            }
        }
        var index = 0
        while index < digits.count {
            guard let high = value(digits[index]), let low = value(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        self.init(bytes)
    }

    /// The bytes as lowercase hex text.
    package var hexText: String {
        withUnsafeBytes { bytes in String(unsafeUninitializedCapacity: bytes.count * 2) { HexDigits.write(bytes, into: $0) } }
    }
}

/// Lowercase hex digits written straight into a buffer, two per byte, without a `String` per
/// byte (`String(format:)` per byte made the PostgreSQL `COPY` path slower than statements).
package enum HexDigits {
    /// Writes the digits of `bytes` at the start of `target`, which holds at least twice as many
    /// bytes; returns how many were written.
    package static func write(_ bytes: UnsafeRawBufferPointer, into target: UnsafeMutableBufferPointer<UInt8>) -> Int {
        var index = 0
        for byte in bytes {
            target[index] = digits[Int(byte >> 4)]
            target[index + 1] = digits[Int(byte & 0x0f)]
            index += 2
        }
        return index
    }

    private static let digits: [UInt8] = Array("0123456789abcdef".utf8)
}
