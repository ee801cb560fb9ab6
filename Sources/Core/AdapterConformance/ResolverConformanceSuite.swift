import Foundation
import GatewayCore

/// One behaviour every batch conflict resolver must show.
public typealias ResolverConformanceCase = ConformanceCase<any BatchConflictResolver>

/// The behaviours every `BatchConflictResolver` (a resolver process, through
/// `PluginConflictResolver`) must show, whatever it decides: `gateway check-adapter NAME` runs
/// them against an entry of the config's `resolvers:`.
///
/// The suite never judges a decision, only that it can be written: every conflict of a batch is
/// answered, in order, with an answer that fits it (fields the record holds, of the types it holds),
/// a field both sides hold alike comes back as it is (whole doubles included), the same conflicts
/// get the same answers, and deletions, records without an ancestor and large batches are
/// answered too. Conflicts are of record type `Note`.
public enum ResolverConformanceSuite {
    static let zone = ZoneID(zoneName: "ResolverZone")

    /// A value of every field type a resolver can meet (assets and encrypted values never reach
    /// it: values are decrypted and assets stay references the gateway checks).
    static let everyType: [String: FieldValue] = [
        "text": .string("naïve café, 東京"),
        "count": .int64(-42),
        "whole": .double(5),
        "ratio": .double(2.5),
        "at": .timestamp(Timestamp(millisecondsSince1970: 1_790_000_000_123)),
        "blob": .bytes(Data([0, 1, 2, 255])),
        "parent": .reference(Reference(recordID: RecordID(recordName: "Note-parent", zoneID: zone))),
        "place": .location(Location(latitude: 48.8566, longitude: 2.3522)),
        "tags": .list([.string("a"), .string("b")]),
        "scores": .list([.int64(1), .int64(2)]),
    ]

    static func record(_ name: String, _ fields: [String: FieldValue]) -> Record {
        Record(id: RecordID(recordName: name, zoneID: zone), recordType: "Note", fields: fields)
    }

    /// A conflict over `name`: `base` is the version both sides last agreed on (`nil`: none),
    /// `local` and `server` the two sides (`nil`: deleted).
    static func conflict(_ name: String, base: [String: FieldValue]?, local: [String: FieldValue]?, server: [String: FieldValue]?) -> ConflictContext {
        ConflictContext(
            recordID: RecordID(recordName: name, zoneID: zone), ancestor: base.map { $0.mapValues(FieldFingerprint.init) },
            local: local.map { record(name, $0) }, server: server.map { record(name, $0) })
    }

    /// Both sides changed the title since they agreed; every other field is alike on both sides.
    static func titleConflict(_ name: String, extra: [String: FieldValue] = [:]) -> ConflictContext {
        var base = extra
        base["title"] = .string("base")
        var local = extra
        local["title"] = .string("local edit of \(name)")
        var server = extra
        server["title"] = .string("server edit")
        return conflict(name, base: base, local: local, server: server)
    }

    /// The resolver's answers to `conflicts`, each checked as the gateway checks it before
    /// writing anything; fails naming the first record without a fitting answer.
    static func answers(_ resolver: any BatchConflictResolver, _ conflicts: [ConflictContext]) async throws -> [ConflictResolution] {
        let results = await resolver.resolve(conflicts)
        try expect(results.count == conflicts.count, "asked \(conflicts.count) conflicts, got \(results.count) answers")
        var resolutions: [ConflictResolution] = []
        for (conflict, result) in zip(conflicts, results) {
            switch result {
            case .failure(let error):
                throw ConformanceFailure("no answer for record \(conflict.recordID.recordName): \(error.message)")
            case .success(let resolution):
                if let problem = ThreeWayMerge.problem(with: resolution, of: conflict) {
                    throw ConformanceFailure("record \(conflict.recordID.recordName) was answered with \(problem)")
                }
                resolutions.append(resolution)
            }
        }
        return resolutions
    }

    /// The value `resolution` leaves in `field`.
    static func value(of field: String, in resolution: ConflictResolution, of conflict: ConflictContext) -> FieldValue? {
        switch resolution {
        case .server: conflict.server?[field]
        case .local: conflict.local?[field]
        case .fields(let fields): fields[field]
        }
    }

    /// Every case, in order.
    public static let cases: [ResolverConformanceCase] = [
        ResolverConformanceCase("answers every conflict of a batch, in order, each naming its record") { resolver in
            // Names at the protocol's limits: 255 bytes, and two that differ only in Unicode
            // normalization (two records, never one).
            let names = (0..<38).map { "Note-\($0)" } + [String(repeating: "n", count: 255), "caf\u{e9}", "cafe\u{301}"]
            _ = try await answers(resolver, names.map { titleConflict($0) })
        },
        ResolverConformanceCase("every answer fits its conflict: fields the record holds, of the types it holds") { resolver in
            var conflicts: [ConflictContext] = []
            for (field, value) in everyType.sorted(by: { $0.key < $1.key }) {
                conflicts.append(titleConflict("Note-\(field)", extra: [field: value]))
            }
            conflicts.append(titleConflict("Note-all", extra: everyType))
            _ = try await answers(resolver, conflicts)
        },
        ResolverConformanceCase("a field both sides hold alike comes back as it is, whole doubles and lists included") { resolver in
            let conflict = titleConflict("Note-alike", extra: everyType)
            let resolution = try await answers(resolver, [conflict])[0]
            for (field, value) in everyType.sorted(by: { $0.key < $1.key }) {
                let answered = Self.value(of: field, in: resolution, of: conflict)
                try expect(answered == value, "field '\(field)', alike on both sides, came back as \(answered.map { "\($0)" } ?? "null") instead of \(value)")
            }
        },
        ResolverConformanceCase("the same conflicts asked again get the same answers") { resolver in
            let conflicts = (0..<10).map { titleConflict("Note-again-\($0)", extra: ["count": .int64(Int64($0))]) }
            let first = try await answers(resolver, conflicts)
            let second = try await answers(resolver, conflicts)
            for (index, (one, two)) in zip(first, second).enumerated() where one != two {
                throw ConformanceFailure("record \(conflicts[index].recordID.recordName) was answered \(one) and then \(two)")
            }
        },
        ResolverConformanceCase("a record deleted on one side and edited on the other is answered") { resolver in
            let base: [String: FieldValue] = ["title": .string("base")]
            let edited: [String: FieldValue] = ["title": .string("edited")]
            _ = try await answers(
                resolver,
                [
                    conflict("Note-deleted-here", base: base, local: nil, server: edited),
                    conflict("Note-deleted-there", base: base, local: edited, server: nil),
                ])
        },
        ResolverConformanceCase("a record both sides hold without a common ancestor (a store joining the zone) is answered") { resolver in
            _ = try await answers(
                resolver, [conflict("Note-joined", base: nil, local: ["title": .string("mine"), "count": .int64(1)], server: ["title": .string("theirs")])])
        },
        ResolverConformanceCase("a thousand conflicts at once are answered") { resolver in
            _ = try await answers(resolver, (0..<1000).map { titleConflict("Note-bulk-\($0)", extra: ["count": .int64(Int64($0))]) })
        },
    ]
}
