import Foundation
import GatewayCore

/// The `gateway:` section: settings of the gateway as a whole. Every key is optional.
public struct GatewaySettings: Sendable, Decodable {
    /// `state_dir` (default `.gateway`): the process lock, the device id and, by default, the
    /// embedded cloud. Relative to the config file's folder.
    public var stateDirectory: Located<String>
    /// `compatibility_version` (default 1): records from a higher version are refused.
    public var compatibilityVersion: Int64
    /// `batch_size`: the largest upload batch; it shrinks on limit errors. `nil` (not set): the
    /// cloud's `max_operations` (200 for CloudKit Web Services, 400 for the embedded and
    /// PostgreSQL clouds), see ``GatewayConfiguration/defaultBatchSize``.
    public var batchSize: Located<Int>?
    /// `fetch_limit` (default 5000): how many changes one fetch of the change feed asks for; the
    /// cloud clamps it to its own maximum (CloudKit Web Services: 200).
    public var fetchLimit: Located<Int>
    /// `merge_policy`, `merge_prefers`, `merge_resolver`: how conflicts are resolved (default
    /// `merge`, preferring the server).
    public var merge: MergeOverride
    /// `sync_interval` (default 60s): how often the service syncs without a signal.
    public var syncInterval: ConfigDuration
    /// `debounce` (default 25ms): how long the service waits after a store's change signal for
    /// more changes before it syncs.
    public var debounce: ConfigDuration
    /// `retry`: how transient cloud errors are retried.
    public var retry: RetrySettings
    /// `on_zone_deleted` (default `recreate`): what to do when a zone was deleted in the cloud.
    public var onZoneDeleted: ZoneDeletedPolicy
    /// `join_prefers` (default `cloud`): who wins a record that a store and the cloud both hold
    /// without ever having synced it together (a new, replaced or restored store joining a zone).
    public var joinPrefers: JoinPreference
    /// `refused_edits` (default `restore`): what becomes of a local edit a read-only share refused.
    public var refusedEdits: RefusedEditsPolicy
    /// `control`: the service's HTTP control server.
    public var control: ControlSettings
    /// `force_data` (default false): send binary fields inline instead of as assets.
    public var forceData: Bool
    /// `parallelism` (default: every adapter at once, up to the machine's cores): how many
    /// adapters sync at once; `1` syncs them in order. With more than 1, an adapter whose zone
    /// another adapter is uploading to keeps downloading while that one uploads. `nil` when the
    /// config leaves it out; see ``parallelism(adapterCount:)``.
    public var parallelism: Located<Int>?

    /// How many adapters sync at once: the configured `parallelism`, or else all `adapterCount`
    /// of them bounded by the cores this process may use. Measured (`BENCHMARKS.md`): with two
    /// adapters on one zone, syncing them at once was faster than in order on two cores, since
    /// the downloading adapter writes while the uploading one reads; more adapters than cores
    /// only share the same cores.
    public func parallelism(adapterCount: Int) -> Int {
        parallelism?.value ?? max(1, min(adapterCount, ProcessInfo.processInfo.activeProcessorCount))
    }
    /// `device_id` (default: generated once and kept in `state_dir`): how this gateway stamps its
    /// writes. Set it when `state_dir` does not survive restarts (containers).
    public var deviceID: Located<String>?
    /// `stall_timeout` (default 5m; `0s` turns it off): an adapter's sync that makes no progress
    /// for this long fails with `stalled`, naming the store or cloud call it waits for.
    public var stallTimeout: ConfigDuration
    /// `shutdown_timeout` (default 10s): how long a stopping sync (SIGTERM, or a stall) may take
    /// to reach the end of its page or batch before it is abandoned.
    public var shutdownTimeout: ConfigDuration

    enum CodingKeys: String, CodingKey {
        case stateDirectory = "state_dir", compatibilityVersion = "compatibility_version", batchSize = "batch_size"
        case fetchLimit = "fetch_limit"
        case syncInterval = "sync_interval", debounce, retry, onZoneDeleted = "on_zone_deleted", control, deviceID = "device_id"
        case forceData = "force_data", parallelism, stallTimeout = "stall_timeout", shutdownTimeout = "shutdown_timeout"
        case joinPrefers = "join_prefers", refusedEdits = "refused_edits"
    }

