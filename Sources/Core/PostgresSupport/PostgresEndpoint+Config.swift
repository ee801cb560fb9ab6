import Foundation
import GatewayConfig

// What the `postgres` adapter and cloud kinds share of their configuration: the endpoint's keys
// and the advisory lock that keeps two gateways off one state.

extension PostgresAdvisoryLock: GatewayStateLock {}

extension PostgresEndpoint {
    /// Reads `request_timeout` (at least 1s; default 60s), for the `postgres` adapter and cloud kinds.
    public static func decodeRequestTimeout<Key: CodingKey>(_ key: Key, from container: KeyedDecodingContainer<Key>) throws -> Duration {
        guard let timeout = try container.decodeIfPresent(Located<ConfigDuration>.self, forKey: key) else {
            return PostgresConnectionPool.defaultRequestTimeout
        }
        guard timeout.value.duration >= .seconds(1) else { throw timeout.problem(.invalidValue, "must be at least 1s") }
        return timeout.value.duration
    }

    /// Reads `url` and the password from the variable named by `password_env` (`PGPASSWORD` by
    /// default), for the `postgres` adapter and cloud kinds.
    public static func decode<Key: CodingKey>(url key: Key, passwordVariable variableKey: Key, from container: KeyedDecodingContainer<Key>) throws
        -> PostgresEndpoint
    {
        let url = try container.decode(Located<String>.self, forKey: key)
        let variable = try container.decodeIfPresent(String.self, forKey: variableKey) ?? "PGPASSWORD"
        do {
            return try PostgresEndpoint(url: url.value, password: ProcessInfo.processInfo.environment[variable])
        } catch {
            throw url.problem(.invalidValue, error.message)
        }
    }
}
