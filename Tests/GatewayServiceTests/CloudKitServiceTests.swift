import Foundation
import GRDB
import GatewayTesting
import PostgresTesting
import TestScheduling
import Testing

/// Gateways on "other machines" (their own folders and processes) sharing one cloud through
/// `gateway cloud serve` and `cloud: kind: cloudkit`, as users run them.
@Suite("CloudKit Web Services: gateway cloud serve and cloud kind cloudkit", .heavy)
struct CloudKitServiceTests {
    static let container = "iCloud.com.example.Shared"

    /// A running `gateway cloud serve`, its folder and port.
    struct Endpoint {
        let process: ChildProcess
        let directory: TemporaryDirectory
        let port: Int

        func log() -> String { (try? String(contentsOfFile: directory.path("serve.err"), encoding: .utf8)) ?? "" }

        static func start(
            in directory: TemporaryDirectory, config: String = "config.yaml", environment: [String: String] = [:]
        ) async throws -> Endpoint {
            try? FileManager.default.removeItem(atPath: directory.path("serve.err"))
            let process = try ChildProcess(
                try BuiltExecutable.path("gateway"), arguments: ["cloud", "serve", "--config", config], directory: directory.url.path,
                environment: ProcessInfo.processInfo.environment.merging(environment) { _, new in new },
                standardOutput: directory.path("serve.out"), standardError: directory.path("serve.err"))
            func log() -> String { (try? String(contentsOfFile: directory.path("serve.err"), encoding: .utf8)) ?? "" }
            let deadline = ContinuousClock.now + .seconds(60)
            while true {
                if let port = log().firstMatch(of: /address=127\.0\.0\.1:(\d+)/).flatMap({ Int($0.1) }) {
                    return Endpoint(process: process, directory: directory, port: port)
                }
                guard ContinuousClock.now < deadline, process.isRunning else {
                    process.kill()
                    throw ConformanceFailure("gateway cloud serve did not start:\n\(log())")
                }
                try await Task.sleep(for: .milliseconds(50))
            }
        }

        func stop() async throws -> Int32 {
            process.terminate()
            return try await process.wait(timeout: .seconds(30))
        }
    }

    /// Makes a key pair in each gateway's folder with `gateway cloud keygen keys/<name>.pem`.
    static func keygen(_ gateways: [(TemporaryDirectory, String)]) async throws {
        for (directory, name) in gateways {
            let made = try await GatewayCLI.run(["cloud", "keygen", "keys/\(name).pem"], in: directory.url)
            #expect(made.status == 0, "\(made)")
        }
    }

    /// Copies each gateway's public key to the endpoint's `keys/<name>.pub`.
    static func register(_ gateways: [(TemporaryDirectory, String)], at server: TemporaryDirectory) throws {
        try FileManager.default.createDirectory(at: server.url.appendingPathComponent("keys"), withIntermediateDirectories: true)
        for (directory, name) in gateways {
            try FileManager.default.copyItem(atPath: directory.path("keys/\(name).pem.pub"), toPath: server.path("keys/\(name).pub"))
        }
    }

    static func writeConfig(_ text: String, in directory: TemporaryDirectory) throws {
        try Data(text.utf8).write(to: directory.url.appendingPathComponent("config.yaml"))
    }

    static func gatewayConfig(port: Int, auth: String) -> String {
        """
        gateway: { device_id: \(UUID().uuidString) }
        cloud:
          kind: cloudkit
          base_url: http://127.0.0.1:\(port)
          container: \(container)
          \(auth)
          poll_interval: 200ms
        adapters:
          - { name: app, kind: sqlite, path: app.sqlite, zone: Notes, tables: [{ table: note }] }
        """
    }

    static func createStore(in directory: TemporaryDirectory, rows: [(Int, String, Data?)]) async throws {
        try await DatabaseQueue(path: directory.path("app.sqlite")).write { db in
            try db.execute(sql: "CREATE TABLE note (id INTEGER PRIMARY KEY, title TEXT, attachment BLOB)")
            for (id, title, blob) in rows {
                try db.execute(sql: "INSERT INTO note VALUES (?, ?, ?)", arguments: [id, title, blob])
            }
        }
    }

    static func notes(in directory: TemporaryDirectory) async throws -> [String] {
        try await DatabaseQueue(path: directory.path("app.sqlite")).read { db in
            try Row.fetchAll(db, sql: "SELECT id, title, length(attachment) FROM note ORDER BY id").map {
                "\($0[0] as Int64) \($0[1] as String? ?? "∅") \($0[2] as Int64? ?? 0)"
            }
        }
    }

