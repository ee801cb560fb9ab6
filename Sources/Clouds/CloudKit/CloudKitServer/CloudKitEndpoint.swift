import CloudKitWeb
import Foundation
import Synchronization
import GatewayCore
import Hummingbird
import Logging
import NIOCore
import NIOFoundationCompat
import HTTPTypes

/// `gateway cloud serve`: CloudKit Web Services' paths and JSON, served by Hummingbird in front of
/// any ``CloudDatabase`` (the embedded or the PostgreSQL cloud), so gateways on other machines
/// share one cloud with `cloud: kind: cloudkit`.
///
/// Served under `/database/1/<container>/<environment>/private/`: `zones/list` (GET),
/// `zones/lookup`, `zones/modify`, `zones/changes`, `changes/database`, `changes/zone`,
/// `records/changes`, `records/modify`,
/// `records/lookup`, `records/query` (for clouds that are ``RecordScanning``), `assets/upload`, `assets/data` (the upload URL),
/// `assets/download/<checksum>/<size>`, `subscriptions/list`, `subscriptions/lookup` and
/// `subscriptions/modify` (for clouds that are ``SubscriptionStoring``); `…/public/users/caller` for the
/// account check; `tokens/create` and `tokens/register` (under `/database/1/…` and `/device/1/…`)
/// and the web courier long-poll `/webcourier/1/<container>/<environment>/<token>` they lead to.
/// Every request must be signed with a registered server-to-server key (dates more than
/// ``CloudKitEndpointConfiguration/maximumClockSkew`` away are refused) or carry an API token
/// and the user's current web auth token, which each answer rotates.
public enum CloudKitEndpoint {
    /// The routes, for tests and for embedding in another application.
    /// - Parameter notifier: what turns changes into notifications for subscriptions; one of its
    ///   own when `nil` (then only writes through this endpoint notify: run a notifier as a
    ///   service to watch the cloud for the others).
    public static func router(
        cloud: any CloudDatabase, configuration: CloudKitEndpointConfiguration, logger: Logger, notifier: CloudKitNotifier? = nil
    ) -> Router<BasicRequestContext> {
        let router = Router()
        router.add(middleware: UnknownPathMiddleware())
        let notifier = notifier ?? CloudKitNotifier(cloud: cloud, logger: logger)
        let gate = Gate(configuration: configuration, cloud: cloud, logger: logger, notifier: notifier)
        let prefix = "/database/1/:container/:environment/:database"
        let jsonOperations: [(String, Bool, @Sendable (CloudKitEndpointOperations, JSONValue) async throws -> EndpointAnswer)] = [
            ("zones/list", true, { operations, _ in .json(try await operations.listZones()) }),
            ("zones/lookup", false, { .json(try await $0.lookupZones($1)) }),
            ("zones/modify", false, { .json(try await $0.modifyZones($1)) }),
            ("records/changes", false, { try await $0.recordChanges($1) }),
            ("changes/database", false, { .json(try await $0.databaseChanges($1, tokenKey: "syncToken", operation: "changes/database")) }),
            ("zones/changes", false, { .json(try await $0.databaseChanges($1, tokenKey: "metaSyncToken", operation: "zones/changes")) }),
            ("records/lookup", false, { .json(try await $0.lookupRecords($1)) }),
            ("records/query", false, { try await $0.queryRecords($1) }),
            ("assets/upload", false, { .json(try $0.uploadTokens($1)) }),
            ("subscriptions/list", true, { operations, _ in .json(try await operations.listSubscriptions()) }),
            ("subscriptions/lookup", false, { .json(try await $0.lookupSubscriptions($1)) }),
            ("subscriptions/modify", false, { .json(try await $0.modifySubscriptions($1)) }),
            ("records/resolve", false, { .json(try await $0.shares($1, accepting: false)) }),
            ("records/accept", false, { .json(try await $0.shares($1, accepting: true)) }),
        ]
        var all = jsonOperations
        if configuration.servesZoneChanges { all.append(("changes/zone", false, { try await $0.zoneChanges($1) })) }
        router.post(RouterPath("\(prefix)/records/modify")) { request, context in
            // Read from the text: the largest bodies, a page of records each.
            await gate.handle(request, context, operation: "records/modify") { operations, body in
                try await operations.modifyRecords(body)
            }
        }
        for (operation, isGet, handler) in all {
            let path = RouterPath("\(prefix)/\(operation)")
            let handle: @Sendable (Request, BasicRequestContext) async throws -> Response = { request, context in
                await gate.handle(request, context, operation: operation) { operations, body in
                    let json = body.isEmpty ? JSONValue.object([:]) : try JSONValue.parse(body)
                    return try await handler(operations, json)
                }
            }
            if isGet { router.get(path, use: handle) } else { router.post(path, use: handle) }
        }
        // Operations without a database segment: Apple's reference puts tokens and
        // subscriptions/lookup there; CloudKit JS sends tokens under `/device/1/`.
        let databaseless: [(String, @Sendable (CloudKitEndpointOperations, JSONValue) async throws -> JSONValue)] = [
            ("tokens/create", { try $0.createToken($1) }),
            ("tokens/register", { try $0.registerToken($1) }),
            ("subscriptions/lookup", { try await $0.lookupSubscriptions($1) }),
        ]
        for (operation, handler) in databaseless {
            for service in ["database", "device"] where service == "database" || operation.hasPrefix("tokens/") {
                router.post(RouterPath("/\(service)/1/:container/:environment/\(operation)")) { request, context in
                    await gate.handle(request, context, operation: operation) { operations, body in
                        .json(try await handler(operations, body.isEmpty ? JSONValue.object([:]) : try JSONValue.parse(body)))
                    }
                }
            }
        }
        router.get(RouterPath("/webcourier/1/:container/:environment/:token")) { request, context in
            await gate.courier(request, context)
        }
        router.get(RouterPath("\(prefix)/users/caller")) { request, context in
            await gate.handle(request, context, operation: "users/caller") { _, _ in .json([:]) }
        }
        router.post(RouterPath("\(prefix)/assets/data")) { request, context in
            await gate.handle(request, context, operation: "asset upload") { operations, body in
                .json(try await operations.storeAsset(body))
            }
        }
        router.get(RouterPath("\(prefix)/assets/download/:checksum/:size")) { request, context in
            await gate.assetDownload(request, context)
        }
        return router
    }

