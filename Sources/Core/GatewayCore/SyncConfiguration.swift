import Foundation

/// Settings of a ``Synchronizer`` that apply to every adapter.
public struct SyncConfiguration: Sendable {
    /// This gateway's model compatibility version. Records stamped with a higher one are refused.
    public var compatibilityVersion: Int64
    /// Identifies this gateway in the records it writes. Records are stamped with
    /// `<deviceID>:<adapter name>@<version>` (the store's change-log version of the change
    /// uploaded), so each replica recognises its own writes (for example a save whose answer was
    /// lost) while several adapters of one gateway share a zone, and can tell a local change made
    /// before that upload from one made after it.
    public var deviceID: String
    /// The reserved field holding the compatibility version (SyncKit's name by default).
    public var compatibilityVersionField: String
    /// The reserved field holding the writer stamp, `<deviceID>:<adapter>@<version>` (SyncKit's
    /// name by default).
    public var deviceIDField: String
    /// The reserved field holding a record's superseded values (see
    /// ``RecordMetadata/superseded``): 8 bytes per (field name, value) digest, newest first.
    public var supersededValuesField: String
    /// How many changes one fetch asks for; the cloud clamps it to
    /// ``CloudLimits/maxResultsPerFetch``.
    public var fetchLimit: Int
    /// How transient cloud errors are retried.
    public var retry: RetryPolicy
    /// Resolvers for ``MergePolicy/custom``, by name.
    public var resolvers: [String: any ConflictResolver]
    /// Batch resolvers for ``MergePolicy/custom`` (resolver processes), by name; a name is looked
    /// up here first.
    public var batchResolvers: [String: any BatchConflictResolver]
    /// How many adapters sync at once (at least 1). With 1 they run in order; with more, an
    /// adapter whose zone another adapter of the sync is uploading to keeps downloading until that
    /// adapter is done, so a parallel sync sees every change an ordered one would.
    public var parallelism: Int
    /// An adapter's sync that makes no progress (no store or cloud call returns) for this long
    /// fails with ``SyncError/Code/stalled``, naming the call it waits for; `nil` never fails.
    public var stallTimeout: Duration?
    /// How long an adapter's sync may take to stop once cancelled (the service shutting down, or
    /// a stall) before it is reported failed and left behind.
    public var stopTimeout: Duration
    /// Where the local edits of a read-only shared zone that the cloud refused are kept before
    /// the zone's versions replace them in the store (``AdapterSyncReport/refusedEdits``); `nil`
    /// leaves them in the store, marked failed.
    public var refusedEditsDirectory: String?

    /// The default of ``fetchLimit``; the cloud clamps it to its own maximum
    /// (``CloudLimits/maxResultsPerFetch``). Measured (`BENCHMARKS.md`, 2026-11-26): a PostgreSQL
    /// store downloading 100,000 records from the embedded cloud took 2.6–3.3 s in pages of 2,000
    /// against 4.1–6.1 s in pages of 500, the per-page round trips and commits being most of it,
    /// and SQLite → cloud → PostgreSQL 2.03 → 1.95 s in pages of 5,000 against 2,000; a SQLite store
    /// was no faster or slower. Three pages in memory at once stay a few MB.
    public static let defaultFetchLimit = 5_000

    /// The default of ``stallTimeout``: far above every call's own time limit.
    public static let defaultStallTimeout: Duration = .seconds(300)

    /// A configuration; the defaults are the gateway's documented config defaults.
    public init(
        compatibilityVersion: Int64 = 1, deviceID: String = UUID().uuidString,
        compatibilityVersionField: String = "QSCloudKitModelCompatibilityVersionKey",
        deviceIDField: String = "QSCloudKitDeviceUUIDKey", supersededValuesField: String = "GatewaySupersededValues", fetchLimit: Int = SyncConfiguration.defaultFetchLimit, retry: RetryPolicy = RetryPolicy(),
        resolvers: [String: any ConflictResolver] = [:], batchResolvers: [String: any BatchConflictResolver] = [:], parallelism: Int = 1,
        stallTimeout: Duration? = SyncConfiguration.defaultStallTimeout, stopTimeout: Duration = .seconds(10)
    ) {
        self.stallTimeout = stallTimeout
        self.stopTimeout = stopTimeout
        self.compatibilityVersion = compatibilityVersion
        self.deviceID = deviceID
        self.compatibilityVersionField = compatibilityVersionField
        self.deviceIDField = deviceIDField
        self.supersededValuesField = supersededValuesField
        self.fetchLimit = fetchLimit
        self.retry = retry
        self.resolvers = resolvers
        self.batchResolvers = batchResolvers
        self.parallelism = max(1, parallelism)
    }
}

/// How transient cloud errors (`requestRateLimited`, `zoneBusy`, `serviceUnavailable`,
/// `networkFailure`) are retried.
public struct RetryPolicy: Sendable, Equatable {
    /// How many times a call is tried in all before the sync fails.
    public var maxAttempts: Int
    /// The first backoff delay when the server gives no `retryAfter`; it doubles per attempt.
    public var baseDelay: Duration
    /// The longest backoff delay. A server's `retryAfter` is honoured as given.
    public var maxDelay: Duration

