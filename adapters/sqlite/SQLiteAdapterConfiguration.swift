import GatewayCore

/// What a ``SQLiteAdapter`` syncs: one database file, one zone, and the tables mapped to record types.
public struct SQLiteAdapterConfiguration: Sendable {
    /// The adapter's name in the gateway (logs, status, errors).
    public var name: String
    /// The SQLite file. Other programs may keep writing it; the gateway switches it to WAL mode.
    public var path: String
    /// The zone the tables sync with.
    public var zoneID: ZoneID
    /// The tables to sync.
    public var tables: [TableMapping]
    /// How often change signals look for new local changes.
    public var signalPollInterval: Duration
    /// How long opening the store or a write waits for another program's write lock.
    public var busyTimeout: Duration

    public init(
        name: String, path: String, zoneID: ZoneID, tables: [TableMapping],
        signalPollInterval: Duration = .milliseconds(100), busyTimeout: Duration = .seconds(30)
    ) {
        self.name = name
        self.path = path
        self.zoneID = zoneID
        self.tables = tables
        self.signalPollInterval = signalPollInterval
        self.busyTimeout = busyTimeout
    }
}

/// How one table maps to a record type.
public struct TableMapping: Sendable, Equatable {
    /// The table's name in the database.
    public var table: String
    /// The record type; the table name by default.
    public var recordType: String
    /// How record names are made from the primary key: `<pk>` stands for the key (composite keys
    /// are joined with `|`, escaping `\\` and `|`), `<Type>` for the record type. Default `<pk>`;
    /// SyncKit's style is `<Type>.<pk>`.
    public var recordName: String
    /// Only these columns are synced (all when `nil`). Primary-key columns are always synced.
    public var include: [String]?
    /// These columns are never synced.
    public var exclude: [String]
    /// Column types that override the declared ones.
    public var columnTypes: [String: ColumnKind]
    /// Columns whose values the gateway encrypts: they must exist and not be key columns (the key
    /// is the record name, which is never encrypted).
    public var encryptedColumns: [String]
    /// Columns the configuration sends as assets: they must exist.
    public var assetColumns: [String]
    /// Columns a record processor reads (`processors` of the record type): they must exist and
    /// be synced.
    public var processedColumns: [String] = []
    /// Field names a `rename` processor gives columns in the zone: none may be a column of the
    /// table too, whose values would be lost.
    public var renamedTo: [String] = []

    public init(
        table: String, recordType: String? = nil, recordName: String = "<pk>", include: [String]? = nil,
        exclude: [String] = [], columnTypes: [String: ColumnKind] = [:], encryptedColumns: [String] = [],
        assetColumns: [String] = []
    ) {
        self.table = table
        self.recordType = recordType ?? table
        self.recordName = recordName
        self.include = include
        self.exclude = exclude
        self.columnTypes = columnTypes
        self.encryptedColumns = encryptedColumns
        self.assetColumns = assetColumns
    }
}

/// How a column's values map to field values.
public enum ColumnKind: String, Sendable, Codable, CaseIterable {
    /// Integers as `int64`.
    case integer
    /// Floating point as `double`.
    case real
    /// Text as `string`.
    case text
    /// Bytes as `bytes`.
    case blob
    /// 0/1 integers as `int64` (CloudKit has no boolean).
    case boolean
    /// Dates stored as ISO-8601 text, synced as `timestamp`.
    case iso8601
    /// Dates stored as seconds since 1970, synced as `timestamp`.
    case unixSeconds = "unix"
    /// Dates stored as milliseconds since 1970, synced as `timestamp`.
    case unixMilliseconds = "unix_ms"

    /// The kind SQLite's type-affinity rules give a declared type, with date names as ISO-8601 text.
    public static func fromDeclaredType(_ declared: String) -> ColumnKind {
        let type = declared.uppercased()
        if type.contains("BOOL") { return .boolean }
        if type.contains("DATE") || type.contains("TIME") { return .iso8601 }
        if type.contains("INT") { return .integer }
        if type.contains("CHAR") || type.contains("CLOB") || type.contains("TEXT") { return .text }
        if type.isEmpty || type.contains("BLOB") { return .blob }
        if type.contains("REAL") || type.contains("FLOA") || type.contains("DOUB") { return .real }
        return .real  // NUMERIC affinity
    }
}
