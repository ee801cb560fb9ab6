import Foundation
import GatewayCore

/// A store the adapter kit syncs: the few operations a backend without transactions of its own
/// offers. The kit (``KitAdapter``) keeps all sync state (change log, metadata, zone state, what
/// it last saw of each record) in a sidecar database, so a store implements no bookkeeping.
///
/// Writes must be idempotent: after a crash the kit writes the same records again.
public protocol KitStore: Sendable {
    /// What the store holds now. With a `cursor` from an earlier listing and a store that has
    /// cursors, only what changed since (``KitListing/isComplete`` false); otherwise every record.
    func list(since cursor: String?) async throws -> KitListing

    /// The records with these names, as the store holds them now; names the store does not hold
    /// are left out.
    func read(_ keys: [KitRecordKey]) async throws -> [KitEntry]

    /// Saves and deletes these records. Deleting a record the store does not hold succeeds.
    /// - Returns: what the store holds after the write for records whose stored form differs
    ///   from what was sent or that carry a version (omit the others), and
    ///   ``KitEntry/heldBack(_:)`` for each record it left as it was.
    func write(saves: [Record], deletes: [KitRecordKey]) async throws -> [KitEntry]

    /// ``write(saves:deletes:)`` with what the kit read of each record just before (by name: its
    /// version, or `nil` when the store held none; a name left out has no version to compare,
    /// as from a store that answers values only). A store that can compare leaves a record whose
    /// version moved since as it is and answers ``KitEntry/heldBack(_:)``: another program
    /// edited it meanwhile, and the kit reads that edit next. Default: ``write(saves:deletes:)``,
    /// for stores that check otherwise (JSON folders compare their files' stamps) or cannot.
    func write(saves: [Record], deletes: [KitRecordKey], expecting versions: [String: String?]) async throws -> [KitEntry]

    /// Saves and deletes these records as another program editing the store would: the
    /// conformance check's stand-in for such an edit. A store with cursors lists these records
    /// as changed after a cursor, where it may leave out what ``write(saves:deletes:)`` wrote (the
    /// kit knows its own writes from their answers). Default: ``write(saves:deletes:)``.
    func writeAsAnotherProgram(saves: [Record], deletes: [KitRecordKey]) async throws

    /// The record types the store holds; records of other types are not written (a zone may
    /// hold types this store has no place for). `nil`: any type.
    func servedRecordTypes() async throws -> Set<String>?

    /// Whether the store can hold a record of this name. Downloaded records it cannot hold are
    /// left out (no write, no metadata) and the rest of their page applies, as records of types it
    /// does not serve are. Default: every name.
    func canHold(recordNamed name: String) -> Bool

    /// A number that grows whenever the store itself reported a change (a notification); `nil`
    /// when it never reports any and must be polled.
    func notificationCount() async -> Int?

    /// Releases the store (a process is stopped, files closed).
    func close() async

    /// Whether the store keeps the kit's identity marker (``readIdentity()``,
    /// ``writeIdentity(_:)``), so that the kit can tell a store replaced, or restored to an
    /// earlier point, from one edited. Default: false.
    func keepsIdentity() async throws -> Bool

    /// The identity marker the kit last wrote into the store, `nil` when the store holds none
    /// (new, or replaced by one that never synced).
    func readIdentity() async throws -> KitStoreIdentity?

    /// Writes the identity marker durably, replacing the previous one.
    func writeIdentity(_ identity: KitStoreIdentity) async throws
}

extension KitStore {
    public func writeAsAnotherProgram(saves: [Record], deletes: [KitRecordKey]) async throws {
        _ = try await write(saves: saves, deletes: deletes)
    }
    public func write(saves: [Record], deletes: [KitRecordKey], expecting versions: [String: String?]) async throws -> [KitEntry] {
        try await write(saves: saves, deletes: deletes)
    }
    public func servedRecordTypes() async throws -> Set<String>? { nil }
    public func canHold(recordNamed name: String) -> Bool { true }
    public func notificationCount() async -> Int? { nil }
    public func close() async {}
    public func keepsIdentity() async throws -> Bool { false }
    public func readIdentity() async throws -> KitStoreIdentity? { nil }
    public func writeIdentity(_ identity: KitStoreIdentity) async throws {}
}

