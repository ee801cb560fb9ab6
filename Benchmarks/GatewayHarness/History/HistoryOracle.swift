import Foundation

/// What the history checker knows of every acknowledged write, and the anomalies it finds in the
/// state a history converged to.
///
/// Modelled on Elle's approach: every written value is unique in its field (values are known by
/// ``tag(_:_:)``, field and value: a renamed column holds the same texts under another name), so
/// a value read back names the write that produced it, and each write records the value it overwrote (what its store held of
/// that field when the application wrote it). That gives the version order of each field without
/// trusting the gateway's own account; a store restored from a backup holds an old value again,
/// and a write made on top of it depends on that old value, not on the newer ones it lost.
struct HistoryOracle {
    /// One acknowledged application write or delete.
    struct Event: Sendable {
        enum Kind: Sendable { case write(field: String, value: String), delete }
        let id: Int
        let step: Int
        let store: String
        let record: String
        let kind: Kind
        /// Events this one causally follows: per field, the write it overwrote and, transitively,
        /// what that one followed; for a delete, the writes of every field it removed.
        let dependencies: Set<Int>
        /// For a delete, the values the record held when it was deleted (tagged).
        var removedValues: [String] = []
        /// For a write that created the record again after its store deleted it, the fields the
        /// new record names (a SQL row names every column, a JSON document only its keys): a
        /// field it does not name is unknown to it, so the cloud's value stays, as an edit
        /// revives a deleted record whole.
        var recreatedNaming: Set<String>? = nil

        /// Whether this write created the record again without naming `field`.
        func recreated(without field: String) -> Bool { recreatedNaming.map { !$0.contains(field) } ?? false }
    }

    /// A conflict the gateway reported: the step and the store whose sync reported it.
    struct Conflict: Sendable {
        let step: Int
        let store: String
    }

    /// The anomaly classes counted (see `docs/architecture.md`, "the history checker").
    enum Anomaly: String, CaseIterable, Sendable, Codable {
        /// A field ends with the value of a write that another acknowledged write (or delete) of
        /// that field causally followed: an older value overwrote a newer one.
        case lostUpdate
        /// A field ends without a value although its last causally maximal event is a write.
        case lostWrite
        /// A record ends present although a delete causally followed every write it ever had.
        case resurrectedDelete
        /// After quiet rounds without faults, a store holds something else than the cloud.
        case divergence
        /// Two concurrent writes of one field: one lost, and no conflict was reported for the record.
        case unreportedConflict
        /// Not an anomaly of the gateway's rules but their documented cost: a field of a record that
        /// an edit revived over a concurrent delete holds an older value than the deleted version
        /// had. Counted, never a failure.
        case revivedWhole

        /// Not an anomaly of the gateway's rules but their documented cost: a write made on a
        /// restored or replaced store before it synced again lost to the cloud's version, in a
        /// conflict reported by that store's sync (or a delete made there, which the rejoin may
        /// not see at all: a table restored without its capture triggers records no delete), or a
        /// write still pending when a backup holding it was restored: the restored copy brings it
        /// back without a common ancestor, and the rejoin cannot tell it from an older value. Without a common ancestor the rejoin cannot
        /// tell an edit made after the restore from a stale value the backup held, and the
        /// default (`join_prefers: cloud`) keeps the cloud's. Counted, never a failure.
        case lostToRejoin

        /// Not an anomaly of the gateway's rules but their documented cost: a delete undone by an
        /// edit it had seen, whose store never had the answer to its upload (the sync failed after
        /// the cloud took it) and had not synced since when the delete was made. That store cannot
        /// tell whether its upload landed before the delete or never did; an edit beats a delete,
        /// so it keeps the record, in a conflict its sync reports. Counted, never a failure.
        case revivedByUnansweredEdit

