import GatewayCore
import PostgresNIO
import PostgresSupport

/// A PostgreSQL store that does not fit its configuration, or that failed. Messages name the
/// database, table and column; they never contain row data or a password.
public struct PostgresAdapterError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public typealias Code = SQLStoreErrorCode

    public var code: Code
    public var message: String
    /// The configured table the error is about.
    public var table: String?
    public var underlying: (any Error)?
    /// The downloaded record whose values the database refused, when that is the error.
    public var refusedRecordName: String?

    public init(_ code: Code, _ message: String, table: String? = nil, underlying: (any Error)? = nil, refusedRecordName: String? = nil) {
        self.code = code
        self.message = message
        self.table = table
        self.underlying = underlying
        self.refusedRecordName = refusedRecordName
    }

    public var description: String { message }

    /// Whether the store does not match the configuration (rather than being unreachable).
    public var isMappingMismatch: Bool { code != .databaseFailed }

    /// Whether a unique constraint refused a row (SQLSTATE 23505).
    var isUniqueViolation: Bool {
        (underlying as? PostgresFailure)?.sqlState == "23505" || (underlying as? PSQLError)?.serverInfo?[.sqlState] == "23505"
    }
}


extension PostgresAdapterError: StoreRefusal {}

extension PostgresAdapterError: FailureCoded {
    public var failureCode: String { code.rawValue }
    public var underlyingFailure: (any Error)? { underlying }
}
