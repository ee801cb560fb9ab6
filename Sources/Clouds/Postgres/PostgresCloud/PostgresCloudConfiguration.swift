import Foundation
import GatewayCore
import PostgresSupport

extension PostgresCloud {
    /// How a PostgreSQL cloud behaves. Every setting has a production default.
    public struct Configuration: Sendable {
        /// The schema holding the cloud's tables (created when missing).
        public var schema: String
        /// The limits the cloud enforces (CloudKit's by default).
        public var limits: CloudLimits
        /// How long tombstones of deleted records are kept. A change token older than the newest
        /// purged tombstone expires, forcing its holder to refetch the zone.
        public var tombstoneRetention: Duration
        /// At most this many connections per gateway process (change signals use one more each).
        public var maximumConnections: Int
        /// How long change signals wait before listening again after the connection failed.
        public var signalRetryInterval: Duration
        /// How long one operation on the database may take before its connection is closed and
        /// it fails as a network failure (`request_timeout`).
        public var requestTimeout: Duration
        /// The wall clock, replaceable so tests can age tombstones.
        public var now: @Sendable () -> Date

        public init(
            schema: String = "gateway_cloud",
            limits: CloudLimits = .cloudKit,
            tombstoneRetention: Duration = .seconds(30 * 24 * 3600),
            maximumConnections: Int = 4,
            signalRetryInterval: Duration = .seconds(1),
            requestTimeout: Duration = PostgresConnectionPool.defaultRequestTimeout,
            now: @escaping @Sendable () -> Date = { Date() }
        ) {
            self.requestTimeout = requestTimeout
            self.schema = schema
            self.limits = limits
            self.tombstoneRetention = tombstoneRetention
            self.maximumConnections = maximumConnections
            self.signalRetryInterval = signalRetryInterval
            self.now = now
        }
    }
}
