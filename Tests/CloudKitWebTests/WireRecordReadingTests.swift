import Foundation
import GatewayCore
import GatewayTesting
import Testing

@testable import CloudKitServer
@testable import CloudKitWeb

/// Records read straight from CloudKit's JSON text (change pages, `records/modify` bodies and
/// answers) are the records the tree decoding gives, whatever order the members come in.
@Suite("CloudKit records read from the text")
struct WireRecordReadingTests {
    static let zone = ZoneID(zoneName: "Notes")

    static func readRecord(_ text: String, layouts: inout RecordLayout?) throws -> Record {
        let dictionary = try JSONReader.read(Data(text.utf8), numbers: .wholeDoublesAsIntegers) { reader in
            try WireRecordDictionary.read(&reader, zone: zone)
        }
        return try dictionary.record(in: zone, layouts: &layouts)
    }

    static func readRecord(_ text: String) throws -> Record {
        var layouts: RecordLayout?
        return try readRecord(text, layouts: &layouts)
    }

    static func treeRecord(_ text: String) throws -> Record {
        try CloudKitWireCoding.decodeRecord(JSONValue.parse(Data(text.utf8)), in: zone)
    }

    static let everyKind: Record = {
        let other = ZoneID(zoneName: "Elsewhere")
        let fields: [String: FieldValue] = [
            "title": .string("h\u{e9}llo \"quoted\"\n"), "count": .int64(.min), "ratio": .double(2.5),
            "due": .timestamp(Timestamp(millisecondsSince1970: 1_716_000_000_123)), "blob": .bytes(Data([0, 1, 255])),
            "secret": .encrypted(Data([0xDE, 0xAD])),
            "parent": .reference(Reference(recordID: RecordID(recordName: "t", zoneID: zone), action: .deleteSelf)),
            "far": .reference(Reference(recordID: RecordID(recordName: "u", zoneID: other), action: .validate)),
            "file": .asset(AssetReference(checksum: String(repeating: "ab", count: 32), size: 10, downloadURL: "https://cdn.example/a")),
            "place": .location(Location(latitude: 48.5, longitude: 2.25, altitude: 35, timestamp: Timestamp(millisecondsSince1970: 1000))),
            "tags": .list([.string("a"), .string("b")]), "mixed": .list([.int64(1), .string("x")]), "empty": .list([]),
        ]
        return Record(
            id: RecordID(recordName: "n1", zoneID: zone), recordType: "Note", changeTag: "t1", fields: fields,
            modifiedAt: Timestamp(millisecondsSince1970: 2000), createdAt: Timestamp(millisecondsSince1970: 1000))
    }()

    @Test("a record of every field kind, as the writer writes it, reads back exactly, as the tree decodes it")
    func roundTrip() throws {
        var writer = JSONWriter()
        try CloudKitWireCoding.write(Self.everyKind, userRecordName: "_u", into: &writer)
        let text = String(decoding: writer.data, as: UTF8.self)
        #expect(try Self.readRecord(text) == Self.everyKind)
        #expect(try Self.treeRecord(text) == Self.everyKind)
    }

    @Test(
        "members in another order, type after value, unknown members: the same record",
        arguments: [
            #"{"fields":{"b":{"value":2,"type":"INT64"},"a":{"isEncrypted":false,"value":"x","type":"STRING"}},"recordType":"T","recordName":"r","modified":{"timestamp":5}}"#,
            #"{"recordName":"r","zoneID":{"zoneName":"Notes"},"recordType":"T","fields":{"a":{"type":"STRING","value":"x"},"b":{"type":"INT64","value":2.0}},"modified":{"timestamp":5,"deviceID":"d"}}"#,
            #"{"recordName":"r","recordType":"T","fields":{"a":{"value":"x"},"b":{"value":2}},"modified":{"timestamp":5}}"#,
        ])
    func memberOrder(text: String) throws {
        let expected = Record(
            id: RecordID(recordName: "r", zoneID: Self.zone), recordType: "T", fields: ["a": .string("x"), "b": .int64(2)],
            modifiedAt: Timestamp(millisecondsSince1970: 5))
        #expect(try Self.readRecord(text) == expected)
        #expect(try Self.treeRecord(text) == expected)
    }

