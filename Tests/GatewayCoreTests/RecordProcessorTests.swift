import Foundation
import GatewayCore
import GatewayTesting
import Synchronization
import Testing

/// Leaves `private` out on the way out and gives nothing back on the way in, as a process that
/// drops a field does.
private struct DroppingProcessor: RecordProcessor {
    func outgoing(_ records: [Record]) async throws -> [Record] {
        records.map { record in
            var named: [String: FieldValue?] = [:]
            for (position, name) in record.layout.fieldNames.enumerated() where name != "private" { named[name] = .some(record[position: position]) }
            return Record(id: record.id, recordType: record.recordType, changeTag: record.changeTag, namedFields: named)
        }
    }

    func incoming(_ records: [Record]) async throws -> [Record] { records }
}

/// Appends its mark to the `trail` field on the way out, takes it off on the way in, and
/// remembers the batches it was given (each of one record type) and whether it was closed.
private final class TrailProcessor: RecordProcessor {
    let mark: String
    let batches = Mutex<[[String]]>([])
    let closed = Mutex(false)

    init(_ mark: String) { self.mark = mark }

    func outgoing(_ records: [Record]) async throws -> [Record] {
        try remember(records)
        return records.map { record in
            var record = record
            record["trail"] = .string((record["trail"].flatMap { if case .string(let text) = $0 { text } else { nil } } ?? "") + mark)
            return record
        }
    }

    func incoming(_ records: [Record]) async throws -> [Record] {
        try remember(records)
        return try records.map { record in
            guard case .string(let trail)? = record["trail"], trail.hasSuffix(mark) else {
                throw RecordProcessorError("\(mark) met \(record.id.recordName) without its mark last")
            }
            var record = record
            record["trail"] = .string(String(trail.dropLast(mark.count)))
            return record
        }
    }

    func close() async { closed.withLock { $0 = true } }

    private func remember(_ records: [Record]) throws {
        guard Set(records.map(\.recordType)).count <= 1 else { throw RecordProcessorError("a batch mixed record types") }
        batches.withLock { $0.append(records.map(\.id.recordName)) }
    }
}

/// The built-in record processors, record by record.
@Suite("Record processors")
struct RecordProcessorTests {
    static let zone = ZoneID(zoneName: "Photos")

    static func photo(_ fields: [String: FieldValue?]) -> Record {
        Record(id: RecordID(recordName: "p1", zoneID: zone), recordType: "Photo", namedFields: fields)
    }

    @Test("the processing adapter runs each type's processors, then the adapter's, in batches of one type in their order; in reverse on the way in; and closes them")
    func processingOrder() async throws {
        let store = InMemoryAdapter(zoneID: Self.zone)
        for (name, type) in [("p1", "Photo"), ("n1", "Note"), ("p2", "Photo"), ("n2", "Note")] {
            await store.save(Record(id: RecordID(recordName: name, zoneID: Self.zone), recordType: type, namedFields: ["trail": .some(.string(""))]))
        }
        let (photo, note, every) = (TrailProcessor("P"), TrailProcessor("N"), TrailProcessor("*"))
        let adapter = ProcessingAdapter(store, processors: ["Photo": [photo], "Note": [note]], everyType: [every])
        let pending = try await adapter.pendingChanges(limit: 10, after: nil)
        #expect(pending.saves.map(\.record.id.recordName) == ["p1", "n1", "p2", "n2"], "the store's order is kept")
        #expect(pending.saves.map { $0.record["trail"] } == [.string("P*"), .string("N*"), .string("P*"), .string("N*")])
        #expect(photo.batches.withLock { $0 } == [["p1", "p2"], ["p1", "p2"]], "one batch per type, in order: out, and back in for the round-trip check")
        #expect(Set(every.batches.withLock { $0 }) == [["p1", "p2"], ["n1", "n2"]])
        let states = try await adapter.localState(for: [RecordID(recordName: "n2", zoneID: Self.zone)])
        #expect(states.values.first?.record?["trail"] == .string("N*"))

        // On the way in the adapter's processor goes first, so each finds its own mark last.
        let arriving = ["p1", "n1"].map { name in
            Record(id: RecordID(recordName: name, zoneID: Self.zone), recordType: name.hasPrefix("p") ? "Photo" : "Note", namedFields: ["trail": .some(.string("x" + (name.hasPrefix("p") ? "P" : "N") + "*"))])
        }
        try await adapter.apply(DownloadedChanges(writes: arriving, state: SyncStateUpdate(zoneState: Data())))
        #expect(await store.records[RecordID(recordName: "p1", zoneID: Self.zone)]?["trail"] == .string("x"))
        #expect(await store.records[RecordID(recordName: "n1", zoneID: Self.zone)]?["trail"] == .string("x"))

        await adapter.close()
        #expect([photo, note, every].allSatisfy { $0.closed.withLock { $0 } })
    }

    @Test("a processor that does not give back on the way in what it took on the way out stops the upload, naming record and field; nothing is sent or lost")
    func roundTripChecked() async throws {
        let fixture = try SyncFixture()
        let (a, b) = (fixture.adapter("a"), fixture.adapter("b"))
        await a.save(SyncFixture.note("n1", ["title": .string("pears"), "qty": .int64(5), "private": .string("secret of a")]))
        await b.save(SyncFixture.note("n2", ["title": .string("plums"), "qty": .int64(1), "private": .string("secret of b"), "trail": .string("")]))
        let dropping = ProcessingAdapter(a, processors: [:], everyType: [DroppingProcessor()])
        let report = try await Synchronizer(
            cloud: fixture.cloud, adapters: [SyncedAdapter(dropping)], configuration: SyncConfiguration(deviceID: "a"), environment: fixture.environment
        ).sync()
        guard case .failed(_, let message) = report.adapters[0].outcome else {
            Issue.record("the upload went ahead: \(report)")
            return
        }
        #expect(report.adapters[0].failureCode == "processorFailed")
        #expect(message.contains("record n1") && message.contains("field 'private'"), "\(message)")
        #expect(try await fixture.cloudRecords().isEmpty, "nothing was sent")
        #expect(try await a.pendingChangeCount() == 1, "the change stays pending")
        #expect(await a.values["n1"]?["private"] == .string("secret of a"))

        // A processor that keeps its round trips passes the check.
        let kept = ProcessingAdapter(b, processors: [:], everyType: [TrailProcessor("T")])
        let fine = try await Synchronizer(
            cloud: fixture.cloud, adapters: [SyncedAdapter(kept)], configuration: SyncConfiguration(deviceID: "b"), environment: fixture.environment
        ).sync()
        #expect(fine.succeeded, "\(fine)")
        #expect(try await fixture.cloudRecords()["n2"]?["private"] == .string("secret of b"))
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
