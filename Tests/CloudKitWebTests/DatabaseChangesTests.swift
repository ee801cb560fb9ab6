import CloudKitServer
import CloudKitWeb
import EmbeddedCloud
import Foundation
import GatewayCore
import GatewayTesting
import Testing

/// `changes/database` and `zones/changes` of `gateway cloud serve`, in the shapes of Apple's
/// reference: which zones changed since a database-level token, deleted zones, paging.
@Suite("CloudKit endpoint: database change feeds")
struct DatabaseChangesTests {
    struct Fixture {
        let directory: TemporaryDirectory
        let server: EndpointServer
        let key = TestKey(id: "k", user: CloudUsers.defaultUser)

        init() async throws {
            directory = try TemporaryDirectory(prefix: "database-changes")
            let key = self.key
            server = try await EndpointServer(
                cloud: try EmbeddedCloud(path: directory.path("cloud.sqlite")),
                configuration: CloudKitEndpointConfiguration(container: EndpointServer.container, keys: [key.registered]))
        }

        func post(_ operation: String, _ body: JSONValue) async throws -> (status: Int, body: JSONValue) {
            try await server.post(operation, body, signedWith: key)
        }

        func names(_ answer: JSONValue) -> [String] {
            (answer["zones"]?.arrayValue ?? []).compactMap { $0["zoneID"]?["zoneName"]?.stringValue }
        }

        func stop() async {
            await server.stop()
            directory.remove()
        }
    }

    @Test("changes/database lists every zone first, then only the zones written or deleted since the token", arguments: ["changes/database", "zones/changes"])
    func feed(operation: String) async throws {
        let fixture = try await Fixture()
        let tokenKey = operation == "changes/database" ? "syncToken" : "metaSyncToken"
        do {
            let cloud = fixture.server.cloud
            for name in ["Alpha", "Beta", "Gamma"] { try await cloud.createZone(ZoneID(zoneName: name)) }
            let first = try await fixture.post(operation, [:])
            #expect(first.status == 200)
            #expect(fixture.names(first.body) == ["Alpha", "Beta", "Gamma"])
            #expect(first.body["moreComing"] == false)
            let zone = try #require(first.body["zones"]?.arrayValue?.first)
            #expect(zone["syncToken"]?.stringValue?.isEmpty == false, "each zone comes with its sync token, as a zone dictionary")
            #expect(zone["atomic"] == true)
            let token = try #require(first.body[tokenKey]?.stringValue)

            let quiet = try await fixture.post(operation, [tokenKey: .string(token)])
            #expect(fixture.names(quiet.body).isEmpty, "nothing changed: \(quiet.body)")

            // A record saved in Beta, a zone added, Gamma deleted.
            let beta = ZoneID(zoneName: "Beta")
            _ = try await cloud.modify([.create(Record(id: RecordID(recordName: "n1", zoneID: beta), recordType: "Note", fields: ["t": .string("x")]))], in: beta, atomic: true)
            try await cloud.createZone(ZoneID(zoneName: "Delta"))
            try await cloud.deleteZone(ZoneID(zoneName: "Gamma"))
            let changed = try await fixture.post(operation, [tokenKey: .string(quiet.body[tokenKey]?.stringValue ?? "")])
            #expect(fixture.names(changed.body) == ["Beta", "Delta", "Gamma"])
            let deleted = changed.body["zones"]?.arrayValue?.first { $0["zoneID"]?["zoneName"] == "Gamma" }
            #expect(deleted?["deleted"] == true && deleted?["syncToken"] == nil, "a deleted zone is reported as Apple does: \(String(describing: deleted))")
            let after = try await fixture.post(operation, [tokenKey: .string(changed.body[tokenKey]?.stringValue ?? "")])
            #expect(fixture.names(after.body).isEmpty)
        } catch {
            await fixture.stop()
            throw error
        }
        await fixture.stop()
    }

