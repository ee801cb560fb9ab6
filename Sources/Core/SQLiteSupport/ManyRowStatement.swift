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

    /// Prepares the statement for one row and for ``rowsPerStatement`` rows.
    /// - Parameters:
    ///   - argumentsPerRow: how many values each row binds.
    ///   - sql: the statement for the given rows, each given as its parameters' names (`?1`, `?2`,
    ///     … numbered across the statement, `argumentsPerRow` to a row).
    public init(_ db: Database, argumentsPerRow: Int, sql: (_ rows: [[String]]) -> String) throws {
        func parameters(rows: Int) -> [[String]] {
            (0..<rows).map { row in (1...argumentsPerRow).map { column in "?" + String(row * argumentsPerRow + column) } }
        }
        self.argumentsPerRow = argumentsPerRow
        let parameterLimit = Int(sqlite3_limit(db.sqliteConnection, SQLITE_LIMIT_VARIABLE_NUMBER, -1))
        rowsPerGroup = max(1, min(Self.rowsPerStatement, parameterLimit / max(1, argumentsPerRow)))
        single = BoundStatement(try db.cachedStatement(sql: sql(parameters(rows: 1))))
        many = rowsPerGroup > 1 ? BoundStatement(try db.cachedStatement(sql: sql(parameters(rows: rowsPerGroup)))) : nil
        held.reserveCapacity(rowsPerGroup * argumentsPerRow)
    }

    /// The `VALUES` list of `rows`, each given as its parameters' names: `(?1, ?2), (?3, ?4)`.
    public static func valuesList(_ rows: [[String]]) -> String {
        rows.map { "(" + $0.joined(separator: ", ") + ")" }.joined(separator: ", ")
    }

    /// Writes a row of `argumentsPerRow` values, now or with the rows after it.
    public mutating func add(_ row: [BindableValue]) throws {
        precondition(row.count == argumentsPerRow, "a row binds \(argumentsPerRow) values")
        guard let many else { return try single.execute(row) }
        held.append(contentsOf: row)
        guard held.count == rowsPerGroup * argumentsPerRow else { return }
        // A group that fails is not held for another try: the statement failed as a whole.
        defer { held.removeAll(keepingCapacity: true) }
        try many.execute(held)
    }

    /// Writes the rows still held; after a failure, none is held any more.
    public mutating func finish() throws {
        defer { held.removeAll(keepingCapacity: true) }
        for start in stride(from: 0, to: held.count, by: argumentsPerRow) {
            try single.execute(Array(held[start..<start + argumentsPerRow]))
        }
    }
}
