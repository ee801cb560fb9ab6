import CloudKitServer
import CloudKitWeb
import EmbeddedCloud
import Foundation
import GatewayCore
import GatewayTesting
import PostgresCloud
import PostgresTesting
import TestScheduling
import Testing

/// `records/query` of `gateway cloud serve` in the shapes of Apple's reference, in front of the
/// embedded and the PostgreSQL cloud: filters with every comparator, sorting, paging through
/// `continuationMarker`, `desiredKeys`, `zoneWide`, and the errors.
@Suite("CloudKit endpoint: records/query", .heavy)
struct RecordQueryTests {
    /// One note of the seed, as the test knows it (the oracle the answers are checked against).
    struct Note: Sendable {
        var name: String
        var rank: Int64
        var title: String
        var tags: [String]
        var latitude: Double
    }

    static let notes: [Note] = (0..<30).map(note)

    private static func note(_ index: Int) -> Note {
        let title = index % 3 == 0 ? "Shopping list \(index)" : "Idea \(index)"
        var tags = ["all", index.isMultiple(of: 2) ? "even" : "odd"]
        if index % 5 == 0 { tags.append("five") }
        let latitude = 52 + Double(index) * 0.01
        return Note(name: String(format: "n%02d", index), rank: Int64((index * 7) % 30), title: title, tags: tags, latitude: latitude)
    }
    static let zone = ZoneID(zoneName: "Notes")

    final class Fixture: Sendable {
        let server: EndpointServer
        let key = TestKey(id: "k", user: CloudUsers.defaultUser)
        let cleanup: @Sendable () async -> Void

        init(cloudKind: String) async throws {
            let key = self.key
            let cloud: any CloudDatabase
            switch cloudKind {
            case "embedded":
                let directory = try TemporaryDirectory(prefix: "record-query")
                cloud = try EmbeddedCloud(path: directory.path("cloud.sqlite"))
                cleanup = { directory.remove() }
            default:
                let endpoint = try await PostgresTestServer.freshDatabase("record_query")
                let postgres = try await PostgresCloud.open(endpoint, configuration: PostgresCloud.Configuration(schema: "cloud", maximumConnections: 2))
                cloud = postgres
                cleanup = { await postgres.close() }
            }
            server = try await EndpointServer(
                cloud: cloud, configuration: CloudKitEndpointConfiguration(container: EndpointServer.container, keys: [key.registered]))
            try await cloud.createZone(RecordQueryTests.zone)
            let saves = RecordQueryTests.notes.map { note in
                RecordOperation.create(
                    Record(
                        id: RecordID(recordName: note.name, zoneID: RecordQueryTests.zone), recordType: "Note",
                        fields: [
                            "rank": .int64(note.rank), "title": .string(note.title), "tags": .list(note.tags.map(FieldValue.string)),
                            "place": .location(Location(latitude: note.latitude, longitude: 13)),
                        ]))
            }
            let others = (0..<5).map { index in
                RecordOperation.create(
                    Record(id: RecordID(recordName: "m\(index)", zoneID: RecordQueryTests.zone), recordType: "Other", fields: ["rank": .int64(1)]))
            }
            _ = try await cloud.modify(saves + others, in: RecordQueryTests.zone, atomic: true)
        }

        func post(_ body: JSONValue) async throws -> (status: Int, body: JSONValue) {
            try await server.post("records/query", body, signedWith: key)
        }

        /// Every page of the query, following `continuationMarker`; the names in answer order.
        func all(_ query: JSONValue, limit: Int, extra: [String: JSONValue] = [:]) async throws -> (names: [String], pages: Int) {
            var names: [String] = []
            var marker: JSONValue?
            var pages = 0
            repeat {
                var body: [String: JSONValue] = ["zoneID": ["zoneName": "Notes"], "query": query, "resultsLimit": .integer(Int64(limit))]
                body.merge(extra) { $1 }
                if let marker { body["continuationMarker"] = marker }
                let answer = try await post(.object(body))
                guard answer.status == 200 else { throw ConformanceFailure("records/query answered \(answer.status): \(answer.body)") }
                let records = answer.body["records"]?.arrayValue ?? []
                guard records.count <= limit else { throw ConformanceFailure("a page held \(records.count) records, more than \(limit)") }
                names += records.compactMap { $0["recordName"]?.stringValue }
                marker = answer.body["continuationMarker"]
                pages += 1
            } while marker != nil && pages < 100
            return (names, pages)
        }

        func stop() async {
            await server.stop()
            await cleanup()
        }
    }