/// Which store the kit synced, and how far: written into the store (a small file, a row) and
/// kept in the kit's state. The epoch grows each time the kit writes to the store or records
/// changes it found there, so a store restored from a copy taken before holds a smaller one, and
/// a store replaced by another holds another identity or none (DESIGN D4 rule 1).
public struct KitStoreIdentity: Sendable, Equatable, Codable {
    /// A random identity, made when the kit first syncs the store (or it joins again).
    public var store: String
    /// How many times the kit wrote to the store or recorded its changes since.
    public var epoch: Int64

    /// An identity marker.
    public init(store: String, epoch: Int64) {
        self.store = store
        self.epoch = epoch
    }
}

/// A record's name and type, which a store needs to find it.
public struct KitRecordKey: Sendable, Hashable, Codable {
    /// The record's name, unique within the zone.
    public var recordName: String
    /// The record's type.
    public var recordType: String

    /// The key of the record named `recordName` of type `recordType`.
    public init(recordName: String, recordType: String) {
        self.recordName = recordName
        self.recordType = recordType
    }
}

/// One record as the store holds it.
public struct KitEntry: Sendable, Equatable {
    /// Which record this is.
    public var key: KitRecordKey
    /// The record's values; `nil` when the store listed only a ``version``.
    public var record: Record?
    /// A version the store keeps per record (a modification time, an etag). When present, the kit
    /// compares it instead of the record's values to find changes.
    public var version: String?
    /// Whether the store knows this record went back to an older copy since it last reported it
    /// (a file whose modification time is older than when the store last read it: restored from
    /// a backup with its times kept). The record rejoins the zone: the kit drops its sync
    /// metadata, so it meets the cloud's version without a common ancestor (`join_prefers`)
    /// instead of rolling the zone back.
    public var rolledBack: Bool
    /// In an answer to ``KitStore/write(saves:deletes:)``: the store left this record as it was
    /// instead of writing or deleting it (its file does not parse, or changed since the kit last
    /// read it). The kit then keeps the record's sync state as it was and logs a change for it, so
    /// that once the store can take it, whatever it holds meets the cloud's version through a
    /// merge: an edit made elsewhere meanwhile is never undone.
    public var isHeldBack: Bool

    /// An entry: the record as the store holds it (`nil` when it is gone) and the store's version
    /// of it, if the store keeps versions.
    public init(key: KitRecordKey, record: Record?, version: String? = nil, rolledBack: Bool = false, isHeldBack: Bool = false) {
        self.key = key
        self.record = record
        self.version = version
        self.rolledBack = rolledBack
        self.isHeldBack = isHeldBack
    }

    /// A write's answer for a record the store left as it was (``isHeldBack``).
    public static func heldBack(_ key: KitRecordKey) -> KitEntry {
        KitEntry(key: key, record: nil, isHeldBack: true)
    }
}

/// A listing of the store: everything, or the changes since a cursor.
public struct KitListing: Sendable {
    /// Records present (all of them when ``isComplete``, else those changed since the cursor).
    public var entries: [KitEntry]
    /// Records deleted since the cursor (ignored when ``isComplete``: absence says it).
    public var deleted: [String]
    /// Records the store holds but cannot offer (a value it cannot express, a broken file): each
    /// with a message naming the problem, shown as a failed record and never uploaded.
    public var problems: [KitProblem]
    /// Whether ``entries`` are every record of the store, so a record not among them was deleted.
    public var isComplete: Bool
    /// Where the next listing starts; `nil` for stores without cursors.
    public var cursor: String?

    /// A page of a listing; `isComplete` says whether it lists the whole store, `cursor` is where
    /// the next listing starts.
    public init(entries: [KitEntry], deleted: [String] = [], problems: [KitProblem] = [], isComplete: Bool, cursor: String? = nil) {
        self.entries = entries
        self.deleted = deleted
        self.problems = problems
        self.isComplete = isComplete
        self.cursor = cursor
    }
}

/// A record the store holds but cannot offer for sync.
public struct KitProblem: Sendable, Equatable {
    /// The name of the record the store cannot offer.
    public var recordName: String
    /// A short code, such as `unknownRecordType`.
    public var code: String
    /// What is wrong, naming the place but never field values.
    public var message: String

    /// A problem with one record, shown to operators as a failed record with `code` and `message`.
    public init(recordName: String, code: String, message: String) {
        self.recordName = recordName
        self.code = code
        self.message = message
    }
}

extension KitRecordKey {
    /// The record's name as a key that compares bytes.
    public var name: RecordName { RecordName(recordName) }
}

extension KitProblem {
    /// The record's name as a key that compares bytes.
    public var name: RecordName { RecordName(recordName) }
}
