import CloudKitServer
import CloudKitWeb
import Crypto
import EmbeddedCloud
import Foundation
import GRDB
import GatewayCore
import GatewayTesting
import Synchronization

/// Change-to-replica latency through CloudKit Web Services, and what idle gateways cost the
/// endpoint: the `gateway cloud serve` endpoint (in this process, over the embedded cloud, with
/// its notifier) and real `gateway run` processes (built next to this benchmark) with default
/// settings and a SQLite store each.
///
/// Latency: a client of another user saves a record, one at a time, 20–60 ms apart; each
/// latency runs from the save's answer until the row is in the first gateway's SQLite file.
/// Idle cost: requests the endpoint answers in a minute while 1, then 50, gateways run with
/// nothing to sync.
struct EndpointLatencyScenario: Scenario {
    let name = "endpoint-latency"
    let summary = "CloudKit Web Services: save-to-replica latency of 100 edits into a `gateway run` with defaults, and idle requests per minute for 1 and 50 gateways (N is ignored)"
    let edits = 100
    static let container = "iCloud.bench.latency"
    static let zone = ZoneID(zoneName: "Latency")

    func run(records _: Int, workDirectory: URL) async throws -> [Measurement] {
        let gateway = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
            .appendingPathComponent("gateway").path
        guard FileManager.default.isExecutableFile(atPath: gateway) else {
            throw BenchmarkError("build the gateway next to the benchmark first: swift build -c release --product gateway")
        }
        let writerKey = CloudKitRequestSigner(keyID: "writer", privateKey: P256.Signing.PrivateKey())
        let gatewayKey = P256.Signing.PrivateKey()
        let requests = RequestCounter()
        let embedded = try EmbeddedCloud(path: workDirectory.appendingPathComponent("cloud.sqlite").path)
        try await embedded.createZone(Self.zone)
        var configuration = CloudKitEndpointConfiguration(
            container: Self.container,
            keys: [
                try CloudKitSignatureVerifier.Key(keyID: "writer", publicKeyPEM: writerKey.publicKeyPEM, userRecordName: "_writer"),
                try CloudKitSignatureVerifier.Key(keyID: "gateway", publicKeyPEM: gatewayKey.publicKey.pemRepresentation, userRecordName: "_gateway"),
            ])
        configuration.onRequest = { _ in requests.count.withLock { $0 += 1 } }
        let edits = edits
        return try await BenchEndpoint.serving(embedded, configuration: configuration) { port, notifier in
            var gateways: [ChildProcess] = []
            defer { for process in gateways where process.isRunning { process.kill() } }
            func start(_ index: Int) async throws -> URL {
                let folder = workDirectory.appendingPathComponent("gateway-\(index)")
                gateways.append(try await Self.startGateway(gateway, in: folder, port: port, key: gatewayKey))
                return folder
            }
            let first = try await start(0)
            let writer = try CloudKitWebDatabase(
                configuration: CloudKitWebConfiguration(
                    baseURL: "http://127.0.0.1:\(port)", container: Self.container, authentication: .serverToServer(writerKey)))
            var waiting = Configuration()
            waiting.busyMode = .timeout(30)
            waiting.readonly = true
            let replica = try DatabaseQueue(path: first.appendingPathComponent("app.sqlite").path, configuration: waiting)
            // One edit first, so the gateway's subscription and long-poll are in place.
            _ = try await Self.latency(of: 0, writer: writer, replica: replica)
            var samples: [Double] = []
            for index in 1...edits {
                samples.append(try await Self.latency(of: index, writer: writer, replica: replica))
                try await Task.sleep(for: .milliseconds(Int.random(in: 20...60)))
            }
            var measurements = ServiceLatencyScenario.percentiles(samples, store: "save → replica, gateway run with defaults", p99Goal: 1000)
            measurements[0].goal = .atMost(300)

            let one = try await Self.requestsPerMinute(requests)
            measurements.append(Measurement(name: "idle requests per minute, 1 gateway", value: one, unit: "requests/min"))
            for index in 1..<50 { _ = try await start(index) }
            let fifty = try await Self.requestsPerMinute(requests)
            measurements.append(Measurement(name: "idle requests per minute, 50 gateways", value: fifty, unit: "requests/min"))
            measurements.append(Measurement(name: "long-polls held, 50 idle gateways", value: Double(notifier.hub.heldPolls), unit: "polls"))
            for process in gateways { process.terminate() }
            for process in gateways { _ = try? await process.wait(timeout: .seconds(30)) }
            return measurements
        }
    }

