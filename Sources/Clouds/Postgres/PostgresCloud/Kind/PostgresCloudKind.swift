import Foundation
import GatewayCore
import GatewayConfig
import PostgresSupport

/// `kind: postgres`: the cloud in a PostgreSQL database that many gateways share.
///
/// Keys: `url` (required, `postgres://user@host:port/database[?sslmode=…]`), `password_env`
/// (the variable holding the password; default `PGPASSWORD`), `schema` (default
/// `gateway_cloud`), `max_connections` (default 4), `limits` (as for `embedded`, over
/// ``CloudLimits/postgresCloud``: 1,000 operations per request), `requests_in_flight` (modify
/// requests an upload keeps in flight per zone, 1 to 8, default 1: for a server across a network),
/// `tombstone_retention` (default 30d) and `request_timeout` (default 60s).
public struct PostgresCloudKind: CloudKind {
    public let name = "postgres"

    public init() {}

    enum Keys: String, CodingKey {
        case kind, url, passwordEnv = "password_env", schema, maxConnections = "max_connections", limits
        case tombstoneRetention = "tombstone_retention", requestTimeout = "request_timeout", requestsInFlight = "requests_in_flight"
    }

    public func decodePlan(from decoder: any Decoder, context: ConfigContext) throws -> any CloudPlan {
        let container = try decoder.container(keyedBy: Keys.self)
        _ = try container.decodeIfPresent(String.self, forKey: .kind)
        let endpoint = try PostgresEndpoint.decode(url: .url, passwordVariable: .passwordEnv, from: container)
        var configuration = PostgresCloud.Configuration()
        if let schema = try container.decodeIfPresent(Located<String>.self, forKey: .schema) {
            guard !schema.value.isEmpty, schema.value.utf8.count <= 50 else {
                throw schema.problem(.invalidValue, "must be a schema name of 1 to 50 bytes")
            }
            configuration.schema = schema.value
        }
        if let connections = try container.decodeIfPresent(Located<Int>.self, forKey: .maxConnections) {
            guard (1...100).contains(connections.value) else { throw connections.problem(.invalidValue, "must be between 1 and 100") }
            configuration.maximumConnections = connections.value
        }
        configuration.limits = try container.decodeIfPresent(CloudLimitSettings.self, forKey: .limits)?.applied(to: .postgresCloud) ?? .postgresCloud
        if let inFlight = try container.decodeIfPresent(Located<Int>.self, forKey: .requestsInFlight) {
            guard (1...8).contains(inFlight.value) else { throw inFlight.problem(.invalidValue, "must be from 1 to 8") }
            configuration.limits.modifyRequestsInFlight = inFlight.value
        }
        if let retention = try container.decodeIfPresent(Located<ConfigDuration>.self, forKey: .tombstoneRetention) {
            guard retention.value.duration > .zero else { throw retention.problem(.invalidValue, "must be longer than 0s") }
            configuration.tombstoneRetention = retention.value.duration
        }
        configuration.requestTimeout = try PostgresEndpoint.decodeRequestTimeout(.requestTimeout, from: container)
        return PostgresCloudPlan(endpoint: endpoint, configuration: configuration)
    }
}

struct PostgresCloudPlan: CloudPlan {
    /// Keeps every user's zones; the gateway acts as `cloud.user`.
    var keepsUsers: Bool { true }

    let endpoint: PostgresEndpoint
    let configuration: PostgresCloud.Configuration

    var limits: CloudLimits { configuration.limits }

    func check() async throws {
        do {
            try await PostgresCloud.check(endpoint)
        } catch let error as CloudError {
            throw GatewayError(.cloudUnavailable, "the postgres cloud: \(error.message)", underlying: error)
        }
    }

    func open() async throws -> any CloudDatabase {
        try await PostgresCloud.open(endpoint, configuration: configuration)
    }

    func lockGatewayState(deviceID: String) async throws -> (any GatewayStateLock)? {
        let name = "\(configuration.schema)/gateway-state/\(deviceID)"
        guard let lock = try await PostgresAdvisoryLock.tryAcquire(name, on: endpoint) else {
            throw GatewayError(
                .alreadyRunning,
                "another gateway process with device id \(deviceID) is syncing through the postgres cloud \(endpoint); "
                    + "stop it, or give each gateway its own state_dir or device_id")
        }
        return lock
    }
}