    /// The server, a `Service` to run under a `ServiceGroup`.
    /// - Parameter notifier: run it as a service in the same group, so writes that reach the
    ///   cloud another way notify too (``router(cloud:configuration:logger:notifier:)``).
    public static func application(
        cloud: any CloudDatabase, configuration: CloudKitEndpointConfiguration, host: String, port: Int, logger: Logger,
        notifier: CloudKitNotifier? = nil, onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) -> some ApplicationProtocol {
        Application(
            router: router(cloud: cloud, configuration: configuration, logger: logger, notifier: notifier),
            configuration: ApplicationConfiguration(address: .hostname(host, port: port), serverName: "sync-gateway-cloudkit"),
            onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? port) },
            logger: logger)
    }
}

/// An operation's answer body.
enum EndpointAnswer {
    case json(JSONValue)
    /// JSON already written as text (pages of records, see ``JSONWriter``).
    case jsonText(Data)
    case bytes(Data)
}

/// Authentication, path checks and error answers shared by every route.
struct Gate: Sendable {
    let configuration: CloudKitEndpointConfiguration
    let cloud: any CloudDatabase
    let logger: Logger
    let verifier: CloudKitSignatureVerifier
    /// Shared by every request, so sorted queries keep their cursors between pages.
    let pager: RecordQueryPager?
    let notifier: CloudKitNotifier
    /// The users whose private default zone this process has made sure of.
    let defaultZones = DefaultZoneRegistry()

    init(configuration: CloudKitEndpointConfiguration, cloud: any CloudDatabase, logger: Logger, notifier: CloudKitNotifier) {
        self.configuration = configuration
        self.cloud = cloud
        self.logger = logger
        self.notifier = notifier
        pager = cloud is any RecordScanning ? RecordQueryPager() : nil
        self.verifier = CloudKitSignatureVerifier(keys: configuration.keys, maximumClockSkew: configuration.maximumClockSkew)
    }

