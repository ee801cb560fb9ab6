import Foundation
import GatewayConfig
import GatewayKinds
import GatewayService
import GatewayTesting
import Hummingbird
import HummingbirdTesting
import Logging
import Testing

/// The control server's routes and token checks, driven in process through Hummingbird's router
/// test client: no socket, no gateway process, no sync running.
@Suite("control routes in process")
struct ControlRoutesTests {
    /// A scheduler over one SQLite adapter, with the given `control` settings; never started.
    static func scheduler(control: String, in directory: TemporaryDirectory) throws -> SyncScheduler {
        let yaml = """
            gateway: { control: \(control) }
            adapters:
              - { name: notes, kind: sqlite, path: notes.sqlite, zone: Notes, tables: [{ table: note }] }
            """
        let configuration = try GatewayConfiguration.parse(
            yaml: yaml, file: directory.path("config.yaml"), baseDirectory: directory.url.path, registry: .builtIn, environment: [:])
        return SyncScheduler(configuration: configuration, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
    }

    static func application(_ scheduler: SyncScheduler) -> some ApplicationProtocol {
        Application(router: ControlServer.router(scheduler: scheduler))
    }

    static func text(_ response: TestResponse) -> String { String(buffer: response.body) }

    @Test("on loopback, reading needs no token; asking for a sync needs it, and is refused while none is configured")
    func loopbackTokens() async throws {
        let directory = try TemporaryDirectory(prefix: "control-routes")
        defer { directory.remove() }
        let withToken = try Self.scheduler(control: "{ listen: \"127.0.0.1:0\", token: secret }", in: directory)
        try await Self.application(withToken).test(.router) { client in
            try await client.execute(uri: "/healthz", method: .get) { response in
                #expect(response.status == .ok)
                #expect(Self.text(response) == "ok\n")
            }
            try await client.execute(uri: "/readyz", method: .get) { response in
                #expect(response.status == .serviceUnavailable, "no store is open before the scheduler runs")
            }
            try await client.execute(uri: "/sync", method: .post) { response in
                #expect(response.status == .unauthorized)
            }
            try await client.execute(uri: "/sync", method: .post, headers: [.authorization: "Bearer wrong"]) { response in
                #expect(response.status == .unauthorized)
            }
            try await client.execute(uri: "/sync?adapter=nope", method: .post, headers: [.authorization: "Bearer secret"]) { response in
                #expect(response.status == .notFound)
                #expect(Self.text(response) == "no adapter named nope\n")
            }
            try await client.execute(uri: "/sync", method: .post, headers: [.authorization: "Bearer secret"]) { response in
                #expect(response.status == .accepted)
            }
            try await client.execute(uri: "/metrics", method: .get) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentType]?.hasPrefix("text/plain; version=0.0.4") == true)
                #expect(Self.text(response).contains(#"gateway_sync_requests_total{trigger="http"} 1"#), "the accepted request is counted")
            }
        }

        let withoutToken = try Self.scheduler(control: "{ listen: \"127.0.0.1:0\" }", in: directory)
        try await Self.application(withoutToken).test(.router) { client in
            try await client.execute(uri: "/sync", method: .post, headers: [.authorization: "Bearer anything"]) { response in
                #expect(response.status == .forbidden)
                #expect(Self.text(response).contains("set control.token"))
            }
            try await client.execute(uri: "/healthz", method: .get) { response in
                #expect(response.status == .ok)
            }
        }
    }

    @Test("off loopback, every route needs the token")
    func everyRouteOffLoopback() async throws {
        let directory = try TemporaryDirectory(prefix: "control-routes")
        defer { directory.remove() }
        let scheduler = try Self.scheduler(control: "{ listen: \"0.0.0.0:0\", token: secret }", in: directory)
        try await Self.application(scheduler).test(.router) { client in
            for path in ["/healthz", "/readyz", "/status", "/metrics"] {
                try await client.execute(uri: path, method: .get) { response in
                    #expect(response.status == .unauthorized, "\(path) without the token")
                }
            }
            try await client.execute(uri: "/healthz", method: .get, headers: [.authorization: "Bearer secret"]) { response in
                #expect(response.status == .ok)
            }
            try await client.execute(uri: "/metrics", method: .get, headers: [.authorization: "Bearer secret"]) { response in
                #expect(response.status == .ok)
            }
        }
    }
}
