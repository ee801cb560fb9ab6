import EmbeddedCloud
import Foundation
import GRDB
import GatewayCore
import SQLiteAdapter

/// A notes table of six synced columns, filled by SQL so that generating it costs no Swift memory.
enum BenchNotes {
    static let zone = ZoneID(zoneName: "BenchNotes")
    static let schema = """
        CREATE TABLE note (id INTEGER PRIMARY KEY, title TEXT, body TEXT, views INTEGER, score REAL,
                           created_at DATETIME, done BOOLEAN);
        CREATE TABLE untracked (id INTEGER PRIMARY KEY, title TEXT, body TEXT, views INTEGER, score REAL,
                                created_at DATETIME, done BOOLEAN);
        """

    static func makeDatabase(_ path: String, rows: Int) throws {
        let database = try DatabaseQueue(path: path)
        try database.write { db in
            try db.execute(sql: schema)
            try insert(rows: rows, startingAt: 1, into: "note", db: db)
        }
    }

    static func insert(rows: Int, startingAt start: Int, into table: String, db: Database) throws {
        guard rows > 0 else { return }
        try db.execute(
            sql: """
                WITH RECURSIVE seq(i) AS (SELECT ? UNION ALL SELECT i + 1 FROM seq WHERE i < ?)
                INSERT INTO \(table) (id, title, body, views, score, created_at, done)
                SELECT i, 'Note number ' || i, 'Lorem ipsum dolor sit amet, consectetur adipiscing elit. ' || i,
                       i * 7, i / 3.0, strftime('%Y-%m-%dT%H:%M:%fZ', 1700000000 + i, 'unixepoch'), i % 2 FROM seq
                """,
            arguments: [start, start + rows - 1])
    }

    static func adapter(_ path: String, name: String) throws -> SQLiteAdapter {
        try SQLiteAdapter(
            configuration: SQLiteAdapterConfiguration(name: name, path: path, zoneID: zone, tables: [TableMapping(table: "note")]))
    }

    static func synchronizer(
        _ cloud: any CloudDatabase, _ adapter: SQLiteAdapter, device: String, options: AdapterSyncOptions = AdapterSyncOptions()
    ) -> Synchronizer {
        Synchronizer(cloud: cloud, adapters: [SyncedAdapter(adapter, options: options)], configuration: SyncConfiguration(deviceID: device))
    }

    /// Fills a source file with `records` rows, syncs it up through `cloud` and down into an
    /// empty target, checks every row arrived, and returns the seconds each way.
    static func initialSync(through cloud: any CloudDatabase, records: Int, workDirectory: URL) async throws
        -> (upSeconds: Double, downSeconds: Double)
    {
        let source = workDirectory.appendingPathComponent("source.sqlite").path
        let target = workDirectory.appendingPathComponent("target.sqlite").path
        try makeDatabase(source, rows: records)
        try makeDatabase(target, rows: 0)
        let up = synchronizer(cloud, try adapter(source, name: "source"), device: "source")
        let down = synchronizer(cloud, try adapter(target, name: "target"), device: "target")
        let (uploaded, upSeconds) = try await timed { try await sync(up) }
        let (downloaded, downSeconds) = try await timed { try await sync(down) }
        guard uploaded.uploaded == records, downloaded.downloaded == records else {
            throw BenchmarkError("moved \(uploaded.uploaded) up and \(downloaded.downloaded) down, expected \(records)")
        }
        let rows = try await DatabaseQueue(path: target).read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM note") ?? 0 }
        guard rows == records else { throw BenchmarkError("the target has \(rows) rows, expected \(records)") }
        return (upSeconds, downSeconds)
    }

    static func sync(_ synchronizer: Synchronizer) async throws -> AdapterSyncReport {
        let report = try await synchronizer.sync().adapters[0]
        guard report.outcome == .synced else { throw BenchmarkError("sync failed: \(report.outcome)") }
        return report
    }
}

/// Initial sync of N rows from one SQLite file through the embedded cloud into an empty file.
struct SQLiteInitialSyncScenario: Scenario {
    let name = "sqlite-initial"
    let summary = "SQLite: initial sync of N rows (6 columns) from one file through the embedded cloud into an empty file"

    func run(records: Int, workDirectory: URL) async throws -> [Measurement] {
        let cloud = try EmbeddedCloud(path: workDirectory.appendingPathComponent("cloud.sqlite").path)
        let (upSeconds, downSeconds) = try await BenchNotes.initialSync(through: cloud, records: records, workDirectory: workDirectory)
        return [
            Measurement(name: "upload \(records) rows (file → cloud)", value: Double(records) / upSeconds, unit: "rows/s"),
            Measurement(name: "download \(records) rows (cloud → file)", value: Double(records) / downSeconds, unit: "rows/s"),
            Measurement(
                name: "end to end \(records) rows", value: Double(records) / (upSeconds + downSeconds), unit: "rows/s",
                goal: .atLeast(20_000)),
            Measurement(name: "peak resident memory so far", value: peakResidentMegabytes(), unit: "MB"),
        ]
    }
}

