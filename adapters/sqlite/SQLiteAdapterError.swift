import GatewayCore

/// A SQLite adapter problem: a table or column that does not fit, or a store that failed.
/// Messages name the file, table and column, never row values.
public struct SQLiteAdapterError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public typealias Code = SQLStoreErrorCode

    public var code: Code
    public var message: String
    public var underlying: (any Error)?
    /// The configured table the error is about, when it is about one.
    public var table: String?
    /// The downloaded record whose values the database refused, when that is the error.
    public var refusedRecordName: String?

    public init(_ code: Code, _ message: String, underlying: (any Error)? = nil, table: String? = nil, refusedRecordName: String? = nil) {
        self.code = code
        self.message = message
        self.underlying = underlying
        self.table = table
        self.refusedRecordName = refusedRecordName
    }

    /// Whether the error says the database does not match the configuration (rather than that
    /// it failed): a missing table or column, no primary key, or an inconsistent mapping.
    public var isMappingMismatch: Bool {
        [.missingTable, .missingColumn, .noPrimaryKey, .invalidMapping].contains(code)
    }

    /// The message, which already says what the underlying error was (reports show the code
    /// beside it).
    public var description: String { message }
}


extension SQLiteAdapterError: StoreRefusal {}

extension SQLiteAdapterError: FailureCoded {
    public var failureCode: String { code.rawValue }
    public var underlyingFailure: (any Error)? { underlying }
}
