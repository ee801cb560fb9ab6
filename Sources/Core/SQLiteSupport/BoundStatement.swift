import Foundation
import GRDB
import GRDBSQLite

/// Runs one of GRDB's cached statements with values bound through SQLite's C API. A sync runs the
/// gateway's bookkeeping statements and the row upserts several times per record, and building
/// GRDB's `StatementArguments` for each run cost about as much as SQLite's own work on the row.
/// Reading rows through GRDB's `Row` went through a generic decoding path per value (with a
/// runtime metadata lookup each time), so ``forEachRow(_:_:)`` reads the columns directly. GRDB
/// still prepares and caches the statements.
public struct BoundStatement {
    private let statement: Statement
    private let handle: SQLiteStatement

    /// - Parameter statement: a statement that returns no rows, usually `db.cachedStatement(sql:)`.
    public init(_ statement: Statement) {
        self.statement = statement
        self.handle = statement.sqliteStatement
    }

    /// Binds `values` to ?1, ?2, … and runs the statement to completion.
    public func execute(_ values: BindableValue...) throws {
        try execute(values)
    }

    /// Binds `values` to ?1, ?2, … and runs the statement to completion.
    /// - Throws: GRDB's `DatabaseError` with SQLite's code and message (a constraint, a busy
    ///   database); the statement is reset either way.
    public func execute(_ values: [BindableValue]) throws {
        try forEachRow(values) { _ in }
    }

    /// Binds `values` to ?1, ?2, … and calls `body` with each row the statement returns. The row
    /// is only valid during the call.
    /// - Throws: what `body` throws, or GRDB's `DatabaseError` with SQLite's code and message; the
    ///   statement is reset either way.
    public func forEachRow(_ values: [BindableValue], _ body: (StatementRow) throws -> Void) throws {
        defer {
            sqlite3_reset(handle)
            sqlite3_clear_bindings(handle)
        }
        try bind(values)
        var status = sqlite3_step(handle)
        while status == SQLITE_ROW {
            try body(StatementRow(handle: handle))
            status = sqlite3_step(handle)
        }
        guard status == SQLITE_DONE else { throw error(status) }
    }

    private func bind(_ values: [BindableValue]) throws {
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            let status: Int32
            switch value {
            case .text(let text):
                status = Self.bind(text, at: index, to: handle)
            case .blob(let data):
                status = Self.bind(data, at: index, to: handle)
            case .bytes(let bytes):
                status = bytes.withUnsafeBytes { raw in Self.bind(raw, at: index, to: handle) }
            case .integer(let integer):
                status = sqlite3_bind_int64(handle, index, integer)
            case .value(let value):
                switch value.storage {
                case .null: status = sqlite3_bind_null(handle, index)
                case .int64(let integer): status = sqlite3_bind_int64(handle, index, integer)
                case .double(let double): status = sqlite3_bind_double(handle, index, double)
                case .string(let text): status = Self.bind(text, at: index, to: handle)
                case .blob(let data): status = Self.bind(data, at: index, to: handle)
                }
            }
            guard status == SQLITE_OK else { throw error(status) }
        }
    }

    private static func bind(_ text: String, at index: Int32, to handle: SQLiteStatement) -> Int32 {
        var text = text
        return text.withUTF8 { utf8 in
            guard let base = utf8.baseAddress else { return sqlite3_bind_text(handle, index, "", 0, transient) }
            return UnsafeRawPointer(base).withMemoryRebound(to: CChar.self, capacity: utf8.count) { characters in
                sqlite3_bind_text(handle, index, characters, Int32(utf8.count), transient)
            }
        }
    }

    private static func bind(_ data: Data, at index: Int32, to handle: SQLiteStatement) -> Int32 {
        data.withUnsafeBytes { raw in bind(raw, at: index, to: handle) }
    }

    private static func bind(_ raw: UnsafeRawBufferPointer, at index: Int32, to handle: SQLiteStatement) -> Int32 {
        // A zero-length blob still needs an address, or SQLite binds NULL.
        sqlite3_bind_blob(handle, index, raw.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(raw.count), transient)
    }

    private func error(_ status: Int32) -> DatabaseError {
        let message = sqlite3_errmsg(sqlite3_db_handle(handle)).map { String(cString: $0) }
        return DatabaseError(resultCode: ResultCode(rawValue: status), message: message, sql: statement.sql)
    }

    // SQLite copies the bound bytes, so the buffers need not outlive the call.
    private static let transient = unsafeBitCast(OpaquePointer(bitPattern: -1), to: sqlite3_destructor_type.self)
}

/// The current row of a ``BoundStatement`` being stepped through.
public struct StatementRow {
    fileprivate let handle: SQLiteStatement

    /// The value of column `index` (from 0). Text is read by its length: GRDB's own reading
    /// stops at the first NUL character, which would cut a value that holds one.
    public subscript(index: Int) -> DatabaseValue {
        if sqlite3_column_type(handle, Int32(index)) == SQLITE_TEXT, let text = text(at: index) { return text.databaseValue }
        return DatabaseValue(sqliteStatement: handle, index: Int32(index))
    }

    /// The value of column `index` as text; `nil` for NULL (other values are converted by SQLite).
    public func text(at index: Int) -> String? {
        guard let characters = sqlite3_column_text(handle, Int32(index)) else { return nil }
        let count = Int(sqlite3_column_bytes(handle, Int32(index)))
        return String(decoding: UnsafeBufferPointer(start: characters, count: count), as: UTF8.self)
    }

    /// Whether column `index` is NULL.
    public func isNull(at index: Int) -> Bool {
        sqlite3_column_type(handle, Int32(index)) == SQLITE_NULL
    }

    /// The value of column `index` as an integer (0 for NULL, as SQLite converts it).
    public func int64(at index: Int) -> Int64 {
        sqlite3_column_int64(handle, Int32(index))
    }

    /// Calls `body` with the bytes of column `index` as SQLite holds them (`nil` for NULL),
    /// without copying them; the buffer is only valid during the call.
    public func withUnsafeBytes<T>(at index: Int, _ body: (UnsafeRawBufferPointer?) throws -> T) rethrows -> T {
        guard sqlite3_column_type(handle, Int32(index)) != SQLITE_NULL else { return try body(nil) }
        let count = Int(sqlite3_column_bytes(handle, Int32(index)))
        let bytes = count > 0 ? sqlite3_column_blob(handle, Int32(index)) : nil
        return try body(UnsafeRawBufferPointer(start: bytes, count: bytes == nil ? 0 : count))
    }

    /// The value of column `index` as bytes; `nil` for NULL.
    public func data(at index: Int) -> Data? {
        withUnsafeBytes(at: index) { $0.map { Data($0) } }
    }
}

/// A value bound to a ``BoundStatement``.
public enum BindableValue: Sendable {
    case text(String)
    case blob(Data)
    /// Blob bytes, without copying them into `Data` first.
    case bytes([UInt8])
    case integer(Int64)
    /// A value as GRDB holds it (NULL, integer, real, text or blob).
    case value(DatabaseValue)
}
