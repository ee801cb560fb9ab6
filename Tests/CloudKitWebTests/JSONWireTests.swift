import Foundation
import GatewayCore
import Testing

@testable import CloudKitWeb

/// The JSON reader and writer behind every CloudKit Web Services body.
@Suite("JSON text")
struct JSONWireTests {
    @Test("documents read back exactly what was written, keys sorted, integers exact", arguments: [
        #"{"a":[1,-2,3.5,true,false,null,"x"],"b":{"c":"d"}}"#,
        #"{"big":9223372036854775807,"small":-9223372036854775808,"tiny":1.0e-300}"#,
        #"["quote \" backslash \\ slash / newline \n tab \t control \u0001 é 🙂"]"#,
        #"{}"#, #"[]"#, #""just a string""#, #"0"#, #"-0.5"#,
    ])
    func roundTrip(text: String) throws {
        let value = try JSONValue.parse(Data(text.utf8))
        let written = try value.serialized()
        #expect(try JSONValue.parse(written) == value)
        // Foundation reads what we write the same way.
        let foundation = try JSONSerialization.jsonObject(with: written, options: [.fragmentsAllowed])
        let again = try JSONSerialization.data(withJSONObject: foundation, options: [.fragmentsAllowed, .sortedKeys])
        #expect(try JSONValue.parse(again) == value)
    }

    @Test("numbers: integers stay integers, whole numbers written as doubles are integers, others doubles")
    func numbers() throws {
        #expect(try JSONValue.parse(Data("9007199254740993".utf8)) == .integer(9_007_199_254_740_993))
        #expect(try JSONValue.parse(Data("35.0".utf8)) == .integer(35))
        #expect(try JSONValue.parse(Data("1e3".utf8)) == .integer(1000))
        #expect(try JSONValue.parse(Data("2.25".utf8)) == .double(2.25))
        #expect(try JSONValue.parse(Data("1e300".utf8)) == .double(1e300))
        #expect(try JSONValue.parse(Data("99999999999999999999".utf8)) == .double(1e20))
        #expect(String(decoding: try JSONValue.double(2.0).serialized(), as: UTF8.self) == "2")
        #expect(String(decoding: try JSONValue.double(0.1).serialized(), as: UTF8.self) == "0.1")
        #expect(throws: CloudError.self) { try JSONValue.double(.infinity).serialized() }
    }

    @Test("escapes: surrogate pairs join, control characters are escaped on the way out")
    func escapes() throws {
        #expect(try JSONValue.parse(Data(#""\ud83d\ude42 \u00e9 \/""#.utf8)) == .string("🙂 é /"))
        #expect(String(decoding: try JSONValue.string("a\u{1}b\"c\\").serialized(), as: UTF8.self) == #""a\u0001b\"c\\""#)
    }

    @Test("malformed text is an invalidArguments error naming what and where", arguments: [
        "", "{", "[1,]", "{\"a\" 1}", "{\"a\":1,}", "tru", "nul", "01", "1.", "-", "1e", "\"open", "\"\\x\"", "\"\\ud83d\"",
        "\"\\udc00\"", "[1] 2", "{\"a\":1}}", "\"tab\there\"", "{a:1}", "NaN",
    ])
    func malformed(text: String) {
        do {
            _ = try JSONValue.parse(Data(text.utf8))
            Issue.record("\(text) was accepted")
        } catch {
            #expect(error.code == .invalidArguments)
            #expect(error.message.contains("at byte"), "\(error.message)")
        }
    }

    @Test("hostile input: deep nesting and invalid UTF-8 are refused without crashing")
    func hostile() {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(throws: CloudError.self) { try JSONValue.parse(Data(deep.utf8)) }
        #expect(throws: CloudError.self) { try JSONValue.parse(Data([0x22, 0xFF, 0xFE, 0x22])) }
        #expect(throws: CloudError.self) { try JSONValue.parse(Data([0x22, 0x5C, 0x6E, 0xC3, 0x22])) }
        let nested = String(repeating: "[", count: JSONValue.maximumDepth) + String(repeating: "]", count: JSONValue.maximumDepth)
        #expect(throws: Never.self) { try JSONValue.parse(Data(nested.utf8)) }
    }
}
