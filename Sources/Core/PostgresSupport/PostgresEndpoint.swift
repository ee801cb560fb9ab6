import Foundation
import PostgresNIO

/// Where a PostgreSQL server is and how to log in, read from a `postgres://` URL.
///
/// `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?sslmode=disable|prefer|require][&host=/socket/dir]`.
/// A password in the URL works but belongs in the environment: pass it as `password` (the
/// gateway reads `PGPASSWORD` or the variable named by `password_env`). The description never
/// shows the password.
public struct PostgresEndpoint: Sendable, Equatable, CustomStringConvertible {
    /// How the connection uses TLS.
    public enum TLSMode: String, Sendable, CaseIterable {
        /// Plain TCP (the default for loopback and Unix sockets).
        case disable
        /// TLS when the server offers it.
        case prefer
        /// TLS or no connection.
        case require
    }

    public var host: String
    public var port: Int
    /// A folder holding the server's Unix socket; when set, `host` is not used.
    public var socketDirectory: String?
    public var username: String
    public var password: String?
    public var database: String
    public var tls: TLSMode

    public init(
        host: String = "127.0.0.1", port: Int = 5432, socketDirectory: String? = nil, username: String, password: String? = nil,
        database: String, tls: TLSMode = .disable
    ) {
        self.host = host
        self.port = port
        self.socketDirectory = socketDirectory
        self.username = username
        self.password = password
        self.database = database
        self.tls = tls
    }

    /// Reads a `postgres://` or `postgresql://` URL. `password` (from the environment) wins over
    /// one written in the URL.
    public init(url text: String, password: String? = nil) throws(PostgresFailure) {
        guard let components = URLComponents(string: text), let scheme = components.scheme,
            scheme == "postgres" || scheme == "postgresql"
        else {
            throw PostgresFailure(.invalidURL, "the PostgreSQL URL must look like postgres://user@host:5432/database")
        }
        guard let user = components.user, !user.isEmpty else {
            throw PostgresFailure(.invalidURL, "the PostgreSQL URL names no user; write postgres://USER@host/database")
        }
        let database = String(components.path.drop(while: { $0 == "/" }))
        guard !database.isEmpty, !database.contains("/") else {
            throw PostgresFailure(.invalidURL, "the PostgreSQL URL names no database; write postgres://user@host/DATABASE")
        }
        var tls = TLSMode.disable
        var socketDirectory: String?
        for item in components.queryItems ?? [] {
            switch item.name {
            case "sslmode":
                guard let value = item.value, let mode = TLSMode(rawValue: value) else {
                    throw PostgresFailure(
                        .invalidURL, "sslmode must be one of \(TLSMode.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                tls = mode
            case "host":
                socketDirectory = item.value
            default:
                throw PostgresFailure(.invalidURL, "the PostgreSQL URL has an unknown parameter '\(item.name)'; known: sslmode, host")
            }
        }
        self.init(
            host: components.host.flatMap { $0.isEmpty ? nil : $0 } ?? "127.0.0.1", port: components.port ?? 5432,
            socketDirectory: socketDirectory, username: user.removingPercentEncoding ?? user,
            password: password ?? components.password?.removingPercentEncoding, database: database.removingPercentEncoding ?? database,
            tls: tls)
    }

    public var description: String {
        let place = socketDirectory.map { "socket \($0)/.s.PGSQL.\(port)" } ?? "\(host):\(port)"
        return "postgres://\(username)@\(place)/\(database)"
    }

    /// The same server and login with another database.
    public func with(database: String) -> PostgresEndpoint {
        var copy = self
        copy.database = database
        return copy
    }

    func connectionConfiguration() throws -> PostgresConnection.Configuration {
        var configuration: PostgresConnection.Configuration
        if let socketDirectory {
            configuration = .init(
                unixSocketPath: "\(socketDirectory)/.s.PGSQL.\(port)", username: username, password: password, database: database)
        } else {
            let tlsSetting: PostgresConnection.Configuration.TLS
            switch tls {
            case .disable: tlsSetting = .disable
            case .prefer: tlsSetting = .prefer(try NIOSSLContext(configuration: .makeClientConfiguration()))
            case .require: tlsSetting = .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
            }
            configuration = .init(host: host, port: port, username: username, password: password, database: database, tls: tlsSetting)
        }
        configuration.options.connectTimeout = .seconds(10)
        return configuration
    }
}