        /// Not an anomaly of the gateway's rules but their documented cost: a write or delete made
        /// on a store whose last sync was interrupted (killed, or its store died writing) lost, in
        /// a conflict that store's next sync reported, to the value the interrupted sync had been
        /// writing there. The gateway's write may have landed with its state uncommitted; when the
        /// application then rewrote every field it set, or deleted the record, the store cannot be
        /// told from one where the write never landed, so the record joins the zone without a
        /// common ancestor (`join_prefers: cloud`; an edit beats a delete). Counted, never a failure.
        case lostToInterruptedWrite

        /// Whether the class is a violation (every class but the documented costs).
        var isViolation: Bool { ![.revivedWhole, .lostToRejoin, .revivedByUnansweredEdit, .lostToInterruptedWrite].contains(self) }
    }

    private(set) var events: [Event] = []
    /// Events an operator undid before they left their store: a restore of a backup taken
    /// before them, while the cloud had never held what they wrote. Not the gateway's to keep.
    private(set) var withdrawn = Set<Int>()
    /// For each value written (tagged), the event that wrote it.
    private var eventByValue: [String: Int] = [:]

    /// How the oracle knows a value: by its field and its text.
    static func tag(_ field: String, _ value: String) -> String { field + "=" + value }

    /// The event that wrote `value` into `field`, `nil` for a value no acknowledged write produced.
    func event(writing value: String, in field: String) -> Event? {
        eventByValue[Self.tag(field, value)].map { events[$0] }
    }

    /// Each store's latest delete of each record, while the store has not been restored since,
    /// with the fields the store had then: a write into a record the store no longer holds comes
    /// after it (the store's own order). A column added since is one the store did not know when
    /// it last synced: its NULL in the new record is unknown, not a clear.
    private var latestDelete: [String: [String: (event: Int, fields: Set<String>)]] = [:]

    /// Records a write of `value` into `field` of `record` at `store`, which held `previous` there;
    /// `recordHeld` tells whether the store held the record at all (a write into a record the
    /// store deleted creates it again, after that delete).
    mutating func write(
        step: Int, store: String, record: String, field: String, value: String, previous: String?, recordHeld: Bool = true, naming: Set<String> = []
    ) {
        var dependencies = previous.flatMap { eventByValue[Self.tag(field, $0)] }.map { Set([$0]).union(events[$0].dependencies) } ?? []
        var recreatedNaming: Set<String>?
        if !recordHeld, let delete = latestDelete[store]?[record] {
            dependencies.insert(delete.event)
            dependencies.formUnion(events[delete.event].dependencies)
            recreatedNaming = naming.intersection(delete.fields).union([field])
        }
        eventByValue[Self.tag(field, value)] = events.count
        events.append(
            Event(
                id: events.count, step: step, store: store, record: record, kind: .write(field: field, value: value), dependencies: dependencies,
                recreatedNaming: recreatedNaming))
    }

    /// Records a column of `store` renamed from `field` to `newName`, holding `values` (record →
    /// text): the old field is given up (``dropColumn(store:field:seenInCloud:)``), and each value
    /// is a write of the new field, which the store did not have. A value another store's rename
    /// already wrote there is that same write (the texts are equal).
    mutating func renameColumn(step: Int, store: String, field: String, to newName: String, values: [String: String], seenInCloud: Set<String>) {
        dropColumn(store: store, field: field, seenInCloud: seenInCloud)
        for (record, value) in values.sorted(by: { $0.key < $1.key }) where eventByValue[Self.tag(newName, value)] == nil {
            write(step: step, store: store, record: record, field: newName, value: value, previous: nil)
        }
    }

    /// Records a delete of `record` at `store`, which held `previous` (its field values, tagged).
    /// A delete also follows the values of the version the store's gateway last synced, fields
    /// the store has no place for included: the delete removes that whole version (its change
    /// tag), not only what the application saw.
    mutating func delete(step: Int, store: String, record: String, previous: [String], storeFields: Set<String> = []) {
        var dependencies = Set<Int>()
        for value in previous + (lastSynced[store]?[record] ?? []) {
            guard let id = eventByValue[value] else { continue }
            dependencies.insert(id)
            dependencies.formUnion(events[id].dependencies)
        }
        latestDelete[store, default: [:]][record] = (events.count, storeFields)
        events.append(
            Event(id: events.count, step: step, store: store, record: record, kind: .delete, dependencies: dependencies, removedValues: previous))
    }

