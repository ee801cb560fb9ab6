/// A double JSON cannot hold (infinite or NaN), met while writing compact text.
public struct JSONNonFiniteNumber: Error, Sendable {
    /// The number.
    public var value: Double
}

extension JSONValue {
    /// Appends the compact JSON text of the value (no whitespace, sorted keys, so equal trees give
    /// equal bytes); `numbers` says how whole doubles are written.
    /// - Throws: ``JSONNonFiniteNumber`` for a double JSON cannot hold; what was appended before
    ///   it stays in `output`.
    public func writeCompact(into output: inout [UInt8], numbers: JSONNumberStyle) throws(JSONNonFiniteNumber) {
        switch self {
        case .null: output.append(contentsOf: "null".utf8)
        case .bool(let flag): output.append(contentsOf: (flag ? "true" : "false").utf8)
        case .integer(let number): output.append(contentsOf: String(number).utf8)
        case .double(let number):
            guard number.isFinite else { throw JSONNonFiniteNumber(value: number) }
            output.append(contentsOf: Self.numberText(number, numbers: numbers).utf8)
        case .string(let text): Self.writeString(text, into: &output)
        case .array(let elements):
            output.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                try element.writeCompact(into: &output, numbers: numbers)
            }
            output.append(UInt8(ascii: "]"))
        case .object(let members):
            output.append(UInt8(ascii: "{"))
            for (index, key) in members.keys.sorted().enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                Self.writeString(key, into: &output)
                output.append(UInt8(ascii: ":"))
                try members[key]!.writeCompact(into: &output, numbers: numbers)
            }
            output.append(UInt8(ascii: "}"))
        }
    }

    /// The value as text for people: sorted keys, two spaces of indentation a level, doubles
    /// with a fraction (`35.0`), a newline at the end, so files diff line by line. A double JSON
    /// cannot hold is written as `null`.
    public func prettyText() -> String {
        var output: [UInt8] = []
        writePretty(into: &output, indent: 0)
        output.append(UInt8(ascii: "\n"))
        return String(decoding: output, as: UTF8.self)
    }

    private func writePretty(into output: inout [UInt8], indent: Int) {
        switch self {
        case .double(let number):
            output.append(contentsOf: (number.isFinite ? Self.numberText(number, numbers: .exact) : "null").utf8)
        case .array(let values):
            guard !values.isEmpty else { return output.append(contentsOf: "[]".utf8) }
            output.append(contentsOf: "[\n".utf8)
            for (index, value) in values.enumerated() {
                output.append(contentsOf: repeatElement(UInt8(ascii: " "), count: indent + 2))
                value.writePretty(into: &output, indent: indent + 2)
                output.append(contentsOf: (index == values.count - 1 ? "\n" : ",\n").utf8)
            }
            output.append(contentsOf: repeatElement(UInt8(ascii: " "), count: indent))
            output.append(UInt8(ascii: "]"))
        case .object(let members):
            guard !members.isEmpty else { return output.append(contentsOf: "{}".utf8) }
            output.append(contentsOf: "{\n".utf8)
            let keys = members.keys.sorted()
            for (index, key) in keys.enumerated() {
                output.append(contentsOf: repeatElement(UInt8(ascii: " "), count: indent + 2))
                Self.writeString(key, into: &output)
                output.append(contentsOf: ": ".utf8)
                members[key]!.writePretty(into: &output, indent: indent + 2)
                output.append(contentsOf: (index == keys.count - 1 ? "\n" : ",\n").utf8)
            }
            output.append(contentsOf: repeatElement(UInt8(ascii: " "), count: indent))
            output.append(UInt8(ascii: "}"))
        case .null, .bool, .integer, .string:
            // Scalars cannot hold a non-finite number, so the compact form is the pretty one.
            try? writeCompact(into: &output, numbers: .exact)
        }
    }

    /// A finite double's text: whole ones as integers (``JSONNumberStyle/wholeDoublesAsIntegers``,
    /// below 10^15 where that is exact) or with `.0` (``JSONNumberStyle/exact``).
    private static func numberText(_ number: Double, numbers: JSONNumberStyle) -> String {
        switch numbers {
        case .wholeDoublesAsIntegers where number.rounded() == number && abs(number) < 1e15:
            return String(Int64(number))
        case .wholeDoublesAsIntegers:
            return number.description
        case .exact:
            let text = number.description
            return text.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }) ? text : text + ".0"
        }
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// Appends `text` as a JSON string: quotes, and escapes for quotes, backslashes and control
    /// characters; everything else as its UTF-8 bytes.
    public static func writeString(_ text: String, into output: inout [UInt8]) {
        output.append(UInt8(ascii: "\""))
        // Most strings need no escape: copy their bytes at once.
        var text = text
        let copied = text.withUTF8 { bytes -> Bool in
            guard !bytes.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) else { return false }
            output.append(contentsOf: bytes)
            return true
        }
        if copied {
            output.append(UInt8(ascii: "\""))
            return
        }
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case UInt8(ascii: "\n"): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case UInt8(ascii: "\r"): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case UInt8(ascii: "\t"): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0..<0x20:
                output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")])
                output.append(hexDigits[Int(byte >> 4)])
                output.append(hexDigits[Int(byte & 0xF)])
            default: output.append(byte)
            }
        }
        output.append(UInt8(ascii: "\""))
    }
}
