import CloudKitServer
import CloudKitWeb
import Crypto
import EmbeddedCloud
import Foundation
import GatewayCore
import GatewayTesting
import HTTPTypes
import Hummingbird
import Logging
import ServiceLifecycle
import Synchronization
import Testing

/// The endpoint's webhooks: notifications POSTed, signed, retried until the target takes them,
/// without holding up the courier.
@Suite("CloudKit endpoint: webhooks")
struct WebhookTests {
    /// A webhook target on a loopback port that refuses its first `failures` deliveries.
    final class Target: Sendable {
        let received = Mutex<[(body: Data, signature: String)]>([])
        let deliveryIDs = Mutex<[String]>([])
        let attempts = Mutex(0)
        let (deliveries, delivered) = AsyncStream.makeStream(of: Void.self)

        func application(failures: Int, ports: AsyncStream<Int>.Continuation) -> some ApplicationProtocol {
            let router = Router()
            router.post("/hook") { request, _ -> HTTPResponse.Status in
                let attempt = self.attempts.withLock { $0 += 1; return $0 }
                self.deliveryIDs.withLock { $0.append(request.headers[HTTPField.Name("X-Gateway-Delivery")!] ?? "") }
                let body = Data(buffer: try await request.body.collect(upTo: 1_000_000))
                guard attempt > failures else { return .internalServerError }
                self.received.withLock { $0.append((body, request.headers[HTTPField.Name("X-Gateway-Signature")!] ?? "")) }
                self.delivered.yield()
                return .ok
            }
            var logger = Logger(label: "webhook-target")
            logger.logLevel = .critical
            return Application(
                router: router, configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: 0)),
                onServerRunning: { ports.yield($0.localAddress?.port ?? 0) }, logger: logger)
        }
    }

    @Test("a target that fails twice gets the notification on the third try, signed and naming the user; the courier is not held up meanwhile", .timeLimit(.minutes(1)))
    func retriedAndSigned() async throws {
        let directory = try TemporaryDirectory(prefix: "webhooks")
        defer { directory.remove() }
        let target = Target()
        let (ports, portFound) = AsyncStream.makeStream(of: Int.self)
        let targetGroup = ServiceGroup(configuration: .init(services: [target.application(failures: 2, ports: portFound)], logger: Logger(label: "t")))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await targetGroup.run() }
            var portIterator = ports.makeAsyncIterator()
            let port = try #require(await portIterator.next())
            let secret = Data("webhook-secret".utf8)
            let key = TestKey(id: "k", user: CloudUsers.defaultUser)
            let cloud = try EmbeddedCloud(path: directory.path("cloud.sqlite"))
            let zone = ZoneID(zoneName: "Notes")
            try await cloud.createZone(zone)
            let server = try await EndpointServer(
                cloud: cloud, configuration: CloudKitEndpointConfiguration(container: EndpointServer.container, keys: [key.registered], courierHold: .seconds(5)),
                webhooks: [WebhookTarget(url: "http://127.0.0.1:\(port)/hook", secret: secret)])
            do {
                let client = try server.client(key: key, pollInterval: .seconds(3600))
                var signals = client.changeSignals(in: zone).makeAsyncIterator()
                await signals.start()
                _ = try await client.modify([.forceReplace(Record(id: RecordID(recordName: "a", zoneID: zone), recordType: "Note", fields: [:]))], in: zone, atomic: false)
                #expect(await signals.next() != nil, "the courier delivers while the webhook is failing")

                var deliveries = target.deliveries.makeAsyncIterator()
                _ = await deliveries.next()
                #expect(target.attempts.withLock { $0 } == 3)
                let ids = target.deliveryIDs.withLock { $0 }
                #expect(Set(ids).count == 1 && ids.first?.isEmpty == false, "a retry carries its first attempt's delivery id: \(ids)")
                let (body, signature) = try #require(target.received.withLock { $0.first })
                let expected = HMAC<SHA256>.authenticationCode(for: body, using: SymmetricKey(data: secret)).map { String(format: "%02x", $0) }.joined()
                #expect(signature == "sha256=\(expected)")
                let notification = try JSONValue.parse(body)["notifications"]?.arrayValue?.first
                #expect(notification?["user"]?.stringValue == CloudUsers.defaultUser)
                #expect(notification?["ck"]?["fet"]?["zid"]?.stringValue == "Notes")
                #expect(notification?["ck"]?["fet"]?["sid"]?.stringValue == "sync-gateway.Notes")
            } catch {
                await server.stop()
                throw error
            }
            await server.stop()
            await targetGroup.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
    }
}
