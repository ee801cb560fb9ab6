/// A JSON array of strings or integers, the argument of `IN (SELECT value FROM json_each(?))`.
/// Written by hand: `JSONEncoder` cost about 2% of a bulk sync for these flat arrays.
public enum JSONArrayText {
    /// The strings as a JSON array.
    public static func of(_ values: some Sequence<String>) -> String {
        var text = "["
        var first = true
        for value in values {
            if !first { text.append(",") }
            first = false
            appendQuoted(value, to: &text)
        }
        text.append("]")
        return text
    }

    /// The integers as a JSON array.
    public static func of(_ values: some Sequence<Int64>) -> String {
        "[" + values.map(String.init).joined(separator: ",") + "]"
    }

    /// `value` as a JSON string: quotes, backslashes and control characters escaped.
    public static func appendQuoted(_ value: String, to text: inout String) {
        text.append("\"")
        guard value.utf8.contains(where: { $0 < 0x20 || $0 == 0x22 || $0 == 0x5C }) else {
            text.append(value)
            text.append("\"")
            return
        }
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": text.append("\\\"")
            case "\\": text.append("\\\\")
            case "\n": text.append("\\n")
            case "\r": text.append("\\r")
            case "\t": text.append("\\t")
            case let control where control.value < 0x20:
                let hex = String(control.value, radix: 16)
                text.append("\\u" + String(repeating: "0", count: 4 - hex.count) + hex)
            default: text.unicodeScalars.append(scalar)
            }
        }
        text.append("\"")
    }
}