    @Test(
        "two gateways share a cloud through the endpoint with server-to-server keys; strangers are refused",
        arguments: ["embedded", "postgres"])
    func serverToServerKeys(backend: String) async throws {
        let server = try TemporaryDirectory(prefix: "ckws-server")
        let first = try TemporaryDirectory(prefix: "ckws-a")
        let second = try TemporaryDirectory(prefix: "ckws-b")
        let stranger = try TemporaryDirectory(prefix: "ckws-stranger")
        defer { [server, first, second, stranger].forEach { $0.remove() } }

        try await Self.keygen([(first, "a"), (second, "b"), (stranger, "x")])
        let mode = try FileManager.default.attributesOfItem(atPath: first.path("keys/a.pem"))[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let again = try await GatewayCLI.run(["cloud", "keygen", "keys/a.pem"], in: first.url)
        #expect(again.status == 2 && again.stderr.contains("already exists"), "\(again)")
        try Self.register([(first, "a"), (second, "b")], at: server)
        let cloud =
            backend == "embedded"
            ? "{ kind: embedded, path: shared-cloud.sqlite }"
            : "{ kind: postgres, url: \"\(try await PostgresTestServer.freshDatabase("ckws_endpoint"))\" }"
        try Self.writeConfig(
            """
            cloud: \(cloud)
            endpoint:
              port: 0
              container: \(Self.container)
              keys:
                - { key_id: gateway-a, public_key_file: keys/a.pub }
                - { key_id: gateway-b, public_key_file: keys/b.pub, user: _defaultUser }
            """, in: server)
        let endpoint = try await Endpoint.start(in: server)
        defer { if endpoint.process.isRunning { endpoint.process.kill() } }

        let blob = Data((0..<5_000).map { UInt8($0 % 251) })
        try await Self.createStore(in: first, rows: [(1, "Alpha", blob), (2, "Beta", nil), (3, "Gamma ☃", nil)])
        try await Self.createStore(in: second, rows: [])
        try await Self.createStore(in: stranger, rows: [])
        for (directory, name, id) in [(first, "a", "gateway-a"), (second, "b", "gateway-b"), (stranger, "x", "gateway-x")] {
            try Self.writeConfig(
                Self.gatewayConfig(port: endpoint.port, auth: "auth: server_to_server\n  key_id: \(id)\n  private_key_file: keys/\(name).pem"),
                in: directory)
        }

        let upload = try await GatewayCLI.run(["sync"], in: first.url)
        #expect(upload.status == 0, "\(upload)")
        let download = try await GatewayCLI.run(["sync"], in: second.url)
        #expect(download.status == 0, "\(download)")
        #expect(try await Self.notes(in: second) == ["1 Alpha 5000", "2 Beta 0", "3 Gamma ☃ 0"])
        let attachment = try await DatabaseQueue(path: second.path("app.sqlite")).read { db in
            try Data.fetchOne(db, sql: "SELECT attachment FROM note WHERE id = 1")
        }
        #expect(attachment == blob, "the blob travels as an asset through the endpoint")

        try await DatabaseQueue(path: second.path("app.sqlite")).write { db in
            try db.execute(sql: "UPDATE note SET title = 'Beta edited' WHERE id = 2")
            try db.execute(sql: "DELETE FROM note WHERE id = 3")
        }
        let edits = try await GatewayCLI.run(["sync"], in: second.url)
        #expect(edits.status == 0, "\(edits)")
        let pull = try await GatewayCLI.run(["sync"], in: first.url)
        #expect(pull.status == 0, "\(pull)")
        #expect(try await Self.notes(in: first) == ["1 Alpha 5000", "2 Beta edited 0"])

        let refused = try await GatewayCLI.run(["sync"], in: stranger.url)
        #expect(refused.status == 1, "\(refused)")
        #expect(refused.stderr.contains("gateway-x is not registered"), "\(refused)")
        #expect(try await Self.notes(in: stranger).isEmpty)

        #expect(try await endpoint.stop() == 0, "\(endpoint.log())")
        if backend == "embedded" {
            // The cloud was closed after the server stopped: SQLite's last connection folded the WAL away.
            #expect(!FileManager.default.fileExists(atPath: server.path("shared-cloud.sqlite-wal")), "the cloud closes when the endpoint stops")
        }
    }

    @Test("web auth tokens rotate on every request, are persisted by both sides, and a used token is refused")
    func webAuthTokenRotation() async throws {
        let server = try TemporaryDirectory(prefix: "ckws-token-server")
        let client = try TemporaryDirectory(prefix: "ckws-token-client")
        defer { [server, client].forEach { $0.remove() } }
        let environment = ["CK_API_TOKEN": "api-token-1", "ALICE_FIRST_TOKEN": "first+web/token="]
        try Self.writeConfig(
            """
            cloud: { kind: embedded, path: shared-cloud.sqlite }
            endpoint:
              port: 0
              container: \(Self.container)
              web_tokens:
                api_token_env: CK_API_TOKEN
                users: [{ user: _alice, initial_token_env: ALICE_FIRST_TOKEN }]
            """, in: server)
        var endpoint = try await Endpoint.start(in: server, environment: environment)
        defer { if endpoint.process.isRunning { endpoint.process.kill() } }

        try await Self.createStore(in: client, rows: [(1, "Alpha", nil)])
        try Data("first+web/token=\n".utf8).write(to: client.url.appendingPathComponent("web-token"))
        try Self.writeConfig(
            Self.gatewayConfig(port: endpoint.port, auth: "auth: web_token\n  api_token_env: CK_API_TOKEN\n  web_auth_token_file: web-token"),
            in: client)
        func token() throws -> String {
            try String(contentsOfFile: client.path("web-token"), encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        }

        let first = try await GatewayCLI.run(["sync"], in: client.url, environment: environment)
        #expect(first.status == 0, "\(first)")
        let afterFirst = try token()
        #expect(afterFirst != "first+web/token=", "the token file holds the rotated token")
        let mode = try FileManager.default.attributesOfItem(atPath: client.path("web-token"))[.posixPermissions] as? Int
        #expect(mode == 0o600)

        let used = try await LoopbackHTTP.send(
            "GET", port: endpoint.port,
            path: "/database/1/\(Self.container)/development/private/zones/list?ckAPIToken=api-token-1&ckWebAuthToken=first%2Bweb%2Ftoken%3D")
        #expect(used.status == 401, "a used token is refused: \(used.text)")

        // A restarted endpoint still knows the token the client last received.
        #expect(try await endpoint.stop() == 0)
        endpoint = try await Endpoint.start(in: server, environment: environment)
        try Self.writeConfig(
            Self.gatewayConfig(port: endpoint.port, auth: "auth: web_token\n  api_token_env: CK_API_TOKEN\n  web_auth_token_file: web-token"),
            in: client)
        try await DatabaseQueue(path: client.path("app.sqlite")).write { db in
            try db.execute(sql: "INSERT INTO note VALUES (2, 'Beta', NULL)")
        }
        let second = try await GatewayCLI.run(["sync"], in: client.url, environment: environment)
        #expect(second.status == 0, "\(second)")
        #expect(try token() != afterFirst)

        try Data("stale-token\n".utf8).write(to: client.url.appendingPathComponent("web-token"))
        let stale = try await GatewayCLI.run(["sync"], in: client.url, environment: environment)
        #expect(stale.status == 1, "\(stale)")
        #expect(stale.stderr.contains("sign in again"), "\(stale)")
        #expect(try await endpoint.stop() == 0)
    }

    @Test("gateway run through gateway cloud serve learns of another gateway's upload from the web courier, with polling an hour away")
    func pushedToRunningGateway() async throws {
        let server = try TemporaryDirectory(prefix: "ckws-push-server")
        let first = try TemporaryDirectory(prefix: "ckws-push-a")
        let second = try TemporaryDirectory(prefix: "ckws-push-b")
        defer { [server, first, second].forEach { $0.remove() } }
        try await Self.keygen([(first, "a"), (second, "b")])
        try Self.register([(first, "a"), (second, "b")], at: server)
        try Self.writeConfig(
            """
            cloud: { kind: embedded, path: shared-cloud.sqlite }
            endpoint:
              port: 0
              container: \(Self.container)
              keys:
                - { key_id: gateway-a, public_key_file: keys/a.pub }
                - { key_id: gateway-b, public_key_file: keys/b.pub }
            """, in: server)
        let endpoint = try await Endpoint.start(in: server)
        defer { if endpoint.process.isRunning { endpoint.process.kill() } }
        for (directory, name, id) in [(first, "a", "gateway-a"), (second, "b", "gateway-b")] {
            try await Self.createStore(in: directory, rows: [])
            let config = Self.gatewayConfig(port: endpoint.port, auth: "auth: server_to_server\n  key_id: \(id)\n  private_key_file: keys/\(name).pem")
                .replacingOccurrences(of: "poll_interval: 200ms", with: "poll_interval: 1h")
                .replacingOccurrences(of: "gateway: {", with: "gateway: { sync_interval: 1h, control: { listen: \"127.0.0.1:0\" },")
            try Self.writeConfig(config, in: directory)
        }
        let service = try RunningGateway(in: second)
        defer { if service.process.isRunning { service.process.kill() } }
        try await service.waitFor("the first sync") { service.log().contains("sync finished") }
        try await service.waitFor("push switched on") { service.log().contains("cloud notifications on") }

        try await DatabaseQueue(path: first.path("app.sqlite")).write { db in try db.execute(sql: "INSERT INTO note VALUES (1, 'pushed', NULL)") }
        let upload = try await GatewayCLI.run(["sync"], in: first.url)
        #expect(upload.status == 0, "\(upload)")
        try await service.waitFor("the row reaching the running gateway") { try await Self.notes(in: second) == ["1 pushed 0"] }
        // (With the store's own signal after the first sync, the two asks may share one sync.)
        #expect(service.log().contains(#"\"cloud\""#), "the sync was asked for by the cloud's notification:\n\(service.log())")
        service.process.terminate()
        #expect(try await service.process.wait(timeout: .seconds(30)) == 0, "\(service.log())")
        #expect(try await endpoint.stop() == 0)
    }

    @Test("sharing through the endpoint: the owner shares with gateway share, the participant's cloudkit gateway accepts and its template syncs both ways")
    func sharingThroughTheEndpoint() async throws {
        let server = try TemporaryDirectory(prefix: "ckws-share-server")
        let owner = try TemporaryDirectory(prefix: "ckws-share-owner")
        let participant = try TemporaryDirectory(prefix: "ckws-share-participant")
        defer { [server, owner, participant].forEach { $0.remove() } }
        try await Self.keygen([(owner, "o"), (participant, "p")])
        try Self.register([(owner, "o"), (participant, "p")], at: server)
        try Self.writeConfig(
            """
            cloud: { kind: embedded, path: cloud.sqlite }
            endpoint:
              port: 0
              container: \(Self.container)
              keys:
                - { key_id: owner-key, public_key_file: keys/o.pub, user: _olivia }
                - { key_id: participant-key, public_key_file: keys/p.pub, user: _paul }
            """, in: server)
        let endpoint = try await Endpoint.start(in: server)
        defer { if endpoint.process.isRunning { endpoint.process.kill() } }
        try await Self.createStore(in: owner, rows: [(1, "Alpha", nil), (2, "Beta", nil)])
        try Self.writeConfig(
            Self.gatewayConfig(port: endpoint.port, auth: "auth: server_to_server\n  key_id: owner-key\n  private_key_file: keys/o.pem"), in: owner)
        try Data("CREATE TABLE note (id INTEGER PRIMARY KEY, title TEXT, attachment BLOB);".utf8).write(to: participant.url.appendingPathComponent("schema.sql"))
        try Self.writeConfig(
            Self.gatewayConfig(port: endpoint.port, auth: "auth: server_to_server\n  key_id: participant-key\n  private_key_file: keys/p.pem")
                .replacingOccurrences(
                    of: "  - { name: app, kind: sqlite, path: app.sqlite, zone: Notes, tables: [{ table: note }] }",
                    with: "  - { name: shared, kind: sqlite, database: shared, path: \"shared/{owner}/{zone}.sqlite\", seed: schema.sql, tables: [{ table: note }] }"),
            in: participant)

        #expect(try await GatewayCLI.run(["sync"], in: owner.url).status == 0)
        let added = try await GatewayCLI.run(["share", "add", "Notes", "_paul", "--permission", "read-write"], in: owner.url)
        #expect(added.status == 0, "\(added)")
        let accepted = try await GatewayCLI.run(["share", "accept", "_olivia", "Notes"], in: participant.url)
        #expect(accepted.status == 0 && accepted.stdout.contains("READ_WRITE"), "\(accepted)")
        let listed = try await GatewayCLI.run(["share", "list"], in: participant.url)
        #expect(listed.stdout.contains("_olivia") && listed.stdout.contains("ACCEPTED"), "\(listed)")
        let synced = try await GatewayCLI.run(["sync"], in: participant.url)
        #expect(synced.status == 0 && synced.stdout.contains("Notes (_olivia)"), "\(synced)")
        let copy = participant.path("shared/_olivia/Notes.sqlite")
        let rows = try await DatabaseQueue(path: copy).read { db in try String.fetchAll(db, sql: "SELECT title FROM note ORDER BY id") }
        #expect(rows == ["Alpha", "Beta"])
        try await DatabaseQueue(path: copy).write { try $0.execute(sql: "UPDATE note SET title = 'from paul' WHERE id = 2") }
        #expect(try await GatewayCLI.run(["sync"], in: participant.url).status == 0)
        #expect(try await GatewayCLI.run(["sync"], in: owner.url).status == 0)
        #expect(try await Self.notes(in: owner) == ["1 Alpha 0", "2 from paul 0"])
        #expect(try await endpoint.stop() == 0, "\(endpoint.log())")
    }
}
