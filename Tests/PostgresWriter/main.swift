// Another program writing to PostgreSQL while the gateway syncs it:
//   PostgresWriter <url> <schema> <table> <prefix> <count> <pause-ms>
// Upserts <count> rows named <prefix>-<i> into <schema>.<table> (name text PRIMARY KEY, title
// text, rank integer), one transaction each, pausing between them; every third row is updated
// again.
import Foundation
import PostgresNIO
import PostgresSupport

let arguments = CommandLine.arguments
guard arguments.count == 7, let count = Int(arguments[5]), let pause = UInt64(arguments[6]) else {
    FileHandle.standardError.write(Data("usage: PostgresWriter <url> <schema> <table> <prefix> <count> <pause-ms>\n".utf8))
    exit(2)
}
let table = [arguments[2], arguments[3]].map { "\"" + $0.replacingOccurrences(of: "\"", with: "\"\"") + "\"" }.joined(separator: ".")
let prefix = arguments[4]
do {
    let pool = PostgresConnectionPool(endpoint: try PostgresEndpoint(url: arguments[1]), maximumConnections: 1)
    for index in 0..<count {
        try await pool.transaction(doing: "writing row \(index)") { connection in
            try await connection.query(
                """
                INSERT INTO \(unescaped: table) (name, title, rank) VALUES (\("\(prefix)-\(index)"), \("written by \(prefix)"), \(index))
                ON CONFLICT (name) DO UPDATE SET title = excluded.title, rank = excluded.rank
                """, logger: connection.logger)
            if index % 3 == 2 {
                try await connection.query(
                    "UPDATE \(unescaped: table) SET title = \("updated by \(prefix)") WHERE name = \("\(prefix)-\(index - 1)")",
                    logger: connection.logger)
            }
        }
        try await Task.sleep(for: .milliseconds(pause))
    }
    await pool.close()
    print("wrote \(count) rows")
} catch {
    print("writer failed: \(error)")
    exit(1)
}