/// Rows with a 256 KB blob each, synced file → cloud → file with the blobs as assets.
struct SQLiteAssetsScenario: Scenario {
    let name = "sqlite-assets"
    let summary = "SQLite: 1,000 rows with a 256 KB blob each (N is ignored), file → cloud (assets) → file, in MB/s"

    func run(records _: Int, workDirectory: URL) async throws -> [Measurement] {
        let rows = 1_000
        let blobSize = 256 * 1_024
        let schema = "CREATE TABLE photo (id INTEGER PRIMARY KEY, name TEXT, data BLOB);"
        let source = workDirectory.appendingPathComponent("source.sqlite").path
        let target = workDirectory.appendingPathComponent("target.sqlite").path
        try await DatabaseQueue(path: source).write { db in
            try db.execute(sql: schema)
            try db.execute(
                sql: """
                    WITH RECURSIVE seq(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM seq WHERE i < ?)
                    INSERT INTO photo (id, name, data) SELECT i, 'photo ' || i, randomblob(?) FROM seq
                    """, arguments: [rows, blobSize])
        }
        try await DatabaseQueue(path: target).write { db in try db.execute(sql: schema) }
        let cloud = try EmbeddedCloud(path: workDirectory.appendingPathComponent("cloud.sqlite").path)
        func adapter(_ path: String, _ name: String) throws -> SQLiteAdapter {
            try SQLiteAdapter(
                configuration: SQLiteAdapterConfiguration(name: name, path: path, zoneID: BenchNotes.zone, tables: [TableMapping(table: "photo")]))
        }
        let up = BenchNotes.synchronizer(cloud, try adapter(source, "source"), device: "source")
        let down = BenchNotes.synchronizer(cloud, try adapter(target, "target"), device: "target")
        let (_, upSeconds) = try await timed { try await BenchNotes.sync(up) }
        let (_, downSeconds) = try await timed { try await BenchNotes.sync(down) }
        // Row count, total size, and rows 1, 500 and 1,000 byte for byte.
        let digest = """
            SELECT COUNT(*), SUM(length(data)), (SELECT hex(data) FROM photo WHERE id = 1),
                   (SELECT hex(data) FROM photo WHERE id = 500), (SELECT hex(data) FROM photo WHERE id = 1000) FROM photo
            """
        let expected = try await DatabaseQueue(path: source).read { db in try Row.fetchOne(db, sql: digest)?.description }
        let received = try await DatabaseQueue(path: target).read { db in try Row.fetchOne(db, sql: digest)?.description }
        guard expected == received else { throw BenchmarkError("the target's blobs differ from the source's") }
        let megabytes = Double(rows * blobSize) / 1_048_576
        return [
            Measurement(name: "upload 1,000 × 256 KB (file → cloud assets)", value: megabytes / upSeconds, unit: "MB/s"),
            Measurement(name: "download 1,000 × 256 KB (cloud assets → file)", value: megabytes / downSeconds, unit: "MB/s"),
            Measurement(name: "end to end 1,000 × 256 KB", value: megabytes / (upSeconds + downSeconds), unit: "MB/s"),
        ]
    }
}

/// The initial sync with and without two encrypted text fields, alternating, medians of three.
struct SQLiteEncryptionScenario: Scenario {
    let name = "sqlite-encryption"
    let summary = "SQLite: initial sync of N rows, file → cloud → file, with title and body encrypted vs in clear (five rounds each)"