    @Test("a field named twice keeps its last value, as a JSON object does")
    func duplicateField() throws {
        let record = try Self.readRecord(#"{"recordName":"r","fields":{"a":{"type":"INT64","value":1},"b":{"type":"INT64","value":2},"a":{"type":"INT64","value":3}}}"#)
        #expect(record.fields == ["a": .int64(3), "b": .int64(2)])
        #expect(record.layout.fieldNames == ["a", "b"])
    }

    @Test("records of the same fields share one layout; other fields get another")
    func sharedLayouts() throws {
        var layouts: RecordLayout?
        let first = try Self.readRecord(#"{"recordName":"1","fields":{"a":{"type":"INT64","value":1},"b":{"type":"INT64","value":2}}}"#, layouts: &layouts)
        let second = try Self.readRecord(#"{"recordName":"2","fields":{"a":{"type":"INT64","value":3},"b":{"type":"INT64","value":4}}}"#, layouts: &layouts)
        let third = try Self.readRecord(#"{"recordName":"3","fields":{"a":{"type":"INT64","value":5}}}"#, layouts: &layouts)
        #expect(first.layout === second.layout)
        #expect(third.layout !== first.layout)
        #expect(third.fields == ["a": .int64(5)])
    }

    @Test("a bad field is reported with the record's name even when the name comes last, without the value")
    func fieldErrorNamesRecord() throws {
        let error = try #require(throws: CloudError.self) {
            try Self.readRecord(#"{"fields":{"title":{"type":"INT64","value":"secret-value"}},"recordName":"n"}"#)
        }
        #expect(error.code == .invalidArguments)
        #expect(error.message.contains("Notes/n") && error.message.contains("title"), "\(error.message)")
        #expect(!error.message.contains("secret-value"))
        #expect(throws: CloudError.self) { try Self.readRecord(#"{"recordType":"T","fields":{}}"#) }
        #expect(throws: CloudError.self) { try Self.readRecord(#"{"recordName":"n","fields":{"title":"bare"}}"#) }
    }

    @Test("a changes/zone page: records, tombstones, token and moreComing; an error zone; broken text is a parse error")
    func changePage() throws {
        let text = #"""
            {"zones":[{"zoneID":{"zoneName":"Notes"},"moreComing":true,"syncToken":"AAE",
              "records":[{"recordName":"a","recordType":"T","fields":{"x":{"type":"STRING","value":"1"}}},{"recordName":"b","deleted":true}]}]}
            """#
        let page = try JSONReader.read(Data(text.utf8), numbers: .wholeDoublesAsIntegers) { reader in
            try WireRecordPage.readFirstZone(&reader, zone: Self.zone)
        }
        #expect(page.members["syncToken"] == "AAE")
        #expect(page.members["moreComing"] == true)
        #expect(page.records.count == 2)
        #expect(page.records[1].isDeleted && page.records[1].recordName == "b")
        var layouts: RecordLayout?
        #expect(try page.records[0].record(in: Self.zone, layouts: &layouts).fields == ["x": .string("1")])

        let failed = try JSONReader.read(
            Data(#"{"zones":[{"zoneID":{"zoneName":"Notes"},"serverErrorCode":"ZONE_NOT_FOUND","reason":"gone"}]}"#.utf8),
            numbers: .wholeDoublesAsIntegers
        ) { reader in try WireRecordPage.readFirstZone(&reader, zone: Self.zone) }
        #expect(CloudKitErrorCoding.isError(failed.object))
        #expect(CloudKitErrorCoding.decode(failed.object, context: "test").code == .zoneNotFound)

        #expect(throws: JSONParseError.self) {
            try JSONReader.read(Data(#"{"zones":[{"records":[{"recordName":"a",}]}]}"#.utf8), numbers: .wholeDoublesAsIntegers) { reader in
                try WireRecordPage.readFirstZone(&reader, zone: Self.zone)
            }
        }
    }

    @Test("a records/modify body that names its zone after the operations reads its records in that zone")
    func modifyBodyZoneLast() throws {
        let body = #"""
            {"operations":[{"record":{"recordName":"r","fields":{"p":{"type":"REFERENCE","value":{"recordName":"t","action":"NONE"}}}},"operationType":"create"}],
             "atomic":false,"zoneID":{"zoneName":"Late"}}
            """#
        let request = try ModifyRequest.read(Data(body.utf8))
        let late = ZoneID(zoneName: "Late")
        #expect(request.zone == late)
        #expect(request.atomic == false)
        let operations = try #require(request.operations)
        #expect(operations.count == 1 && operations[0].type == "create")
        var layouts: RecordLayout?
        let record = try #require(operations[0].record).record(in: late, layouts: &layouts)
        #expect(record["p"] == .reference(Reference(recordID: RecordID(recordName: "t", zoneID: late))))

        #expect(try ModifyRequest.read(Data(#"{"zoneID":{"zoneName":"Z"}}"#.utf8)).operations == nil)
        let error = try #require(throws: CloudError.self) { try ModifyRequest.read(Data(#"{"operations":[}"#.utf8)) }
        #expect(error.code == .invalidArguments)
    }
}
