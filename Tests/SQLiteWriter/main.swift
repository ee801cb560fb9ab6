// Another program writing to a SQLite database while the gateway syncs it:
//   SQLiteWriter <path> <table> <prefix> <count> <pause-ms>
// Upserts <count> rows named <prefix>-<i> into <table> (name TEXT PRIMARY KEY, title TEXT,
// rank INTEGER), one transaction each, pausing between them; every third row is updated again.
//
//   SQLiteWriter process-settings first|after-open
// Applies SQLiteProcessSettings in a fresh process, first thing or after opening a connection, and
// prints whether they applied and how much memory SQLite counted for opening another connection
// and running a query.
import Foundation
import GRDB
import GRDBSQLite
import SQLiteSupport

let arguments = CommandLine.arguments
if arguments.count == 3, arguments[1] == "process-settings" {
    do {
        let early = arguments[2] == "after-open" ? try DatabaseQueue() : nil
        let applied = SQLiteProcessSettings.apply()
        let before = sqlite3_memory_used()
        let queue = try DatabaseQueue()
        let rows = try queue.read { db in
            try Int.fetchAll(db, sql: "WITH RECURSIVE n(i) AS (VALUES (1) UNION ALL SELECT i + 1 FROM n WHERE i < 1000) SELECT i FROM n")
        }
        print("applied=\(applied) counted=\(sqlite3_memory_used() - before) rows=\(rows.count) early=\(early != nil)")
        exit(0)
    } catch {
        FileHandle.standardError.write(Data("\(error)\n".utf8))
        exit(1)
    }
}
guard arguments.count == 6, let count = Int(arguments[4]), let pause = UInt32(arguments[5]) else {
    FileHandle.standardError.write(Data("usage: SQLiteWriter <path> <table> <prefix> <count> <pause-ms>\n".utf8))
    exit(2)
}
do {
    var configuration = Configuration()
    configuration.busyMode = .timeout(30)
    let database = try DatabaseQueue(path: arguments[1], configuration: configuration)
    let table = "\"" + arguments[2].replacingOccurrences(of: "\"", with: "\"\"") + "\""
    for index in 0..<count {
        try database.write { db in
            try db.execute(
                sql: "INSERT INTO \(table) (name, title, rank) VALUES (?, ?, ?) ON CONFLICT (name) DO UPDATE SET title = excluded.title, rank = excluded.rank",
                arguments: ["\(arguments[3])-\(index)", "written by \(arguments[3])", index])
            if index % 3 == 2 {
                try db.execute(
                    sql: "UPDATE \(table) SET title = ? WHERE name = ?", arguments: ["updated by \(arguments[3])", "\(arguments[3])-\(index - 1)"])
            }
        }
        usleep(pause * 1000)
    }
    print("wrote \(count) rows")
} catch {
    print("writer failed: \(error)")
    exit(1)
}
