import GRDB
import GRDBSQLite

/// A statement that writes one row per group of arguments, run up to ``rowsPerStatement`` rows at
/// a time (`INSERT … VALUES (…), (…), …`), the rows left over one by one.
///
/// SQLite prepares a statement's table and index cursors once per execution, so one execution per
/// row pays that for every row: the embedded cloud saved 15% more records a second with 50 rows a
/// statement (`BENCHMARKS.md`). Rows are held until a group is full or ``finish()`` runs, so a
/// caller that writes the same table otherwise calls ``finish()`` first. A statement of many rows
/// inside a larger transaction keeps a statement journal; ``SQLiteProcessSettings`` keeps those in
/// memory.
public struct ManyRowStatement {
    /// How many rows one execution writes at most.
    public static let rowsPerStatement = 50

    private let single: BoundStatement
    private let many: BoundStatement?
    private let argumentsPerRow: Int
    /// Rows to an execution: fewer than ``rowsPerStatement`` for rows so wide that the group
    /// would pass the connection's limit on a statement's parameters.
    private let rowsPerGroup: Int
    private var held: [BindableValue] = []
    /// The names of the held rows, for the failure that names the row refused.
    private var heldNames: [String?] = []
    /// The connection, for the count of rows each execution wrote.
    private let connection: OpaquePointer?
    /// Whether each row must write a row (an upsert that updates on conflict): one that writes
    /// none was skipped by a trigger (`RAISE(IGNORE)`).
    private let checksWrites: Bool
    /// Rows of groups that wrote nothing, which group rows cannot name (``RowsSkipped``).
    public private(set) var unwrittenRows = 0

    /// Prepares the statement for one row and for ``rowsPerStatement`` rows.
    /// - Parameters:
    ///   - argumentsPerRow: how many values each row binds.
    ///   - sql: the statement for the given rows, each given as its parameters' names (`?1`, `?2`,
    ///     … numbered across the statement, `argumentsPerRow` to a row).
    ///   - checkingWrites: whether every row must write one (see ``RowSkipped``).
    ///   - oneRowAtATime: whether each row goes alone, so a row a trigger skips is named.
    public init(
        _ db: Database, argumentsPerRow: Int, checkingWrites: Bool = false, oneRowAtATime: Bool = false, sql: (_ rows: [[String]]) -> String
    ) throws {
        func parameters(rows: Int) -> [[String]] {
            (0..<rows).map { row in (1...argumentsPerRow).map { column in "?" + String(row * argumentsPerRow + column) } }
        }
        self.argumentsPerRow = argumentsPerRow
        connection = db.sqliteConnection
        checksWrites = checkingWrites
        let parameterLimit = Int(sqlite3_limit(db.sqliteConnection, SQLITE_LIMIT_VARIABLE_NUMBER, -1))
        rowsPerGroup = oneRowAtATime ? 1 : max(1, min(Self.rowsPerStatement, parameterLimit / max(1, argumentsPerRow)))
        single = BoundStatement(try db.cachedStatement(sql: sql(parameters(rows: 1))))
        many = rowsPerGroup > 1 ? BoundStatement(try db.cachedStatement(sql: sql(parameters(rows: rowsPerGroup)))) : nil
        held.reserveCapacity(rowsPerGroup * argumentsPerRow)
    }

    /// The `VALUES` list of `rows`, each given as its parameters' names: `(?1, ?2), (?3, ?4)`.
    public static func valuesList(_ rows: [[String]]) -> String {
        rows.map { "(" + $0.joined(separator: ", ") + ")" }.joined(separator: ", ")
    }

    /// A named row the database refused (a constraint, a type a STRICT table does not take).
    public struct RowFailure: Error {
        /// The name the row was added with.
        public let row: String
        public let underlying: any Error
    }

    /// A named row that wrote nothing without an error: a `BEFORE` trigger's `RAISE(IGNORE)`
    /// skipped it (only for a statement made with `checkingWrites`).
    public struct RowSkipped: Error {
        /// The name the row was added with.
        public let row: String
    }

    /// Rows of a group that wrote nothing without an error (``unwrittenRows``): which ones, the
    /// rows written again one at a time tell.
    public struct RowsSkipped: Error {
        public init() {}
    }

    /// A single row's execution, which must have written its row when writes are checked.
    private func executeSingle(_ row: [BindableValue], name: String?) throws {
        do {
            try single.execute(row)
        } catch {
            throw name.map { RowFailure(row: $0, underlying: error) } ?? error
        }
        if checksWrites, sqlite3_changes(connection) == 0, let name { throw RowSkipped(row: name) }
    }

    /// Writes a row of `argumentsPerRow` values, now or with the rows after it. A row added with
    /// a `name` that the database refuses fails as a ``RowFailure`` naming it.
    public mutating func add(_ row: [BindableValue], naming name: String? = nil) throws {
        precondition(row.count == argumentsPerRow, "a row binds \(argumentsPerRow) values")
        guard let many else { return try executeSingle(row, name: name) }
        held.append(contentsOf: row)
        heldNames.append(name)
        guard held.count == rowsPerGroup * argumentsPerRow else { return }
        // A group that fails is not held for another try: the statement failed as a whole.
        defer {
            held.removeAll(keepingCapacity: true)
            heldNames.removeAll(keepingCapacity: true)
        }
        do {
            try many.execute(held)
        } catch {
            throw blame(error)
        }
        if checksWrites { unwrittenRows += max(0, rowsPerGroup - Int(sqlite3_changes(connection))) }
    }

    /// Writes the rows still held; after a failure, none is held any more.
    public mutating func finish() throws {
        defer {
            held.removeAll(keepingCapacity: true)
            heldNames.removeAll(keepingCapacity: true)
        }
        for (index, start) in stride(from: 0, to: held.count, by: argumentsPerRow).enumerated() {
            try executeSingle(Array(held[start..<start + argumentsPerRow]), name: heldNames[index])
        }
    }

    /// The failure of a held group, naming the row refused: the group wrote nothing, so its rows
    /// are written one by one (inside the caller's transaction, which the failure rolls back).
    private func blame(_ error: any Error) -> any Error {
        guard heldNames.contains(where: { $0 != nil }) else { return error }
        for (index, name) in heldNames.enumerated() {
            let start = index * argumentsPerRow
            do {
                try single.execute(Array(held[start..<start + argumentsPerRow]))
            } catch {
                return name.map { RowFailure(row: $0, underlying: error) } ?? error
            }
        }
        return error
    }
}
