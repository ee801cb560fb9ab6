import GatewayCore

/// A kind of adapter that `config.yaml` can name in `kind:`. Register one in a
/// ``GatewayRegistry`` to add a backend without touching the gateway.
///
/// The kind reads its own keys from the adapter entry; the keys every adapter has
/// (``AdapterSettings``) are already decoded. Keys that neither asks for are reported as unknown,
/// with a suggestion, so a kind must ask for every key it understands (`decodeIfPresent` counts).
public protocol AdapterKind: Sendable {
    /// The `kind:` value, such as `sqlite`.
    var name: String { get }

    /// Reads this kind's keys of one adapter entry. Must not touch the store: decoding a config
    /// writes nothing.
    /// - Throws: ``ConfigError`` built with `decoder.configProblem` or ``Located/problem(_:_:)``,
    ///   so messages point at the right line.
    func decodePlan(settings: AdapterSettings, from decoder: any Decoder, context: ConfigContext) throws -> any AdapterPlan
}

/// A decoded adapter entry, ready to check and to open.
public protocol AdapterPlan: Sendable {
    /// The record types the adapter syncs, with their shared per-type settings.
    var recordTypes: [RecordTypeSettings] { get }

    /// Identifies the store; see the default in the extension.
    var storeIdentity: String? { get }

    /// The most changes one download page should carry for this kind of store when the gateway's
    /// `fetch_limit` is larger (an adapter's own `fetch_limit` overrides both); `nil`, the
    /// default: no preference.
    var largestDownloadPage: Int? { get }

    /// Checks the store without changing it: it can be reached and has the configured tables and
    /// columns.
    /// - Throws: ``ConfigError`` with code `storeMismatch` for a store that does not fit the
    ///   configuration, any other error for a store that cannot be reached.
    func check() async throws

    /// Checks the store as ``check()`` does, right before ``open()``: a kind may keep what the
    /// check started (a plugin's process) for the open that follows. The default: ``check()``.
    /// - Throws: like ``check()``.
    func checkBeforeOpening() async throws

    /// Stops what ``checkBeforeOpening()`` kept when the open it was for does not follow (another
    /// adapter failed, the state folder is locked). The default: nothing.
    func discardCheck() async

    /// Opens the adapter, installing what it needs in the store.
    /// - Throws: like ``check()``.
    func open() async throws -> any ModelAdapter

    /// Reads what `gateway status` shows, changing nothing where the kind can: the default
    /// opens the adapter (which may set the store up) and reads through it; the built-in kinds
    /// read without writing, so an account with read access only can run `gateway status`.
    /// - Throws: like ``check()``.
    func readStatus() async throws -> StoreStatusSnapshot

    /// Whether ``deleteStore()`` can delete the store (for `on_revoke: delete`); `false` by default.
    var canDeleteStore: Bool { get }

    /// Deletes the store and the sync state kept with it, after its adapter closed: a shared
    /// zone's copy once the share is gone, under `on_revoke: delete`.
    func deleteStore() async throws
}

extension AdapterPlan {
    public var canDeleteStore: Bool { false }

    public func deleteStore() async throws {
        throw ConfigError(.unsupported, "this kind of adapter cannot delete its store; use on_revoke: keep")
    }
}

/// A kind of cloud that `config.yaml` can name in `cloud.kind`.
public protocol CloudKind: Sendable {
    /// The `kind:` value, such as `embedded`.
    var name: String { get }

    /// Reads the `cloud:` section. Must not touch the cloud.
    func decodePlan(from decoder: any Decoder, context: ConfigContext) throws -> any CloudPlan
}

/// A decoded `cloud:` section, ready to check and to open.
public protocol CloudPlan: Sendable {
    /// The limits the cloud will report, for checks such as `batch_size` against `max_operations`.
    var limits: CloudLimits { get }

    /// Checks the cloud can be reached, without changing it.
    func check() async throws

    /// Connects to (or, for a local cloud, creates) the cloud.
    func open() async throws -> any CloudDatabase

    /// Whether the opened cloud keeps the zones of many users (``CloudUsers``), so that the
    /// gateway acts as the config's `cloud.user` through a ``UserCloudDatabase``. `false` (the
    /// default) for clouds whose credentials say who the user is.
    var keepsUsers: Bool { get }

    /// Takes the cloud's lock on this gateway's state, identified by its device id, so two
    /// gateway processes with the same state on different machines never sync at once (the
    /// file lock on `state_dir` covers one machine). `nil` when the cloud has no such lock.
    /// - Throws: ``GatewayError/Code/alreadyRunning`` when another process holds it.
    func lockGatewayState(deviceID: String) async throws -> (any GatewayStateLock)?
}

extension CloudPlan {
    public var keepsUsers: Bool { false }

    public func lockGatewayState(deviceID: String) async throws -> (any GatewayStateLock)? { nil }
}

/// A lock held in the cloud for one gateway's state; released by ``release()`` or when the
/// process ends.
public protocol GatewayStateLock: Sendable {
    func release() async
}

extension AdapterPlan {
    /// Identifies the store (a resolved file path, a database URL and schema), so two adapters
    /// configured on the same store are refused; `nil` when the kind cannot tell.
    public var storeIdentity: String? { nil }

    /// No preference: download pages of the gateway's `fetch_limit`.
    public var largestDownloadPage: Int? { nil }

    /// Checks the store as ``AdapterPlan/check()`` does.
    public func checkBeforeOpening() async throws {
        try await check()
    }

    /// Nothing to stop: ``AdapterPlan/checkBeforeOpening()`` kept nothing.
    public func discardCheck() async {}

    /// Opens the adapter and reads through it.
    public func readStatus() async throws -> StoreStatusSnapshot {
        try await StoreStatusSnapshot.reading(try await open())
    }
}
