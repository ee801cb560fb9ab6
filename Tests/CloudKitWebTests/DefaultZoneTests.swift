import CloudKitServer
import EmbeddedCloud
import Foundation
import GatewayCore
import GatewayTesting
import Testing

/// The private database's `_defaultZone` is there without being created, as in CloudKit, and is
/// not atomic; it cannot be deleted.
@Suite("Endpoint: the private default zone")
struct DefaultZoneTests {
    let alice = TestKey(id: "alice-key", user: "_alice")

    @Test("a save to _defaultZone needs no zone created first; the zone lists as not atomic, keeps an atomic request's good saves, and cannot be deleted")
    func defaultZoneIsThere() async throws {
        let directory = try TemporaryDirectory(prefix: "default-zone")
        defer { directory.remove() }
        let server = try await EndpointServer(
            cloud: try EmbeddedCloud(path: directory.path("cloud.sqlite")),
            configuration: CloudKitEndpointConfiguration(container: EndpointServer.container, keys: [alice.registered]))
        do {
            let zone: JSONValue = ["zoneName": "_defaultZone"]
            let saved = try await server.post(
                "records/modify",
                [
                    "zoneID": zone, "atomic": true,
                    "operations": [
                        ["operationType": "create", "record": ["recordName": "a", "recordType": "Note", "fields": ["title": ["value": "one"]]]],
                        ["operationType": "update", "record": ["recordName": "missing", "recordType": "Note", "recordChangeTag": "x", "fields": [:]]],
                    ],
                ], signedWith: alice)
            #expect(saved.status == 200, "\(saved.body)")
            let results = try #require(saved.body["records"]?.arrayValue)
            #expect(results.first?["recordName"] == "a" && results.first?["serverErrorCode"] == nil, "the good save stands: \(results)")
            #expect(results.last?["serverErrorCode"] == "NOT_FOUND")

            let zones = try await server.get(path: "/database/1/\(EndpointServer.container)/development/private/zones/list", signedWith: alice)
            let listed = try #require(zones.body["zones"]?.arrayValue?.first { $0["zoneID"]?["zoneName"] == "_defaultZone" })
            #expect(listed["atomic"] == false)

            let deleted = try await server.post("zones/modify", ["operations": [["operationType": "delete", "zone": ["zoneID": zone]]]], signedWith: alice)
            #expect(deleted.body["zones"]?.arrayValue?.first?["serverErrorCode"] == "BAD_REQUEST", "\(deleted.body)")
            let looked = try await server.post("records/lookup", ["zoneID": zone, "records": [["recordName": "a"]]], signedWith: alice)
            #expect(looked.body["records"]?.arrayValue?.first?["fields"]?["title"]?["value"] == "one")
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }
}
