import AsyncHTTPClient
import Foundation
import GatewayCore
import NIOCore
import NIOFoundationCompat
import NIOHTTP1

/// Sends authenticated requests to CloudKit Web Services and turns failures into ``CloudError``s.
///
/// Uses AsyncHTTPClient's shared client, which needs no shutdown, so a database is a plain value.
struct CloudKitTransport: Sendable {
    let configuration: CloudKitWebConfiguration
    /// Largest answer read; asset downloads may be as large as the asset limit.
    var maximumResponseSize: Int { Int(min(configuration.limits.maxAssetSize, Int64(Int32.max))) + 1_000_000 }

    enum Method: Sendable {
        case get, post

        var http: HTTPMethod { self == .get ? .GET : .POST }
    }

    /// A raw answer.
    struct Answer: Sendable {
        var status: Int
        var body: Data
        var retryAfter: String?
    }

    /// Calls a JSON operation and returns the answer's JSON; non-2xx answers throw.
    func call(
        _ operation: String, get: Bool = false, body: JSONValue? = nil, database: String? = nil
    ) async throws -> JSONValue {
        try await call(operation, get: get, text: try body?.serialized() ?? Data(), database: database)
    }

    /// Calls a JSON operation at `path` (under the base URL) rather than the database's path.
    func call(_ operation: String, body: JSONValue, path: String) async throws -> JSONValue {
        let answer = try await send(
            url: configuration.baseURL + path, method: .post, body: try body.serialized(), contentType: "application/json; charset=utf-8",
            context: operation)
        return try Self.json(answer, context: operation)
    }

    /// ``call(_:get:body:database:)`` with a body already written as JSON text.
    func call(_ operation: String, get: Bool = false, text bytes: Data, database: String? = nil) async throws -> JSONValue {
        let answer = try await send(
            url: configuration.baseURL + configuration.path(operation, database: database), method: get ? .get : .post,
            body: bytes, contentType: "application/json; charset=utf-8", context: operation)
        return try Self.json(answer, context: operation)
    }

    /// ``call(_:get:text:database:)`` reading the answer straight from its text with `read`
    /// (pages of records), without a tree of the whole answer.
    func call<Result>(
        _ operation: String, text bytes: Data, database: String? = nil, read: (inout JSONReader) throws -> Result
    ) async throws -> Result {
        let answer = try await send(
            url: configuration.baseURL + configuration.path(operation, database: database), method: .post, body: bytes,
            contentType: "application/json; charset=utf-8", context: operation)
        guard (200..<300).contains(answer.status) else { throw Self.failure(answer, context: operation) }
        do {
            return try JSONReader.read(answer.body.isEmpty ? Data("{}".utf8) : answer.body, numbers: .wholeDoublesAsIntegers, read)
        } catch let error as JSONParseError {
            throw CloudError(.internalError, "\(operation): the answer is not the JSON expected: \(error)", underlying: error)
        }
    }

    /// The JSON of a 2xx answer, or the error it describes.
    static func json(_ answer: Answer, context: String) throws -> JSONValue {
        guard (200..<300).contains(answer.status) else { throw failure(answer, context: context) }
        guard let parsed = answer.body.isEmpty ? JSONValue.object([:]) : try? JSONValue.parse(answer.body) else {
            throw CloudError(.internalError, "\(context): the answer is not JSON")
        }
        return parsed
    }

    /// The error a non-2xx answer describes: CloudKit's error body, or else its HTTP status.
    static func failure(_ answer: Answer, context: String) -> CloudError {
        if let parsed = try? JSONValue.parse(answer.body), CloudKitErrorCoding.isError(parsed) {
            return CloudKitErrorCoding.decode(parsed, context: context, retryAfterHeader: answer.retryAfter)
        }
        return statusError(answer, context: context)
    }

    /// The error for a failed answer without CloudKit's error body (a proxy's page, say).
    static func statusError(_ answer: Answer, context: String) -> CloudError {
        let code: CloudError.Code =
            switch answer.status {
            case 429: .requestRateLimited
            case 401, 403, 421: .notAuthenticated
            case 404: .unknownItem
            case 413: .limitExceeded
            case 500..<600: .serviceUnavailable
            default: .internalError
            }
        return CloudError(
            code, "\(context): the service answered HTTP \(answer.status)",
            retryAfter: answer.retryAfter.flatMap(Double.init).map { .milliseconds(Int64($0 * 1000)) })
    }