    /// Runs `body` against a seeded endpoint in front of `cloudKind`, stopping it however `body` ends.
    static func withFixture(_ cloudKind: String, _ body: (Fixture) async throws -> Void) async throws {
        let fixture = try await Fixture(cloudKind: cloudKind)
        do {
            try await body(fixture)
        } catch {
            await fixture.stop()
            throw error
        }
        await fixture.stop()
    }

    static func query(_ filters: [JSONValue] = [], sort: [JSONValue] = []) -> JSONValue {
        ["recordType": "Note", "filterBy": .array(filters), "sortBy": .array(sort)]
    }

    static func filter(_ field: String, _ comparator: String, _ value: JSONValue, type: String? = nil, distance: Double? = nil) -> JSONValue {
        var fieldValue: [String: JSONValue] = ["value": value]
        if let type { fieldValue["type"] = .string(type) }
        var object: [String: JSONValue] = ["fieldName": .string(field), "comparator": .string(comparator), "fieldValue": .object(fieldValue)]
        if let distance { object["distance"] = .double(distance) }
        return .object(object)
    }

    /// Each comparator with the names the oracle expects, in record-name order.
    static let comparatorCases: [(String, JSONValue, @Sendable (Note) -> Bool)] = [
        ("EQUALS", filter("rank", "EQUALS", 14), { $0.rank == 14 }),
        ("NOT_EQUALS", filter("rank", "NOT_EQUALS", 14), { $0.rank != 14 }),
        ("LESS_THAN", filter("rank", "LESS_THAN", 5), { $0.rank < 5 }),
        ("LESS_THAN_OR_EQUALS", filter("rank", "LESS_THAN_OR_EQUALS", 5), { $0.rank <= 5 }),
        ("GREATER_THAN", filter("rank", "GREATER_THAN", .double(24.5)), { $0.rank > 24 }),
        ("GREATER_THAN_OR_EQUALS", filter("rank", "GREATER_THAN_OR_EQUALS", 25), { $0.rank >= 25 }),
        ("IN", filter("rank", "IN", [1, 2, 3], type: "INT64_LIST"), { [1, 2, 3].contains($0.rank) }),
        ("NOT_IN", filter("rank", "NOT_IN", [1, 2, 3], type: "INT64_LIST"), { ![1, 2, 3].contains($0.rank) }),
        ("BEGINS_WITH", filter("title", "BEGINS_WITH", "Shopping"), { $0.title.hasPrefix("Shopping") }),
        ("NOT_BEGINS_WITH", filter("title", "NOT_BEGINS_WITH", "Shopping"), { !$0.title.hasPrefix("Shopping") }),
        ("CONTAINS_ALL_TOKENS", filter("title", "CONTAINS_ALL_TOKENS", "list shopping"), { $0.title.hasPrefix("Shopping list") }),
        ("CONTAINS_ANY_TOKENS", filter("title", "CONTAINS_ANY_TOKENS", "idea nothing"), { $0.title.hasPrefix("Idea") }),
        ("LIST_CONTAINS", filter("tags", "LIST_CONTAINS", "five"), { $0.tags.contains("five") }),
        ("NOT_LIST_CONTAINS", filter("tags", "NOT_LIST_CONTAINS", "five"), { !$0.tags.contains("five") }),
        ("LIST_CONTAINS_ANY", filter("tags", "LIST_CONTAINS_ANY", ["five", "odd"], type: "STRING_LIST"), { $0.tags.contains("five") || $0.tags.contains("odd") }),
        ("NOT_LIST_CONTAINS_ANY", filter("tags", "NOT_LIST_CONTAINS_ANY", ["five", "odd"], type: "STRING_LIST"), { !$0.tags.contains("five") && !$0.tags.contains("odd") }),
        ("LIST_CONTAINS_ALL", filter("tags", "LIST_CONTAINS_ALL", ["five", "odd"], type: "STRING_LIST"), { $0.tags.contains("five") && $0.tags.contains("odd") }),
        ("NOT_LIST_CONTAINS_ALL", filter("tags", "NOT_LIST_CONTAINS_ALL", ["five", "odd"], type: "STRING_LIST"), { !($0.tags.contains("five") && $0.tags.contains("odd")) }),
        ("LIST_MEMBER_BEGINS_WITH", filter("tags", "LIST_MEMBER_BEGINS_WITH", "fi"), { $0.tags.contains { $0.hasPrefix("fi") } }),
        ("NOT_LIST_MEMBER_BEGINS_WITH", filter("tags", "NOT_LIST_MEMBER_BEGINS_WITH", "fi"), { !$0.tags.contains { $0.hasPrefix("fi") } }),
        // 0.01° of latitude is about 1.1 km: within 3 km of the first note are the first three.
        ("NEAR", filter("place", "NEAR", ["latitude": 52, "longitude": 13], type: "LOCATION", distance: 3_000), { $0.latitude < 52.025 }),
    ]

