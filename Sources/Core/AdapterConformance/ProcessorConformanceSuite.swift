import Foundation
import GatewayCore

/// One behaviour every record processor must show.
public typealias ProcessorConformanceCase = ConformanceCase<any RecordProcessor>

/// The behaviours every `RecordProcessor` (a processor process, through `PluginRecordProcessor`)
/// must show, whatever it changes: `gateway check-adapter NAME` runs them against an entry of the
/// config's `processors:`.
///
/// The suite never judges what a processor does to a record, only that the gateway can live with
/// it: every record of a batch comes back, in order, under its own name and type; a store's record
/// that goes out and comes back is the record it was (every field type, empty fields included);
/// what it sends out is stable (sent out again after coming back, it is the same); the same records
/// get the same answers; and large batches are answered. Records are of record type `Note`, each
/// with text fields `title` and `body`, a field held empty, and the fields a case adds (one of
/// every type).
public enum ProcessorConformanceSuite {
    static let zone = ZoneID(zoneName: "ProcessorZone")

    /// A store's record `name` holding `fields`, a `title` and a `body` of text unless `fields`
    /// has them, and a field held empty.
    static func record(_ name: String, _ fields: [String: FieldValue]) -> Record {
        var named: [String: FieldValue?] = fields.mapValues { .some($0) }
        if named["title"] == nil { named["title"] = .some(.string("Title of \(name)")) }
        if named["body"] == nil { named["body"] = .some(.string("The body of \(name), in a few words")) }
        named["empty"] = .some(nil)
        return Record(id: RecordID(recordName: name, zoneID: zone), recordType: "Note", namedFields: named)
    }

    /// Every field type a store holds (the resolver suite's set: assets and encrypted values are
    /// made after processors on the way out and undone before them on the way in).
    static var everyType: [String: FieldValue] { ResolverConformanceSuite.everyType }

    /// The fields `record` holds, empty ones as `nil`.
    static func fields(of record: Record) -> [String: FieldValue?] {
        var fields: [String: FieldValue?] = [:]
        for (position, name) in record.layout.fieldNames.enumerated() { fields[name] = .some(record[position: position]) }
        return fields
    }

    /// Fails unless `answer` has a record for each of `records`, in order, under its name and type.
    static func expectAnswered(_ answer: [Record], _ records: [Record], _ direction: String) throws {
        try expect(answer.count == records.count, "\(direction): sent \(records.count) records, got \(answer.count)")
        for (sent, got) in zip(records, answer) {
            try expect(got.id == sent.id, "\(direction): record \(sent.id.recordName) was answered as \(got.id.recordName)")
            try expect(got.recordType == sent.recordType, "\(direction): record \(sent.id.recordName) changed type to \(got.recordType)")
        }
    }

    /// Fails naming the first field where `got` differs from `expected`.
    static func expectSameFields(_ got: Record, _ expected: Record, _ what: String) throws {
        let (have, want) = (fields(of: got), fields(of: expected))
        for name in Set(have.keys).union(want.keys).sorted() where have[name] != want[name] {
            let shown: (FieldValue??) -> String = { value in
                switch value {
                case .none: "not held"
                case .some(.none): "empty"
                case .some(.some(let value)): "\(value)"
                }
            }
            throw ConformanceFailure("record \(expected.id.recordName) \(what): field '\(name)' is \(shown(have[name])) instead of \(shown(want[name]))")
        }
    }

    /// `records` out to the zone's form and back, each answer checked.
    static func roundTrip(_ processor: any RecordProcessor, _ records: [Record]) async throws -> (zone: [Record], back: [Record]) {
        let zone = try await processor.outgoing(records)
        try expectAnswered(zone, records, "outgoing")
        let back = try await processor.incoming(zone)
        try expectAnswered(back, zone, "incoming")
        return (zone, back)
    }

    /// Every case, in order.
    public static let cases: [ProcessorConformanceCase] = [
        ProcessorConformanceCase("answers every record of a batch, in order, under its own name and type, both ways") { processor in
            // Names at the protocol's limits: 255 bytes, and two that differ only in Unicode
            // normalization (two records, never one).
            let names = (0..<38).map { "Note-\($0)" } + [String(repeating: "n", count: 255), "caf\u{e9}", "cafe\u{301}"]
            _ = try await roundTrip(processor, names.map { record($0, ["title": .string("title of \($0)")]) })
        },
        ProcessorConformanceCase("a store's record that goes out and comes back is the record it was: every field type, empty fields too") { processor in
            var records = everyType.sorted(by: { $0.key < $1.key }).map { field, value in record("Note-\(field)", [field: value]) }
            records.append(record("Note-all", everyType))
            let (_, back) = try await roundTrip(processor, records)
            for (sent, got) in zip(records, back) { try expectSameFields(got, sent, "came back changed") }
        },
        ProcessorConformanceCase("what it sends out is stable: a record that came back and goes out again is sent the same") { processor in
            let records = [record("Note-stable", everyType), record("Note-short", ["title": .string("t")])]
            let (zone, back) = try await roundTrip(processor, records)
            let again = try await processor.outgoing(back)
            try expectAnswered(again, back, "outgoing")
            for (first, second) in zip(zone, again) { try expectSameFields(second, first, "was sent differently the second time") }
        },
        ProcessorConformanceCase("the same records processed again get the same answers, both ways") { processor in
            let records = (0..<10).map { record("Note-again-\($0)", ["title": .string("t\($0)"), "count": .int64(Int64($0))]) }
            let (zone, _) = try await roundTrip(processor, records)
            let (zoneAgain, _) = try await roundTrip(processor, records)
            for (first, second) in zip(zone, zoneAgain) { try expectSameFields(second, first, "was answered differently the second time") }
            let back = try await processor.incoming(zone)
            let backAgain = try await processor.incoming(zone)
            for (first, second) in zip(back, backAgain) { try expectSameFields(second, first, "came back differently the second time") }
        },
        ProcessorConformanceCase("two thousand records at once are answered") { processor in
            let records = (0..<2000).map { record("Note-bulk-\($0)", ["title": .string("t\($0)"), "count": .int64(Int64($0))]) }
            let (_, back) = try await roundTrip(processor, records)
            for (sent, got) in zip(records, back) { try expectSameFields(got, sent, "came back changed") }
        },
    ]
}
