import Foundation
import GatewayCore
import GatewayTesting
import Testing

/// The built-in record processors, record by record.
@Suite("Record processors")
struct RecordProcessorTests {
    static let zone = ZoneID(zoneName: "Photos")

    static func photo(_ fields: [String: FieldValue?]) -> Record {
        Record(id: RecordID(recordName: "p1", zoneID: zone), recordType: "Photo", namedFields: fields)
    }

    @Test("rename is undone on the way in, keeps nulls named, drops a zone field of the store's name, and shares layouts")
    func rename() {
        let rename = RenameFieldProcessor(storeName: "caption", zoneName: "headline")
        let stored = Self.photo(["caption": .string("a cat"), "rank": nil])
        let out = rename.outgoing(stored)
        #expect(out.layout.fieldNames.sorted() == ["headline", "rank"])
        #expect(out["headline"] == .string("a cat") && out.layout.position(of: "rank") != nil, "a null stays named")
        #expect(rename.incoming(out) == stored)
        #expect(rename.outgoing(Self.photo(["caption": .string("b"), "rank": nil])).layout === out.layout, "one layout per shape")
        let both = rename.incoming(Self.photo(["headline": .string("new"), "caption": .string("the zone's own caption field")]))
        #expect(both.fields == ["caption": .string("new")])
        let untouched = Self.photo(["rank": .int64(1)])
        #expect(rename.outgoing(untouched) == untouched)
    }

    @Test("file_reference reads files under its folder only, refuses a path it cannot read naming the record, and writes what arrives under its content's name, or refuses it when it cannot")
    func fileReference() throws {
        let directory = try TemporaryDirectory(prefix: "file-reference")
        defer { directory.remove() }
        let folder = directory.url.appendingPathComponent("files")
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("sub"), withIntermediateDirectories: true)
        let bytes = Data("picture".utf8)
        try bytes.write(to: folder.appendingPathComponent("sub/a.png"))
        try Data("secret".utf8).write(to: directory.url.appendingPathComponent("secret"))
        try FileManager.default.createSymbolicLink(atPath: folder.appendingPathComponent("link").path, withDestinationPath: "../secret")
        let processor = FileReferenceProcessor(field: "image", folder: folder)

        #expect(try processor.outgoing(Self.photo(["image": .string("sub/a.png")]))["image"] == .bytes(bytes))
        for path in ["../secret", "/etc/passwd", "sub/../../secret", "missing.png", "sub", "link"] {
            #expect {
                try processor.outgoing(Self.photo(["image": .string(path), "title": .string("t")]))
            } throws: { error in
                "\(error)".contains("record p1: field image names '\(path)'")
            }
        }
        let null = Self.photo(["image": nil])
        #expect(try processor.outgoing(null) == null, "an empty field is null both ways")

        let other = directory.url.appendingPathComponent("other")
        let receiver = FileReferenceProcessor(field: "image", folder: other)
        let stored = try receiver.incoming(Self.photo(["image": .bytes(bytes)]))
        let name = AssetChecksum.of(bytes)
        #expect(stored["image"] == .string(name))
        #expect(FileManager.default.contents(atPath: other.appendingPathComponent(name).path) == bytes)
        #expect(try receiver.outgoing(stored)["image"] == .bytes(bytes), "what arrived goes out as the same bytes")
        // A folder it cannot write (here a file in its place) refuses the record rather than
        // empty the store's column.
        let blocked = directory.url.appendingPathComponent("blocked")
        try Data().write(to: blocked)
        #expect(throws: RecordProcessorError.self) {
            try FileReferenceProcessor(field: "image", folder: blocked).incoming(Self.photo(["image": .bytes(Data("other".utf8))]))
        }
    }
}