    /// Steps at which each store was restored from a backup (or replaced).
    private var restoredAt: [String: [Int]] = [:]
    /// Each restore of a store: when, and the step its backup was taken at.
    private var restores: [String: [(at: Int, from: Int)]] = [:]
    /// Steps at which a sync of each store succeeded.
    private var syncedAt: [String: [Int]] = [:]

    /// Steps at which a sync of each store failed or was killed.
    private var interruptedAt: [String: [Int]] = [:]

    /// The cloud as each store's last sync left it (record → tagged values), and as its last
    /// successful sync did: what its gateway knows of each record.
    private var cloudAfterSync: [String: [String: Set<String>]] = [:]
    private var lastSynced: [String: [String: Set<String>]] = [:]

    /// Notes a sync of `store` that succeeded.
    mutating func syncSucceeded(store: String, step: Int) {
        syncedAt[store, default: []].append(step)
        if let cloud = cloudAfterSync[store] { lastSynced[store] = cloud }
    }

    /// Notes a sync of `store` that failed or was killed.
    mutating func syncInterrupted(store: String, step: Int) {
        interruptedAt[store, default: []].append(step)
    }

    /// Whether `event` was made on a store whose last sync before it was interrupted, and its
    /// record met a conflict that store reported afterwards.
    private func madeAfterInterruptedSync(_ event: Event, conflicts: [Conflict]) -> Bool {
        guard let interrupted = interruptedAt[event.store]?.last(where: { $0 < event.step }) else { return false }
        return !(syncedAt[event.store] ?? []).contains { $0 > interrupted && $0 < event.step }
            && conflicts.contains { $0.store == event.store && $0.step >= event.step }
    }

    /// Whether `event` was still pending in its store when the store was restored from a backup
    /// that held it: the restored copy brings it back without a common ancestor.
    private func heldAtRejoin(_ event: Event) -> Bool {
        (restores[event.store] ?? []).contains { restore in
            restore.from >= event.step && restore.at > event.step
                && !(syncedAt[event.store] ?? []).contains { $0 > event.step && $0 < restore.at }
        }
    }

    /// Whether `delete` was undone by a write it followed whose store had no successful sync
    /// between that write and the delete (so no answer to the upload that carried it), in a
    /// conflict that store reported after the delete.
    private func undoneByUnansweredEdit(_ delete: Event, writes: [Event], conflicts: [Conflict]) -> Bool {
        writes.contains { write in
            delete.dependencies.contains(write.id)
                && !(syncedAt[write.store] ?? []).contains { $0 > write.step && $0 < delete.step }
                && conflicts.contains { $0.store == write.store && $0.step > delete.step }
        }
    }

    /// Whether `event`'s store was restored before it and had not synced since: the event was
    /// made on a store that had yet to rejoin the zone.
    private func madeBeforeRejoin(_ event: Event) -> Bool {
        guard let restore = restoredAt[event.store]?.last(where: { $0 < event.step }) else { return false }
        return !(syncedAt[event.store] ?? []).contains { $0 > restore && $0 < event.step }
    }

    /// Withdraws `store`'s writes of `field` that never left it: the column was dropped, and with
    /// it the values the cloud never held (an application giving a column up destroys them).
    mutating func dropColumn(store: String, field: String, seenInCloud: Set<String>) {
        for event in events where event.store == store && !withdrawn.contains(event.id) {
            if case .write(let written, let value) = event.kind, written == field, !seenInCloud.contains(Self.tag(field, value)) { withdrawn.insert(event.id) }
        }
    }

    /// Deletes that left their store: after a sync of it, the cloud no longer held a record it
    /// had held before.
    private var deliveredDeletes = Set<Int>()

