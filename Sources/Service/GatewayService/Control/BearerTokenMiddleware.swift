import Hummingbird

/// Refuses a request without `Authorization: Bearer <control.token>` before its route runs,
/// when the route group requires the token: 403 while no token is configured, 401 otherwise.
struct BearerTokenMiddleware<Context: RequestContext>: RouterMiddleware {
    let token: String
    let required: Bool

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard required else { return try await next(request, context) }
        guard !token.isEmpty else { return ControlServer.text(.forbidden, "set control.token to allow this request\n") }
        guard request.headers[.authorization] == "Bearer \(token)" else {
            return ControlServer.text(.unauthorized, "a bearer token is required\n")
        }
        return try await next(request, context)
    }
}
