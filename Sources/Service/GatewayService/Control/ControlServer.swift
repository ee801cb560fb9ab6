import Foundation
import GatewayConfig
import GatewayCore
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle

/// The control server of `gateway run` (Hummingbird): `GET /` (the status page, with its
/// `POST /login`, `POST /actions/sync` and `POST /actions/retry`), `GET /healthz`, `GET /readyz`,
/// `GET /status`, `GET /metrics` (Prometheus) and `POST /sync[?adapter=N][&wait=1]`.
///
/// `POST` needs `Authorization: Bearer <control.token>`; with no token configured it is refused.
/// Bound to a non-loopback address, every route needs the token (the config refuses such an
/// address without one).
public enum ControlServer {
    /// The application, a `Service` to run next to the scheduler.
    public static func application(scheduler: SyncScheduler, logger: Logger) -> some Service {
        let address = scheduler.configuration.settings.control
        let application = Application(
            router: router(scheduler: scheduler),
            configuration: ApplicationConfiguration(address: .hostname(address.host, port: address.port), serverName: "sync-gateway"),
            onServerRunning: { channel in
                logger.info(
                    "control server listening", metadata: ["address": "\(address.host):\(channel.localAddress?.port ?? address.port)"])
            },
            logger: logger)
        return ListeningService(application: application, address: "\(address.host):\(address.port)")
    }

    /// Every route of the control server, with the token checks as middleware: what the
    /// application serves, and what tests drive in process.
    public static func router(scheduler: SyncScheduler) -> Router<BasicRequestContext> {
        let settings = scheduler.configuration.settings.control
        let router = Router()
        let everything = !settings.isLoopback
        let token = settings.token
        let monitor = scheduler.monitor
        let configuration = scheduler.configuration

        // Reading needs the token only off loopback; asking for a sync always does.
        let reading = router.group().add(middleware: BearerTokenMiddleware(token: token, required: everything))
        let acting = router.group().add(middleware: BearerTokenMiddleware(token: token, required: true))
        reading.get("healthz") { _, _ -> Response in
            text(.ok, "ok\n")
        }
        reading.get("readyz") { _, _ -> Response in
            if let reason = monitor.notReadyReason { return text(.serviceUnavailable, "not ready: \(reason)\n") }
            return text(.ok, "ready\n")
        }
        reading.get("status") { _, _ -> Response in
            let adapters = monitor.adapters
            guard !adapters.isEmpty || configuration.adapters.isEmpty else {
                return text(.serviceUnavailable, "the stores are not open yet\n")
            }
            let status = try await GatewayStatus.read(adapters, configuration: configuration, tolerant: true)
            return try json(.ok, ServiceStatus(status: status, monitor: monitor))
        }
        let metrics = scheduler.metrics
        reading.get("metrics") { _, _ -> Response in
            let adapters = monitor.adapters
            if !adapters.isEmpty {
                let status = try await GatewayStatus.read(adapters, configuration: configuration, tolerant: true)
                metrics.record(ServiceStatus(status: status, monitor: monitor))
            }
            return Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(string: metrics.text())))
        }
        acting.post("sync") { request, _ -> Response in
            if let name = request.uri.queryParameters["adapter"].map(String.init),
                !configuration.adapters.contains(where: { $0.name == name }), !monitor.adapters.contains(where: { $0.name == name })
            {
                return text(.notFound, "no adapter named \(name)\n")
            }
            let wait = request.uri.queryParameters["wait"].map { $0 == "1" || $0 == "true" } ?? false
            // A sync already running does not cover this request: wait for the one after it.
            let target = monitor.completedSyncs + (monitor.inProgress == nil ? 0 : 1)
            scheduler.requestSync(.http)
            guard wait else { return text(.accepted, "sync requested\n") }
            let report = try await monitor.waitForSync(after: target)
            let adapter = request.uri.queryParameters["adapter"].map(String.init)
            let lines = (report?.adapters ?? []).filter { adapter == nil || $0.adapter == adapter }.map(SyncResultLine.init)
            return try json(lines.allSatisfy { $0.result == "synced" } ? .ok : .internalServerError, lines)
        }

        StatusPageRoutes(scheduler: scheduler, token: token, everything: everything).add(to: router)
        return router
    }

    /// The application, with a socket error at start-up turned into a message that names the
    /// address and the config key instead of the system call.
    struct ListeningService<Wrapped: Service>: Service {
        let application: Wrapped
        let address: String

        func run() async throws {
            do {
                try await application.run()
            } catch let error as IOError {
                let reason =
                    switch error.errnoCode {
                    case EADDRINUSE: "the port is in use by another program (another gateway?)"
                    case EACCES: "this user may not listen on that port (ports below 1024 need privileges)"
                    case EADDRNOTAVAIL: "the address is not one of this machine's"
                    default: "\(error)"
                    }
                throw GatewayError(
                    .controlUnavailable,
                    "the control server cannot listen on \(address): \(reason); set gateway.control.listen to a free address and port, or stop what holds it",
                    underlying: error)
            }
        }
    }

    static func text(_ status: HTTPResponse.Status, _ body: String) -> Response {
        Response(
            status: status, headers: [.contentType: "text/plain; charset=utf-8"], body: .init(byteBuffer: ByteBuffer(string: body)))
    }

    private static func json(_ status: HTTPResponse.Status, _ value: some Encodable) throws -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        return Response(
            status: status, headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(data: try encoder.encode(value))))
    }
}

