import Foundation
import GRDB
import GRDBSQLite
import GatewayTesting
import SQLiteSupport
import Testing

@testable import SQLiteAdapter

/// The hand-written JSON arrays and C-API bindings the adapter's hot paths use instead of
/// `JSONEncoder` and `StatementArguments`: SQLite must read back exactly what was meant.
@Suite("SQLite statement helpers")
struct SQLiteStatementHelpersTests {
    // No NUL: the cloud refuses names holding one, and SQLite's text ends there.
    static let hostile = [
        "", "plain", "quote\"d", "back\\slash", "new\nline", "tab\tand\rreturn", "bell\u{7}",
        "unit\u{1F}sep", "slash/ed", "ünïcødé", "emoji 🧪", "'single'", "]\"},{", "\u{2028}line separator",
    ]

    @Test("json_each reads every string of a hand-written JSON array back unchanged")
    func jsonStrings() throws {
        let database = try DatabaseQueue()
        let text = JSONArrayText.of(Self.hostile)
        let read = try database.read { db in
            try String.fetchAll(db, sql: "SELECT value FROM json_each(?) ORDER BY key", arguments: [text])
        }
        #expect(read == Self.hostile)
        #expect(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String] == Self.hostile, "and it is standard JSON")
    }

    @Test("json_each reads integers back, the extremes included")
    func jsonIntegers() throws {
        let values: [Int64] = [0, 1, -1, 42, .max, .min]
        let read = try DatabaseQueue().read { db in
            try Int64.fetchAll(db, sql: "SELECT value FROM json_each(?) ORDER BY key", arguments: [JSONArrayText.of(values)])
        }
        #expect(read == values)
        #expect(JSONArrayText.of([Int64]()) == "[]")
    }

    @Test(
        "a many-row statement writes every row once, in order, whether the rows fill its groups or not",
        arguments: [0, 1, 49, 50, 51, 100, 137])
    func manyRows(count: Int) throws {
        let database = try DatabaseQueue()
        let rows = try database.write { db -> [Row] in
            try db.execute(sql: "CREATE TABLE t (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL UNIQUE, number INTEGER)")
            var statement = try ManyRowStatement(db, argumentsPerRow: 2) { rows in
                "INSERT INTO t (name, number) VALUES " + ManyRowStatement.valuesList(rows)
            }
            for index in 0..<count {
                try statement.add([.text(Self.hostile[index % Self.hostile.count] + String(index)), .integer(Int64(index))])
            }
            try statement.finish()
            try statement.finish()  // nothing held: writes nothing
            return try Row.fetchAll(db, sql: "SELECT name, number FROM t ORDER BY id")
        }
        #expect(rows.map { $0[1] as Int64 } == (0..<count).map(Int64.init))
        #expect(rows.map { $0[0] as String } == (0..<count).map { Self.hostile[$0 % Self.hostile.count] + String($0) })
    }

    @Test("rows too wide for a full group under the connection's parameter limit go in smaller groups, or one by one")
    func manyRowsWide() throws {
        let database = try DatabaseQueue()
        for columns in [30, 600] {
            let rows = try database.write { db -> [[Int64]] in
                // A build of SQLite may allow as few as 999 parameters to a statement.
                sqlite3_limit(db.sqliteConnection, SQLITE_LIMIT_VARIABLE_NUMBER, 1_000)
                let names = (0..<columns).map { "c\($0)" }
                try db.execute(sql: "DROP TABLE IF EXISTS wide; CREATE TABLE wide (" + names.map { $0 + " INTEGER" }.joined(separator: ", ") + ")")
                var statement = try ManyRowStatement(db, argumentsPerRow: columns) { rows in
                    "INSERT INTO wide VALUES " + ManyRowStatement.valuesList(rows)
                }
                for row in 0..<70 { try statement.add((0..<columns).map { .integer(Int64(row * columns + $0)) }) }
                try statement.finish()
                return try Row.fetchAll(db, sql: "SELECT * FROM wide ORDER BY rowid").map { row in (0..<columns).map { row[$0] as Int64 } }
            }
            #expect(rows == (0..<70).map { row in (0..<columns).map { Int64(row * columns + $0) } })
        }
    }

