import CloudKitServer
import CloudKitWeb
import Crypto
import Foundation
import GatewayCore
import GatewayTesting
import Logging
import ServiceLifecycle

/// A `gateway cloud serve` endpoint on a loopback port, in this process, over `cloud`.
final class EndpointServer: Sendable {
    let cloud: any CloudDatabase
    let port: Int
    /// Turns changes into notifications; runs beside the server.
    let notifier: CloudKitNotifier
    private let group: ServiceGroup
    private let task: Task<Void, any Error>

    var baseURL: String { "http://127.0.0.1:\(port)" }

    static let container = "iCloud.com.example.Gateway"

    /// - Parameter port: 0 for a free port; a stopped server's port to stand in for its restart.
    init(cloud: any CloudDatabase, configuration: CloudKitEndpointConfiguration, webhooks: [WebhookTarget] = [], port: Int = 0) async throws {
        var logger = Logger(label: "cloudkit-endpoint-test")
        logger.logLevel = .critical
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let notifier = CloudKitNotifier(
            cloud: cloud, logger: logger, refreshInterval: .milliseconds(200), webhooks: webhooks, container: configuration.container,
            environment: configuration.environment, webhookRetryDelay: .milliseconds(50))
        let application = CloudKitEndpoint.application(
            cloud: cloud, configuration: configuration, host: "127.0.0.1", port: port, logger: logger, notifier: notifier,
            onServerRunning: { continuation.yield($0) })
        let group = ServiceGroup(configuration: .init(services: [application, notifier], logger: logger))
        self.notifier = notifier
        self.group = group
        self.cloud = cloud
        self.task = Task { try await group.run() }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else { throw ConformanceFailure("the endpoint did not start") }
        self.port = port
    }

    func stop() async {
        await group.triggerGracefulShutdown()
        _ = await task.result
    }

    /// POSTs `body` to a private-database `operation`, signed with `key`; the status and the JSON answer.
    func post(_ operation: String, _ body: JSONValue, signedWith key: TestKey) async throws -> (status: Int, body: JSONValue) {
        try await post(path: "/database/1/\(Self.container)/development/private/\(operation)", body, signedWith: key)
    }

    /// POSTs `body` to `path`, signed with `key`; the status and the JSON answer.
    func post(path: String, _ body: JSONValue, signedWith key: TestKey) async throws -> (status: Int, body: JSONValue) {
        let data = try body.serialized()
        let response = try await LoopbackHTTP.send(
            "POST", port: port, path: path,
            headers: Dictionary(try key.signer.headers(body: data, subpath: path).map { ($0.name, $0.value) }, uniquingKeysWith: { $1 }),
            body: data)
        return (response.status, try JSONValue.parse(response.body))
    }

    /// GETs `path`, signed with `key` when one is given; the status and the JSON answer.
    func get(path: String, signedWith key: TestKey? = nil, timeout: Duration = .seconds(60)) async throws -> (status: Int, body: JSONValue) {
        let headers = try key.map { key in
            Dictionary(try key.signer.headers(body: Data(), subpath: path).map { ($0.name, $0.value) }, uniquingKeysWith: { $1 })
        }
        let response = try await LoopbackHTTP.send("GET", port: port, path: path, headers: headers ?? [:], body: Data(), timeout: timeout)
        return (response.status, try JSONValue.parse(response.body))
    }

    /// A client of this endpoint signing with `key`.
    func client(key: TestKey, limits: CloudLimits = CloudLimits(maxResultsPerFetch: 200), pollInterval: Duration = .milliseconds(50)) throws
        -> CloudKitWebDatabase
    {
        try CloudKitWebDatabase(
            configuration: CloudKitWebConfiguration(
                baseURL: baseURL, container: Self.container, authentication: .serverToServer(key.signer), limits: limits,
                requestTimeout: .seconds(30), signalPollInterval: pollInterval))
    }
}

/// A server-to-server key pair made for a test.
struct TestKey: Sendable {
    let signer: CloudKitRequestSigner
    let user: String

    init(id: String, user: String) {
        signer = CloudKitRequestSigner(keyID: id, privateKey: P256.Signing.PrivateKey())
        self.user = user
    }

    var registered: CloudKitSignatureVerifier.Key {
        try! CloudKitSignatureVerifier.Key(keyID: signer.keyID, publicKeyPEM: signer.publicKeyPEM, userRecordName: user)
    }
}