    func handle(
        _ request: Request, _ context: BasicRequestContext, operation: String,
        _ body: @Sendable (CloudKitEndpointOperations, Data) async throws -> EndpointAnswer
    ) async -> Response {
        var rotatedToken: String?
        configuration.onRequest?(operation)
        do {
            let bytes = Data(buffer: try await collect(request))
            let user = try await authenticate(request, body: bytes, rotatedToken: &rotatedToken)
            guard context.parameters.get("container") == configuration.container,
                context.parameters.get("environment") == configuration.environment
            else {
                throw CloudError(.invalidArguments, "this endpoint serves container \(configuration.container) in \(configuration.environment) only")
            }
            if operation == "users/caller" {
                return respond(.json(["users": [["userRecordName": .string(user)]]]), token: rotatedToken)
            }
            // Operations without a database segment act on the caller's own (private) database.
            let database = context.parameters.get("database") ?? "private"
            let users = CloudUsers(store: cloud, publicWriters: configuration.publicWriters)
            let scope = CloudScope(rawValue: database)
            guard scope != nil || database == "public" else {
                throw CloudError(.invalidArguments, "this endpoint serves the private, shared and public databases; there is no \(database) database")
            }
            let base = configuration.publicURL ?? "http://\(request.head.authority ?? "127.0.0.1")"
            let operations = CloudKitEndpointOperations(
                cloud: scope.map { users.database(for: user, scope: $0) } ?? users.publicDatabase(for: user), store: cloud, scope: scope,
                databaseURL: "\(base)/database/1/\(configuration.container)/\(configuration.environment)/\(database)",
                pager: pager, userRecordName: user, notifier: notifier, assetSigner: configuration.assetSigner, defaultZones: defaultZones,
                courierURL: "\(base)/webcourier/1/\(configuration.container)/\(configuration.environment)")
            return respond(try await body(operations, bytes), token: rotatedToken)
        } catch let error as CloudError {
            if error.code == .internalError { logger.error("\(operation) failed", metadata: ["error": "\(error)"]) }
            return errorResponse(error, token: rotatedToken)
        } catch {
            logger.error("\(operation) failed", metadata: ["error": "\(error)"])
            let failure: CloudError =
                error is DecodingError
                ? CloudError(.invalidArguments, "\(operation): the body is not the JSON CloudKit expects")
                : CloudError(.internalError, "\(operation) failed inside the endpoint; see its log")
            return errorResponse(failure, token: rotatedToken)
        }
    }

    /// `GET …/assets/download/<checksum>/<size>?sig=…`: an asset's bytes. The signature is the
    /// credential, as in CloudKit's pre-signed URLs: the endpoint hands the URL only to users who
    /// may read a record holding the asset, or who uploaded it. Without a valid one the answer is
    /// `NOT_FOUND`, as for an asset that does not exist, so the URL tells nothing about content
    /// the caller was not given.
    func assetDownload(_ request: Request, _ context: BasicRequestContext) async -> Response {
        configuration.onRequest?("asset download")
        do {
            guard context.parameters.get("container") == configuration.container,
                context.parameters.get("environment") == configuration.environment
            else {
                throw CloudError(.invalidArguments, "this endpoint serves container \(configuration.container) in \(configuration.environment) only")
            }
            guard let checksum = context.parameters.get("checksum"), let size = context.parameters.get("size").flatMap(Int64.init) else {
                throw CloudError(.invalidArguments, "asset download: the path needs a checksum and a size")
            }
            guard let signature = request.uri.queryParameters.get("sig"),
                configuration.assetSigner.isDownloadSignature(signature, checksum: checksum, size: size)
            else {
                throw CloudError(.unknownItem, "asset \(checksum) not found; fetch the record that holds it for its download URL")
            }
            return respond(.bytes(try await cloud.downloadAsset(AssetReference(checksum: checksum, size: size))), token: nil)
        } catch let error as CloudError {
            return errorResponse(error, token: nil)
        } catch {
            logger.error("asset download failed", metadata: ["error": "\(error)"])
            return errorResponse(CloudError(.internalError, "asset download failed inside the endpoint; see its log"), token: nil)
        }
    }

    /// `GET /webcourier/1/<container>/<environment>/<token>`: the long-poll of a token from
    /// `tokens/create`. Answers `{"notifications": [...]}` as soon as one is waiting, or with none
    /// after ``CloudKitEndpointConfiguration/courierHold``; `NOT_FOUND` for an unknown token. The
    /// token is the credential: it is unguessable and was handed to an authenticated caller.
    func courier(_ request: Request, _ context: BasicRequestContext) async -> Response {
        configuration.onRequest?("web courier")
        do {
            guard context.parameters.get("container") == configuration.container,
                context.parameters.get("environment") == configuration.environment, let token = context.parameters.get("token")
            else {
                throw CloudError(.invalidArguments, "this endpoint serves container \(configuration.container) in \(configuration.environment) only")
            }
            let pending = try await notifier.hub.poll(token, hold: configuration.courierHold)
            let notifications = pending.map { CourierNotification.encode($0, container: configuration.container, environment: configuration.environment) }
            return respond(.json(["notifications": .array(notifications)]), token: nil)
        } catch let error as CloudError {
            return errorResponse(error, token: nil)
        } catch {
            return errorResponse(CloudError(.internalError, "the web courier failed inside the endpoint; see its log"), token: nil)
        }
    }