    @Test("a many-row statement fails as a whole statement on a constraint, keeps the groups before, and does not retry the failed one")
    func manyRowsConstraint() throws {
        let database = try DatabaseQueue()
        try database.write { db in
            try db.execute(sql: "CREATE TABLE t (name TEXT PRIMARY KEY)")
            var statement = try ManyRowStatement(db, argumentsPerRow: 1) { rows in
                "INSERT INTO t (name) VALUES " + rows.map { "(" + $0[0] + ")" }.joined(separator: ", ")
            }
            for index in 0..<ManyRowStatement.rowsPerStatement { try statement.add([.text("a\(index)")]) }
            let duplicated = (0..<ManyRowStatement.rowsPerStatement).map { $0 == 7 ? "a0" : "b\($0)" }
            let error = #expect(throws: DatabaseError.self) {
                for name in duplicated { try statement.add([.text(name)]) }
            }
            #expect(error?.extendedResultCode == .SQLITE_CONSTRAINT_PRIMARYKEY)
            #expect(try Int.fetchOne(db, sql: "SELECT count(*) FROM t") == ManyRowStatement.rowsPerStatement, "the failed group wrote nothing")
            try statement.add([.text("c")])
            try statement.finish()
            #expect(try Int.fetchOne(db, sql: "SELECT count(*) FROM t") == ManyRowStatement.rowsPerStatement + 1, "and is not written again later")
        }
    }

    @Test("a bound statement stores text, blobs (Data and bytes) and integers exactly, and reports SQLite's errors")
    func boundStatement() throws {
        let database = try DatabaseQueue()
        var generator = SeededGenerator(seed: 5)
        let blobs = (0..<Self.hostile.count).map { index in Data((0..<(index * 37)).map { _ in UInt8.random(in: 0...255, using: &generator) }) }
        try database.write { db in
            try db.execute(sql: "CREATE TABLE t (name TEXT PRIMARY KEY, data BLOB NOT NULL, number INTEGER)")
            let insert = BoundStatement(try db.cachedStatement(sql: "INSERT INTO t (name, data, number) VALUES (?1, ?2, ?3)"))
            for (index, name) in Self.hostile.enumerated() {
                let data: BindableValue = index.isMultiple(of: 2) ? .blob(blobs[index]) : .bytes(Array(blobs[index]))
                try insert.execute(.text(name), data, .integer(Int64(index) - 7))
            }
            #expect(throws: DatabaseError.self) { try insert.execute(.text("plain"), .blob(Data()), .integer(0)) }
            try insert.execute(.text("after the error"), .blob(Data([1])), .integer(1))
        }
        let rows = try database.read { db in try Row.fetchAll(db, sql: "SELECT name, data, number FROM t ORDER BY rowid") }
        #expect(rows.count == Self.hostile.count + 1)
        for (index, name) in Self.hostile.enumerated() {
            #expect(rows[index][0] as String == name)
            #expect(rows[index][1] as Data == blobs[index])
            #expect(rows[index][2] as Int64 == Int64(index) - 7)
        }
    }

    @Test("a bound statement reads rows back exactly: texts, blobs (empty and NULL), integers, reals; and stays usable after an error")
    func boundStatementRows() throws {
        let database = try DatabaseQueue()
        try database.write { db in
            try db.execute(sql: "CREATE TABLE t (name TEXT, data BLOB, number INTEGER, real REAL)")
            let insert = BoundStatement(try db.cachedStatement(sql: "INSERT INTO t VALUES (?1, ?2, ?3, ?4)"))
            for (index, name) in Self.hostile.enumerated() {
                try insert.execute(.text(name), .blob(Data(name.utf8.reversed())), .integer(Int64(index) * -1_000_000_007), .value((Double(index) / 3).databaseValue))
            }
            try insert.execute(.value(.null), .blob(Data()), .value(.null), .value(.null))
            try insert.execute(.value(.null), .value(.null), .integer(.max), .value(.null))

            let select = BoundStatement(try db.cachedStatement(sql: "SELECT name, data, number, real FROM t WHERE number IS NULL OR number <= ?1 ORDER BY rowid"))
            var rows: [(String?, Data?, Int64, DatabaseValue, DatabaseValue)] = []
            try select.forEachRow([.integer(.max)]) { row in rows.append((row.text(at: 0), row.data(at: 1), row.int64(at: 2), row[3], row[0])) }
            #expect(rows.count == Self.hostile.count + 2)
            for (index, name) in Self.hostile.enumerated() {
                #expect(rows[index].0 == name)
                #expect(rows[index].1 == Data(name.utf8.reversed()))
                #expect(rows[index].2 == Int64(index) * -1_000_000_007)
                #expect(rows[index].3 == (Double(index) / 3).databaseValue)
                #expect(rows[index].4 == name.databaseValue)
            }
            #expect(rows[Self.hostile.count].0 == nil && rows[Self.hostile.count].1 == Data() && rows[Self.hostile.count].3 == .null)
            #expect(rows[Self.hostile.count + 1].1 == nil && rows[Self.hostile.count + 1].2 == .max)

            // An error thrown while reading stops the rows and leaves the statement reusable.
            struct Stop: Error {}
            var seen = 0
            #expect(throws: Stop.self) {
                try select.forEachRow([.integer(.max)]) { _ in
                    seen += 1
                    if seen == 2 { throw Stop() }
                }
            }
            #expect(seen == 2)
            var again = 0
            try select.forEachRow([.integer(0)]) { _ in again += 1 }
            #expect(again == Self.hostile.count + 1, "rebound and read from the start")
        }
    }
}
