import Foundation
import GRDB
import GatewayCore
import SQLiteSupport
import Synchronization

/// What a ``KitAdapter`` syncs: one store, one zone, and where its sync state lives.
public struct KitAdapterConfiguration: Sendable {
    /// The adapter's name from the configuration.
    public var name: String
    /// The zone the adapter syncs with.
    public var zoneID: ZoneID
    /// The sidecar state database, such as `<state_dir>/adapters/<name>.sqlite`.
    public var statePath: String
    /// How often change signals look at a store that does not report its changes.
    public var pollInterval: Duration

    /// A configuration; `pollInterval` is how often the store is listed for change signals when it
    /// cannot notify.
    public init(name: String, zoneID: ZoneID, statePath: String, pollInterval: Duration = .seconds(1)) {
        self.name = name
        self.zoneID = zoneID
        self.statePath = statePath
        self.pollInterval = pollInterval
    }
}

/// A `ModelAdapter` over any ``KitStore``: the adapter kit.
///
/// The store only lists, reads and writes records. The kit keeps everything else in a sidecar
/// SQLite database: what it last saw of each record (a version or a hash of the values), the
/// change log, sync metadata, failures and the zone state. Local edits are found by comparing
/// listings with what it saw. A download is journaled before the store is written and committed
/// after, so a crash of the gateway between the two replays the same (idempotent) write instead
/// of mistaking it for a local edit; a record edited in the store meanwhile is left alone and
/// uploaded later. A write the store fails commits nothing. While a download has more pages to
/// come, a page's state commits beside the next page's write, so the store and the state
/// database work at once; until it commits, its journal stays.
public final class KitAdapter: ModelAdapter {
    /// What the adapter was opened with.
    public let configuration: KitAdapterConfiguration
    /// The store this adapter syncs.
    public let store: any KitStore
    let state: KitStateDatabase
    private let gate = KitGate()
    private let journalChecked = Mutex(false)
    /// Whether `apply` holds the gate, past the identity and journal checks.
    private let applyingPage = Mutex(false)
    /// A page the store wrote whose state is not committed yet: it commits beside the next page's
    /// write, or before any other operation (``commitWrittenPage()``).
    private let writtenPage = Mutex<WrittenPage?>(nil)
    /// The records of pages written and not yet committed (waiting, or committing beside a
    /// write): their state is not read beside an apply.
    private let uncommittedNames = Mutex<Set<RecordName>>([])

    /// A page the store acknowledged, reduced to what committing its state needs (no field
    /// values: a page waiting beside the next one's write costs little memory).
    private struct WrittenPage: Sendable {
        /// The saves the store holds as written: name, type and what the kit saw of each.
        var seen: [(name: String, type: String, observed: String)]
        /// Every save's name and type, those the store held back included.
        var saved: [(name: String, type: String)]
        /// Records the store left as they were, with their types.
        var heldBack: [RecordName: String]
        var deletes: [KitRecordKey]
        var update: SyncStateUpdate
        var skipped: Set<RecordName>
        var keepsZonePosition: Bool
        /// Where the page's journal is kept.
        var sequence: Int64?
        var names: Set<RecordName>

        init(journal: KitJournal, stored: [KitEntry]) {
            var observedAfter: [RecordName: String] = [:]
            var heldBack: [RecordName: String] = [:]
            for entry in stored {
                if entry.isHeldBack {
                    heldBack[entry.key.name] = entry.key.recordType
                } else if let observed = KitRecordObservation.observed(entry) {
                    observedAfter[entry.key.name] = observed
                }
            }
            seen = journal.saves.compactMap { record in
                let name = record.id.name
                guard heldBack[name] == nil else { return nil }
                return (record.id.recordName, record.recordType, observedAfter[name] ?? KitRecordObservation.observed(record))
            }
            saved = journal.saves.map { ($0.id.recordName, $0.recordType) }
            self.heldBack = heldBack
            deletes = journal.deletes
            update = journal.update
            skipped = Set(journal.skipped.map { RecordName($0) })
            keepsZonePosition = journal.keepsZonePosition
            sequence = journal.sequence
            names = journal.recordNames
        }
    }

    public var name: String { configuration.name }
    public var zoneID: ZoneID { configuration.zoneID }

    /// Opens (creating) the sidecar state. The store is not contacted until the first operation.
    public init(configuration: KitAdapterConfiguration, store: any KitStore) throws {
        self.configuration = configuration
        self.store = store
        state = try KitStateDatabase(path: configuration.statePath)
    }

    // MARK: ModelAdapter

