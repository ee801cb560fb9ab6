import Foundation
import GatewayCore
import GatewayTesting
import Testing

@testable import CloudKitWeb

/// CloudKit Web Services' JSON: the examples of the protocol notes, every field type both ways,
/// error dictionaries and tokens.
@Suite("CloudKit Web Services wire encoding")
struct CloudKitWireTests {
    static let zone = ZoneID(zoneName: "Notes")

    static func json(_ text: String) throws -> JSONValue {
        try JSONValue.parse(Data(text.utf8))
    }

    @Test("the records/modify example of the notes decodes: an update with its tag and a forceDelete")
    func modifyRequestExample() throws {
        let request = try Self.json(
            """
            { "zoneID": {"zoneName": "Notes"}, "atomic": true,
              "operations": [
                { "operationType": "update",
                  "record": { "recordName": "n-42", "recordType": "Note", "recordChangeTag": "7k",
                              "fields": { "title": {"value": "Hi", "type": "STRING"} } } },
                { "operationType": "forceDelete", "record": { "recordName": "n-9" } } ] }
            """)
        #expect(try CloudKitWireCoding.decodeZoneID(request["zoneID"]!) == Self.zone)
        let operations = try #require(request["operations"]?.arrayValue)
        let update = try CloudKitWireCoding.decodeRecord(operations[0]["record"]!, in: Self.zone)
        #expect(update == Record(id: RecordID(recordName: "n-42", zoneID: Self.zone), recordType: "Note", changeTag: "7k", fields: ["title": .string("Hi")]))
        #expect(operations[1]["operationType"]?.stringValue == "forceDelete")

        // What the client sends for the same operations.
        let sent = try CloudKitWebDatabase.encode(.replace(update))
        #expect(sent["operationType"] == "replace")
        #expect(sent["record"]?["recordChangeTag"] == "7k")
        #expect(sent["record"]?["fields"]?["title"] == ["value": "Hi", "type": "STRING"])
        #expect(try CloudKitWebDatabase.encode(.forceDelete(RecordID(recordName: "n-9", zoneID: Self.zone))) == operations[1])
        #expect(try CloudKitWebDatabase.encode(.create(update))["record"]?["recordChangeTag"] == nil, "create sends no tag")
    }

    @Test("the records/modify answer of the notes decodes: a saved record with audit stamps and a deletion")
    func modifyResponseExample() throws {
        let answer = try Self.json(
            """
            { "records": [
                { "recordName": "n-42", "recordType": "Note", "recordChangeTag": "7m", "fields": {"title": {"value": "Hi", "type": "STRING"}},
                  "created": {"timestamp": 1716000000000, "userRecordName": "_abc", "deviceID": "x"},
                  "modified": {"timestamp": 1716000300000, "userRecordName": "_abc", "deviceID": "x"} },
                { "recordName": "n-9", "deleted": true } ] }
            """)
        let items = try #require(answer["records"]?.arrayValue)
        let saved = try CloudKitWireCoding.decodeRecord(items[0], in: Self.zone)
        #expect(saved.changeTag == "7m")
        #expect(saved.modifiedAt == Timestamp(millisecondsSince1970: 1_716_000_300_000))
        #expect(saved.fields == ["title": .string("Hi")])
        #expect(items[1]["deleted"] == true)
        #expect(!CloudKitErrorCoding.isError(items[1]))
    }

    @Test("zone ids: the live zones/changes example, MistKit's ownerName, and the default owner left out")
    func zoneIDs() throws {
        let live = try Self.json(
            """
            {"moreComing": false, "metaSyncToken": "AQAAAaBJidqD",
             "zones": [{"zoneID": {"zoneName": "WebChangeTest", "ownerRecordName": "_aca0", "zoneType": "REGULAR_CUSTOM_ZONE"}, "deleted": true}]}
            """)
        let zone = try CloudKitWireCoding.decodeZoneID(live["zones"]!.arrayValue![0]["zoneID"]!)
        #expect(zone == ZoneID(zoneName: "WebChangeTest", ownerName: "_aca0"))
        #expect(try CloudKitWireCoding.decodeZoneID(Self.json(#"{"zoneName":"Z","ownerName":"_o"}"#)).ownerName == "_o")
        #expect(CloudKitWireCoding.encode(Self.zone) == ["zoneName": "Notes"])
        #expect(CloudKitWireCoding.encode(zone) == ["zoneName": "WebChangeTest", "ownerRecordName": "_aca0"])
        #expect(throws: CloudError.self) { try CloudKitWireCoding.decodeZoneID(Self.json("{}")) }
    }

    /// JSON as canonical text (keys sorted, whole numbers without a fraction), to compare documents.
    static func text(_ data: Data) throws -> String {
        String(decoding: try JSONValue.parse(data).serialized(), as: UTF8.self)
    }