    /// Starts `gateway run` in `folder` on a SQLite store, synced through the endpoint at `port`,
    /// and waits for its first sync.
    static func startGateway(_ gateway: String, in folder: URL, port: Int, key: P256.Signing.PrivateKey) async throws -> ChildProcess {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try Data(key.pemRepresentation.utf8).write(to: folder.appendingPathComponent("gateway.pem"))
        try await DatabaseQueue(path: folder.appendingPathComponent("app.sqlite").path).write { db in
            try db.execute(sql: "CREATE TABLE item (id INTEGER PRIMARY KEY, title TEXT)")
        }
        // Defaults but for the control server's port, which 50 gateways on one machine cannot share.
        let config = """
            gateway: { control: { listen: "127.0.0.1:0" } }
            cloud:
              kind: cloudkit
              base_url: http://127.0.0.1:\(port)
              container: \(container)
              auth: server_to_server
              key_id: gateway
              private_key_file: gateway.pem
            adapters:
              - { name: app, kind: sqlite, path: app.sqlite, zone: \(zone.zoneName), tables: [{ table: item }] }
            """
        try Data(config.utf8).write(to: folder.appendingPathComponent("config.yaml"))
        let process = try ChildProcess(
            gateway, arguments: ["run"], directory: folder.path, standardOutput: folder.appendingPathComponent("run.out").path,
            standardError: folder.appendingPathComponent("run.err").path)
        let log = folder.appendingPathComponent("run.err")
        let started = ContinuousClock.now
        while !((try? String(contentsOf: log, encoding: .utf8)) ?? "").contains("sync finished") {
            guard process.isRunning, ContinuousClock.now - started < .seconds(60) else {
                process.kill()
                throw BenchmarkError("gateway run did not sync: \((try? String(contentsOf: log, encoding: .utf8)) ?? "")")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        return process
    }

    /// Saves record `index` as another user and returns the milliseconds until the row is in `replica`.
    static func latency(of index: Int, writer: CloudKitWebDatabase, replica: DatabaseQueue) async throws -> Double {
        let record = Record(id: RecordID(recordName: "\(index)", zoneID: zone), recordType: "item", fields: ["title": .string("edit \(index)")])
        let results = try await writer.modify([.forceReplace(record)], in: zone, atomic: false)
        guard results.allSatisfy({ $0.error == nil }) else { throw BenchmarkError("the edit was refused: \(results)") }
        let saved = ContinuousClock.now
        while try await replica.read({ db in try Int.fetchOne(db, sql: "SELECT count(*) FROM item WHERE id = ?", arguments: [index]) }) != 1 {
            guard ContinuousClock.now - saved < .seconds(60) else { throw BenchmarkError("edit \(index) never reached the replica") }
            try await Task.sleep(for: .milliseconds(2))
        }
        let elapsed = ContinuousClock.now - saved
        return Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
    }

    /// Requests the endpoint answers in the next minute, after 5 s for the gateways to settle.
    static func requestsPerMinute(_ counter: RequestCounter) async throws -> Double {
        try await Task.sleep(for: .seconds(5))
        let before = counter.count.withLock { $0 }
        try await Task.sleep(for: .seconds(60))
        return Double(counter.count.withLock { $0 } - before)
    }

    /// The endpoint's requests, counted.
    final class RequestCounter: Sendable {
        let count = Mutex(0)
    }
}
