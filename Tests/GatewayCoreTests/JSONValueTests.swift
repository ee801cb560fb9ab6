import Foundation
import GatewayCore
import Testing

/// The one JSON tree behind CloudKit's wire, the plugin protocol and JSON documents on disk: the
/// two number styles, the pretty form people edit, and where a parse failed.
@Suite("JSON values")
struct JSONValueTests {
    @Test("whole numbers written with a fraction are doubles as written, integers on CloudKit's wire")
    func numberStyles() throws {
        let text = Data(#"{"a": 35.0, "b": 35, "c": 1e3, "d": 0.5, "e": 9007199254740993}"#.utf8)
        let exact = try JSONValue.parse(text, numbers: .exact)
        #expect(exact == ["a": .double(35), "b": .integer(35), "c": .double(1000), "d": .double(0.5), "e": .integer(9_007_199_254_740_993)])
        let wire = try JSONValue.parse(text, numbers: .wholeDoublesAsIntegers)
        #expect(wire == ["a": .integer(35), "b": .integer(35), "c": .integer(1000), "d": .double(0.5), "e": .integer(9_007_199_254_740_993)])

        var compact: [UInt8] = []
        try JSONValue.array([.double(35), .double(0.5)]).writeCompact(into: &compact, numbers: .wholeDoublesAsIntegers)
        #expect(String(decoding: compact, as: UTF8.self) == "[35,0.5]")
        compact.removeAll()
        try JSONValue.array([.double(35), .double(0.5)]).writeCompact(into: &compact, numbers: .exact)
        #expect(String(decoding: compact, as: UTF8.self) == "[35.0,0.5]")
        #expect(throws: JSONNonFiniteNumber.self) { try JSONValue.double(.nan).writeCompact(into: &compact, numbers: .exact) }
    }

    @Test("the pretty form sorts keys, indents by two, keeps 35.0 and round-trips exactly")
    func prettyText() throws {
        let value: JSONValue = ["title": "a \"quote\"\n", "count": .double(35), "tags": ["x", 1], "empty": [:], "none": .null]
        let text = value.prettyText()
        #expect(text == """
            {
              "count": 35.0,
              "empty": {},
              "none": null,
              "tags": [
                "x",
                1
              ],
              "title": "a \\"quote\\"\\n"
            }

            """)
        #expect(try JSONValue.parse(Data(text.utf8), numbers: .exact) == value)
    }

    @Test("a parse failure names the byte, line and column and what was expected")
    func failures() {
        do {
            _ = try JSONValue.parse(Data("{\n  \"a\": 1,,\n}".utf8), numbers: .exact)
            Issue.record("accepted")
        } catch {
            #expect(error.offset == 11)
            #expect((error.line, error.column) == (2, 10))
            #expect(error.reason == "expected a member name in quotes")
        }
    }
}