    @Test("every field type has the wire encoding of the notes' table and decodes back exactly")
    func fieldEncodings() throws {
        let other = ZoneID(zoneName: "Elsewhere")
        let asset = AssetReference(checksum: String(repeating: "ab", count: 32), size: 10, downloadURL: "https://cdn.example/a")
        let cases: [(FieldValue, String)] = [
            (.string("héllo"), #"{"type":"STRING","value":"héllo"}"#),
            (.int64(.max), #"{"type":"INT64","value":9223372036854775807}"#),
            (.int64(.min), #"{"type":"INT64","value":-9223372036854775808}"#),
            (.double(2.5), #"{"type":"DOUBLE","value":2.5}"#),
            (.timestamp(Timestamp(millisecondsSince1970: 1_716_000_000_123)), #"{"type":"TIMESTAMP","value":1716000000123}"#),
            (.bytes(Data([0, 1, 255])), #"{"type":"BYTES","value":"AAH/"}"#),
            (.encrypted(Data([0xDE, 0xAD])), #"{"type":"ENCRYPTED_BYTES","value":"3q0="}"#),
            (
                .reference(Reference(recordID: RecordID(recordName: "t", zoneID: Self.zone), action: .deleteSelf)),
                #"{"type":"REFERENCE","value":{"action":"DELETE_SELF","recordName":"t"}}"#
            ),
            (
                .reference(Reference(recordID: RecordID(recordName: "t", zoneID: other), action: .validate)),
                #"{"type":"REFERENCE","value":{"action":"VALIDATE","recordName":"t","zoneID":{"zoneName":"Elsewhere"}}}"#
            ),
            (
                .asset(asset),
                #"{"type":"ASSETID","value":{"downloadURL":"https://cdn.example/a","fileChecksum":"\#(asset.checksum)","size":10}}"#
            ),
            (
                .location(Location(latitude: 48.5, longitude: 2.25, altitude: 35, timestamp: Timestamp(millisecondsSince1970: 1000))),
                #"{"type":"LOCATION","value":{"altitude":35,"latitude":48.5,"longitude":2.25,"timestamp":1000}}"#
            ),
            (.list([.string("a"), .string("b")]), #"{"type":"STRING_LIST","value":["a","b"]}"#),
            (.list([.int64(1), .int64(2)]), #"{"type":"INT64_LIST","value":[1,2]}"#),
            (
                .list([.timestamp(Timestamp(millisecondsSince1970: 5))]),
                #"{"type":"TIMESTAMP_LIST","value":[5]}"#
            ),
            (.list([]), #"{"type":"STRING_LIST","value":[]}"#),
            (
                .list([.int64(1), .string("x")]),
                #"{"type":"UNKNOWN_LIST","value":[{"type":"INT64","value":1},{"type":"STRING","value":"x"}]}"#
            ),
        ]
        for (value, expected) in cases {
            // The streaming writer produces the same JSON as the tree.
            var writer = JSONWriter()
            try CloudKitFieldCoding.write(value, in: Self.zone, into: &writer)
            #expect(try Self.text(writer.data) == Self.text(try CloudKitFieldCoding.encode(value, in: Self.zone).serialized()), "written \(expected)")
            let encoded = try CloudKitFieldCoding.encode(value, in: Self.zone)
            // Compared as text: 35 and 35.0 are the same JSON number.
            #expect(String(decoding: try encoded.serialized(), as: UTF8.self) == String(decoding: try Self.json(expected).serialized(), as: UTF8.self))
            #expect(try CloudKitFieldCoding.decode(encoded, in: Self.zone, name: "f") == value, "decoding of \(expected)")
        }
        #expect(throws: CloudError.self, "NaN has no JSON") { try CloudKitFieldCoding.encode(.double(.nan), in: Self.zone) }
        // A whole record, written member by member, is the tree's record dictionary.
        let record = Record(
            id: RecordID(recordName: "n1", zoneID: Self.zone), recordType: "Note", changeTag: "t1",
            fields: Dictionary(uniqueKeysWithValues: cases.enumerated().map { ("f\($0.offset)", $0.element.0) }),
            modifiedAt: Timestamp(millisecondsSince1970: 2000), createdAt: Timestamp(millisecondsSince1970: 1000))
        var writer = JSONWriter()
        try CloudKitWireCoding.write(record, userRecordName: "_u", into: &writer)
        #expect(try Self.text(writer.data) == Self.text(try CloudKitWireCoding.encode(record, userRecordName: "_u").serialized()))
    }

    @Test("values from other clients: numbersAsStrings, ASSET, untyped values and malformed fields")
    func lenientDecoding() throws {
        func decode(_ text: String) throws -> FieldValue { try CloudKitFieldCoding.decode(Self.json(text), in: Self.zone, name: "f") }
        #expect(try decode(#"{"type":"INT64","value":"9223372036854775807"}"#) == .int64(.max))
        #expect(try decode(#"{"type":"ASSET","value":{"fileChecksum":"c","size":3}}"#) == .asset(AssetReference(checksum: "c", size: 3)))
        #expect(try decode(#"{"value":"text"}"#) == .string("text"))
        #expect(try decode(#"{"value":42}"#) == .int64(42))
        #expect(try decode(#"{"value":true}"#) == .int64(1))
        #expect(try decode(#"{"value":1.5}"#) == .double(1.5))
        #expect(try decode(#"{"value":{"recordName":"r","action":"NONE"}}"#) == .reference(Reference(recordID: RecordID(recordName: "r", zoneID: Self.zone))))
        #expect(try decode(#"{"value":{"latitude":1,"longitude":2}}"#) == .location(Location(latitude: 1, longitude: 2)))
        #expect(try decode(#"{"type":"STRING_LIST","value":["a"]}"#) == .list([.string("a")]))
        for malformed in [
            #"{"type":"INT64","value":"twelve"}"#, #"{"type":"BYTES","value":"***"}"#, #"{"type":"STRING","value":3}"#,
            #"{"type":"LOCATION","value":{"latitude":1}}"#, #"{"type":"MYSTERY","value":1}"#, #"{"type":"STRING"}"#,
            #"{"type":"STRING_LIST","value":"a"}"#,
        ] {
            #expect(throws: CloudError.self, "\(malformed)") { try decode(malformed) }
        }
        let error = try #require(throws: CloudError.self) {
            try CloudKitWireCoding.decodeRecord(Self.json(#"{"recordName":"n","fields":{"title":{"type":"INT64","value":"x"}}}"#), in: Self.zone)
        }
        #expect(error.message.contains("Notes/n") && error.message.contains("title"), "the error names the record and field: \(error.message)")
        #expect(!error.message.contains("\"x\""), "the error does not quote the value")
    }

    @Test("an iCloud upload receipt is what a record save sends back; references compare by content")
    func assetReceipts() throws {
        let singleFile: JSONValue = [
            "wrappingKey": "wk", "fileChecksum": "AppleChecksum", "receipt": "rcpt", "referenceChecksum": "rc", "size": 3,
        ]
        let reference = AssetReference(
            checksum: String(repeating: "0", count: 64), size: 3, uploadReceipt: String(decoding: try singleFile.serialized(), as: UTF8.self))
        #expect(CloudKitAssetCoding.encode(reference) == singleFile)
        #expect(reference == AssetReference(checksum: String(repeating: "0", count: 64), size: 3, downloadURL: "https://x"))
    }

    @Test("change tokens survive the syncToken string, URL-safe, for any bytes")
    func tokens() throws {
        var random = SeededGenerator(seed: 7)
        for length in 0..<80 {
            let bytes = Data((0..<length).map { _ in UInt8.random(in: .min ... .max, using: &random) })
            let text = CloudKitWireCoding.encode(ChangeToken(data: bytes))
            #expect(!text.contains("+") && !text.contains("/") && !text.contains("="))
            #expect(try CloudKitWireCoding.decodeToken(text) == ChangeToken(data: bytes))
        }
        #expect(throws: CloudError.self) { try CloudKitWireCoding.decodeToken("not a token!") }
    }
}

/// The web auth session: one request at a time, each new token persisted before the next.
@Suite("CloudKit web auth token session")
struct CloudKitWebAuthSessionTests {
    @Test("concurrent requests run one at a time, each with the token the previous answer handed back")
    func serialization() async throws {
        let directory = try TemporaryDirectory(prefix: "web-auth")
        defer { directory.remove() }
        let file = directory.path("token")
        try Data("t0\n".utf8).write(to: URL(fileURLWithPath: file))
        let session = try CloudKitWebAuthSession(file: file)
        let running = LockedValue(0)
        let seen = LockedValue<[String]>([])
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<20 {
                group.addTask {
                    try await session.perform { token in
                        let overlapping = running.withLock { count -> Bool in
                            count += 1
                            return count > 1
                        }
                        #expect(!overlapping, "two requests ran at once")
                        let persisted = try String(contentsOfFile: file, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
                        #expect(persisted == token, "the token in use is the persisted one")
                        try await Task.sleep(for: .milliseconds(1))
                        let next = "t\(seen.withLock { $0.append(token); return $0.count })"
                        running.withLock { $0 -= 1 }
                        return (result: (), nextToken: next)
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(seen.get() == (0..<20).map { "t\($0)" }, "every request used its predecessor's answer")
        #expect(await session.currentToken == "t20")
        #expect(try String(contentsOfFile: file, encoding: .utf8) == "t20\n")
        let mode = try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(throws: CloudError.self, "a missing token file") { try CloudKitWebAuthSession(file: directory.path("missing")) }
    }
}
