import Foundation
import GRDB
import GatewayTesting
import SQLiteSupport
import Testing

/// The checkpoints of the stores' WAL files run on a connection of their own, beside the writer.
@Suite("WAL checkpoints beside the writer")
struct WALCheckpointerTests {
    /// A pool prepared as the stores prepare theirs, and 40 transactions of 200 KB written to it
    /// (about 2,000 pages: more than SQLite's default checkpoint threshold, less than the
    /// writer's safety net). `noting` says whether each commit is reported to the checkpointer.
    static func write(noting: Bool, in directory: TemporaryDirectory) throws -> (path: String, pool: DatabasePool, checkpointer: WALCheckpointer) {
        let path = directory.path("store.sqlite")
        var configuration = Configuration()
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
            try WALCheckpointer.prepareWriter(db)
        }
        let pool = try DatabasePool(path: path, configuration: configuration)
        let checkpointer = WALCheckpointer(path: path, configuration: configuration)
        try pool.write { db in try db.execute(sql: "CREATE TABLE blobs (id INTEGER PRIMARY KEY, data BLOB NOT NULL)") }
        let blob = Data(repeating: 7, count: 4_000)
        for transaction in 0..<40 {
            try pool.write { db in
                for row in 0..<50 { try db.execute(sql: "INSERT INTO blobs (id, data) VALUES (?, ?)", arguments: [transaction * 50 + row, blob]) }
            }
            if noting { checkpointer.noteWrite() }
        }
        return (path, pool, checkpointer)
    }

    static func fileSize(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.intValue ?? 0
    }

    @Test("the writer keeps SQLite's own checkpoint only as a safety net, so without the checkpointer the pages stay in the WAL")
    func writerSafetyNet() throws {
        let directory = try TemporaryDirectory(prefix: "wal-checkpoint")
        defer { directory.remove() }
        let (path, pool, checkpointer) = try Self.write(noting: false, in: directory)
        let threshold = try pool.write { db in try Int.fetchOne(db, sql: "PRAGMA wal_autocheckpoint") }
        #expect(threshold == WALCheckpointer.safetyNetPages)
        #expect(Self.fileSize(path) < 1_000_000, "no checkpoint copied the 8 MB into the database file")
        #expect(Self.fileSize(path + "-wal") > 7_000_000)
        checkpointer.close()
        try pool.close()
    }

    @Test("reported commits are checkpointed into the database file while the pool stays open, and close waits for a running one")
    func checkpointsBesideTheWriter() async throws {
        let directory = try TemporaryDirectory(prefix: "wal-checkpoint")
        defer { directory.remove() }
        let (path, pool, checkpointer) = try Self.write(noting: true, in: directory)
        // Checkpoints start at most every 25 ms: report a commit until one has copied everything.
        for _ in 0..<400 where Self.fileSize(path) < 8_000_000 {
            try await Task.sleep(for: .milliseconds(25))
            checkpointer.noteWrite()
        }
        checkpointer.close()
        #expect(Self.fileSize(path) >= 8_000_000, "the 8 MB were copied into the database file")
        let count = try await pool.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM blobs") }
        #expect(count == 2_000)
        checkpointer.noteWrite()  // after close: starts nothing, fails nothing
        try pool.close()
    }
}