    /// Notes what a sync of `store` did to the cloud (`cloud`: record → the values it holds, tagged): its
    /// deletes of records the cloud `held` once and no longer holds left the store, and so did
    /// a delete the store followed by creating the record again (its sync sends an update that
    /// clears what the delete removed), once the cloud's record holds none of the removed values.
    mutating func synced(store: String, held: Set<String>, cloud: [String: Set<String>]) {
        cloudAfterSync[store] = cloud
        for event in events where event.store == store && !deliveredDeletes.contains(event.id) && !withdrawn.contains(event.id) {
            guard case .delete = event.kind, held.contains(event.record) else { continue }
            let delivered = cloud[event.record].map { !event.removedValues.isEmpty && $0.isDisjoint(with: event.removedValues) } ?? true
            if delivered { deliveredDeletes.insert(event.id) }
        }
    }

    /// Withdraws the events of `store` after `step` that never left it: writes whose value the
    /// cloud never held (`seenInCloud`, tagged), deletes no sync of the store delivered. (Whether the
    /// cloud holds the record now says nothing: another store may have created it again.)
    mutating func restore(store: String, toStep step: Int, atStep now: Int, seenInCloud: Set<String>) {
        restoredAt[store, default: []].append(now)
        latestDelete[store] = nil
        restores[store, default: []].append((now, step))
        for event in events where event.store == store && event.step > step && !withdrawn.contains(event.id) {
            switch event.kind {
            case .write(let field, let value): if !seenInCloud.contains(Self.tag(field, value)) { withdrawn.insert(event.id) }
            case .delete: if !deliveredDeletes.contains(event.id) { withdrawn.insert(event.id) }
            }
        }
    }

