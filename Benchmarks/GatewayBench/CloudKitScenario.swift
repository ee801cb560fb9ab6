import CloudKitServer
import CloudKitWeb
import Crypto
import EmbeddedCloud
import Foundation
import GatewayCore
import Logging
import ServiceLifecycle

/// The initial sync through CloudKit Web Services: SQLite → `CloudKitWebDatabase` → HTTP →
/// the `gateway cloud serve` endpoint (in this process, on loopback) → embedded cloud → SQLite.
struct CloudKitInitialSyncScenario: Scenario {
    let name = "cloudkit-initial"
    let summary = "CloudKit Web Services: initial sync of N rows, file → signed HTTP → endpoint → embedded cloud → file"

    func run(records: Int, workDirectory: URL) async throws -> [Measurement] {
        let embedded = try EmbeddedCloud(path: workDirectory.appendingPathComponent("cloud.sqlite").path)
        let key = CloudKitRequestSigner(keyID: "bench", privateKey: P256.Signing.PrivateKey())
        let configuration = CloudKitEndpointConfiguration(
            container: "iCloud.bench",
            keys: [try CloudKitSignatureVerifier.Key(keyID: "bench", publicKeyPEM: key.publicKeyPEM, userRecordName: "_bench")])
        return try await BenchEndpoint.serving(embedded, configuration: configuration) { port, _ in
            let cloud = try CloudKitWebDatabase(
                configuration: CloudKitWebConfiguration(
                    baseURL: "http://127.0.0.1:\(port)", container: "iCloud.bench", authentication: .serverToServer(key)))
            let (upSeconds, downSeconds) = try await BenchNotes.initialSync(through: cloud, records: records, workDirectory: workDirectory)
            return [
                Measurement(name: "upload \(records) rows (file → HTTP → cloud)", value: Double(records) / upSeconds, unit: "rows/s"),
                Measurement(name: "download \(records) rows (cloud → HTTP → file)", value: Double(records) / downSeconds, unit: "rows/s"),
                Measurement(name: "end to end \(records) rows", value: Double(records) / (upSeconds + downSeconds), unit: "rows/s"),
            ]
        }
    }
}

/// The `gateway cloud serve` endpoint in the bench's process, on a loopback port, with its notifier.
enum BenchEndpoint {
    /// Serves `cloud` while `body` runs with the endpoint's port and notifier, then stops it.
    static func serving<Result: Sendable>(
        _ cloud: any CloudDatabase, configuration: CloudKitEndpointConfiguration,
        _ body: @escaping @Sendable (Int, CloudKitNotifier) async throws -> Result
    ) async throws -> Result {
        var logger = Logger(label: "bench-endpoint")
        logger.logLevel = .critical
        let notifier = CloudKitNotifier(cloud: cloud, logger: logger)
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let application = CloudKitEndpoint.application(
            cloud: cloud, configuration: configuration, host: "127.0.0.1", port: 0, logger: logger, notifier: notifier,
            onServerRunning: { continuation.yield($0) })
        let group = ServiceGroup(configuration: .init(services: [application, notifier], logger: logger))
        return try await withThrowingTaskGroup(of: Result?.self) { tasks in
            tasks.addTask {
                try await group.run()
                return nil
            }
            defer { tasks.cancelAll() }
            var iterator = ports.makeAsyncIterator()
            guard let port = await iterator.next() else { throw BenchmarkError("the endpoint did not start") }
            let result = try await body(port, notifier)
            await group.triggerGracefulShutdown()
            return result
        }
    }
}
