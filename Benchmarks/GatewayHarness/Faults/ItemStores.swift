import Foundation
import GRDB
import PostgresNIO
import PostgresSupport

/// The `items` table every store of the fault scenarios has: `id` (the record name), `title`,
/// `n`, and `t` (when the row was written, in milliseconds since 1970, for latency).
///
/// A row is compared as the line `title|n`; `t` is left out, so a row's content is what counts.
protocol ItemStore: Sendable {
    /// Where the store is, for reports.
    var label: String { get }
    /// Inserts or replaces a row, in one transaction.
    func put(_ id: String, title: String, n: Int64) async throws
    /// Deletes a row, in one transaction.
    func delete(_ id: String) async throws
    /// Every row, as `id → title|n`.
    func lines() async throws -> [String: String]
    /// One row's line, `nil` when it does not exist.
    func line(of id: String) async throws -> String?
}

extension ItemStore {
    static func line(title: String, n: Int64) -> String { "\(title)|\(n)" }

    static var nowMilliseconds: Int64 { Int64(Date().timeIntervalSince1970 * 1000) }
}

/// A SQLite file, opened as any other program would (waiting for the gateway's locks).
struct SQLiteItems: ItemStore {
    static let schema = "CREATE TABLE IF NOT EXISTS items (id TEXT PRIMARY KEY, title TEXT NOT NULL, n INTEGER NOT NULL, t INTEGER)"

    let path: String
    var label: String { path }

    /// Creates the table (and the file) with `rows` in one transaction.
    static func create(at path: String, rows: [(String, String, Int64)]) throws -> SQLiteItems {
        let store = SQLiteItems(path: path)
        let database = try store.open()
        try database.write { db in
            try db.execute(sql: schema)
            for (id, title, n) in rows {
                try db.execute(sql: "INSERT INTO items (id, title, n, t) VALUES (?, ?, ?, NULL)", arguments: [id, title, n])
            }
        }
        try database.close()
        return store
    }

    func open() throws -> DatabaseQueue {
        var configuration = Configuration()
        configuration.busyMode = .timeout(30)
        return try DatabaseQueue(path: path, configuration: configuration)
    }

    func put(_ id: String, title: String, n: Int64) async throws {
        let database = try open()
        defer { try? database.close() }
        try await database.write { db in
            try db.execute(
                sql: """
                    INSERT INTO items (id, title, n, t) VALUES (?, ?, ?, ?)
                    ON CONFLICT (id) DO UPDATE SET title = excluded.title, n = excluded.n, t = excluded.t
                    """, arguments: [id, title, n, Self.nowMilliseconds])
        }
    }

    func delete(_ id: String) async throws {
        let database = try open()
        defer { try? database.close() }
        try await database.write { db in try db.execute(sql: "DELETE FROM items WHERE id = ?", arguments: [id]) }
    }

    func line(of id: String) async throws -> String? {
        let database = try open()
        defer { try? database.close() }
        return try await database.read { db in
            try Row.fetchOne(db, sql: "SELECT title, n FROM items WHERE id = ?", arguments: [id]).map { Self.line(title: $0[0], n: $0[1]) }
        }
    }

    func lines() async throws -> [String: String] {
        let database = try open()
        defer { try? database.close() }
        return try await database.read { db in
            var lines: [String: String] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT id, title, n FROM items") {
                lines[row[0]] = Self.line(title: row[1], n: row[2])
            }
            return lines
        }
    }
}

/// A PostgreSQL table `public.items`, written through a pool of its own.
struct PostgresItems: ItemStore {
    static let schema = "CREATE TABLE IF NOT EXISTS items (id text PRIMARY KEY, title text NOT NULL, n bigint NOT NULL, t bigint)"

    let endpoint: PostgresEndpoint
    let pool: PostgresConnectionPool
    var label: String { endpoint.description }

    init(endpoint: PostgresEndpoint) {
        self.endpoint = endpoint
        pool = PostgresConnectionPool(endpoint: endpoint, maximumConnections: 1, requestTimeout: .seconds(10))
    }

    /// Creates the table with `rows`.
    static func create(at endpoint: PostgresEndpoint, rows: [(String, String, Int64)]) async throws -> PostgresItems {
        let store = PostgresItems(endpoint: endpoint)
        try await store.pool.transaction(doing: "creating items") { connection in
            try await connection.query(PostgresQuery(unsafeSQL: schema), logger: connection.logger)
            for start in stride(from: 0, to: rows.count, by: 1000) {
                let chunk = rows[start..<min(start + 1000, rows.count)]
                let (ids, titles, ns) = (chunk.map(\.0), chunk.map(\.1), chunk.map(\.2))
                try await connection.query(
                    "INSERT INTO items (id, title, n) SELECT * FROM unnest(\(ids)::text[], \(titles)::text[], \(ns)::int8[])",
                    logger: connection.logger)
            }
        }
        return store
    }

    func put(_ id: String, title: String, n: Int64) async throws {
        let t = Self.nowMilliseconds
        try await pool.withConnection(doing: "writing \(id)") { connection in
            try await connection.query(
                """
                INSERT INTO items (id, title, n, t) VALUES (\(id), \(title), \(n), \(t))
                ON CONFLICT (id) DO UPDATE SET title = excluded.title, n = excluded.n, t = excluded.t
                """, logger: connection.logger)
        }
    }

    func delete(_ id: String) async throws {
        try await pool.withConnection(doing: "deleting \(id)") { connection in
            try await connection.query("DELETE FROM items WHERE id = \(id)", logger: connection.logger)
        }
    }

    func lines() async throws -> [String: String] {
        try await pool.withConnection(doing: "reading items") { connection in
            let rows = try await connection.query("SELECT id, title, n FROM items", logger: connection.logger)
            var lines: [String: String] = [:]
            for try await (id, title, n) in rows.decode((String, String, Int64).self) { lines[id] = Self.line(title: title, n: n) }
            return lines
        }
    }

    func line(of id: String) async throws -> String? {
        try await pool.withConnection(doing: "reading \(id)") { connection in
            let rows = try await connection.query("SELECT title, n FROM items WHERE id = \(id)", logger: connection.logger)
            for try await (title, n) in rows.decode((String, Int64).self) { return Self.line(title: title, n: n) }
            return nil
        }
    }

    func close() async { await pool.close() }
}
