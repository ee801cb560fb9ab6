import Foundation
import GatewayCore

extension EmbeddedCloud {
    /// How an embedded cloud behaves. Every setting has a production default.
    public struct Configuration: Sendable {
        /// The limits the cloud enforces (CloudKit's by default).
        public var limits: CloudLimits
        /// How long tombstones of deleted records are kept. A change token older than the newest
        /// purged tombstone expires, forcing its holder to refetch the zone.
        public var tombstoneRetention: Duration
        /// How often ``EmbeddedCloud/changeSignals(in:)`` checks the file for changes made by any
        /// process.
        public var signalPollInterval: Duration
        /// How long a writer waits for another process's write transaction before failing with
        /// ``CloudError/Code/zoneBusy``.
        public var busyTimeout: Duration
        /// The wall clock, replaceable so tests can age tombstones.
        public var now: @Sendable () -> Date

        public init(
            limits: CloudLimits = .cloudKit,
            tombstoneRetention: Duration = .seconds(30 * 24 * 3600),
            signalPollInterval: Duration = .milliseconds(100),
            busyTimeout: Duration = .seconds(30),
            now: @escaping @Sendable () -> Date = { Date() }
        ) {
            self.limits = limits
            self.tombstoneRetention = tombstoneRetention
            self.signalPollInterval = signalPollInterval
            self.busyTimeout = busyTimeout
            self.now = now
        }
    }
}