    public init() {
        stateDirectory = Located(".gateway")
        compatibilityVersion = 1
        batchSize = nil
        fetchLimit = Located(SyncConfiguration.defaultFetchLimit)
        merge = MergeOverride()
        syncInterval = ConfigDuration(.seconds(60), text: "60s")
        debounce = ConfigDuration(.milliseconds(25), text: "25ms")
        retry = RetrySettings()
        onZoneDeleted = .recreate
        joinPrefers = .cloud
        refusedEdits = .restore
        control = ControlSettings()
        deviceID = nil
        forceData = false
        parallelism = nil
        stallTimeout = ConfigDuration(.seconds(300), text: "5m")
        shutdownTimeout = ConfigDuration(.seconds(10), text: "10s")
    }

    public init(from decoder: any Decoder) throws {
        self.init()
        let container = try decoder.container(keyedBy: CodingKeys.self)
        stateDirectory = try container.decodeIfPresent(Located<String>.self, forKey: .stateDirectory) ?? stateDirectory
        guard !stateDirectory.value.isEmpty else { throw stateDirectory.problem(.invalidValue, "must not be empty") }
        let version = try container.decodeIfPresent(Located<Int64>.self, forKey: .compatibilityVersion)
        if let version, version.value < 0 { throw version.problem(.invalidValue, "must be 0 or more") }
        compatibilityVersion = version?.value ?? compatibilityVersion
        batchSize = try container.decodeIfPresent(Located<Int>.self, forKey: .batchSize)
        if let batchSize, batchSize.value < 1 { throw batchSize.problem(.invalidValue, "must be at least 1") }
        fetchLimit = try container.decodeIfPresent(Located<Int>.self, forKey: .fetchLimit) ?? fetchLimit
        guard fetchLimit.value >= 1 else { throw fetchLimit.problem(.invalidValue, "must be at least 1") }
        parallelism = try container.decodeIfPresent(Located<Int>.self, forKey: .parallelism)
        if let parallelism, !(1...64).contains(parallelism.value) { throw parallelism.problem(.invalidValue, "must be from 1 to 64") }
        merge = try MergeOverride(from: decoder)
        syncInterval = try container.decodeIfPresent(Located<ConfigDuration>.self, forKey: .syncInterval).map {
            guard $0.value.duration > .zero else { throw $0.problem(.invalidValue, "must be longer than 0s") }
            return $0.value
        } ?? syncInterval
        debounce = try container.decodeIfPresent(ConfigDuration.self, forKey: .debounce) ?? debounce
        retry = try container.decodeIfPresent(RetrySettings.self, forKey: .retry) ?? retry
        onZoneDeleted = try container.decodeIfPresent(ZoneDeletedPolicy.self, forKey: .onZoneDeleted) ?? onZoneDeleted
        joinPrefers = try container.decodeIfPresent(JoinPreference.self, forKey: .joinPrefers) ?? joinPrefers
        refusedEdits = try container.decodeIfPresent(RefusedEditsPolicy.self, forKey: .refusedEdits) ?? refusedEdits
        control = try container.decodeIfPresent(ControlSettings.self, forKey: .control) ?? control
        forceData = try container.decodeIfPresent(Bool.self, forKey: .forceData) ?? false
        stallTimeout = try container.decodeIfPresent(ConfigDuration.self, forKey: .stallTimeout) ?? stallTimeout
        shutdownTimeout = try container.decodeIfPresent(Located<ConfigDuration>.self, forKey: .shutdownTimeout).map {
            guard $0.value.duration > .zero else { throw $0.problem(.invalidValue, "must be longer than 0s") }
            return $0.value
        } ?? shutdownTimeout
        deviceID = try container.decodeIfPresent(Located<String>.self, forKey: .deviceID)
        if let deviceID, !DeviceIdentity.isValid(deviceID.value) {
            throw deviceID.problem(.invalidValue, "use 1 to 64 letters, digits, '-', '_' or '.'")
        }
    }
}

/// `merge_policy`, `merge_prefers` and `merge_resolver`, at the gateway, adapter or record-type
/// level; a level that leaves one out inherits it from the level above.
public struct MergeOverride: Sendable, Decodable {
    public var policy: Located<MergePolicy>?
    public var prefers: Located<MergePreference>?
    public var resolver: Located<String>?

    enum CodingKeys: String, CodingKey {
        case policy = "merge_policy", prefers = "merge_prefers", resolver = "merge_resolver"
    }

    public init(policy: MergePolicy? = nil, prefers: MergePreference? = nil, resolver: String? = nil) {
        self.policy = policy.map { Located($0) }
        self.prefers = prefers.map { Located($0) }
        self.resolver = resolver.map { Located($0) }
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        policy = try container.decodeIfPresent(Located<MergePolicy>.self, forKey: .policy)
        prefers = try container.decodeIfPresent(Located<MergePreference>.self, forKey: .prefers)
        resolver = try container.decodeIfPresent(Located<String>.self, forKey: .resolver)
    }