    public func loadZoneState() async throws -> Data? {
        try await exclusively {
            try await self.refresh()
            return try await self.state.read { db in try Data.fetchOne(db, sql: "SELECT state FROM zone WHERE id = 1") }
        }
    }

    /// Whether the store holds anything the cloud has not seen: a pending change, or a record
    /// the store cannot offer (a file that does not parse), as a store whose record the cloud
    /// refused has a pending change.
    public func hasChanges() async throws -> Bool {
        try await exclusively {
            try await self.refresh()
            return try await self.state.read { db in
                try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM changes) OR EXISTS (SELECT 1 FROM problems)") ?? false
            }
        }
    }

    public func pendingChangeCount() async throws -> Int {
        try await exclusively {
            try await self.refresh()
            return try await self.state.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM changes") ?? 0 }
        }
    }

    public func pendingChanges(limit: Int, after: Int64?) async throws -> PendingChanges {
        try await exclusively {
            if after == nil { try await self.refresh() }
            let rows = try await self.state.read { db in
                try Row.fetchAll(
                    db,
                    sql: """
                        SELECT c.record_name, c.version, m.data, c.record_type FROM changes c
                        LEFT JOIN metadata m ON m.record_name = c.record_name
                        WHERE c.version > ?
                          AND NOT EXISTS (SELECT 1 FROM failures f WHERE f.record_name = c.record_name AND f.version = c.version)
                          AND NOT EXISTS (SELECT 1 FROM problems p WHERE p.record_name = c.record_name)
                        ORDER BY c.version LIMIT ?
                        """, arguments: [after ?? 0, max(0, limit)]
                ).map { row -> (name: String, version: Int64, metadata: Data?, type: String?) in (row[0], row[1], row[2], row[3]) }
            }
            let keys = rows.compactMap { row in row.type.map { KitRecordKey(recordName: row.name, recordType: $0) } }
            let current = try await self.readRecords(keys)
            var pending = PendingChanges()
            var unread: [String] = []
            for row in rows {
                let id = RecordID(recordName: row.name, zoneID: self.zoneID)
                if row.type != nil {
                    guard let record = current[RecordName(row.name)] else {
                        unread.append(row.name)
                        continue
                    }
                    pending.saves.append(PendingSave(record: record, metadata: row.metadata, version: row.version))
                } else {
                    pending.deletes.append(PendingDelete(recordID: id, metadata: row.metadata, version: row.version))
                }
            }
            if !unread.isEmpty {
                // Listed but not read: gone since the listing (the next listing logs the delete and
                // clears this), or a store whose read leaves out what its list names, which would
                // stay pending for good with every sync saying nothing is left to do.
                let names = unread
                try await self.state.write { db in
                    for name in names {
                        try db.cachedStatement(sql: "INSERT OR REPLACE INTO problems (record_name, code, message) VALUES (?, ?, ?)").execute(
                            arguments: [
                                name, "notReadable",
                                "the store lists this record but its read did not return it; the next listing clears this if it was deleted, else fix the store's read",
                            ])
                    }
                }
            }
            return pending
        }
    }

    public func localState(for recordIDs: [RecordID]) async throws -> [RecordID: LocalRecordState] {
        if applyingPage.withLock({ $0 }), let states = try await localStateBesideApply(for: recordIDs) { return states }
        return try await exclusively {
            let names = KitStateDatabase.jsonArray(recordIDs.map(\.recordName))
            // The store's current form of the records the kit knows, so an edit made since the
            // last listing is pending here, before the synchronizer merges.
            let keys = try await self.state.read { db in
                try Row.fetchAll(
                    db, sql: "SELECT r.record_name, r.record_type FROM json_each(?) n JOIN records r ON r.record_name = n.value",
                    arguments: [names]
                ).map { KitRecordKey(recordName: $0[0], recordType: $0[1]) }
            }
            let current = keys.isEmpty ? [] : try await self.store.read(keys)
            let rows = try await self.state.write { db in
                _ = try KitListingRecorder.notice(current, keys: keys, db: db)
                return try Self.recordStates(names, db: db)
            }
            let records = self.records(of: current)
            var states: [RecordID: LocalRecordState] = [:]
            for row in rows {
                let id = RecordID(recordName: row.name, zoneID: self.zoneID)
                states[id] = LocalRecordState(
                    record: row.version == nil ? nil : records[RecordName(row.name)], metadata: row.metadata, pendingVersion: row.version)
            }
            return states
        }
    }

    /// The local state of records the store does not hold, read while a page is being applied:
    /// the synchronizer asks for the next page's records (none of them in the page being written)
    /// so it can merge them while the store writes. The apply holding the gate checked the
    /// store's identity and journal; only the state database is read, in one transaction, and
    /// `apply` compares the pending versions again. When the store holds one of the records, its
    /// current form must be read from the store: `nil`, and the caller waits for the gate.
    private func localStateBesideApply(for recordIDs: [RecordID]) async throws -> [RecordID: LocalRecordState]? {
        // A record of a page written and not committed yet has state still to come.
        guard uncommittedNames.withLock({ names in recordIDs.allSatisfy { !names.contains($0.name) } }) else { return nil }
        let names = KitStateDatabase.jsonArray(recordIDs.map(\.recordName))
        let rows = try await state.read { db -> [(name: String, metadata: Data?, version: Int64?)]? in
            let held = try Bool.fetchOne(
                db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM json_each(?) n JOIN records r ON r.record_name = n.value)"),
                arguments: [names])
            guard held == false else { return nil }
            return try Self.recordStates(names, db: db)
        }
        guard let rows else { return nil }
        var states: [RecordID: LocalRecordState] = [:]
        for row in rows {
            // Not held by the store: a pending change of such a record is its delete.
            states[RecordID(recordName: row.name, zoneID: zoneID)] = LocalRecordState(record: nil, metadata: row.metadata, pendingVersion: row.version)
        }
        return states
    }

    /// The metadata and pending change version of each record among `names` (a JSON array) that
    /// has either; a page of records new to the store reads no row.
    private static func recordStates(_ names: String, db: Database) throws -> [(name: String, metadata: Data?, version: Int64?)] {
        let statement = BoundStatement(
            try db.cachedStatement(
                sql: """
                    SELECT n.value, m.data, c.version FROM json_each(?) n
                    LEFT JOIN metadata m ON m.record_name = n.value
                    LEFT JOIN changes c ON c.record_name = n.value
                    WHERE m.record_name IS NOT NULL OR c.record_name IS NOT NULL
                    """))
        var rows: [(name: String, metadata: Data?, version: Int64?)] = []
        try statement.forEachRow([.text(names)]) { row in
            rows.append((row.text(at: 0) ?? "", row.data(at: 1), row.isNull(at: 2) ? nil : row.int64(at: 2)))
        }
        return rows
    }

    public func syncedRecordIDs() async throws -> [RecordID] {
        let zone = zoneID
        return try await exclusively {
            try await self.state.read { db in
                try String.fetchAll(db, sql: "SELECT record_name FROM metadata").map { RecordID(recordName: $0, zoneID: zone) }
            }
        }
    }

    public func apply(_ changes: DownloadedChanges) async throws {
        try await exclusively(applying: true) {
            self.applyingPage.withLock { $0 = true }
            defer { self.applyingPage.withLock { $0 = false } }
            try await self.applyExclusively(changes)
        }
    }

    public func commit(_ update: SyncStateUpdate) async throws {
        try await exclusively {
            try await self.state.write { db in try KitStateDatabase.commit(update, skipping: [], db: db) }
        }
    }

    public func failedRecords() async throws -> [FailedRecord] {
        let zone = zoneID
        return try await exclusively {
            try await self.state.read { db in try KitStateDatabase.failedRecords(zone: zone, db: db) }
        }
    }

    public func retryFailedRecords() async throws {
        try await exclusively {
            try await self.state.write { db in try db.execute(sql: "DELETE FROM failures") }
        }
    }

    public func resetSyncState(keepData: Bool) async throws {
        try await exclusively {
            // A complete listing, so that every record the store holds is known afterwards.
            try await self.state.write { db in
                try db.execute(sql: "DELETE FROM metadata; DELETE FROM failures; DELETE FROM zone; DELETE FROM cursor;")
            }
            try await self.refresh()
            if keepData {
                try await self.state.write { db in
                    for row in try Row.fetchAll(db, sql: "SELECT record_name, record_type FROM records") {
                        try KitStateDatabase.logChange(row[0], recordType: row[1], db: db)
                    }
                }
            } else {
                let keys = try await self.state.read { db in
                    try Row.fetchAll(db, sql: "SELECT record_name, record_type FROM records").map {
                        KitRecordKey(recordName: $0[0], recordType: $0[1])
                    }
                }
                if !keys.isEmpty { _ = try await self.store.write(saves: [], deletes: keys) }
                try await self.state.write { db in try db.execute(sql: "DELETE FROM records; DELETE FROM changes;") }
            }
        }
    }

    public func changeSignals() -> ChangeSignals {
        // A store that reports its changes is asked only when it did; others are listed each
        // interval, and every change found moves the change-log counter.
        .polling(every: configuration.pollInterval) { [self] in
            if let notifications = await store.notificationCount() { return Int64(notifications) }
            return try await exclusively {
                try await self.refresh()
                return try await self.state.read { db in try Int64.fetchOne(db, sql: "SELECT version FROM counter") ?? 0 }
            }
        }
    }

    /// Commits a page written and not yet committed, stops the store and closes the state file
    /// (its WAL checkpointed and removed). A page that cannot commit keeps its journal, replayed
    /// when the adapter next opens.
    public func close() async {
        _ = try? await gate.run { try await self.commitWrittenPage() }
        await store.close()
        try? state.queue.close()
    }

    // MARK: Operations

    /// Runs `body` alone, after committing a page written before (unless `applying` the next
    /// page, which commits it beside its own write) and replaying a write a crash interrupted.
    private func exclusively<T: Sendable>(applying: Bool = false, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
        try await gate.run {
            if !applying { try await commitWrittenPage() }
            // The identity first: a write interrupted in a store since replaced or restored
            // belongs to a store that is gone. Replayed into the copy, it would stamp the copy
            // with the current epoch and hide the restore.
            try await checkIdentity()
            if !journalChecked.withLock({ $0 }) {
                try await replayJournals()
                journalChecked.withLock { $0 = true }
            }
            return try await body()
        }
    }

    /// Commits the state of the page the store wrote last, when it is not committed yet. When
    /// that fails, its journal stays and the next operation replays it.
    private func commitWrittenPage() async throws {
        guard let page = writtenPage.withLock({ page in defer { page = nil }; return page }) else { return }
        try await commit(page)
    }

    /// Lists the store and records what changed since the kit last looked.
    func refresh() async throws {
        let cursor = try await state.read { db in try String.fetchOne(db, sql: "SELECT value FROM cursor WHERE id = 1") }
        let listing = try await store.list(since: cursor)
        let changed = try await state.write { db in try KitListingRecorder.record(listing, db: db) }
        // A copy of the store taken before these changes holds an older epoch than the state
        // that recorded them.
        if changed, try await store.keepsIdentity() { try await advanceEpoch() }
    }

    // MARK: Store identity

    /// The identity the kit last recorded, `nil` before its first look at the store.
    private func knownIdentity() async throws -> KitStoreIdentity? {
        try await state.read { db in
            try Row.fetchOne(db, sql: "SELECT store, epoch FROM identity WHERE id = 1").map { KitStoreIdentity(store: $0[0], epoch: $0[1]) }
        }
    }

    /// Compares the store's identity marker with the one the kit recorded. A store without the
    /// marker the kit wrote, with another identity, or with an older epoch was replaced or
    /// restored behind the gateway's back: it joins the zone again (DESIGN D4 rule 1). A record
    /// it holds otherwise than the kit last saw it (or that the kit never saw) loses its
    /// metadata, so where it differs from the cloud it is a conflict without a common ancestor
    /// (`join_prefers`), never an edit of the synced version. A record the store still holds as
    /// the kit last saw it is the same record the kit synced: it keeps its metadata, and a
    /// change the kit had noticed but not yet uploaded stays an edit. A record the store lacks
    /// comes back from the cloud, unless the store is a copy of itself (its identity, an older
    /// epoch) taken after the kit recorded that record: the copy held it, so the application
    /// deleted it since, and the delete is uploaded. The zone state and the listing cursor go, so
    /// the next sync lists the whole store and downloads the zone from the start.
    private func checkIdentity() async throws {
        guard try await store.keepsIdentity() else { return }
        let marker = try await store.readIdentity()
        let known = try await knownIdentity()
        if let known, let marker, marker.store == known.store, marker.epoch >= known.epoch {
            // The store ahead of the state: a crash came between the two writes of an epoch move,
            // and a copy taken since holds the store's epoch. The kit moves past it before it
            // records anything, or such a copy would pass for the store itself.
            if marker.epoch > known.epoch { try await advanceEpoch(past: marker.epoch) }
            return
        }
        // A restore is judged against everything written before it.
        try await commitWrittenPage()
        let fresh = KitStoreIdentity(store: UUID().uuidString.lowercased(), epoch: 1)
        let listing = known == nil ? nil : try await store.list(since: nil)
        // A copy of this same store (its identity, an older epoch) was taken after the kit last
        // recorded, at an earlier epoch, the records it saw then: the copy held them.
        let copyEpoch = marker.flatMap { marker in known?.store == marker.store ? marker.epoch : nil }
        try await state.write { db in
            if let listing {
                // A record the kit saw that the copy lacks is no delete when the copy may predate
                // it: the kit forgets it, and any change of it still pending (a save, or a delete
                // the restore undid along with everything after the copy), so the download brings
                // the cloud's version back: when it cannot tell, a rejoin keeps data rather than
                // deleting it everywhere. One the kit recorded at an epoch older than the copy's
                // was in the copy: the application deleted it since, a local delete of the synced
                // record (it keeps its metadata).
                let present = KitStateDatabase.jsonArray(listing.entries.map(\.key.recordName) + listing.problems.map(\.recordName))
                let deletedSinceCopy = try copyEpoch.map { epoch in
                    try String.fetchAll(
                        db, sql: "SELECT record_name FROM records WHERE seen_epoch < ? AND record_name NOT IN (SELECT value FROM json_each(?))",
                        arguments: [epoch, present])
                } ?? []
                var unchanged = deletedSinceCopy
                for entry in listing.entries {
                    guard let observed = KitRecordObservation.observed(entry) else { continue }
                    let seen = try String.fetchOne(
                        db.cachedStatement(sql: "SELECT observed FROM records WHERE record_name = ? AND record_type = ?"),
                        arguments: [entry.key.recordName, entry.key.recordType])
                    if seen == observed { unchanged.append(entry.key.recordName) }
                }
                try db.execute(
                    sql: "DELETE FROM metadata WHERE record_name NOT IN (SELECT value FROM json_each(?))",
                    arguments: [KitStateDatabase.jsonArray(unchanged)])
                try db.execute(sql: "DELETE FROM records WHERE record_name NOT IN (SELECT value FROM json_each(?))", arguments: [present])
                try db.execute(sql: "DELETE FROM changes WHERE record_name NOT IN (SELECT value FROM json_each(?))", arguments: [present])
                for name in deletedSinceCopy { try KitStateDatabase.logChange(name, recordType: nil, db: db) }
                // What the kit keeps was present before the new identity's first epoch.
                try db.execute(sql: "UPDATE records SET seen_epoch = 0")
                // An interrupted write goes too: the download starts again from the beginning.
                try db.execute(sql: "DELETE FROM zone; DELETE FROM failures; DELETE FROM cursor; DELETE FROM journal; DELETE FROM journal_pages;")
            }
            try db.execute(sql: "INSERT OR REPLACE INTO identity (id, store, epoch) VALUES (1, ?, ?)", arguments: [fresh.store, fresh.epoch])
        }
        try await store.writeIdentity(fresh)
    }

    /// Moves the epoch on, in the store first, past `epoch` when the store is known to be ahead:
    /// a crash in between leaves the store ahead of the state, which is no sign of a restore.
    private func advanceEpoch(past epoch: Int64? = nil) async throws {
        guard let known = try await knownIdentity() else { return }
        let next = KitStoreIdentity(store: known.store, epoch: max(known.epoch, epoch ?? known.epoch) + 1)
        try await store.writeIdentity(next)
        try await record(epoch: next.epoch)
    }

    /// The identity whose epoch a write moves on: the one the kit recorded, for a store that
    /// keeps one.
    private func identityToMove() async throws -> KitStoreIdentity? {
        try await store.keepsIdentity() ? try await knownIdentity() : nil
    }

    /// The store's current records for `keys`, by name, with this adapter's zone.
    private func readRecords(_ keys: [KitRecordKey]) async throws -> [RecordName: GatewayCore.Record] {
        keys.isEmpty ? [:] : records(of: try await store.read(keys))
    }

    /// The records among `entries` (those that carry values), by name compared by bytes, with
    /// this adapter's zone.
    private func records(of entries: [KitEntry]) -> [RecordName: GatewayCore.Record] {
        var records: [RecordName: GatewayCore.Record] = [:]
        for entry in entries {
            guard var record = entry.record else { continue }
            record.id = RecordID(recordName: entry.key.recordName, zoneID: zoneID)
            records[entry.key.name] = record
        }
        return records
    }

    private func applyExclusively(_ changes: DownloadedChanges) async throws {
        // A page sharing a record with the page written before it reads that record's state as
        // committed.
        if let earlier = writtenPage.withLock({ $0 }), !earlier.names.isDisjoint(with: changes.recordNames) {
            try await commitWrittenPage()
        }
        let deleteNames = changes.deletes.map(\.recordName)
        let deleteTypes = try await state.read { db in
            var types: [RecordName: String] = [:]
            for row in try Row.fetchAll(
                db, sql: "SELECT r.record_name, r.record_type FROM json_each(?) n JOIN records r ON r.record_name = n.value",
                arguments: [KitStateDatabase.jsonArray(deleteNames)])
            {
                types[RecordName(row[0])] = row[1]
            }
            return types
        }
        // Records of types the store has no place for, or with names it cannot hold, are left
        // out, as a SQL store leaves out records without a table or a key: no write, no metadata.
        let served = try await store.servedRecordTypes()
        let unserved = Set(
            changes.writes.filter { served?.contains($0.recordType) == false || !store.canHold(recordNamed: $0.id.recordName) }
                .map { $0.id.name })
        let saveKeys = changes.writes.filter { !unserved.contains($0.id.name) }.map {
            KitRecordKey(recordName: $0.id.recordName, recordType: $0.recordType)
        }
        let deleteKeys = changes.deletes.compactMap { id in deleteTypes[id.name].map { KitRecordKey(recordName: id.recordName, recordType: $0) } }
        // What the store holds now: an edit the last listing missed becomes a change here, so the
        // version comparison below leaves that record alone.
        let current = try await store.read(saveKeys + deleteKeys)
        let heldRecords = Dictionary(
            current.compactMap { entry in entry.record.map { (entry.key.name, $0) } }, uniquingKeysWith: { first, _ in first })
        let expected = changes.expectedPendingVersions
        let plan = try await state.write { db -> KitJournal in
            let before = try KitListingRecorder.notice(current, keys: saveKeys + deleteKeys, db: db)
            var versions: [RecordName: Int64] = [:]
            for row in try Row.fetchAll(
                db, sql: "SELECT c.record_name, c.version FROM json_each(?) n JOIN changes c ON c.record_name = n.value",
                arguments: [KitStateDatabase.jsonArray(expected.keys.map(\.recordName))])
            {
                versions[RecordName(row[0])] = row[1]
            }
            var skipped = unserved
            for (id, version) in expected where (versions[id.name] ?? 0) != version { skipped.insert(id.name) }
            let saves = changes.writes.filter { !skipped.contains($0.id.name) }
            var changedFields: [RecordName: [String]] = [:]
            for record in saves {
                let name = record.id.name
                guard let held = heldRecords[name] else { continue }
                var names = Set<String>()
                record.forEachField { field, _ in names.insert(field) }
                held.forEachField { field, _ in names.insert(field) }
                changedFields[name] = names.filter { record[$0] != held[$0] }.sorted()
            }
            var journal = KitJournal(
                saves: saves, deletes: deleteKeys.filter { !skipped.contains($0.name) },
                before: before, update: changes.state, skipped: skipped.map(\.text).sorted(), changedFields: changedFields)
            try journal.save(db)
            return journal
        }
        // Read before the earlier page's commit takes the state database.
        let identity = try await identityToMove()
        let earlier = writtenPage.withLock { page in defer { page = nil }; return page }
        try await finish(plan, identity: identity, besides: earlier, deferringCommit: changes.moreComing)
    }

    /// Writes a journaled download into the store and commits its state. `earlier`, a page the
    /// store wrote before whose state is not committed yet, commits beside this write, so the
    /// store and the state database work at once; pages still commit in the order they were
    /// journaled. With `deferringCommit`, this page's state is left to commit beside the next
    /// page's write (or before any other operation); its journal stays until then. `identity` is
    /// ``identityToMove()``.
    private func finish(
        _ journal: KitJournal, identity: KitStoreIdentity?, besides earlier: WrittenPage? = nil, deferringCommit: Bool = false
    ) async throws {
        async let committingEarlier: Void = commit(earlier)
        let written = await write(journal, movingEpochOf: identity)
        // The earlier page's state first: whatever became of this write, it is the older page.
        // When it cannot commit, both journals stay and the next operation replays them in order.
        try await committingEarlier
        switch written {
        case .success(let stored):
            let page = WrittenPage(journal: journal, stored: stored)
            if deferringCommit {
                uncommittedNames.withLock { $0.formUnion(page.names) }
                writtenPage.withLock { $0 = page }
            } else {
                try await commit(page)
            }
        case .failure(let error):
            // The store refused, failed part way, or wrote everything and died before answering
            // (a plugin's crash, OOM kill or timeout): nothing of the page is committed. What it
            // did write is the gateway's own write, never the store's edit (DESIGN D4), so it is
            // looked up now and recorded as seen; the page downloads again. When the store cannot
            // be asked (a plugin that keeps dying), the journal stays and the next operation
            // replays it first (``replayJournals()``), as after a crash of the gateway.
            do {
                try await reconcile(afterFailedWrite: journal)
            } catch {
                journalChecked.withLock { $0 = false }
            }
            throw error
        }
    }

    /// The store's write of the journal's page, after the store's epoch moves on (when it keeps an
    /// identity): a copy taken before the write holds an older epoch than the state. The state
    /// records the new epoch beside the write, so the write does not wait for the state database
    /// (busy with the earlier page's commit); a crash before it records leaves the store ahead,
    /// which is no sign of a restore.
    private func write(_ journal: KitJournal, movingEpochOf identity: KitStoreIdentity?) async -> Result<[KitEntry], any Error> {
        guard !journal.saves.isEmpty || !journal.deletes.isEmpty else { return .success([]) }
        do {
            var epoch: Int64?
            if let identity {
                let next = KitStoreIdentity(store: identity.store, epoch: identity.epoch + 1)
                try await store.writeIdentity(next)
                epoch = next.epoch
            }
            async let recording: Void = record(epoch: epoch)
            let stored: Result<[KitEntry], any Error>
            do {
                stored = .success(try await store.write(saves: journal.saves, deletes: journal.deletes, expecting: journal.expectedVersions))
            } catch {
                stored = .failure(error)
            }
            try await recording
            return stored
        } catch {
            return .failure(error)
        }
    }

    /// Records the store's new epoch in the state (nothing for `nil`).
    private func record(epoch: Int64?) async throws {
        guard let epoch else { return }
        try await state.write { db in try db.execute(sql: "UPDATE identity SET epoch = ? WHERE id = 1", arguments: [epoch]) }
    }

    /// Commits the state of a page the store wrote (nothing for `nil`) and drops its journal.
    /// When the commit fails, the journal stays and the next operation replays it.
    private func commit(_ page: WrittenPage?) async throws {
        guard let page else { return }
        defer { uncommittedNames.withLock { $0.subtract(page.names) } }
        do {
            try await state.write { db in
                // Records the store left as they were keep their state, and a change: once the
                // store can take them, what it holds is uploaded against the old ancestor and
                // merged with the cloud's version instead of overwriting it (DESIGN D4).
                let heldBack = page.heldBack
                var records = try KitStateDatabase.recordsWriter(db)
                for save in page.seen { try records.add([.text(save.name), .text(save.type), .text(save.observed)]) }
                try records.finish()
                // A local delete that a merge turned into a record to keep (an edit beat it) is a
                // save now: what stays pending is uploading the record as written.
                if try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM changes WHERE record_type IS NULL)")) == true {
                    let typed = BoundStatement(try db.cachedStatement(sql: "UPDATE changes SET record_type = ? WHERE record_name = ? AND record_type IS NULL"))
                    for save in page.saved { try typed.execute(.text(save.type), .text(save.name)) }
                }
                for key in page.deletes where heldBack[key.name] == nil {
                    try db.cachedStatement(sql: "DELETE FROM records WHERE record_name = ?").execute(arguments: [key.recordName])
                }
                try KitStateDatabase.commit(
                    page.update, skipping: page.skipped.union(heldBack.keys), advancingZone: !page.keepsZonePosition, db: db)
                for (name, type) in heldBack.sorted(by: { $0.key.text < $1.key.text }) {
                    try KitStateDatabase.logChange(name.text, recordType: type, db: db)
                }
                try KitJournal.remove(sequence: page.sequence, db)
            }
        } catch {
            journalChecked.withLock { $0 = false }
            throw error
        }
    }

    /// After a write the store did not acknowledge: records it holds as the journal's write left
    /// them are committed as synced (seen, with the page's metadata for them, so a later
    /// tombstone deletes them and the next listing finds no change), then the journal is dropped.
    /// The zone state does not move, so the page downloads again. Records the store holds as
    /// before, or changed to something else, are left to the next listing: unchanged, or a local
    /// edit.
    private func reconcile(afterFailedWrite journal: KitJournal) async throws {
        let keys = journal.saves.map { KitRecordKey(recordName: $0.id.recordName, recordType: $0.recordType) } + journal.deletes
        let current = Dictionary(
            (keys.isEmpty ? [] : try await store.read(keys)).map { ($0.key.name, $0) }, uniquingKeysWith: { first, _ in first })
        try await state.write { db in
            var confirmed = Set<RecordName>()
            for record in journal.saves {
                let name = record.id.name
                guard let entry = current[name], entry.record.map(KitRecordObservation.observed) == KitRecordObservation.observed(record),
                    let observed = KitRecordObservation.observed(entry)
                else { continue }
                confirmed.insert(name)
                try db.cachedStatement(sql: "INSERT OR REPLACE INTO records (record_name, record_type, observed) VALUES (?, ?, ?)")
                    .execute(arguments: [record.id.recordName, record.recordType, observed])
            }
            for key in journal.deletes where current[key.name] == nil {
                confirmed.insert(key.name)
                try db.cachedStatement(sql: "DELETE FROM records WHERE record_name = ?").execute(arguments: [key.recordName])
            }
            let skipped = Set(journal.skipped.map { RecordName($0) })
            try KitStateDatabase.commitRecords(of: journal.update, where: { confirmed.contains($0) && !skipped.contains($0) }, db: db)
            try journal.remove(db)
        }
    }

    /// Finishes the downloads a crash interrupted between their journals and their commits, in
    /// the order they were journaled.
    private func replayJournals() async throws {
        let (zone, path) = (zoneID, state.path)
        for journal in try await state.read({ db in try KitJournal.saved(db, zone: zone, statePath: path) }) {
            try await replay(journal)
        }
    }

    /// Finishes a download a crash interrupted between the journal and the commit. Records the
    /// store holds as they were before, or as the download left them, are written (again);
    /// others were edited in the store meanwhile: they are left alone, as a local change.
    private func replay(_ journal: KitJournal) async throws {
        var journal = journal
        let keys = journal.saves.map { KitRecordKey(recordName: $0.id.recordName, recordType: $0.recordType) } + journal.deletes
        let current = Dictionary(try await store.read(keys).map { ($0.key.name, $0) }, uniquingKeysWith: { first, _ in first })
        var edited = Set<RecordName>()
        for record in journal.saves {
            let name = record.id.name
            let values = current[name]?.record.map(KitRecordObservation.observed)
            let now = current[name].flatMap { KitRecordObservation.observed($0) }
            if values != KitRecordObservation.observed(record), now != journal.before[name] { edited.insert(name) }
        }
        for key in journal.deletes {
            let name = key.name
            guard let entry = current[name] else { continue }
            if KitRecordObservation.observed(entry) != journal.before[name] { edited.insert(name) }
        }
        if !edited.isEmpty {
            let editedEntries = current.values.filter { edited.contains($0.key.name) }
            // The write landed, then the application edited the record, when a field the write
            // set (every field of a record the store did not hold before; the fields an update
            // changed) holds the written value: the write's version is the edit's ancestor (its
            // metadata is committed), so the edit is an edit of it, not a change to merge against
            // an older ancestor. Without such a field it cannot be told from a record the
            // application created or rewrote while the write never landed: the older ancestor
            // stays (a record created alongside has none, and joins).
            let landed = journal.saves.filter { record in
                let name = record.id.name
                guard edited.contains(name), let now = current[name]?.record else { return false }
                var written: [String] = []
                if journal.before[name] == nil { record.forEachField { field, _ in written.append(field) } } else { written = journal.changedFields[name] ?? [] }
                return written.contains { field in record[field] != nil && now[field] == record[field] }
            }.map(\.id)
            let metadata = journal.update.metadata
            try await state.write { db in
                for entry in editedEntries {
                    try db.execute(
                        sql: "INSERT OR REPLACE INTO records (record_name, record_type, observed) VALUES (?, ?, ?)",
                        arguments: [entry.key.recordName, entry.key.recordType, KitRecordObservation.observed(entry) ?? ""])
                    try KitStateDatabase.logChange(entry.key.recordName, recordType: entry.key.recordType, db: db)
                }
                for id in landed {
                    guard let data = metadata[id] else { continue }
                    try db.execute(sql: "INSERT OR REPLACE INTO metadata (record_name, data) VALUES (?, ?)", arguments: [id.recordName, data])
                }
            }
            // A record the write was saving that the store no longer holds was deleted by the
            // application, after the write landed or instead of it: which, nothing says. Its
            // delete is kept as a local change, and the page downloads again, so the record meets
            // the cloud's version (an edit beats a delete) instead of the store silently lacking
            // a record the zone holds.
            if journal.saves.contains(where: { edited.contains($0.id.name) && current[$0.id.name]?.record == nil }) {
                journal.keepsZonePosition = true
            }
            journal.saves.removeAll { edited.contains($0.id.name) }
            journal.deletes.removeAll { edited.contains($0.name) }
            journal.skipped += edited.map(\.text).sorted()
        }
        try await finish(journal, identity: try await identityToMove())
    }
}
