import Foundation
import GatewayCore

/// A download about to be written into the store, kept in the sidecar until its state commits,
/// so a crash in between replays it.
struct KitJournal: Codable, Sendable {
    var saves: [Record]
    var deletes: [KitRecordKey]
    /// What the store held of each record before the write (by name; absent: nothing).
    var before: [String: String]
    var update: StateUpdate
    /// Records left alone: edited in the store since the synchronizer read them.
    var skipped: [String]

    /// ``SyncStateUpdate`` by record name, for coding.
    struct StateUpdate: Codable, Sendable {
        var zone: ZoneID
        var metadata: [String: Data]
        var removedMetadata: [String]
        var settled: [String: Int64]
        var failures: [String: RecordFailure]
        var zoneState: Data
        var sending: [String]

        init(_ update: SyncStateUpdate, zone: ZoneID) {
            self.zone = zone
            metadata = Dictionary(uniqueKeysWithValues: update.metadata.map { ($0.key.recordName, $0.value) })
            removedMetadata = update.removedMetadata.map(\.recordName)
            settled = Dictionary(uniqueKeysWithValues: update.settled.map { ($0.key.recordName, $0.value) })
            failures = Dictionary(uniqueKeysWithValues: update.failures.map { ($0.key.recordName, $0.value) })
            zoneState = update.zoneState
            sending = update.sending.map(\.recordName)
        }

        var update: SyncStateUpdate {
            func id(_ name: String) -> RecordID { RecordID(recordName: name, zoneID: zone) }
            return SyncStateUpdate(
                metadata: Dictionary(uniqueKeysWithValues: metadata.map { (id($0.key), $0.value) }),
                removedMetadata: Set(removedMetadata.map(id)),
                settled: Dictionary(uniqueKeysWithValues: settled.map { (id($0.key), $0.value) }),
                failures: Dictionary(uniqueKeysWithValues: failures.map { (id($0.key), $0.value) }),
                zoneState: zoneState, sending: Set(sending.map(id)))
        }
    }

    func encoded() throws -> Data {
        try JSONEncoder().encode(self)
    }

    static func decode(_ data: Data, statePath: String) throws -> KitJournal {
        do {
            return try JSONDecoder().decode(KitJournal.self, from: data)
        } catch {
            throw KitAdapterError(
                .corruptState, "the journal of an interrupted write in \(statePath) cannot be read; reset the adapter's sync state",
                underlying: error)
        }
    }
}

