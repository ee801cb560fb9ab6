@testable import AdapterKit
import Foundation
import GRDB
import GatewayTesting
import Testing

/// Every record the kit records carries the store's epoch when it was recorded (the rule that
/// tells a restored copy's deletes from its age): rows written with the epoch keep it, rows
/// written without get it from the trigger, in state files of this release and of earlier ones.
@Suite("Kit state: the epoch of recorded records")
struct KitStateEpochTriggerTests {
    static let earlierTrigger = """
        CREATE TRIGGER records_seen_epoch AFTER INSERT ON records BEGIN
            UPDATE records SET seen_epoch = (SELECT epoch FROM identity WHERE id = 1) WHERE record_name = NEW.record_name;
        END
        """

    @Test("a state file of an earlier release gets the trigger that skips rows carrying the epoch; every insert path sets it")
    func epochTrigger() async throws {
        let directory = try TemporaryDirectory(prefix: "kit-epoch")
        let path = directory.path("state.sqlite")
        do {
            let state = try KitStateDatabase(path: path)
            try await state.write { db in
                try db.execute(sql: "DROP TRIGGER records_seen_epoch")
                try db.execute(sql: Self.earlierTrigger)
            }
            try state.queue.close()
        }
        let state = try KitStateDatabase(path: path)
        defer { try? state.queue.close() }
        let epochs = try await state.write { db -> [String: Int64?] in
            let trigger = try String.fetchOne(db, sql: "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = 'records_seen_epoch'")
            #expect(trigger?.contains("WHEN NEW.seen_epoch IS NOT") == true)
            try db.execute(sql: "INSERT OR REPLACE INTO identity (id, store, epoch) VALUES (1, 'store', 7)")
            var writer = try KitStateDatabase.recordsWriter(db)
            for index in 0..<60 { try writer.add([.text("grouped\(index)"), .text("Note"), .text("v:\(index)")]) }
            try writer.finish()
            try db.execute(sql: "INSERT OR REPLACE INTO records (record_name, record_type, observed) VALUES ('alone', 'Note', 'v:x')")
            // A stale epoch written by hand is corrected, as before.
            try db.execute(sql: "INSERT OR REPLACE INTO records (record_name, record_type, observed, seen_epoch) VALUES ('stale', 'Note', 'v:y', 3)")
            var epochs: [String: Int64?] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT record_name, seen_epoch FROM records") { epochs[row[0]] = row[1] as Int64? }
            return epochs
        }
        #expect(epochs.count == 62)
        #expect(epochs.values.allSatisfy { $0 == 7 })
    }
}
