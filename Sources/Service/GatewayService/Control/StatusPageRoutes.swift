import Crypto
import Foundation
import GatewayConfig
import GatewayCore
import HTTPTypes
import Hummingbird
import NIOCore

/// The routes of the status page: `GET /`, and the forms it posts.
///
/// - `GET /` answers anyone on a loopback `listen`. Bound to another address, every route needs
///   the token: a browser signs in once with it (`POST /login`), and gets a session cookie that
///   is an HMAC of the token, never the token itself; `Authorization: Bearer` works too.
/// - `POST /actions/sync` and `POST /actions/retry` need the token in the form every time (or
///   the bearer header), like `POST /sync`, and are refused while no token is configured. They
///   answer `303 See Other` back to the page, so a reload does not post again.
struct StatusPageRoutes: Sendable {
    let scheduler: SyncScheduler
    let token: String
    /// Every route needs the token (a non-loopback `listen`).
    let everything: Bool

    static let cookieName = "gateway_session"

    func add(to router: Router<BasicRequestContext>) {
        router.get("/") { request, _ -> Response in
            if everything && !signedIn(request) {
                return html(.unauthorized, StatusPage.signIn(message: token.isEmpty ? "Set control.token in the config to use this page." : nil))
            }
            return html(.ok, try await page(notice: notice(request.uri.queryParameters["done"].map(String.init))).html())
        }
        router.post("login") { request, _ -> Response in
            let form: ControlForm
            switch await read(request) {
            case .success(let parsed): form = parsed
            case .failure(let refusal): return refusal.response
            }
            guard !token.isEmpty else { return ControlServer.text(.forbidden, "set control.token to allow this request\n") }
            guard let given = form["token"], matches(given) else {
                return html(.unauthorized, StatusPage.signIn(message: "That is not the control token."))
            }
            var response = redirect()
            response.headers[.setCookie] = "\(Self.cookieName)=\(session); Path=/; HttpOnly; SameSite=Strict"
            return response
        }
        router.post("actions/sync") { request, _ -> Response in
            try await action(request, done: "sync") { _ in }
        }
        router.post("actions/retry") { request, _ -> Response in
            try await action(request, done: "retry") { adapter in
                for opened in scheduler.monitor.adapters where adapter == nil || opened.name == adapter {
                    try await opened.adapter.retryFailedRecords()
                }
            }
        }
    }

    /// Runs an action of the page once its form carries the token and names a known adapter (or
    /// none: all of them), then asks for a sync and sends the browser back to the page.
    private func action(_ request: Request, done: String, perform: (_ adapter: String?) async throws -> Void) async throws -> Response {
        let form: ControlForm
        switch await authorizedForm(request) {
        case .success(let parsed): form = parsed
        case .failure(let refusal): return refusal.response
        }
        if let refused = unknownAdapter(form) { return refused }
        try await perform(form["adapter"].flatMap { $0.isEmpty ? nil : $0 })
        scheduler.requestSync(.http)
        return redirect(done: done)
    }

    /// A refused request, with the response that says why.
    struct Refusal: Error {
        let response: Response
    }

    private func read(_ request: Request) async -> Result<ControlForm, Refusal> {
        var request = request
        let body: ByteBuffer
        do {
            body = try await request.collectBody(upTo: ControlForm.maximumBytes)
        } catch is NIOTooManyBytesError {
            return .failure(Refusal(response: ControlServer.text(.contentTooLarge, "the form is larger than \(ControlForm.maximumBytes) bytes\n")))
        } catch {
            return .failure(Refusal(response: ControlServer.text(.badRequest, "the form could not be read\n")))
        }
        do throws(ControlForm.Problem) {
            return .success(try ControlForm(contentType: request.headers[.contentType], body: String(buffer: body)))
        } catch {
            switch error {
            case .notAForm:
                return .failure(Refusal(response: ControlServer.text(.unsupportedMediaType, "send the form as application/x-www-form-urlencoded\n")))
            case .malformed(let problem):
                return .failure(Refusal(response: ControlServer.text(.badRequest, "\(problem)\n")))
            }
        }
    }

