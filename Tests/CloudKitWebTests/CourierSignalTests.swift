import CloudKitServer
import CloudKitWeb
import EmbeddedCloud
import Foundation
import GatewayCore
import GatewayTesting
import PostgresCloud
import PostgresTesting
import Testing

/// A client's change signals from the endpoint's web courier: pushed, not polled; a lost token
/// replaced with a look at every zone; polling where the service has no push channel.
@Suite("CloudKit client: change signals from subscriptions and the web courier")
struct CourierSignalTests {
    static let zone = ZoneID(zoneName: "Notes")
    let reader = TestKey(id: "reader", user: CloudUsers.defaultUser)
    let writer = TestKey(id: "writer", user: CloudUsers.defaultUser)

    func server(in directory: TemporaryDirectory, cloud: (any CloudDatabase)? = nil) async throws -> EndpointServer {
        let cloud = try cloud ?? EmbeddedCloud(path: directory.path("cloud.sqlite"))
        try await cloud.createZone(Self.zone)
        return try await EndpointServer(
            cloud: cloud,
            configuration: CloudKitEndpointConfiguration(
                container: EndpointServer.container, keys: [reader.registered, writer.registered], courierHold: .seconds(5)))
    }

    func save(_ name: String, through server: EndpointServer) async throws {
        _ = try await server.client(key: writer).modify(
            [.forceReplace(Record(id: RecordID(recordName: name, zoneID: Self.zone), recordType: "Note", fields: ["n": .string(name)]))],
            in: Self.zone, atomic: false)
    }