    /// Retries with exponential back-off from `baseDelay`, at most `maxDelay` apart, `maxAttempts`
    /// in all.
    public init(maxAttempts: Int = 5, baseDelay: Duration = .milliseconds(500), maxDelay: Duration = .seconds(60)) {
        self.maxAttempts = max(1, maxAttempts)
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
    }

    /// The delay before attempt `attempt + 1` after `attempt` failures (1-based), with jitter in
    /// [0.5, 1) of the exponential value so that many gateways do not retry in step.
    public func backoff(afterAttempt attempt: Int, jitter: Double) -> Duration {
        let exponent = min(attempt - 1, 30)
        let raw = baseDelay * (1 << exponent)
        let capped = raw > maxDelay ? maxDelay : raw
        return capped * (0.5 + 0.5 * min(max(jitter, 0), 1))
    }
}

/// What to do when an adapter's zone was deleted in the cloud.
public enum ZoneDeletedPolicy: String, Sendable, Codable, CaseIterable {
    /// Create the zone again and upload everything (the default).
    case recreate
    /// Stop syncing that adapter and report it until it is reset.
    case pause
    /// Delete the local data too, then follow the (new, empty) zone.
    case mirror
}

/// Settings of one adapter's sync.
public struct AdapterSyncOptions: Sendable {
    /// The largest upload batch (saves and deletes together).
    public var batchSize: Int
    /// The merge behaviour for this adapter.
    public var merge: MergeSettings
    /// Merge behaviour overrides per record type.
    public var mergeByRecordType: [String: MergeSettings]
    /// What to do when the zone was deleted.
    public var onZoneDeleted: ZoneDeletedPolicy
    /// The fields encrypted before upload, and the keys; `nil` when none are. Encrypted fields
    /// that arrive from the cloud are decrypted whenever keys are given.
    public var encryption: FieldEncryption?
    /// Which binary fields travel as assets.
    public var assets: AssetSettings
    /// Who wins a record the store and the cloud both hold without a common ancestor; the
    /// merge policy is not asked, since neither side's values are an edit of the other's.
    public var joinPrefers: JoinPreference
    /// How many changes one download page of this adapter asks for; `nil`: the gateway's
    /// ``SyncConfiguration/fetchLimit``.
    public var fetchLimit: Int?

    /// Options; the defaults are the gateway's documented config defaults.
    public init(
        batchSize: Int = 200, merge: MergeSettings = MergeSettings(), mergeByRecordType: [String: MergeSettings] = [:],
        onZoneDeleted: ZoneDeletedPolicy = .recreate, encryption: FieldEncryption? = nil, assets: AssetSettings = AssetSettings(),
        joinPrefers: JoinPreference = .cloud, fetchLimit: Int? = nil
    ) {
        self.batchSize = max(1, batchSize)
        self.merge = merge
        self.mergeByRecordType = mergeByRecordType
        self.onZoneDeleted = onZoneDeleted
        self.encryption = encryption
        self.assets = assets
        self.joinPrefers = joinPrefers
        self.fetchLimit = fetchLimit.map { max(1, $0) }
    }

    /// The merge settings for a record type.
    public func mergeSettings(for recordType: String?) -> MergeSettings {
        recordType.flatMap { mergeByRecordType[$0] } ?? merge
    }
}

/// An adapter with its sync settings.
public struct SyncedAdapter: Sendable {
    /// The store.
    public var adapter: any ModelAdapter
    /// How it syncs.
    public var options: AdapterSyncOptions

    /// An adapter with its options.
    public init(_ adapter: any ModelAdapter, options: AdapterSyncOptions = AdapterSyncOptions()) {
        self.adapter = adapter
        self.options = options
    }
}

/// Time and chance as the synchronizer sees them, replaceable so tests run retries instantly and
/// reproducibly.
public struct SyncEnvironment: Sendable {
    /// Waits (or, in tests, records the wait).
    public var sleep: @Sendable (Duration) async throws -> Void
    /// The wall clock.
    public var now: @Sendable () -> Date
    /// A number in [0, 1) for backoff jitter.
    public var jitter: @Sendable () -> Double
    /// The monotonic clock of the stall guard: how long a pass made no progress, and how long a
    /// stopped pass has to end.
    public var clock: any SyncClock

    /// An environment with other sleeping, clock and jitter than the live one (tests use it to make
    /// time deterministic).
    public init(
        sleep: @escaping @Sendable (Duration) async throws -> Void, now: @escaping @Sendable () -> Date,
        jitter: @escaping @Sendable () -> Double, clock: any SyncClock = LiveSyncClock()
    ) {
        self.sleep = sleep
        self.now = now
        self.jitter = jitter
        self.clock = clock
    }

    /// Real time and system randomness.
    public static let live = SyncEnvironment(
        sleep: { try await Task.sleep(for: $0) }, now: { Date() }, jitter: { Double.random(in: 0..<1) })
}