    /// The form of an action, when the request carries the token (in the form or as a bearer).
    private func authorizedForm(_ request: Request) async -> Result<ControlForm, Refusal> {
        guard !token.isEmpty else { return .failure(Refusal(response: ControlServer.text(.forbidden, "set control.token to allow this request\n"))) }
        let form = await read(request)
        guard case .success(let parsed) = form else { return form }
        let bearer = request.headers[.authorization].map { $0.hasPrefix("Bearer ") ? String($0.dropFirst(7)) : "" }
        guard let given = parsed["token"] ?? bearer, !given.isEmpty else {
            return .failure(Refusal(response: ControlServer.text(.unauthorized, "the control token is required\n")))
        }
        guard matches(given) else { return .failure(Refusal(response: ControlServer.text(.unauthorized, "that is not the control token\n"))) }
        return form
    }

    private func unknownAdapter(_ form: ControlForm) -> Response? {
        guard let name = form["adapter"], !name.isEmpty, !scheduler.configuration.adapters.contains(where: { $0.name == name }) else { return nil }
        return ControlServer.text(.notFound, "no adapter named \(name.prefix(60))\n")
    }

    /// Compares in time independent of where the texts differ.
    private func matches(_ given: String) -> Bool {
        let expected = Array(token.utf8)
        let actual = Array(given.utf8)
        var difference = UInt8(expected.count == actual.count ? 0 : 1)
        for index in expected.indices { difference |= expected[index] ^ (index < actual.count ? actual[index] : 0) }
        return difference == 0
    }

    /// The session cookie's value: an HMAC of the token, so the cookie never holds the token.
    private var session: String {
        let code = HMAC<SHA256>.authenticationCode(for: Data("sync-gateway status page session".utf8), using: SymmetricKey(data: Data(token.utf8)))
        return code.map { String(format: "%02x", $0) }.joined()
    }

    private func signedIn(_ request: Request) -> Bool {
        guard !token.isEmpty else { return false }
        if request.headers[.authorization] == "Bearer \(token)" { return true }
        let cookies = request.headers[values: .cookie].flatMap { $0.split(separator: ";") }
        return cookies.contains { $0.trimmingCharacters(in: .whitespaces) == "\(Self.cookieName)=\(session)" }
    }

    private func notice(_ done: String?) -> String? {
        switch done {
        case "sync": "Sync requested; it appears under Last syncs when it ends."
        case "retry": "Failed records are queued again, and a sync was requested."
        default: nil
        }
    }

    private func page(notice: String?) async throws -> StatusPage {
        let monitor = scheduler.monitor
        let opened = monitor.adapters
        let status = try await GatewayStatus.read(opened, configuration: scheduler.configuration, tolerant: true)
        let health = monitor.health
        var rows: [StatusPage.AdapterRow] = []
        for adapter in status.adapters {
            let failed = adapter.failedRecords > 0 ? ((try? await opened.first { $0.name == adapter.name }?.adapter.unsyncedRecords()) ?? []) : []
            rows.append(
                StatusPage.AdapterRow(
                    status: adapter, health: health[adapter.name] ?? GatewayMonitor.AdapterHealth(),
                    failedRecords: Array(failed.prefix(StatusPage.failedRecordsShown))))
        }
        return StatusPage(
            adapters: rows, syncs: monitor.recentSyncs, pending: monitor.recentPending, inProgress: monitor.inProgress,
            notReadyReason: monitor.notReadyReason, notice: notice, actionsEnabled: !token.isEmpty, now: Date(),
            about: StatusPage.About(
                cloudKind: scheduler.configuration.cloud.kind, stateDirectory: scheduler.configuration.context.stateDirectory,
                startedAt: monitor.serviceStartedAt))
    }

    private func html(_ status: HTTPResponse.Status, _ body: String) -> Response {
        Response(
            status: status,
            headers: [
                .contentType: "text/html; charset=utf-8", .cacheControl: "no-store",
                HTTPField.Name("Content-Security-Policy")!: "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'",
            ],
            body: .init(byteBuffer: ByteBuffer(string: body)))
    }

    private func redirect(done: String? = nil) -> Response {
        Response(status: .seeOther, headers: [.location: done.map { "/?done=\($0)" } ?? "/"])
    }
}
