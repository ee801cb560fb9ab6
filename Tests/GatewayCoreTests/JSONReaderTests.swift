import Foundation
import GatewayCore
import GatewayTesting
import Testing

/// The pull reader: walking objects and arrays by hand reads the same values as the tree parse,
/// and malformed structure is refused where it is, whichever way the text is read.
@Suite("JSON pull reader")
struct JSONReaderTests {
    @Test("walking a document member by member reads what the tree parse reads")
    func walk() throws {
        let text = #"{ "page": [ {"name": "a", "n": 1}, {"name": "b", "n": -2, "extra": [true, null, {"x": 1.5}]} ], "more": false }"#
        let (names, numbers, more) = try JSONReader.read(Data(text.utf8), numbers: .exact) { reader in
            var names: [String] = []
            var numbers: [JSONValue] = []
            var more: JSONValue?
            try reader.beginObject()
            while let key = try reader.nextMember() {
                guard key == "page" else {
                    more = try reader.value()
                    continue
                }
                try reader.beginArray()
                while try reader.nextElement() {
                    try reader.beginObject()
                    while let member = try reader.nextMember() {
                        switch member {
                        case "name": names.append(try reader.string())
                        case "n": numbers.append(try reader.value())
                        default: try reader.skipValue()
                        }
                    }
                }
            }
            return (names, numbers, more)
        }
        #expect(names == ["a", "b"])
        #expect(numbers == [.integer(1), .integer(-2)])
        #expect(more == .bool(false))
    }

    @Test(
        "structure errors are refused by the pull reader as by the tree parse",
        arguments: [
            #"{,"a":1}"#, #"{"a":1,}"#, #"{"a":1 "b":2}"#, #"[1,]"#, #"[,1]"#, #"[1 2]"#, #"{"a" 1}"#, #"{"a":1"#, #"[1"#, #"{1:2}"#,
            #"[01]"#, #"[1] x"#,
        ])
    func structureErrors(text: String) {
        #expect(throws: JSONParseError.self) { try JSONValue.parse(Data(text.utf8), numbers: .exact) }
        #expect(throws: JSONParseError.self) {
            try JSONReader.read(Data(text.utf8), numbers: .exact) { reader in try reader.skipValue() }
        }
    }

    @Test("asking for a string where something else comes is an error at that byte")
    func wrongKind() {
        do {
            _ = try JSONReader.read(Data(#"{"a": 5}"#.utf8), numbers: .exact) { reader in
                try reader.beginObject()
                _ = try reader.nextMember()
                return try reader.string()
            }
            Issue.record("accepted a number as a string")
        } catch let error as JSONParseError {
            #expect(error.offset == 6)
            #expect(error.reason == "expected a string")
        } catch {
            Issue.record("unexpected error \(error)")
        }
    }

    @Test("integers are exact to the 64-bit bounds; beyond them they are doubles from CloudKit clients, and an error in documents people edit")
    func integerBounds() throws {
        let exact: [(String, JSONValue)] = [
            ("9223372036854775807", .integer(.max)), ("-9223372036854775808", .integer(.min)), ("-0", .integer(0)), ("0", .integer(0)),
            ("9.223372036854775808e18", .double(9_223_372_036_854_775_808)),
        ]
        for (text, expected) in exact {
            #expect(try JSONValue.parse(Data(text.utf8), numbers: .exact) == expected, "\(text)")
        }
        let beyond: [(String, JSONValue)] = [
            ("9223372036854775808", .double(9_223_372_036_854_775_808)), ("-9223372036854775809", .double(-9.223372036854775808e18)),
            ("18446744073709551616", .double(18_446_744_073_709_551_616)), ("12345678901234567890123", .double(1.2345678901234568e22)),
        ]
        for (text, expected) in beyond {
            #expect(try JSONValue.parse(Data(text.utf8), numbers: .wholeDoublesAsIntegers) == expected, "\(text)")
            let error = #expect(throws: JSONParseError.self) { try JSONValue.parse(Data("[1, \(text)]".utf8), numbers: .exact) }
            #expect(error?.column == 5, "the error points at the number: \(String(describing: error))")
        }
    }

    @Test("nesting deeper than the limit is refused by skipping as by reading")
    func depth() {
        let deep = String(repeating: "[", count: JSONValue.maximumDepth + 2) + String(repeating: "]", count: JSONValue.maximumDepth + 2)
        #expect(throws: JSONParseError.self) {
            try JSONReader.read(Data(deep.utf8), numbers: .exact) { reader in try reader.skipValue() }
        }
        let allowed = String(repeating: "[", count: JSONValue.maximumDepth) + String(repeating: "]", count: JSONValue.maximumDepth)
        #expect(throws: Never.self) { try JSONValue.parse(Data(allowed.utf8), numbers: .exact) }
    }

    @Test("random documents: the tree parse of the written text is the value, and skipping consumes it whole", arguments: 0..<40)
    func randomDocuments(seed: UInt64) throws {
        var generator = SeededGenerator(seed: seed)
        let value = Self.randomValue(depth: 0, using: &generator)
        var text: [UInt8] = []
        try value.writeCompact(into: &text, numbers: .exact)
        let data = Data(text)
        #expect(try JSONValue.parse(data, numbers: .exact) == value)
        try JSONReader.read(data, numbers: .exact) { reader in try reader.skipValue() }
    }

    static func randomValue(depth: Int, using generator: inout SeededGenerator) -> JSONValue {
        let pick = generator.next() % (depth > 4 ? 5 : 7)
        switch pick {
        case 0: return .null
        case 1: return .bool(generator.next() % 2 == 0)
        case 2: return .integer(Int64(bitPattern: generator.next()) >> (generator.next() % 64))
        case 3: return .double(Double(Int64(bitPattern: generator.next()) % 1_000_000) / 7.0 + 0.5)
        case 4:
            let alphabet = Array("ab \"\\\n\té€😀/")
            return .string(String((0..<(generator.next() % 8)).map { _ in alphabet[Int(generator.next() % UInt64(alphabet.count))] }))
        case 5: return .array((0..<(generator.next() % 5)).map { _ in randomValue(depth: depth + 1, using: &generator) })
        default:
            var members: [String: JSONValue] = [:]
            for index in 0..<(generator.next() % 5) { members["k\(index)\(generator.next() % 3)"] = randomValue(depth: depth + 1, using: &generator) }
            return .object(members)
        }
    }
}
