import Foundation
import GatewayCore

/// JSON text to and from ``JSONValue``, byte by byte.
///
/// Foundation's `JSONSerialization` builds `NSDictionary`/`NSNumber` trees that then had to be
/// cast into `JSONValue` value by value, and `JSONEncoder` goes through `Codable` per value: the
/// two took about two thirds of the CPU of a sync through `gateway cloud serve` (profile in
/// `BENCHMARKS.md`). This reads UTF-8 straight into the tree and writes the tree straight out.
enum JSONText {
    /// Deeper documents are refused instead of exhausting the stack (CloudKit bodies nest a
    /// handful of levels).
    static let maximumDepth = 256

    static func parse(_ data: Data) throws(CloudError) -> JSONValue {
        let result: Result<JSONValue, CloudError> = data.withUnsafeBytes { bytes in
            var reader = Reader(bytes: bytes)
            do throws(CloudError) {
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

    static func serialize(_ value: JSONValue) throws(CloudError) -> Data {
        var output: [UInt8] = []
        output.reserveCapacity(256)
        try write(value, into: &output)
        return Data(output)
    }

    static func write(_ value: JSONValue, into output: inout [UInt8]) throws(CloudError) {
        switch value {
        case .null: output.append(contentsOf: "null".utf8)
        case .bool(let flag): output.append(contentsOf: (flag ? "true" : "false").utf8)
        case .integer(let number): output.append(contentsOf: String(number).utf8)
        case .double(let number):
            guard number.isFinite else { throw CloudError(.invalidArguments, "JSON cannot hold the number \(number)") }
            // Whole numbers without a fraction, as JSONEncoder wrote them (35.0 is 35).
            if number.rounded() == number && abs(number) < 1e15 {
                output.append(contentsOf: String(Int64(number)).utf8)
            } else {
                output.append(contentsOf: number.description.utf8)
            }
        case .string(let text): writeString(text, into: &output)
        case .array(let elements):
            output.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                try write(element, into: &output)
            }
            output.append(UInt8(ascii: "]"))
        case .object(let members):
            // Sorted keys, so equal trees give equal bytes.
            output.append(UInt8(ascii: "{"))
            for (index, key) in members.keys.sorted().enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                writeString(key, into: &output)
                output.append(UInt8(ascii: ":"))
                try write(members[key]!, into: &output)
            }
            output.append(UInt8(ascii: "}"))
        }
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    static func writeString(_ text: String, into output: inout [UInt8]) {
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

    /// A recursive-descent reader of RFC 8259 JSON.
    private struct Reader {
        let bytes: UnsafeRawBufferPointer
        var position = 0

        init(bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

        func failure(_ what: String) -> CloudError {
            CloudError(.invalidArguments, "the body is not valid JSON: \(what) at byte \(position)")
        }

        mutating func skipWhitespace() {
            while position < bytes.count {
                switch bytes[position] {
                case 0x20, 0x09, 0x0A, 0x0D: position += 1
                default: return
                }
            }
        }

        private mutating func expect(_ literal: StaticString, _ value: JSONValue) throws(CloudError) -> JSONValue {
            let count = literal.utf8CodeUnitCount
            guard position + count <= bytes.count else { throw failure("an unfinished literal") }
            for offset in 0..<count where bytes[position + offset] != literal.utf8Start[offset] { throw failure("an unknown literal") }
            position += count
            return value
        }

        mutating func value(depth: Int) throws(CloudError) -> JSONValue {
            guard depth <= JSONText.maximumDepth else { throw failure("nesting deeper than \(JSONText.maximumDepth) levels") }
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

        private mutating func object(depth: Int) throws(CloudError) -> JSONValue {
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
                guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else { throw failure("a member name missing") }
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

        private mutating func array(depth: Int) throws(CloudError) -> JSONValue {
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

        private mutating func number() throws(CloudError) -> JSONValue {
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
            if double.rounded() == double && abs(double) <= 9.007199254740992e15 { return .integer(Int64(double)) }
            return .double(double)
        }

        @discardableResult
        private mutating func skipDigits() -> Int {
            let start = position
            while position < bytes.count && (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[position]) { position += 1 }
            return position - start
        }

        mutating func string() throws(CloudError) -> String {
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

        private func validated(_ range: Range<Int>) throws(CloudError) -> String {
            guard let text = String(validating: UnsafeRawBufferPointer(rebasing: bytes[range]), as: UTF8.self) else {
                throw failure("a string that is not UTF-8")
            }
            return text
        }

        private mutating func hex4() throws(CloudError) -> UInt32 {
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
}