    /// Checks what the cloud converged to (`final`: record → field → value), with the records a
    /// conflict was reported for and the step of each report.
    func anomalies(final: [String: [String: String]], conflicts: [String: [Conflict]]) -> [(Anomaly, String)] {
        var found: [(Anomaly, String)] = []
        let kept = events.filter { !withdrawn.contains($0.id) }
        let records = Set(kept.map(\.record))
        for record in records.sorted() {
            let ofRecord = kept.filter { $0.record == record }
            let deletes = ofRecord.filter { if case .delete = $0.kind { true } else { false } }
            let writes = ofRecord.filter { if case .write = $0.kind { true } else { false } }
            var fields = Set<String>()
            for event in writes { if case .write(let field, _) = event.kind { fields.insert(field) } }
            if let present = final[record], !present.isEmpty {
                for delete in deletes where writes.allSatisfy({ delete.dependencies.contains($0.id) }) {
                    if madeAfterInterruptedSync(delete, conflicts: conflicts[record] ?? []) {
                        found.append((.lostToInterruptedWrite, "record \(record) deleted at step \(delete.step) by \(delete.store), whose last sync was interrupted, yet present after a reported conflict"))
                    } else if madeBeforeRejoin(delete) || heldAtRejoin(delete) {
                        found.append((.lostToRejoin, "record \(record) deleted at step \(delete.step) by \(delete.store), a restored store that had not synced since, yet present"))
                    } else if undoneByUnansweredEdit(delete, writes: writes, conflicts: conflicts[record] ?? []) {
                        found.append((.revivedByUnansweredEdit, "record \(record) deleted at step \(delete.step) by \(delete.store), revived by an edit whose upload was never answered"))
                    } else {
                        found.append((.resurrectedDelete, "record \(record) deleted at step \(delete.step) by \(delete.store) after every write it had, yet present"))
                    }
                    break
                }
            }
            for field in fields.sorted() {
                let ofField = ofRecord.filter { event in
                    switch event.kind {
                    case .write(let name, _): name == field
                    case .delete: true
                    }
                }
                let followed = ofField.reduce(into: Set<Int>()) { $0.formUnion($1.dependencies) }
                let maximal = ofField.filter { !followed.contains($0.id) }
                let value = final[record]?[field]
                if let value {
                    guard let winner = event(writing: value, in: field), !withdrawn.contains(winner.id) else { continue }
                    if followed.contains(winner.id) {
                        let later = ofField.filter { $0.dependencies.contains(winner.id) }
                        // An edit beats a delete and brings the record back whole, as SyncKit does:
                        // the revived record carries the editing store's last synced values, which
                        // can predate what the deleting side overwrote and deleted (a tombstone has
                        // no values to merge with; a record kept with only its edited fields breaks
                        // NOT NULL columns). Counted apart as `revivedWhole`, not as a lost update.
                        let survivors = Set((final[record] ?? [:]).compactMap { eventByValue[Self.tag($0.key, $0.value)] })
                        let revived = later.contains { event in
                            guard case .delete = event.kind else { return false }
                            return survivors.contains { survivor in
                                guard survivor != winner.id, !event.dependencies.contains(survivor) else { return false }
                                return !events[survivor].dependencies.contains(event.id) || events[survivor].recreated(without: field)
                            }
                        }
                        if revived {
                            found.append((.revivedWhole, "\(record).\(field) ends with \(value) (step \(winner.step), \(winner.store)) in a record an edit revived over a delete"))
                            continue
                        }
                        let firstLater = later.first
                        // A delete made on a restored store before it synced again may be one no
                        // gateway can see (a table restored without its capture triggers): the
                        // rejoin brings the cloud's version back, unreported.
                        let reportedAtRejoin = later.allSatisfy { event in
                            guard madeBeforeRejoin(event) || heldAtRejoin(event) else { return false }
                            if case .delete = event.kind { return true }
                            return (conflicts[record] ?? []).contains { $0.store == event.store && $0.step >= event.step }
                        }
                        let undoneDeletes = later.allSatisfy { event in
                            guard case .delete = event.kind else { return false }
                            return undoneByUnansweredEdit(event, writes: writes, conflicts: conflicts[record] ?? [])
                        }
                        let lostToInterrupted = later.allSatisfy { madeAfterInterruptedSync($0, conflicts: conflicts[record] ?? []) }
                        if lostToInterrupted {
                            found.append((.lostToInterruptedWrite, "\(record).\(field) ends with \(value) (step \(winner.step), \(winner.store)); the later write was made on a store whose last sync was interrupted, and lost in a reported conflict"))
                            continue
                        }
                        if undoneDeletes {
                            found.append((.revivedByUnansweredEdit, "\(record).\(field) ends with \(value) (step \(winner.step), \(winner.store)) in a record an edit whose upload was never answered revived"))
                            continue
                        }
                        if reportedAtRejoin {
                            found.append((.lostToRejoin, "\(record).\(field) ends with \(value) (step \(winner.step), \(winner.store)); the later write of a store restored before it lost in a reported rejoin conflict"))
                            continue
                        }
                        found.append(
                            (.lostUpdate,
                             "\(record).\(field) ends with \(value) (step \(winner.step), \(winner.store)), which \(firstLater.map { "step \($0.step) at \($0.store)" } ?? "a later event") had overwritten"))
                        continue
                    }
                    // Each concurrent write that lost must have met a reported conflict after it
                    // was made (its store's merge, or the winner's).
                    let losers = maximal.filter { $0.id != winner.id }.filter { loser in
                        guard case .write = loser.kind else { return false }
                        return !(conflicts[record] ?? []).contains { $0.step >= loser.step }
                    }
                    if !losers.isEmpty {
                        do {
                            found.append(
                                (.unreportedConflict,
                                 "\(record).\(field): \(value) won over concurrent \(losers.map { "step \($0.step) at \($0.store)" }.joined(separator: ", ")) with no conflict reported"))
                        }
                    }
                } else {
                    // No value: fine when a delete is among the last events; a lost write when
                    // only writes are.
                    let lastWrites = maximal.filter { if case .write = $0.kind { true } else { false } }
                    if !lastWrites.isEmpty, maximal.allSatisfy({ if case .write = $0.kind { true } else { false } }) {
                        found.append(
                            (.lostWrite,
                             "\(record).\(field) ends without a value; its last write (step \(lastWrites[0].step) at \(lastWrites[0].store)) is gone"))
                    }
                }
            }
        }
        return found
    }
}
