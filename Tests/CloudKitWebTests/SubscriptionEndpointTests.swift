import CloudKitServer
import CloudKitWeb
import EmbeddedCloud
import Foundation
import GatewayCore
import GatewayTesting
import Testing

/// Subscriptions, tokens and the web courier of `gateway cloud serve`, in the shapes of Apple's
/// reference: CRUD per user, notifications after another client's save, and a long-poll that was
/// dropped losing nothing.
@Suite("CloudKit endpoint: subscriptions and the web courier")
struct SubscriptionEndpointTests {
    struct Fixture {
        let directory: TemporaryDirectory
        let server: EndpointServer
        let key = TestKey(id: "k", user: "_user")
        /// A second client of the same user (another gateway of the same account).
        let sameUser = TestKey(id: "k2", user: "_user")
        let stranger = TestKey(id: "s", user: "_stranger")
        static let base = "/database/1/\(EndpointServer.container)/development"

        init(hold: Duration = .seconds(2)) async throws {
            directory = try TemporaryDirectory(prefix: "subscriptions")
            let keys = [key.registered, sameUser.registered, stranger.registered]
            var cloudConfiguration = EmbeddedCloud.Configuration()
            cloudConfiguration.signalPollInterval = .milliseconds(20)
            server = try await EndpointServer(
                cloud: try EmbeddedCloud(path: directory.path("cloud.sqlite"), configuration: cloudConfiguration),
                configuration: CloudKitEndpointConfiguration(container: EndpointServer.container, keys: keys, courierHold: hold))
        }

        func post(_ operation: String, _ body: JSONValue, as key: TestKey? = nil) async throws -> (status: Int, body: JSONValue) {
            try await server.post(operation, body, signedWith: key ?? self.key)
        }

        func modify(_ operations: [JSONValue], as key: TestKey? = nil) async throws -> [JSONValue] {
            let answer = try await post("subscriptions/modify", ["operations": .array(operations)], as: key)
            #expect(answer.status == 200, "\(answer.body)")
            return answer.body["subscriptions"]?.arrayValue ?? []
        }

        /// A registered token's courier path, made as CloudKit JS makes it (under `/device/1/`).
        func courier(as key: TestKey? = nil) async throws -> String {
            let created = try await server.post(
                path: "/device/1/\(EndpointServer.container)/development/tokens/create", ["apnsEnvironment": "development"], signedWith: key ?? self.key)
            #expect(created.status == 200, "\(created.body)")
            let token = try #require(created.body["apnsToken"]?.stringValue)
            let url = try #require(created.body["webcourierURL"]?.stringValue)
            #expect(created.body["apnsEnvironment"]?.stringValue == "development")
            let registered = try await server.post(
                path: "/device/1/\(EndpointServer.container)/development/tokens/register",
                ["apnsEnvironment": "development", "apnsToken": .string(token)], signedWith: key ?? self.key)
            #expect(registered.status == 200, "\(registered.body)")
            return try #require(URL(string: url)?.path)
        }

        /// The notifications of one long-poll of `path`.
        func poll(_ path: String) async throws -> [JSONValue] {
            let answer = try await server.get(path: path)
            #expect(answer.status == 200, "\(answer.body)")
            return answer.body["notifications"]?.arrayValue ?? []
        }

        /// Polls until a notification `matches` (notifications are hints: the same change may
        /// also come back from the notifier's watch of the zone).
        func poll(_ path: String, until matches: (JSONValue) -> Bool) async throws -> JSONValue {
            let deadline = ContinuousClock.now + .seconds(30)
            while ContinuousClock.now < deadline {
                if let found = try await poll(path).first(where: matches) { return found }
            }
            throw ConformanceFailure("no matching notification within 30 s")
        }

        func save(_ name: String, in zone: String, as key: TestKey? = nil) async throws {
            let answer = try await post(
                "records/modify",
                [
                    "zoneID": ["zoneName": .string(zone)],
                    "operations": [["operationType": "forceReplace", "record": ["recordName": .string(name), "recordType": "Note", "fields": [:]]]],
                ], as: key)
            #expect(answer.status == 200 && answer.body["records"]?.arrayValue?.first?["serverErrorCode"] == nil, "\(answer.body)")
        }

        func stop() async {
            await server.stop()
            directory.remove()
        }
    }

