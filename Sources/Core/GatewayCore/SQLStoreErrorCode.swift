/// What can make a SQL adapter fail (`SQLiteAdapterError`, `PostgresAdapterError`): the
/// database does not match the configuration, or it failed.
public enum SQLStoreErrorCode: String, Sendable, CaseIterable, CustomStringConvertible {
    /// A configured table does not exist.
    case missingTable
    /// A column named in the configuration does not exist.
    case missingColumn
    /// A configured table has no primary key, so its rows cannot be named.
    case noPrimaryKey
    /// The mapping cannot work (duplicate record types, a bad record-name template, an encrypted
    /// key column, a column type that cannot hold the value).
    case invalidMapping
    /// A record name does not match the table's template or key.
    case invalidRecordName
    /// The database could not be opened, read or written, or cannot be reached.
    case databaseFailed
    /// The database file was replaced or removed after the adapter opened it (a backup restored
    /// over it, a new file moved in): opening the adapter again reaches the file its path names
    /// now (``storeReplacedCode``).
    case databaseReplaced

    /// The code's name, as logs, metrics and JSON show it.
    public var name: String { rawValue }
    public var description: String { rawValue }
}

/// The ``FailureCoded/failureCode`` of an adapter error that says the store it opened is no
/// longer the one its configuration names: the service opens the adapter again, which reaches
/// the new store (and checks its identity as at any open), instead of going on with the old one.
public let storeReplacedCode = SQLStoreErrorCode.databaseReplaced.rawValue
