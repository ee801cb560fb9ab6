// Another program writing to a SQLite database while the gateway syncs it:
//   SQLiteWriter <path> <table> <prefix> <count> <pause-ms>
// Upserts <count> rows named <prefix>-<i> into <table> (name TEXT PRIMARY KEY, title TEXT,
// rank INTEGER), one transaction each, pausing between them; every third row is updated again.
import Foundation
import GRDB

let arguments = CommandLine.arguments
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