    @Test("every comparator in filterBy selects what Apple's reference says, in front of both clouds", arguments: ["embedded", "postgres"])
    func comparators(cloudKind: String) async throws {
        try await Self.withFixture(cloudKind) { fixture in
            for (name, filter, oracle) in Self.comparatorCases {
                let found = try await fixture.all(Self.query([filter]), limit: 200)
                let expected = Self.notes.filter(oracle).map(\.name)
                #expect(found.names == expected, "\(name) on \(cloudKind)")
                #expect(!expected.isEmpty && expected.count < Self.notes.count || name.hasPrefix("NOT_"), "\(name) selects some notes, not all")
            }
            // Several filters are ANDed; system fields filter too.
            let both = try await fixture.all(
                Self.query([
                    Self.filter("tags", "LIST_CONTAINS", "even"),
                    ["systemFieldName": "recordName", "comparator": "BEGINS_WITH", "fieldValue": ["value": "n1"]],
                ]), limit: 200)
            #expect(both.names == ["n10", "n12", "n14", "n16", "n18"])
        }
    }

    @Test("pages follow continuationMarker without skipping or repeating a record, sorted or not", arguments: ["embedded", "postgres"])
    func paging(cloudKind: String) async throws {
        try await Self.withFixture(cloudKind) { fixture in
            let everything = try await fixture.all(Self.query(), limit: 7)
            #expect(everything.names == Self.notes.map(\.name), "every Note once, in record-name order; no Other")
            #expect(everything.pages == 5)

            let byRank = Self.query(sort: [["fieldName": "rank", "ascending": false]])
            for limit in [1, 4, 30, 200] {
                let sorted = try await fixture.all(byRank, limit: limit)
                #expect(sorted.names == Self.notes.sorted { ($0.rank, $1.name) > ($1.rank, $0.name) }.map(\.name), "limit \(limit)")
            }
            // Two keys: the title's first word, then rank ascending; the filter applies before paging.
            let twoKeys = try await fixture.all(
                Self.query([Self.filter("rank", "LESS_THAN", 20)], sort: [["fieldName": "title"], ["fieldName": "rank"]]), limit: 3)
            let expected = Self.notes.filter { $0.rank < 20 }.sorted { ($0.title, $0.rank, $0.name) < ($1.title, $1.rank, $1.name) }
            #expect(twoKeys.names == expected.map(\.name))
            // Ordered by distance from a point north of every note: the last note first.
            let near = try await fixture.all(
                Self.query(sort: [["fieldName": "place", "relativeLocation": ["latitude": 60, "longitude": 13]]]), limit: 10)
            #expect(near.names == Self.notes.map(\.name).reversed())
        }
    }

    @Test("records carry their zoneID and only the desiredKeys; zoneWide spans every zone", arguments: ["embedded", "postgres"])
    func shapes(cloudKind: String) async throws {
        try await Self.withFixture(cloudKind) { fixture in
            let answer = try await fixture.post([
                "zoneID": ["zoneName": "Notes"], "query": Self.query([Self.filter("rank", "EQUALS", 0)]), "desiredKeys": ["title"],
            ])
            #expect(answer.status == 200)
            let record = try #require(answer.body["records"]?.arrayValue?.first)
            #expect(record["recordName"] == "n00" && record["recordType"] == "Note")
            #expect(record["zoneID"]?["zoneName"] == "Notes")
            #expect(record["recordChangeTag"]?.stringValue?.isEmpty == false)
            #expect(record["fields"]?["title"]?["value"] == "Shopping list 0")
            #expect(record["fields"]?["rank"] == nil, "only the desired keys")
            #expect(record["created"]?["timestamp"]?.int64Value != nil, "created, as in Apple's record dictionary: \(record)")
            #expect(record["created"]?["userRecordName"] == .string(CloudUsers.defaultUser) && record["modified"]?["userRecordName"] == .string(CloudUsers.defaultUser))
            #expect(answer.body["continuationMarker"] == nil, "one page holds them all")

            let other = ZoneID(zoneName: "Archive")
            try await fixture.server.cloud.createZone(other)
            _ = try await fixture.server.cloud.modify(
                [.create(Record(id: RecordID(recordName: "a1", zoneID: other), recordType: "Note", fields: ["rank": .int64(14)]))],
                in: other, atomic: true)
            let wide = try await fixture.all(Self.query([Self.filter("rank", "EQUALS", 14)]), limit: 1, extra: ["zoneWide": true])
            #expect(wide.names == ["a1"] + Self.notes.filter { $0.rank == 14 }.map(\.name), "zones in name order, Archive first")
        }
    }

