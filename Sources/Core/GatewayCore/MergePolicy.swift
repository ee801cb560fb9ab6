/// How a conflict between a local change and a server change is resolved (DESIGN §7).
public enum MergePolicy: String, Sendable, Codable, CaseIterable {
    /// The server's record wins whole (SyncKit's default; Core Data's rollback).
    case server
    /// The local record wins whole; it is saved again on top of the server's version.
    case client
    /// Field-level three-way merge against the last synced values; see ``MergePreference``.
    case merge
    /// A ``ConflictResolver`` registered in code by name decides.
    case custom
}

/// Which side wins a field that both sides changed, under ``MergePolicy/merge``.
public enum MergePreference: String, Sendable, Codable, CaseIterable {
    /// The server's value (the default).
    case server
    /// The local value (Core Data's mergeByPropertyObjectTrump).
    case client
}

/// The merge behaviour for an adapter or a record type.
public struct MergeSettings: Sendable, Equatable {
    /// How conflicts are settled.
    public var policy: MergePolicy
    /// Which side wins a field both sides changed, under ``MergePolicy/merge``.
    public var prefers: MergePreference
    /// The registered resolver's name, for ``MergePolicy/custom``.
    public var resolverName: String?

    /// Settings; `resolverName` names a ``ConflictResolver`` of the configuration for
    /// ``MergePolicy/custom``.
    public init(policy: MergePolicy = .merge, prefers: MergePreference = .server, resolverName: String? = nil) {
        self.policy = policy
        self.prefers = prefers
        self.resolverName = resolverName
    }
}

/// A record changed both locally and on the server since the last sync.
///
/// `local` is `nil` when the record was deleted locally, `server` when it was deleted on the
/// server. The ancestor is known only by fingerprints, so a resolver asks whether a field changed
/// rather than what it was.
public struct ConflictContext: Sendable {
    /// The record in conflict.
    public let recordID: RecordID
    /// Fingerprints of the last synced values; empty when the record was never synced.
    public let ancestor: [String: FieldFingerprint]
    /// Whether the record was ever synced (an empty ancestor may also be a synced empty record).
    public let hasAncestor: Bool
    /// The store's version, `nil` when the store deleted it.
    public let local: Record?
    /// The cloud's version, `nil` when the cloud deleted it.
    public let server: Record?
    /// The (field name, value) digests the server's version superseded (see
    /// ``RecordMetadata/superseded``).
    public let superseded: Set<UInt64>

    /// A conflict over `recordID` between `local` and `server`, with the fingerprints of the last
    /// version both agreed on and the values the server's version superseded.
    public init(recordID: RecordID, ancestor: [String: FieldFingerprint]?, local: Record?, server: Record?, superseded: [UInt64] = []) {
        self.recordID = recordID
        self.ancestor = ancestor ?? [:]
        self.hasAncestor = ancestor != nil
        self.local = local
        self.server = server
        self.superseded = Set(superseded)
    }

    /// Whether the local value of `field` is one the server's record held before and replaced
    /// since: a pending edit that already reached the zone (its answer lost, or its store restored
    /// from a backup) and that a later version overwrote. It is older than the server's value,
    /// not concurrent with it.
    public func supersededLocally(_ field: String) -> Bool {
        guard !superseded.isEmpty, let value = local?[field] else { return false }
        return superseded.contains(RecordMetadata.pair(field, FieldFingerprint(value)))
    }

    /// Whether every field the local side changed, and the server holds otherwise, holds a value
    /// the server's version superseded: the local version is an older state of the server's.
    public var locallySuperseded: Bool {
        guard let local, server != nil, !superseded.isEmpty else { return false }
        var any = false
        for field in fieldNames where changedLocally(field) && local[field] != server?[field] {
            guard supersededLocally(field) else { return false }
            any = true
        }
        return any
    }

    /// Whether the local record's `field` differs from the last synced value. A field the local
    /// record's layout does not name is unknown to the store (an older schema, a JSON document
    /// without the key), not null, so it never counts as changed.
    public func changedLocally(_ field: String) -> Bool {
        if let local, local.layout.position(of: field) == nil { return false }
        return Self.fingerprint(local?[field]) != ancestor[field]
    }

    /// Whether the server record's `field` differs from the last synced value.
    public func changedOnServer(_ field: String) -> Bool {
        Self.fingerprint(server?[field]) != ancestor[field]
    }

    /// Every field name either side or the ancestor has.
    public var fieldNames: Set<String> {
        var names = Set(ancestor.keys)
        local?.forEachField { name, _ in names.insert(name) }
        server?.forEachField { name, _ in names.insert(name) }
        return names
    }

    /// Whether the local side changed any field (a deletion is not an edit).
    public var localEdited: Bool { local != nil && fieldNames.contains(where: changedLocally) }
    /// Whether the server side changed any field (a deletion is not an edit).
    public var serverEdited: Bool { server != nil && fieldNames.contains(where: changedOnServer) }

    static func fingerprint(_ value: FieldValue?) -> FieldFingerprint? {
        value.map(FieldFingerprint.init)
    }
}

/// Who wins a record that the store and the cloud both hold without a common ancestor: the
/// store never synced that record (a new store joining a zone, a store replaced or restored from
/// a backup, a reset, or two stores that created the same record). Neither side's values are an
/// edit of the other's, so the merge policy is not asked: the fields are merged, a field only one
/// side holds is kept, and a field both hold with different values, or a deletion met by values,
/// follows this preference. (A `custom` resolver still decides, told there is no ancestor.)
public enum JoinPreference: String, Sendable, Codable, CaseIterable {
    /// The cloud's values and deletions (the default): a restored or new store never rolls back
    /// what the zone holds.
    case cloud
    /// The store's values and deletions: the store is the truth, on purpose
    /// (`gateway sync --store-wins`).
    case store
}

/// What a conflict resolves to.
public enum ConflictResolution: Sendable, Equatable {
    /// The server's state: its values, or its deletion. The local change is dropped.
    case server
    /// The local state: its values, or its deletion. It is uploaded on top of the server's version.
    case local
    /// These values, written locally and uploaded on top of the server's version.
    case fields([String: FieldValue])
}

/// Resolves conflicts for ``MergePolicy/custom``; register it by name in ``SyncConfiguration``.
public protocol ConflictResolver: Sendable {
    /// Decides a conflict; called on the syncing task, so it must not block.
    func resolve(_ conflict: ConflictContext) -> ConflictResolution
}

/// Resolves conflicts for ``MergePolicy/custom`` in batches, asynchronously: a resolver outside
/// the gateway, such as a process speaking the resolver protocol (`resolvers:` in the config).
/// The synchronizer asks it once per downloaded page (or upload round) that holds conflicts of
/// record types whose `merge_resolver` names it, and checks each answer against its conflict
/// (known fields, the types the record holds) before writing anything.
public protocol BatchConflictResolver: Sendable {
    /// Decides `conflicts`: one answer per conflict, in order. A failure (the resolver crashed,
    /// timed out, or answered nonsense for that record) leaves the record as it was, to be asked
    /// about again next sync; an answer list of another length fails them all.
    func resolve(_ conflicts: [ConflictContext]) async -> [Result<ConflictResolution, SyncError>]

    /// Stops what the resolver runs (its process); the default does nothing.
    func close() async
}

extension BatchConflictResolver {
    /// Nothing to stop.
    public func close() async {}
}