    /// These settings on top of `base`.
    public func applied(to base: MergeSettings) -> MergeSettings {
        var settings = base
        if let policy { settings.policy = policy.value }
        if let prefers { settings.prefers = prefers.value }
        if let resolver { settings.resolverName = resolver.value }
        if settings.policy != .custom { settings.resolverName = nil }
        return settings
    }

    public var isEmpty: Bool { policy == nil && prefers == nil && resolver == nil }
}

/// `retry: { max_attempts, base_delay, max_delay }`: how transient cloud errors are retried.
public struct RetrySettings: Sendable, Decodable {
    /// `max_attempts` (default 5): tries in all before the adapter's sync fails.
    public var maxAttempts: Int
    /// `base_delay` (default 500ms): the first backoff; it doubles per attempt.
    public var baseDelay: ConfigDuration
    /// `max_delay` (default 60s): the longest backoff.
    public var maxDelay: ConfigDuration

    enum CodingKeys: String, CodingKey {
        case maxAttempts = "max_attempts", baseDelay = "base_delay", maxDelay = "max_delay"
    }

    public init() {
        maxAttempts = 5
        baseDelay = ConfigDuration(.milliseconds(500), text: "500ms")
        maxDelay = ConfigDuration(.seconds(60), text: "60s")
    }

    public init(from decoder: any Decoder) throws {
        self.init()
        let container = try decoder.container(keyedBy: CodingKeys.self)
        if let attempts = try container.decodeIfPresent(Located<Int>.self, forKey: .maxAttempts) {
            guard attempts.value >= 1 else { throw attempts.problem(.invalidValue, "must be at least 1") }
            maxAttempts = attempts.value
        }
        baseDelay = try container.decodeIfPresent(ConfigDuration.self, forKey: .baseDelay) ?? baseDelay
        if let maximum = try container.decodeIfPresent(Located<ConfigDuration>.self, forKey: .maxDelay) {
            guard maximum.value.duration >= baseDelay.duration else {
                throw maximum.problem(.invalidValue, "must be at least base_delay (\(baseDelay))")
            }
            maxDelay = maximum.value
        }
    }

    public var policy: RetryPolicy {
        RetryPolicy(maxAttempts: maxAttempts, baseDelay: baseDelay.duration, maxDelay: maxDelay.duration)
    }
}

/// `control: { listen, token }`: the service's HTTP control server.
public struct ControlSettings: Sendable, Decodable {
    /// `listen` (default `127.0.0.1:8787`): `host:port` to bind.
    public var listen: Located<String>
    /// `token` (default empty): the bearer token `POST` requests need; required for every
    /// request when `listen` is not a loopback address. Take it from the environment:
    /// `token: "${GATEWAY_TOKEN}"`.
    public var token: String
    /// The host part of `listen`.
    public var host: String
    /// The port part of `listen`.
    public var port: Int

    enum CodingKeys: String, CodingKey { case listen, token }

    public init() {
        listen = Located("127.0.0.1:8787")
        token = ""
        host = "127.0.0.1"
        port = 8787
    }

    public init(from decoder: any Decoder) throws {
        self.init()
        let container = try decoder.container(keyedBy: CodingKeys.self)
        token = try container.decodeIfPresent(String.self, forKey: .token) ?? ""
        if let listen = try container.decodeIfPresent(Located<String>.self, forKey: .listen) {
            guard let separator = listen.value.lastIndex(of: ":"),
                let port = Int(listen.value[listen.value.index(after: separator)...]), (0...65_535).contains(port),
                separator > listen.value.startIndex
            else {
                throw listen.problem(.invalidValue, "expected host:port, such as 127.0.0.1:8787, found '\(listen.value)'")
            }
            self.listen = listen
            host = String(listen.value[..<separator]).trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
            self.port = port
        }
        if !isLoopback, token.isEmpty {
            throw self.listen.problem(
                .inconsistent, "listening on a non-loopback address needs control.token; set it from the environment: token: \"${GATEWAY_TOKEN}\"")
        }
    }

    /// Whether `listen` binds to this machine only.
    public var isLoopback: Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }
}

/// What becomes of a local edit of another user's zone that its read-only share refused.
public enum RefusedEditsPolicy: String, ConfigChoice {
    /// Keep it in `<state_dir>/refused/<adapter>.jsonl` and write the owner's version back into
    /// the store, so it stays a replica of the zone.
    case restore
    /// Leave it in the store, marked failed (`permissionFailure`) until it changes or the owner's
    /// next change of the record replaces it.
    case keep
}