    private func collect(_ request: Request) async throws -> ByteBuffer {
        do {
            return try await request.body.collect(upTo: configuration.maximumBodySize)
        } catch {
            throw CloudError(.limitExceeded, "the request body is larger than \(configuration.maximumBodySize) bytes")
        }
    }

    /// The user a request acts as.
    private func authenticate(_ request: Request, body: Data, rotatedToken: inout String?) async throws -> String {
        let headers = request.headers
        func header(_ name: String) -> String? { HTTPField.Name(name).flatMap { headers[$0] } }
        if let keyID = header(CloudKitHeaders.keyID) {
            switch verifier.verify(
                keyID: keyID, date: header(CloudKitHeaders.date), signature: header(CloudKitHeaders.signature), body: body,
                subpath: request.uri.path)
            {
            case .success(let key): return key.userRecordName
            case .failure(let refusal):
                logger.notice("refused a signed request", metadata: ["reason": "\(refusal.reason)"])
                throw CloudError(.notAuthenticated, "the request signature was refused: \(refusal.reason)")
            }
        }
        let query = request.uri.queryParameters
        // An upload URL from `assets/upload` carries its own credential, as CloudKit's do (a
        // client that sends its web auth token anyway has it rotated as for any request).
        if request.uri.path.hasSuffix("/assets/data"), query["sig"] != nil, query["ckWebAuthToken"] == nil {
            guard
                let user = configuration.assetSigner.uploader(
                    user: query["user"].map(String.init), expires: query["expires"].map(String.init), signature: query["sig"].map(String.init),
                    now: Int64(Date().timeIntervalSince1970))
            else {
                throw CloudError(.notAuthenticated, "the upload URL is not valid or has expired; ask assets/upload for another")
            }
            return user
        }
        if let registry = configuration.webTokens, let apiToken = query["ckAPIToken"].map(String.init),
            let webToken = query["ckWebAuthToken"].map(String.init)
        {
            guard let (user, next) = try await registry.authenticate(apiToken: apiToken, webAuthToken: webToken) else {
                throw CloudError(.notAuthenticated, "the API token or web auth token is not current; sign in again")
            }
            rotatedToken = next
            return user
        }
        throw CloudError(.notAuthenticated, "the request is neither signed with a registered key nor carries web auth tokens")
    }

    private func respond(_ answer: EndpointAnswer, token: String?) -> Response {
        var headers: HTTPFields = [:]
        if let token, let name = HTTPField.Name(CloudKitHeaders.webAuthToken) { headers[name] = token }
        switch answer {
        case .json(let value):
            headers[.contentType] = "application/json; charset=utf-8"
            let data = (try? value.serialized()) ?? Data("{}".utf8)
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(data: data)))
        case .jsonText(let data):
            headers[.contentType] = "application/json; charset=utf-8"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(data: data)))
        case .bytes(let data):
            headers[.contentType] = "application/octet-stream"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(data: data)))
        }
    }

    private func errorResponse(_ error: CloudError, token: String?) -> Response {
        Self.errorResponse(error, token: token)
    }

    /// CloudKit's error dictionary for `error`, with its HTTP status.
    static func errorResponse(_ error: CloudError, token: String?) -> Response {
        let (_, status) = CloudKitErrorCoding.serverErrorCode(for: error.code)
        var headers: HTTPFields = [.contentType: "application/json; charset=utf-8"]
        if let token, let name = HTTPField.Name(CloudKitHeaders.webAuthToken) { headers[name] = token }
        if let retryAfter = error.retryAfter { headers[.retryAfter] = "\(max(1, retryAfter.components.seconds))" }
        let data = (try? CloudKitErrorCoding.encode(error).serialized()) ?? Data()
        return Response(status: .init(code: status), headers: headers, body: .init(byteBuffer: ByteBuffer(data: data)))
    }
}

/// Answers a path no route serves with CloudKit's `NOT_FOUND` error dictionary, as every other
/// failure is answered, instead of an empty 404.
struct UnknownPathMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound {
            return Gate.errorResponse(
                CloudError(.unknownItem, "this endpoint serves no \(request.method) \(request.uri.path); see docs/cloudkit.md for the paths it serves"),
                token: nil)
        }
    }
}

/// The users whose private default zone exists, as far as this process made sure.
final class DefaultZoneRegistry: Sendable {
    private let users = Mutex<Set<String>>([])

    func isUnknown(_ user: String) -> Bool { !users.withLock { $0.contains(user) } }
    func insert(_ user: String) { _ = users.withLock { $0.insert(user) } }
}