    static func zoneSubscription(_ id: String, zone: String) -> JSONValue {
        [
            "operationType": "create",
            "subscription": [
                "subscriptionID": .string(id), "subscriptionType": "zone", "zoneID": ["zoneName": .string(zone)],
                "notificationInfo": ["shouldSendContentAvailable": true],
            ],
        ]
    }

    @Test("subscriptions are created, listed, looked up, replaced and deleted per user, in Apple's shapes; query subscriptions are refused")
    func crud() async throws {
        let fixture = try await Fixture()
        do {
            let created = try await fixture.modify([
                Self.zoneSubscription("notes-changes", zone: "Notes"),
                ["operationType": "create", "subscription": ["subscriptionID": "everything", "subscriptionType": "database"]],
                ["operationType": "create", "subscription": ["subscriptionID": "q", "subscriptionType": "query", "query": ["recordType": "Note"]]],
            ])
            #expect(created.count == 3)
            #expect(created[0]["subscriptionID"]?.stringValue == "notes-changes" && created[0]["zoneID"]?["zoneName"]?.stringValue == "Notes")
            #expect(created[0]["notificationInfo"]?["shouldSendContentAvailable"]?.boolValue == true, "the subscription comes back as sent")
            #expect(created[1]["subscriptionType"]?.stringValue == "database")
            #expect(created[2]["subscriptionID"]?.stringValue == "q" && created[2]["serverErrorCode"]?.stringValue == "BAD_REQUEST")

            let listed = try await fixture.server.get(path: "\(Fixture.base)/private/subscriptions/list", signedWith: fixture.key)
            #expect(listed.status == 200)
            #expect(listed.body["subscriptions"]?.arrayValue?.compactMap { $0["subscriptionID"]?.stringValue } == ["everything", "notes-changes"])
            let strangers = try await fixture.server.get(path: "\(Fixture.base)/private/subscriptions/list", signedWith: fixture.stranger)
            #expect(strangers.body["subscriptions"]?.arrayValue?.isEmpty == true, "another user's subscriptions are not listed")

            // Lookup, with and without the database segment (Apple's reference omits it).
            for path in ["\(Fixture.base)/private/subscriptions/lookup", "\(Fixture.base)/subscriptions/lookup"] {
                let looked = try await fixture.server.post(
                    path: path, ["subscriptions": [["subscriptionID": "everything"], ["subscriptionID": "missing"]]], signedWith: fixture.key)
                let answers = looked.body["subscriptions"]?.arrayValue ?? []
                #expect(answers.count == 2, "\(path)")
                #expect(answers.first?["subscriptionType"]?.stringValue == "database")
                #expect(answers.last?["subscriptionID"]?.stringValue == "missing" && answers.last?["serverErrorCode"]?.stringValue == "NOT_FOUND")
            }

            let updated = try await fixture.modify([
                ["operationType": "update", "subscription": ["subscriptionID": "notes-changes", "subscriptionType": "zone", "zoneID": ["zoneName": "Tasks"]]]
            ])
            #expect(updated.first?["zoneID"]?["zoneName"]?.stringValue == "Tasks")
            let deleted = try await fixture.modify([
                ["operationType": "delete", "subscription": ["subscriptionID": "everything"]],
                ["operationType": "delete", "subscription": ["subscriptionID": "everything"]],
            ])
            #expect(deleted.first?["deleted"]?.boolValue == true)
            #expect(deleted.last?["serverErrorCode"]?.stringValue == "NOT_FOUND")
            let strangerDelete = try await fixture.modify([["operationType": "delete", "subscription": ["subscriptionID": "notes-changes"]]], as: fixture.stranger)
            #expect(strangerDelete.first?["serverErrorCode"]?.stringValue == "NOT_FOUND", "a user deletes only their own")
            let left = try await fixture.server.get(path: "\(Fixture.base)/private/subscriptions/list", signedWith: fixture.key)
            #expect(left.body["subscriptions"]?.arrayValue?.compactMap { $0["subscriptionID"]?.stringValue } == ["notes-changes"])
        } catch {
            await fixture.stop()
            throw error
        }
        await fixture.stop()
    }

