import CloudKitServer
import CloudKitWeb
import EmbeddedCloud
import Foundation
import GatewayCore
import GatewayTesting
import Testing

/// Shares on the wire, as a CloudKit client that is not the gateway's writes and reads them.
@Suite("CloudKit endpoint: users, shares and the shared database")
struct ShareEndpointTests {
    static let base = "/database/1/\(EndpointServer.container)/development"
    let alice = TestKey(id: "alice", user: "_alice")
    let bob = TestKey(id: "bob", user: "_bob")

    @Test("a share saved with top-level participants is accepted by short GUID; changes/database of the shared database reports the zone, then its removal")
    func shareLifecycle() async throws {
        let directory = try TemporaryDirectory(prefix: "share-endpoint")
        defer { directory.remove() }
        let server = try await EndpointServer(
            cloud: try EmbeddedCloud(path: directory.path("cloud.sqlite")),
            configuration: CloudKitEndpointConfiguration(container: EndpointServer.container, keys: [alice.registered, bob.registered]))
        do {
            func post(_ key: TestKey, _ database: String, _ operation: String, _ body: JSONValue) async throws -> JSONValue {
                let answer = try await server.post(path: "\(Self.base)/\(database)/\(operation)", body, signedWith: key)
                #expect(answer.status == 200, "\(operation): \(answer.body)")
                return answer.body
            }
            let notes: JSONValue = ["zoneName": "Notes"]
            _ = try await post(alice, "private", "zones/modify", ["operations": [["operationType": "create", "zone": ["zoneID": notes]]]])
            _ = try await post(alice, "private", "records/modify", [
                "zoneID": notes,
                "operations": [["operationType": "create", "record": ["recordName": "n1", "recordType": "Note", "fields": ["title": ["value": "hello"]]]]],
            ])
            // As CloudKit JS writes a share: participants at the top of the record dictionary.
            let saved = try await post(alice, "private", "records/modify", [
                "zoneID": notes,
                "operations": [[
                    "operationType": "create",
                    "record": [
                        "recordName": "cloudkit.zoneshare", "recordType": "cloudkit.share", "fields": [:], "publicPermission": "NONE",
                        "participants": [["userIdentity": ["userRecordName": "_bob"], "permission": "READ_ONLY", "acceptanceStatus": "ACCEPTED"]],
                    ],
                ]],
            ])
            let share = try #require(saved["records"]?.arrayValue?.first)
            let participants = share["participants"]?.arrayValue ?? []
            #expect(participants.map { $0["userIdentity"]?["userRecordName"]?.stringValue } == ["_alice", "_bob"])
            #expect(participants.last?["acceptanceStatus"] == "PENDING", "only bob accepts for bob")
            #expect(share["owner"]?["type"] == "OWNER" && share["currentUserParticipant"]?["userIdentity"]?["userRecordName"] == "_alice")
            let guid = try #require(share["shortGUID"]?.stringValue)

            let early = try await post(bob, "shared", "subscriptions/modify", [
                "operations": [["operationType": "create", "subscription": ["subscriptionID": "s", "subscriptionType": "zone", "zoneID": ["zoneName": "Notes", "ownerRecordName": "_alice"]]]]
            ])
            #expect(early["subscriptions"]?.arrayValue?.first?["serverErrorCode"] == "ZONE_NOT_FOUND", "no subscription to a zone not shared with bob: \(early)")
            let before = try await post(bob, "shared", "changes/database", [:])
            #expect(before["zones"]?.arrayValue?.isEmpty == true, "nothing is shared with bob before he accepts")
            let accepted = try await post(bob, "shared", "records/accept", ["shortGUIDs": [["value": .string(guid)], ["value": "no-such-guid"]]])
            let results = accepted["results"]?.arrayValue ?? []
            #expect(results.first?["zoneID"]?["ownerRecordName"] == "_alice")
            #expect(results.first?["share"]?["currentUserParticipant"]?["acceptanceStatus"] == "ACCEPTED")
            #expect(results.last?["serverErrorCode"] == "NOT_FOUND")

            let shared: JSONValue = ["zoneName": "Notes", "ownerRecordName": "_alice"]
            let subscribed = try await post(bob, "shared", "subscriptions/modify", [
                "operations": [["operationType": "create", "subscription": ["subscriptionID": "s", "subscriptionType": "zone", "zoneID": shared]]]
            ])
            #expect(subscribed["subscriptions"]?.arrayValue?.first?["subscriptionID"] == "s", "a zone shared with bob can be subscribed to: \(subscribed)")
            let feed = try await post(bob, "shared", "changes/database", [:])
            #expect(feed["zones"]?.arrayValue?.first?["zoneID"] == shared)
            let token = try #require(feed["syncToken"])
            let looked = try await post(bob, "shared", "records/lookup", ["zoneID": shared, "records": [["recordName": "n1"]]])
            #expect(looked["records"]?.arrayValue?.first?["fields"]?["title"]?["value"] == "hello")
            #expect(looked["records"]?.arrayValue?.first?["created"]?["userRecordName"] == "_alice")
            let refused = try await post(bob, "shared", "records/modify", [
                "zoneID": shared, "operations": [["operationType": "forceDelete", "record": ["recordName": "n1"]]],
            ])
            #expect(refused["records"]?.arrayValue?.first?["serverErrorCode"] == "ACCESS_DENIED")
            let inPrivate = try await server.post(path: "\(Self.base)/private/records/lookup", ["zoneID": shared, "records": [["recordName": "n1"]]], signedWith: bob)
            #expect(
                inPrivate.body["records"]?.arrayValue?.first?["serverErrorCode"] == "NOT_FOUND",
                "another user's zone is not in bob's private database: \(inPrivate.body)")

            // The owner takes bob out (a replace without him): the shared database reports the zone deleted.
            let current = try await post(alice, "private", "records/lookup", ["zoneID": notes, "records": [["recordName": "cloudkit.zoneshare"]]])
            let tag = try #require(current["records"]?.arrayValue?.first?["recordChangeTag"])
            _ = try await post(alice, "private", "records/modify", [
                "zoneID": notes,
                "operations": [["operationType": "replace", "record": [
                    "recordName": "cloudkit.zoneshare", "recordType": "cloudkit.share", "recordChangeTag": tag, "fields": [:], "participants": [],
                ]]],
            ])
            let after = try await post(bob, "shared", "changes/database", ["syncToken": token])
            #expect(after["zones"]?.arrayValue == [["zoneID": shared, "deleted": true]], "\(after)")
            let gone = try await server.post(path: "\(Self.base)/shared/records/lookup", ["zoneID": shared, "records": [["recordName": "n1"]]], signedWith: bob)
            #expect(gone.body["records"]?.arrayValue?.first?["serverErrorCode"] == "NOT_FOUND", "\(gone.body)")
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    @Test("the public database: one zone every user reads and queries, written by the users the endpoint allows; no change feed")
    func publicDatabase() async throws {
        let directory = try TemporaryDirectory(prefix: "public-endpoint")
        defer { directory.remove() }
        let carol = TestKey(id: "carol", user: "_carol")
        var configuration = CloudKitEndpointConfiguration(container: EndpointServer.container, keys: [alice.registered, bob.registered, carol.registered])
        configuration.publicWriters = ["_alice", "_bob"]
        let server = try await EndpointServer(cloud: try EmbeddedCloud(path: directory.path("cloud.sqlite")), configuration: configuration)
        do {
            func post(_ key: TestKey, _ operation: String, _ body: JSONValue) async throws -> (status: Int, body: JSONValue) {
                try await server.post(path: "\(Self.base)/public/\(operation)", body, signedWith: key)
            }
            let listed = try await server.get(path: "\(Self.base)/public/zones/list", signedWith: carol)
            #expect(listed.body["zones"]?.arrayValue?.first?["zoneID"]?["zoneName"] == "_defaultZone", "\(listed.body)")
            let saved = try await post(alice, "records/modify", [
                "operations": [["operationType": "create", "record": ["recordName": "p1", "recordType": "Post", "fields": ["title": ["value": "hello all"]]]]],
            ])
            #expect(saved.body["records"]?.arrayValue?.first?["recordChangeTag"] != nil, "\(saved.body)")
            let read = try await post(carol, "records/lookup", ["records": [["recordName": "p1"]]])
            #expect(read.body["records"]?.arrayValue?.first?["fields"]?["title"]?["value"] == "hello all")
            let queried = try await post(bob, "records/query", ["query": ["recordType": "Post"]])
            #expect(queried.body["records"]?.arrayValue?.map { $0["recordName"] } == ["p1"], "\(queried.body)")
            let refused = try await post(carol, "records/modify", [
                "operations": [["operationType": "forceDelete", "record": ["recordName": "p1"]]],
            ])
            #expect(refused.body["records"]?.arrayValue?.first?["serverErrorCode"] == "ACCESS_DENIED", "a user the endpoint does not allow to write")
            let feed = try await post(carol, "changes/zone", ["zones": [["zoneID": ["zoneName": "_defaultZone"]]]])
            #expect(feed.body["zones"]?.arrayValue?.first?["serverErrorCode"] == "BAD_REQUEST", "the public database has no change feed: \(feed.body)")
            let privately = try await server.post(path: "\(Self.base)/private/records/lookup", ["records": [["recordName": "p1"]]], signedWith: alice)
            #expect(privately.body["records"]?.arrayValue?.first?["fields"] == nil, "the public record is not in alice's private database: \(privately.body)")
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }
}