    @Test("a selective filter over more records than a page may examine gives an empty page with a marker, then the match")
    func scanBudget() async throws {
        try await Self.withFixture("embedded") { fixture in
            let zone = ZoneID(zoneName: "Big")
            let cloud = fixture.server.cloud
            try await cloud.createZone(zone)
            // 10,200 records: the one match sorts last, past the 10,000 a page examines.
            for start in stride(from: 0, to: 10_200, by: 200) {
                let saves = (start..<start + 200).map { index in
                    RecordOperation.create(
                        Record(
                            id: RecordID(recordName: String(format: "r%05d", index), zoneID: zone), recordType: "Note",
                            fields: ["rank": .int64(index == 10_199 ? -1 : Int64(index))]))
                }
                _ = try await cloud.modify(saves, in: zone, atomic: true)
            }
            let body: JSONValue = ["zoneID": ["zoneName": "Big"], "query": Self.query([Self.filter("rank", "LESS_THAN", 0)])]
            let first = try await fixture.post(body)
            #expect(first.status == 200 && first.body["records"]?.arrayValue?.isEmpty == true, "\(first.body)")
            let marker = try #require(first.body["continuationMarker"], "an empty page still carries a marker")
            guard case .object(var next) = body else { return }
            next["continuationMarker"] = marker
            let second = try await fixture.post(.object(next))
            #expect(second.body["records"]?.arrayValue?.compactMap { $0["recordName"]?.stringValue } == ["r10199"])
            #expect(second.body["continuationMarker"] == nil)
        }
    }

    @Test("malformed queries, markers and unknown zones answer Apple's error shape")
    func errors() async throws {
        try await Self.withFixture("embedded") { fixture in
            let cases: [(JSONValue, Int, String)] = [
                (["zoneID": ["zoneName": "Notes"], "query": ["filterBy": []]], 400, "BAD_REQUEST"),
                (["zoneID": ["zoneName": "Notes"]], 400, "BAD_REQUEST"),
                (["zoneID": ["zoneName": "Notes"], "query": Self.query([Self.filter("rank", "ROUGHLY", 1)])], 400, "BAD_REQUEST"),
                (["zoneID": ["zoneName": "Notes"], "query": Self.query([Self.filter("rank", "IN", 1)])], 400, "BAD_REQUEST"),
                (["zoneID": ["zoneName": "Notes"], "query": Self.query([Self.filter("place", "NEAR", ["latitude": 1, "longitude": 2])])], 400, "BAD_REQUEST"),
                (
                    ["zoneID": ["zoneName": "Notes"], "query": Self.query([["systemFieldName": "createdUserRecordName", "comparator": "EQUALS", "fieldValue": ["value": "x"]]])],
                    400, "BAD_REQUEST"
                ),
                (["zoneID": ["zoneName": "Notes"], "query": Self.query(), "continuationMarker": "not-a-marker"], 400, "BAD_REQUEST"),
                (["zoneID": ["zoneName": "Notes"], "query": Self.query(), "resultsLimit": 0], 400, "BAD_REQUEST"),
                (["zoneID": ["zoneName": "Missing"], "query": Self.query()], 404, "ZONE_NOT_FOUND"),
            ]
            for (body, status, code) in cases {
                let answer = try await fixture.post(body)
                #expect(answer.status == status, "\(body): \(answer.body)")
                #expect(answer.body["serverErrorCode"]?.stringValue == code, "\(body): \(answer.body)")
                #expect(answer.body["reason"]?.stringValue?.isEmpty == false)
            }
            // A marker of an unsorted query sent with a sorted one is refused, not misread.
            let first = try await fixture.post(["zoneID": ["zoneName": "Notes"], "query": Self.query(), "resultsLimit": 2])
            let marker = try #require(first.body["continuationMarker"])
            let mixed = try await fixture.post([
                "zoneID": ["zoneName": "Notes"], "query": Self.query(sort: [["fieldName": "rank"]]), "continuationMarker": marker,
            ])
            #expect(mixed.status == 400 && mixed.body["serverErrorCode"] == "BAD_REQUEST")
            // resultsLimit above 200 is clamped silently.
            let clamped = try await fixture.post(["zoneID": ["zoneName": "Notes"], "query": Self.query(), "resultsLimit": 5000])
            #expect(clamped.status == 200 && clamped.body["records"]?.arrayValue?.count == 30)
        }
    }
}
