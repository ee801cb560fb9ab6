import Foundation
import GRDB
import GatewayCore
import GatewayTesting
import SQLiteAdapter

/// A SQLite file made for a test, written through its own connection as another program would.
struct SQLiteFile: Sendable {
    let path: String
    let database: DatabaseQueue

    init(_ directory: TemporaryDirectory, name: String = "store-\(UUID().uuidString).sqlite", schema: String) throws {
        path = directory.path(name)
        var configuration = Configuration()
        configuration.busyMode = .timeout(30)
        database = try DatabaseQueue(path: path, configuration: configuration)
        try database.write { db in try db.execute(sql: schema) }
    }

    func execute(_ sql: String, _ arguments: StatementArguments = []) throws {
        try database.write { db in try db.execute(sql: sql, arguments: arguments) }
    }

    func rows(_ sql: String) throws -> [Row] {
        try database.read { db in try Row.fetchAll(db, sql: sql) }
    }

    func count(_ sql: String) throws -> Int {
        try database.read { db in try Int.fetchOne(db, sql: sql) ?? 0 }
    }
}

enum Notes {
    static let zone = ZoneID(zoneName: "Notes")
    static let schema = """
        CREATE TABLE "Note" (name TEXT PRIMARY KEY, title TEXT, rank INTEGER CHECK (rank IS NULL OR rank >= 0));
        """

    static func adapter(_ file: SQLiteFile, name: String = "notes", tables: [TableMapping] = [TableMapping(table: "Note")])
        throws -> SQLiteAdapter
    {
        try SQLiteAdapter(
            configuration: SQLiteAdapterConfiguration(
                name: name, path: file.path, zoneID: zone, tables: tables, signalPollInterval: .milliseconds(10)))
    }

    /// The rows of "Note" as name → (title, rank).
    static func contents(_ file: SQLiteFile) throws -> [String: [String: FieldValue]] {
        var result: [String: [String: FieldValue]] = [:]
        for row in try file.rows(#"SELECT name, title, rank FROM "Note""#) {
            var fields: [String: FieldValue] = [:]
            if let title: String = row[1] { fields["title"] = .string(title) }
            if let rank: Int64 = row[2] { fields["rank"] = .int64(rank) }
            result[row[0]] = fields
        }
        return result
    }
}

/// GRDB also has a `Record`; in these tests the word means the gateway's record.
typealias Record = GatewayCore.Record