    func run(records: Int, workDirectory: URL) async throws -> [Measurement] {
        let ring = try KeyRing([EncryptionKey(id: "bench", rawKey: Data(repeating: 42, count: 32))])
        let encrypted = AdapterSyncOptions(encryption: FieldEncryption(keyRing: ring, fields: ["note": ["title", "body"]]))
        let context = FieldContext(recordType: "note", recordName: "12345", field: "title")
        let (_, microSeal) = try timedSync {
            for index in 0..<100_000 { _ = try ring.seal(.string("Note number \(index)"), context: context) }
        }
        let sample = try ring.seal(.string("Note number 7"), context: context)
        let (_, microOpen) = try timedSync { for _ in 0..<100_000 { _ = try ring.open(sample, context: context) } }
        var seconds: [Bool: [Double]] = [false: [], true: []]
        var cpuSeconds: [Bool: [Double]] = [false: [], true: []]
        var hopSeconds: [Bool: (up: [Double], down: [Double])] = [false: ([], []), true: ([], [])]
        for round in 0..<5 {
            for encrypt in [false, true] {
                let folder = workDirectory.appendingPathComponent("round-\(round)-\(encrypt)")
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                let cloud = try EmbeddedCloud(path: folder.appendingPathComponent("cloud.sqlite").path)
                let source = folder.appendingPathComponent("source.sqlite").path
                let target = folder.appendingPathComponent("target.sqlite").path
                try BenchNotes.makeDatabase(source, rows: records)
                try BenchNotes.makeDatabase(target, rows: 0)
                let options = encrypt ? encrypted : AdapterSyncOptions()
                let up = BenchNotes.synchronizer(cloud, try BenchNotes.adapter(source, name: "source"), device: "source", options: options)
                let down = BenchNotes.synchronizer(cloud, try BenchNotes.adapter(target, name: "target"), device: "target", options: options)
                let cpuBefore = processorSeconds()
                let (_, upSeconds) = try await timed { try await BenchNotes.sync(up) }
                let (_, downSeconds) = try await timed { try await BenchNotes.sync(down) }
                let elapsed = upSeconds + downSeconds
                cpuSeconds[encrypt]!.append(processorSeconds() - cpuBefore)
                hopSeconds[encrypt]!.up.append(upSeconds)
                hopSeconds[encrypt]!.down.append(downSeconds)
                let check = try await DatabaseQueue(path: target).read { db in
                    try String.fetchOne(db, sql: "SELECT body FROM note WHERE id = 7")
                }
                guard check == "Lorem ipsum dolor sit amet, consectetur adipiscing elit. 7" else {
                    throw BenchmarkError("the target does not hold the decrypted body")
                }
                seconds[encrypt]!.append(elapsed)
            }
        }
        func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
        let clear = median(seconds[false]!)
        let sealed = median(seconds[true]!)
        return [
            Measurement(name: "end to end \(records) rows, in clear (median)", value: Double(records) / clear, unit: "rows/s"),
            Measurement(name: "end to end \(records) rows, 2 fields encrypted (median)", value: Double(records) / sealed, unit: "rows/s"),
            Measurement(name: "time with encryption / without", value: sealed / clear, unit: "×", goal: .atMost(1.15)),
            Measurement(
                name: "CPU time with encryption / without", value: median(cpuSeconds[true]!) / median(cpuSeconds[false]!), unit: "×"),
            Measurement(name: "upload with encryption / without", value: median(hopSeconds[true]!.up) / median(hopSeconds[false]!.up), unit: "×"),
            Measurement(
                name: "download with encryption / without", value: median(hopSeconds[true]!.down) / median(hopSeconds[false]!.down), unit: "×"),
            Measurement(name: "seal one short text field", value: microSeal * 10, unit: "µs"),
            Measurement(name: "open one short text field", value: microOpen * 10, unit: "µs"),
        ]
    }
}

/// Syncs 100 changed rows in a large and a small table; the cost should follow the changes.
struct SQLiteIncrementalScenario: Scenario {
    let name = "sqlite-incremental"
    let summary = "SQLite: sync 100 changed rows in a table of N rows vs one of 10,000 rows (ratio of times)"

    func run(records: Int, workDirectory: URL) async throws -> [Measurement] {
        var seconds: [Int: Double] = [:]
        for size in [10_000, max(records, 10_000)] {
            let folder = workDirectory.appendingPathComponent("size-\(size)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let cloud = try EmbeddedCloud(path: folder.appendingPathComponent("cloud.sqlite").path)
            let path = folder.appendingPathComponent("db.sqlite").path
            try BenchNotes.makeDatabase(path, rows: size)
            let synchronizer = BenchNotes.synchronizer(cloud, try BenchNotes.adapter(path, name: "db"), device: "db")
            _ = try await BenchNotes.sync(synchronizer)
            // Steady state: long after the initial sync, checkpoints have emptied both WAL files.
            for file in [path, folder.appendingPathComponent("cloud.sqlite").path] {
                _ = try await DatabaseQueue(path: file).writeWithoutTransaction { db in
                    try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
                }
            }
            // One warm-up round, then the median of nine rounds of 100 changes each, spread over the table.
            var rounds: [Double] = []
            for round in 0..<10 {
                try await DatabaseQueue(path: path).write { db in
                    for index in 0..<100 {
                        let id = 1 + (index * (size / 100) + round) % size
                        try db.execute(sql: "UPDATE note SET views = views + 1 WHERE id = ?", arguments: [id])
                    }
                }
                let (report, elapsed) = try await timed { try await BenchNotes.sync(synchronizer) }
                guard report.uploaded == 100 else { throw BenchmarkError("uploaded \(report.uploaded), expected 100") }
                if round > 0 { rounds.append(elapsed) }
            }
            seconds[size] = rounds.sorted()[rounds.count / 2]
        }
        let large = max(records, 10_000)
        return [
            Measurement(name: "100 changes in 10000 rows", value: seconds[10_000]! * 1000, unit: "ms"),
            Measurement(name: "100 changes in \(large) rows", value: seconds[large]! * 1000, unit: "ms"),
            Measurement(name: "ratio large / small", value: seconds[large]! / seconds[10_000]!, unit: "×", goal: .atMost(1.5)),
        ]
    }
}

/// Inserts into a table with the gateway's triggers and into an identical one without, in two
/// files, alternating rounds and taking the median so neither side profits from going first.
struct SQLiteInsertScenario: Scenario {
    let name = "sqlite-insert"
    let summary = "SQLite: insert throughput into a tracked table vs an untracked one (batched and one row per transaction)"

