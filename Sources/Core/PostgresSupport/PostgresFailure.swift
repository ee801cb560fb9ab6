import Foundation
import GatewayCore
import PostgresNIO

/// A PostgreSQL problem: bad settings, an unreachable server, a refused login or a failed
/// statement. The message says what to do; it never contains a password or row data.
public struct PostgresFailure: Error, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable {
        /// The `url` setting cannot be used.
        case invalidURL
        /// The server cannot be reached or closed the connection.
        case connectionFailed
        /// The server refused the login.
        case authenticationFailed
        /// The database, schema or a table the gateway expects does not exist.
        case missingObject
        /// Another transaction held a lock or a serialization check failed; retrying helps.
        case busy
        /// The disk or a server limit is full.
        case resourceExhausted
        /// Any other failed statement.
        case statementFailed
        /// An operation ran past its deadline (`request_timeout`); its connection was closed.
        case timedOut
    }

    public var code: Code
    public var message: String
    /// SQLSTATE of a server error (for example `42P01` for a missing table).
    public var sqlState: String?
    public var underlying: (any Error)?

    public init(_ code: Code, _ message: String, sqlState: String? = nil, underlying: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.sqlState = sqlState
        self.underlying = underlying
    }

    public var description: String { message }

    /// Whether a retry of the same work may succeed.
    public var isTransient: Bool { code == .connectionFailed || code == .busy || code == .timedOut }

    /// Describes `error` from PostgresNIO while running `what` on `endpoint`.
    ///
    /// Server messages of data errors (SQLSTATE classes 22 and 23) can quote values, so only their
    /// SQLSTATE is kept; messages about schema objects and logins are kept, they name no row data.
    public static func from(_ error: any Error, doing what: String, on endpoint: PostgresEndpoint) -> PostgresFailure {
        if let failure = error as? PostgresFailure { return failure }
        guard let error = error as? PSQLError else {
            return PostgresFailure(.connectionFailed, "\(what) on \(endpoint) failed: \(error)", underlying: error)
        }
        let state = error.serverInfo?[.sqlState]
        let serverMessage = error.serverInfo?[.message] ?? ""
        switch error.code {
        case .server:
            let stateClass = state.map { String($0.prefix(2)) } ?? ""
            switch stateClass {
            case "28":
                return PostgresFailure(
                    .authenticationFailed,
                    "\(endpoint) refused the login (\(serverMessage)); check the user and the password (PGPASSWORD or password_env)",
                    sqlState: state, underlying: error)
            case "3D", "3F":
                return PostgresFailure(.missingObject, "\(what) on \(endpoint) failed: \(serverMessage)", sqlState: state, underlying: error)
            case "42" where state == "42P01" || state == "42703" || state == "42883" || state == "42704":
                return PostgresFailure(.missingObject, "\(what) on \(endpoint) failed: \(serverMessage)", sqlState: state, underlying: error)
            case "40", "55":
                return PostgresFailure(
                    .busy, "\(what) on \(endpoint) met a concurrent transaction (SQLSTATE \(state ?? "?")); retry",
                    sqlState: state, underlying: error)
            case "53":
                return PostgresFailure(
                    .resourceExhausted, "\(what) on \(endpoint) failed: the server is out of resources (\(serverMessage))",
                    sqlState: state, underlying: error)
            case "08", "57":
                return PostgresFailure(
                    .connectionFailed, "\(what) on \(endpoint) failed: \(serverMessage)", sqlState: state, underlying: error)
            case "22", "23":
                // The server's message may quote the value; the objects it names do not.
                let place = dataPlace(error)
                return PostgresFailure(
                    .statementFailed, "\(what) on \(endpoint) was refused: \(dataProblem(state))\(place) (SQLSTATE \(state ?? "?"))",
                    sqlState: state, underlying: error)
            default:
                return PostgresFailure(
                    .statementFailed, "\(what) on \(endpoint) failed: \(serverMessage) (SQLSTATE \(state ?? "?"))",
                    sqlState: state, underlying: error)
            }
        case .unsupportedAuthMechanism, .authMechanismRequiresPassword, .saslError:
            return PostgresFailure(
                .authenticationFailed,
                "\(endpoint) asks for a login the gateway cannot give (\(error.code)); set the password in PGPASSWORD or password_env",
                underlying: error)
        case .connectionError:
            return PostgresFailure(
                .connectionFailed,
                "\(what): cannot connect to \(endpoint) (\(connectionReason(error.underlying))); is the server running and reachable?",
                underlying: error)
        default:
            return PostgresFailure(
                .connectionFailed, "\(what) on \(endpoint) failed: \(error.code); is the server running and reachable?", underlying: error)
        }
    }

    /// What a data error (SQLSTATE classes 22 and 23) means, without the value.
    public static func dataProblem(_ state: String?) -> String {
        switch state {
        case "22P02", "22007", "22008", "22P05", "22023": return "a value is not valid input for its column's type"
        case "22001": return "a value is too long for its column"
        case "22003": return "a number is out of its column's range"
        case "22012": return "a division by zero"
        case "22004", "23502": return "a column that takes no NULL got none"
        case "23505": return "a unique index already holds that key"
        case "23503": return "a foreign key refers to a row that does not exist, or a row others refer to was removed"
        case "23514": return "a check constraint refused a row"
        case "23P01": return "an exclusion constraint refused a row"
        case "P0001": return "a trigger refused a row (RAISE EXCEPTION)"
        default: return state?.hasPrefix("23") == true ? "a constraint refused a row" : "a value the database cannot take"
        }
    }

    /// The objects a data error names (table, column, constraint: never the value), as
    /// ` (table t, column c)`, or empty.
    public static func dataPlace(_ error: PSQLError) -> String {
        let objects = [
            error.serverInfo?[.tableName].map { "table \($0)" }, error.serverInfo?[.columnName].map { "column \($0)" },
            error.serverInfo?[.constraintName].map { "constraint \($0)" },
        ].compactMap { $0 }
        return objects.isEmpty ? "" : " (\(objects.joined(separator: ", ")))"
    }

    /// Why a connection could not be made, in a few words (the networking library's own
    /// description is for its developers).
    static func connectionReason(_ underlying: (any Error)?) -> String {
        let text = underlying.map { "\($0)" } ?? ""
        let reasons: [(String, String)] = [
            ("Connection refused", "connection refused"), ("No route to host", "no route to host"),
            ("Network is unreachable", "network unreachable"), ("timed out", "the connection timed out"),
            ("Timeout", "the connection timed out"), ("No such file or directory", "no server socket there"),
            ("resolve", "the host name could not be resolved"), ("NXDOMAIN", "the host name could not be resolved"),
            ("TLS", "the TLS handshake failed"), ("SSL", "the TLS handshake failed"),
        ]
        return reasons.first { text.contains($0.0) }?.1 ?? "the connection failed"
    }

    /// The same problem as the cloud reports it to the synchronizer.
    public var cloudError: CloudError {
        switch code {
        case .connectionFailed, .timedOut: CloudError(.networkFailure, message, retryAfter: .seconds(1), underlying: self)
        case .busy: CloudError(.zoneBusy, message, retryAfter: .seconds(1), underlying: self)
        case .authenticationFailed: CloudError(.notAuthenticated, message, underlying: self)
        case .resourceExhausted: CloudError(.quotaExceeded, message, underlying: self)
        case .invalidURL, .missingObject, .statementFailed: CloudError(.internalError, message, underlying: self)
        }
    }
}
