import GatewayCore

/// A SQLite adapter problem: a table or column that does not fit, or a store that failed.
/// Messages name the file, table and column, never row values.
public struct SQLiteAdapterError: Error, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable, CaseIterable, CustomStringConvertible {
        /// A configured table does not exist.
        case missingTable
        /// A configured column does not exist.
        case missingColumn
        /// A table has no primary key, so rows cannot be named.
        case noPrimaryKey
        /// The mapping is inconsistent (duplicate record types, a bad record-name template).
        case invalidMapping
        /// A record name does not match the table's template or key.
        case invalidRecordName
        /// The database could not be opened or written.
        case databaseFailed

        /// The code's name, as logs, metrics and JSON show it.
        public var name: String { rawValue }
        public var description: String { rawValue }
    }

    public var code: Code
    public var message: String
    public var underlying: (any Error)?
    /// The configured table the error is about, when it is about one.
    public var table: String?

    public init(_ code: Code, _ message: String, underlying: (any Error)? = nil, table: String? = nil) {
        self.code = code
        self.message = message
        self.underlying = underlying
        self.table = table
    }

    /// Whether the error says the database does not match the configuration (rather than that
    /// it failed): a missing table or column, no primary key, or an inconsistent mapping.
    public var isMappingMismatch: Bool {
        [.missingTable, .missingColumn, .noPrimaryKey, .invalidMapping].contains(code)
    }

    /// The code and the message, which already says what the underlying error was.
    public var description: String {
        "\(code): \(message)"
    }
}

extension SQLiteAdapterError.Code {
    /// The code of a table that does not fit its configuration.
    init(_ code: TableShapeCheck.Failure.Code) {
        switch code {
        case .missingTable: self = .missingTable
        case .missingColumn: self = .missingColumn
        case .noPrimaryKey: self = .noPrimaryKey
        case .invalidMapping: self = .invalidMapping
        }
    }
}