    func run(records: Int, workDirectory: URL) async throws -> [Measurement] {
        let trackedPath = workDirectory.appendingPathComponent("tracked.sqlite").path
        let untrackedPath = workDirectory.appendingPathComponent("untracked.sqlite").path
        try BenchNotes.makeDatabase(trackedPath, rows: 0)
        try BenchNotes.makeDatabase(untrackedPath, rows: 0)
        _ = try BenchNotes.adapter(trackedPath, name: "tracked")  // installs the triggers
        let tracked = try DatabasePool(path: trackedPath)
        let untracked = try DatabasePool(path: untrackedPath)
        let rounds = 5
        let batch = max(1, records / rounds)
        let singles = max(1, min(records, 10_000) / rounds)
        var next = [ObjectIdentifier(tracked): 1, ObjectIdentifier(untracked): 1]
        func batched(_ database: DatabasePool) throws -> Double {
            let start = ContinuousClock.now
            let first = next[ObjectIdentifier(database)]!
            try database.write { db in try BenchNotes.insert(rows: batch, startingAt: first, into: "note", db: db) }
            next[ObjectIdentifier(database)] = first + batch
            return Double(batch) / (ContinuousClock.now - start).seconds
        }
        func single(_ database: DatabasePool) throws -> Double {
            let start = ContinuousClock.now
            for _ in 0..<singles {
                let id = next[ObjectIdentifier(database)]!
                try database.write { db in
                    try db.execute(
                        sql: "INSERT INTO note (id, title, body, views, score, created_at, done) VALUES (?, 'title', 'body', 1, 1.5, '2024-01-01T00:00:00Z', 0)",
                        arguments: [id])
                }
                next[ObjectIdentifier(database)] = id + 1
            }
            return Double(singles) / (ContinuousClock.now - start).seconds
        }
        func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
        var rates: [String: [Double]] = [:]
        for round in 0..<rounds {
            let order = round.isMultiple(of: 2) ? [("tracked", tracked), ("untracked", untracked)] : [("untracked", untracked), ("tracked", tracked)]
            for (label, database) in order { rates["\(label) batched", default: []].append(try batched(database)) }
            for (label, database) in order { rates["\(label) single", default: []].append(try single(database)) }
        }
        let trackedBatched = median(rates["tracked batched"]!)
        let untrackedBatched = median(rates["untracked batched"]!)
        let trackedSingle = median(rates["tracked single"]!)
        let untrackedSingle = median(rates["untracked single"]!)
        return [
            Measurement(name: "untracked, \(batch) rows per transaction", value: untrackedBatched, unit: "rows/s"),
            Measurement(name: "tracked, \(batch) rows per transaction", value: trackedBatched, unit: "rows/s"),
            Measurement(name: "tracked / untracked, batched", value: trackedBatched / untrackedBatched, unit: "×", goal: .atLeast(0.5)),
            Measurement(name: "untracked, a transaction per row", value: untrackedSingle, unit: "rows/s"),
            Measurement(name: "tracked, a transaction per row", value: trackedSingle, unit: "rows/s"),
            Measurement(name: "tracked / untracked, a transaction per row", value: trackedSingle / untrackedSingle, unit: "×", goal: .atLeast(0.5)),
        ]
    }
}

/// Peak memory of an initial sync of N rows (run it alone: memory is per process).
struct SQLiteMemoryScenario: Scenario {
    let name = "sqlite-memory"
    let summary = "SQLite: peak resident memory of an initial sync of N rows, file → cloud → file (run alone)"

    func run(records: Int, workDirectory: URL) async throws -> [Measurement] {
        var measurements = try await SQLiteInitialSyncScenario().run(records: records, workDirectory: workDirectory)
        measurements.removeLast()
        measurements.append(
            Measurement(name: "peak resident memory, \(records) rows", value: peakResidentMegabytes(), unit: "MB", goal: .atMost(100)))
        return measurements
    }
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