    /// Sends one request, authenticated when `url` is under the base URL (upload and download URLs
    /// elsewhere carry their own authority).
    /// - Parameters:
    ///   - anonymous: sends no credentials even under the base URL (a web courier URL, whose
    ///     token is its credential: a long-poll must not hold the web auth token's turn).
    ///   - timeout: how long the request may take, when not `requestTimeout` (a long-poll).
    func send(
        url: String, method: Method, body: Data, contentType: String?, context: String, anonymous: Bool = false, timeout: Duration? = nil
    ) async throws -> Answer {
        let authenticated = url.hasPrefix(configuration.baseURL + "/") && !anonymous
        guard authenticated else {
            return try await execute(url: url, method: method, body: body, contentType: contentType, headers: [], context: context, timeout: timeout)
                .answer
        }
        let path = String(url.dropFirst(configuration.baseURL.count).prefix { $0 != "?" })
        switch configuration.authentication {
        case .serverToServer(let signer):
            let headers = try signer.headers(body: body, subpath: path)
            return try await execute(url: url, method: method, body: body, contentType: contentType, headers: headers, context: context).answer
        case .webAuthToken(let apiToken, let session):
            return try await session.perform { token in
                let separator = url.contains("?") ? "&" : "?"
                let query = "ckAPIToken=\(Self.escape(apiToken))&ckWebAuthToken=\(Self.escape(token))"
                let raw = try await execute(
                    url: url + separator + query, method: method, body: body, contentType: contentType, headers: [], context: context)
                // Every answer, failures included, carries the token that replaces the one just used.
                let next = raw.headers.first(name: CloudKitHeaders.webAuthToken) ?? raw.headers.first(name: "X-Apple-CloudKit-Session")
                return (result: raw.answer, nextToken: next)
            }
        }
    }

    private struct RawAnswer: Sendable {
        var answer: Answer
        var headers: HTTPHeaders
    }

    private func execute(
        url: String, method: Method, body: Data, contentType: String?, headers: [(name: String, value: String)], context: String,
        timeout: Duration? = nil
    ) async throws -> RawAnswer {
        var request = HTTPClientRequest(url: url)
        request.method = method.http
        if let contentType, method != .get { request.headers.add(name: "Content-Type", value: contentType) }
        for header in headers { request.headers.add(name: header.name, value: header.value) }
        if method != .get { request.body = .bytes(ByteBuffer(data: body)) }
        let timeout = (timeout ?? configuration.requestTimeout).components
        do {
            let response = try await cloudKitHTTPClient.execute(
                request, timeout: .milliseconds(timeout.seconds * 1000 + timeout.attoseconds / 1_000_000_000_000_000))
            let buffer = try await response.body.collect(upTo: maximumResponseSize)
            return RawAnswer(
                answer: Answer(status: Int(response.status.code), body: Data(buffer: buffer), retryAfter: response.headers.first(name: "Retry-After")),
                headers: response.headers)
        } catch let error as CloudError {
            throw error
        } catch {
            // Nothing was sent when no connection was made, and a read changes nothing: only a
            // write cut off after it was sent may or may not have been applied.
            let described = String(describing: error)
            if ["Connection refused", "connectTimeout", "connect(descriptor", "No route to host", "lookup"].contains(where: described.contains) {
                throw CloudError(
                    .networkFailure,
                    "\(context): could not connect to \(configuration.baseURL) (\(Self.connectionProblem(described))); nothing was sent. Check that the endpoint runs and the cloud's base_url",
                    underlying: error)
            }
            let outcome = method == .get ? "" : "; it may or may not have been applied"
            throw CloudError(.networkFailure, "\(context): the request to \(configuration.baseURL) failed\(outcome)", underlying: error)
        }
    }

    /// A connection failure in a few words.
    static func connectionProblem(_ described: String) -> String {
        if described.contains("Connection refused") { return "connection refused" }
        if described.contains("connectTimeout") { return "the connection timed out" }
        if described.contains("No route to host") { return "no route to host" }
        if described.contains("lookup") { return "the host name does not resolve" }
        return "no connection"
    }

    /// Percent-encodes a token for the query string; `+`, `/` and `=` must be escaped.
    static func escape(_ token: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return token.addingPercentEncoding(withAllowedCharacters: allowed) ?? token
    }
}

/// The HTTP client of every CloudKit transport, one per process like `HTTPClient.shared`, but a
/// refused connection fails the request at once instead of being tried again until the request's
/// deadline (60 s): the gateway's retry policy tries again with back-off, and an endpoint that is
/// down is reported within seconds.
private let cloudKitHTTPClient: HTTPClient = {
    var configuration = HTTPClient.Configuration.singletonConfiguration
    configuration.connectionPool.retryConnectionEstablishment = false
    configuration.timeout.connect = .seconds(10)
    return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
}()
