/// A JSON array of strings or integers, the argument of `IN (SELECT value FROM json_each(?))`.
/// Written by hand: `JSONEncoder` cost about 2% of a bulk sync for these flat arrays.
public enum JSONArrayText {
    /// The strings as a JSON array.
    ///
    /// Written as UTF-8 bytes into one buffer sized up front: a save of 200 records builds one of
    /// these per request, and appending to a `String` piece by piece cost the embedded cloud's
    /// save about a tenth of its Swift time.
    public static func of(_ values: some Sequence<String>) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(2 + values.underestimatedCount * 24)
        bytes.append(UInt8(ascii: "["))
        var first = true
        for value in values {
            if !first { bytes.append(UInt8(ascii: ",")) }
            first = false
            appendQuoted(value, to: &bytes)
        }
        bytes.append(UInt8(ascii: "]"))
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The integers as a JSON array.
    public static func of(_ values: some Sequence<Int64>) -> String {
        "[" + values.map(String.init).joined(separator: ",") + "]"
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// `value` as a JSON string in UTF-8: quotes, backslashes and control characters escaped.
    public static func appendQuoted(_ value: String, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\""))
        let utf8 = value.utf8
        if !utf8.contains(where: { $0 < 0x20 || $0 == 0x22 || $0 == 0x5C }) {
            bytes.append(contentsOf: utf8)
        } else {
            for byte in utf8 {
                switch byte {
                case 0x22, 0x5C:
                    bytes.append(UInt8(ascii: "\\"))
                    bytes.append(byte)
                case UInt8(ascii: "\n"): bytes.append(contentsOf: "\\n".utf8)
                case UInt8(ascii: "\r"): bytes.append(contentsOf: "\\r".utf8)
                case UInt8(ascii: "\t"): bytes.append(contentsOf: "\\t".utf8)
                case ..<0x20:
                    bytes.append(contentsOf: "\\u00".utf8)
                    bytes.append(hexDigits[Int(byte >> 4)])
                    bytes.append(hexDigits[Int(byte & 0xF)])
                default: bytes.append(byte)
                }
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}