    @Test("another client's save notifies the subscribed user's courier with the zone; a database subscription notifies for every zone")
    func notifiesAfterSave() async throws {
        let fixture = try await Fixture()
        do {
            _ = try await fixture.post("zones/modify", ["operations": [["operationType": "create", "zone": ["zoneID": ["zoneName": "Notes"]]]]])
            _ = try await fixture.modify([Self.zoneSubscription("notes", zone: "Notes")])
            let courier = try await fixture.courier()
            let strangerCourier = try await fixture.courier(as: fixture.stranger)

            async let notified = fixture.poll(courier)
            try await fixture.save("n1", in: "Notes", as: fixture.sameUser)
            let first = try await notified
            #expect(first.count == 1)
            let fetch = first.first?["ck"]?["fet"]
            #expect(fetch?["sid"]?.stringValue == "notes" && fetch?["zid"]?.stringValue == "Notes" && fetch?["dbs"] == .integer(2), "\(first)")
            #expect(first.first?["ck"]?["cid"]?.stringValue == EndpointServer.container)

            // A write that reaches the cloud without the endpoint is noticed by the notifier's watch.
            _ = try await fixture.modify([["operationType": "create", "subscription": ["subscriptionID": "all", "subscriptionType": "database"]]])
            // (The store keeps the user's zones under their user record name.)
            let direct = ZoneID(zoneName: "Direct", ownerName: "_user")
            try await fixture.server.cloud.createZone(direct)
            // The notifier watches the new zone once it has read the zone list again.
            await fixture.server.notifier.waitUntilWatching(direct)
            _ = try await fixture.server.cloud.modify(
                [.create(Record(id: RecordID(recordName: "d", zoneID: direct), recordType: "Note", fields: [:]))], in: direct, atomic: false)
            let databaseWide = try await fixture.poll(courier) { $0["ck"]?["met"]?["sid"]?.stringValue == "all" }
            #expect(databaseWide["ck"]?["met"]?["dbs"] == .integer(2))

            // The stranger subscribed to nothing: a short poll of its courier finds nothing.
            let quiet = try await fixture.server.get(path: strangerCourier, timeout: .seconds(30))
            #expect(quiet.status == 200 && quiet.body["notifications"]?.arrayValue?.isEmpty == true, "\(quiet.body)")
        } catch {
            await fixture.stop()
            throw error
        }
        await fixture.stop()
    }

    @Test("changes made while no poll is held wait for the next poll, coalesced per zone and notified once; an unknown token is NOT_FOUND")
    func droppedPollMissesNothing() async throws {
        let fixture = try await Fixture(hold: .milliseconds(300))
        do {
            _ = try await fixture.post(
                "zones/modify",
                ["operations": [["operationType": "create", "zone": ["zoneID": ["zoneName": "Notes"]]], ["operationType": "create", "zone": ["zoneID": ["zoneName": "Tasks"]]]]])
            _ = try await fixture.modify([Self.zoneSubscription("notes", zone: "Notes"), Self.zoneSubscription("tasks", zone: "Tasks")])
            let courier = try await fixture.courier()
            #expect(try await fixture.poll(courier).isEmpty, "nothing changed: the hold runs out with no notification")
            // The client is away (its long-poll dropped): three saves in two zones meanwhile.
            try await fixture.save("a", in: "Notes")
            try await fixture.save("b", in: "Notes")
            try await fixture.save("c", in: "Tasks")
            let waiting = try await fixture.poll(courier)
            #expect(Set(waiting.compactMap { $0["ck"]?["fet"]?["zid"]?.stringValue }) == ["Notes", "Tasks"])
            #expect(waiting.count == 2, "two saves in one zone are one notification: \(waiting)")
            // The notifier's watch of the zones sees the same saves; they are not notified again.
            #expect(try await fixture.poll(courier).isEmpty, "a save through the endpoint notifies once")

            let unknown = try await fixture.server.get(path: "/webcourier/1/\(EndpointServer.container)/development/0123")
            #expect(unknown.status == 404 && unknown.body["serverErrorCode"]?.stringValue == "NOT_FOUND")
            let unregistered = try await fixture.server.post(
                path: "/database/1/\(EndpointServer.container)/development/tokens/register", ["apnsToken": "0123"], signedWith: fixture.key)
            #expect(unregistered.body["serverErrorCode"]?.stringValue == "NOT_FOUND")
            // A path nothing serves (tokens/* under a database segment) is CloudKit's NOT_FOUND too.
            let misplaced = try await fixture.post("tokens/create", ["apnsEnvironment": "development"])
            #expect(misplaced.status == 404 && misplaced.body["serverErrorCode"]?.stringValue == "NOT_FOUND", "\(misplaced.body)")
        } catch {
            await fixture.stop()
            throw error
        }
        await fixture.stop()
    }
}
