import Crypto
import Foundation

/// Turns record names and record types from the cloud into file names that stay inside the
/// folder, and back.
///
/// ASCII letters, digits, `-`, `_` and `.` are kept; every other byte of the UTF-8 name is
/// written `%XX` (so `/`, NUL, `..` tricks and Unicode look-alikes become plain text). A leading
/// `.` is escaped too, so no name is hidden or `.`/`..`. Names whose escaped form would exceed 200
/// bytes are shortened to a prefix and a SHA-256 digest; the state database remembers the real
/// name of such files.
enum SafeFileName {
    static let maximumLength = 200

    static func encode(_ name: String) -> String {
        var output = ""
        for (offset, byte) in name.utf8.enumerated() {
            let keep = (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_") || (byte == UInt8(ascii: ".") && offset > 0)
            output += keep ? String(UnicodeScalar(byte)) : String(format: "%%%02X", byte)
        }
        if output.isEmpty { output = "%00empty" }
        guard output.utf8.count > maximumLength else { return output }
        let digest = SHA256.hash(data: Data(name.utf8)).map { String(format: "%02x", $0) }.joined()
        return String(output.prefix(maximumLength - 66)) + "~" + digest
    }

    /// The name a file name stands for, or `nil` when it is not one this encoding makes (a file a
    /// person named freely is taken as is, when it is safe).
    static func decode(_ fileName: String) -> String? {
        if fileName.contains("~"), fileName.utf8.count > maximumLength - 70 { return nil }
        var bytes: [UInt8] = []
        var iterator = Array(fileName.utf8).makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%") {
                guard let high = iterator.next(), let low = iterator.next(),
                    let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16)
                else { return nil }
                bytes.append(value)
            } else {
                bytes.append(byte)
            }
        }
        return String(bytes: bytes, encoding: .utf8)
    }
}