    @Test("another client's save is signalled through the courier, with polling an hour away", .timeLimit(.minutes(1)))
    func pushed() async throws {
        let directory = try TemporaryDirectory(prefix: "courier-signals")
        defer { directory.remove() }
        let server = try await server(in: directory)
        do {
            let client = try server.client(key: reader, pollInterval: .seconds(3600))
            var signals = client.changeSignals(in: Self.zone).makeAsyncIterator()
            await signals.start()
            for round in 0..<3 {
                try await save("n\(round)", through: server)
                #expect(await signals.next() != nil)
            }
            let subscriptions = try await server.get(path: "/database/1/\(EndpointServer.container)/development/private/subscriptions/list", signedWith: reader)
            #expect(subscriptions.body["subscriptions"]?.arrayValue?.first?["subscriptionID"]?.stringValue == "sync-gateway.Notes")
            #expect(server.notifier.hub.heldPolls <= 1, "one long-poll for the client")
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    @Test(
        "over the PostgreSQL cloud, a save through the endpoint and a write that bypasses it (another gateway on the same cloud) are both pushed",
        .timeLimit(.minutes(1)))
    func pushedOverPostgres() async throws {
        let directory = try TemporaryDirectory(prefix: "courier-postgres")
        defer { directory.remove() }
        let database = try await PostgresTestServer.freshDatabase("courier")
        let postgres = try await PostgresCloud.open(database, configuration: PostgresCloud.Configuration(schema: "cloud", maximumConnections: 4))
        let server = try await server(in: directory, cloud: postgres)
        let bypassing = try await PostgresCloud.open(database, configuration: PostgresCloud.Configuration(schema: "cloud", maximumConnections: 1))
        do {
            let other = ZoneID(zoneName: "Other")
            try await postgres.createZone(other)
            let client = try server.client(key: reader, pollInterval: .seconds(3600))
            var notes = client.changeSignals(in: Self.zone).makeAsyncIterator()
            var others = client.changeSignals(in: other).makeAsyncIterator()
            await notes.start()
            await others.start()
            try await save("through-endpoint", through: server)
            #expect(await notes.next() != nil)
            // Only a write in the other zone can signal it: one that bypasses the endpoint, seen
            // through NOTIFY once the notifier watches the zone.
            await server.notifier.waitUntilWatching(other)
            _ = try await bypassing.modify(
                [.forceReplace(Record(id: RecordID(recordName: "bypassing", zoneID: other), recordType: "Note", fields: [:]))], in: other, atomic: false)
            #expect(await others.next() != nil)
            #expect(try await client.fetchChanges(in: other, since: nil, limit: 10).modified.map(\.id.recordName) == ["bypassing"])
        } catch {
            await bypassing.close()
            await server.stop()
            await postgres.close()
            throw error
        }
        await bypassing.close()
        await server.stop()
        await postgres.close()
    }

    @Test("a token the endpoint forgot (as after its restart) is replaced, and changes after it are signalled", .timeLimit(.minutes(1)))
    func lostTokenReplaced() async throws {
        let directory = try TemporaryDirectory(prefix: "courier-lost")
        defer { directory.remove() }
        let server = try await server(in: directory)
        do {
            let client = try server.client(key: reader, pollInterval: .seconds(3600))
            let (signalled, signal) = AsyncStream.makeStream(of: Void.self)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await _ in client.changeSignals(in: Self.zone) { signal.yield() }
                }
                var signals = signalled.makeAsyncIterator()
                // Once the client holds its long-poll, the endpoint forgets every token.
                await server.notifier.hub.waitUntilHeld()
                server.notifier.hub.forgetAllTokens()
                #expect(await signals.next() != nil, "a lost token signals the zone for what may have been missed")
                // The client registers a new token and polls it.
                await server.notifier.hub.waitUntilHeld()
                try await save("after", through: server)
                #expect(await signals.next() != nil, "the new token is notified")
                group.cancelAll()
            }
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    @Test("an endpoint that goes away and comes back on its address: the client waits, reconnects with a new token and signals the zone once", .timeLimit(.minutes(1)))
    func endpointRestarted() async throws {
        let directory = try TemporaryDirectory(prefix: "courier-restart")
        defer { directory.remove() }
        let cloud = try EmbeddedCloud(path: directory.path("cloud.sqlite"))
        let first = try await server(in: directory, cloud: cloud)
        let client = try first.client(key: reader, pollInterval: .seconds(3600))
        let (signalled, signal) = AsyncStream.makeStream(of: Void.self)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for await _ in client.changeSignals(in: Self.zone) { signal.yield() }
            }
            var signals = signalled.makeAsyncIterator()
            await first.notifier.hub.waitUntilHeld()
            await first.stop()
            // While it is away the client's polls fail; a save lands in the cloud meanwhile.
            _ = try await cloud.modify(
                [.forceReplace(Record(id: RecordID(recordName: "while-away", zoneID: Self.zone), recordType: "Note", fields: [:]))], in: Self.zone,
                atomic: false)
            let second = try await EndpointServer(
                cloud: cloud, configuration: CloudKitEndpointConfiguration(container: EndpointServer.container, keys: [reader.registered, writer.registered]),
                port: first.port)
            #expect(await signals.next() != nil, "back, the client looks at its zones for what it missed")
            await second.notifier.hub.waitUntilHeld()
            try await save("after", through: second)
            #expect(await signals.next() != nil, "and is pushed again")
            group.cancelAll()
            await second.stop()
        }
    }

    @Test("against an endpoint whose cloud keeps no subscriptions, signals poll", .timeLimit(.minutes(1)))
    func pollsWithoutPush() async throws {
        let directory = try TemporaryDirectory(prefix: "courier-none")
        defer { directory.remove() }
        // The fault-injecting wrapper keeps no subscriptions, so the endpoint refuses them.
        let wrapped = FaultInjectingCloud(wrapping: try EmbeddedCloud(path: directory.path("cloud.sqlite")), plan: FaultInjectingCloud.Plan(), seed: 1)
        let server = try await server(in: directory, cloud: wrapped)
        do {
            let client = try server.client(key: reader, pollInterval: .milliseconds(50))
            var signals = client.changeSignals(in: Self.zone).makeAsyncIterator()
            await signals.start()
            try await save("polled", through: server)
            #expect(await signals.next() != nil)
            #expect(server.notifier.hub.heldPolls == 0, "no courier is polled")
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }
}