    @Test("resultsLimit pages the zones with moreComing, each page's token picking up where it ended")
    func paging() async throws {
        let fixture = try await Fixture()
        do {
            for index in 0..<5 { try await fixture.server.cloud.createZone(ZoneID(zoneName: "Z\(index)")) }
            var seen: [String] = []
            var token: JSONValue?
            var pages = 0
            while true {
                var body: [String: JSONValue] = ["resultsLimit": 2]
                if let token { body["syncToken"] = token }
                let page = try await fixture.post("changes/database", .object(body))
                #expect(page.status == 200)
                pages += 1
                seen += fixture.names(page.body)
                token = page.body["syncToken"]
                if page.body["moreComing"] != true { break }
                guard pages < 10 else { Issue.record("moreComing never ended"); break }
            }
            #expect(seen == ["Z0", "Z1", "Z2", "Z3", "Z4"])
            #expect(pages == 3)
        } catch {
            await fixture.stop()
            throw error
        }
        await fixture.stop()
    }

    @Test("desiredKeys trims the fields of records/changes, changes/zone and records/lookup; a bad one is BAD_REQUEST")
    func desiredKeys() async throws {
        let fixture = try await Fixture()
        do {
            let zone = ZoneID(zoneName: "Notes")
            try await fixture.server.cloud.createZone(zone)
            _ = try await fixture.server.cloud.modify(
                [.create(Record(id: RecordID(recordName: "n1", zoneID: zone), recordType: "Note", fields: ["a": .int64(1), "b": .string("two"), "c": .double(3.5)]))],
                in: zone, atomic: true)
            func fieldNames(_ record: JSONValue?) -> [String] { (record?["fields"]?.objectValue?.keys).map { Array($0).sorted() } ?? [] }
            let zoneID: JSONValue = ["zoneName": "Notes"]

            let all = try await fixture.post("records/changes", ["zoneID": zoneID])
            #expect(fieldNames(all.body["records"]?.arrayValue?.first) == ["a", "b", "c"])
            let some = try await fixture.post("records/changes", ["zoneID": zoneID, "desiredKeys": ["a", "nope"]])
            #expect(fieldNames(some.body["records"]?.arrayValue?.first) == ["a"])
            #expect(some.body["records"]?.arrayValue?.first?["recordType"] == "Note", "the record's other keys stay")
            let none = try await fixture.post("records/changes", ["zoneID": zoneID, "desiredKeys": []])
            #expect(fieldNames(none.body["records"]?.arrayValue?.first) == [])

            let perZone = try await fixture.post("changes/zone", ["zones": [["zoneID": zoneID, "desiredKeys": ["b"]]]])
            #expect(fieldNames(perZone.body["zones"]?.arrayValue?.first?["records"]?.arrayValue?.first) == ["b"])

            let lookup = try await fixture.post("records/lookup", ["zoneID": zoneID, "records": [["recordName": "n1"]], "desiredKeys": ["b", "c"]])
            #expect(fieldNames(lookup.body["records"]?.arrayValue?.first) == ["b", "c"])

            let bad = try await fixture.post("records/changes", ["zoneID": zoneID, "desiredKeys": "a"])
            #expect(bad.status == 400 && bad.body["serverErrorCode"] == "BAD_REQUEST", "\(bad.body)")
        } catch {
            await fixture.stop()
            throw error
        }
        await fixture.stop()
    }

    @Test("a token the endpoint did not issue and a resultsLimit below 1 are BAD_REQUEST")
    func badRequests() async throws {
        let fixture = try await Fixture()
        do {
            for body: JSONValue in [["syncToken": "AQAAAaBJidqD"], ["syncToken": "gwdb1.!!!"], ["syncToken": "gwdb1.e30"], ["resultsLimit": 0]] {
                let answer = try await fixture.post("changes/database", body)
                #expect(answer.status == 400, "\(body)")
                #expect(answer.body["serverErrorCode"] == "BAD_REQUEST", "\(answer.body)")
            }
            let garbage = try await fixture.post("zones/changes", ["metaSyncToken": .integer(7)])
            #expect(garbage.status == 200, "a token that is not a string is ignored, as an absent one")
        } catch {
            await fixture.stop()
            throw error
        }
        await fixture.stop()
    }
}