/// `GET /status`: each adapter's store status and sync history, and the sync in progress.
public struct ServiceStatus: Codable, Sendable, Equatable {
    public struct Adapter: Codable, Sendable, Equatable {
        public var name: String
        public var zone: String
        public var hasChanges: Bool
        public var pendingChanges: Int
        public var failedRecords: Int
        public var batchSize: Int
        public var lastSuccessAt: Date?
        public var consecutiveFailures: Int
        public var lastError: String?
        /// Why the store cannot be read right now (its counts are then unknown), as
        /// `gateway status` says it.
        public var error: String?
        /// The health in one word, as `gateway status` and the page show it.
        public var health: AdapterHealthState
    }

    public var hasChanges: Bool
    public var adapters: [Adapter]
    public var syncInProgress: GatewayMonitor.SyncInProgress?

    init(status: GatewayStatus, monitor: GatewayMonitor) {
        let health = monitor.health
        hasChanges = status.hasChanges
        adapters = status.adapters.map { adapter in
            let history = health[adapter.name] ?? GatewayMonitor.AdapterHealth()
            return Adapter(
                name: adapter.name, zone: adapter.zone, hasChanges: adapter.hasChanges, pendingChanges: adapter.pendingChanges,
                failedRecords: adapter.failedRecords, batchSize: history.batchSize ?? adapter.batchSize,
                lastSuccessAt: history.lastSuccessAt, consecutiveFailures: history.consecutiveFailures, lastError: history.lastError,
                error: adapter.error, health: adapter.health(consecutiveFailures: history.consecutiveFailures, lastFailureCode: history.lastErrorCode))
        }
        syncInProgress = monitor.inProgress
    }
}

/// One adapter's outcome in the answer to `POST /sync?wait=1`.
struct SyncResultLine: Codable, Sendable {
    var adapter: String
    var result: String
    var downloaded: Int
    var uploaded: Int
    var conflicts: Int
    var failed: Int
    var error: String?

    init(_ report: AdapterSyncReport) {
        adapter = report.adapter
        downloaded = report.downloaded + report.deletedLocally
        uploaded = report.uploaded + report.deletedRemotely
        conflicts = report.conflictCount
        failed = report.failedRecords
        switch report.outcome {
        case .synced: result = "synced"
        case .paused(let reason): (result, error) = ("paused", reason)
        case .failed(let code, let message): (result, error) = ("failed", "\(report.failureCode ?? code.rawValue): \(message)")
        }
    }
}
