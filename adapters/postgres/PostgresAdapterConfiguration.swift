import GatewayCore
import PostgresSupport

/// What a ``PostgresAdapter`` syncs: tables of one schema of one database, with one zone.
public struct PostgresAdapterConfiguration: Sendable {
    /// The adapter's name in the gateway (logs, status, errors).
    public var name: String
    /// The database.
    public var endpoint: PostgresEndpoint
    /// The schema holding the synced tables.
    public var schema: String
    /// The schema holding the gateway's change log and sync state (created when missing).
    public var stateSchema: String
    /// The zone the tables sync with.
    public var zoneID: ZoneID
    /// The tables to sync.
    public var tables: [PostgresTableMapping]
    /// At most this many pooled connections (change signals use one more).
    public var maximumConnections: Int
    /// How long one operation on the database may take before its connection is closed and it
    /// fails (`request_timeout`).
    public var requestTimeout: Duration

    public init(
        name: String, endpoint: PostgresEndpoint, schema: String = "public", stateSchema: String = "gateway", zoneID: ZoneID,
        tables: [PostgresTableMapping], maximumConnections: Int = 2, requestTimeout: Duration = PostgresConnectionPool.defaultRequestTimeout
    ) {
        self.requestTimeout = requestTimeout
        self.name = name
        self.endpoint = endpoint
        self.schema = schema
        self.stateSchema = stateSchema
        self.zoneID = zoneID
        self.tables = tables
        self.maximumConnections = maximumConnections
    }
}

/// How one table maps to a record type. Column types come from the catalog.
public struct PostgresTableMapping: Sendable, Equatable {
    /// The table's name in the schema.
    public var table: String
    /// The record type; the table name by default.
    public var recordType: String
    /// How record names are made from the primary key (see ``RecordNameTemplate``); default `<pk>`.
    public var recordName: String
    /// Only these columns are synced (all when `nil`). Primary-key columns are always synced.
    public var include: [String]?
    /// These columns are never synced.
    public var exclude: [String]
    /// Columns whose values the gateway encrypts: `bytea` columns outside the key.
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
        table: String, recordType: String? = nil, recordName: String = "<pk>", include: [String]? = nil, exclude: [String] = [],
        encryptedColumns: [String] = [], assetColumns: [String] = []
    ) {
        self.table = table
        self.recordType = recordType ?? table
        self.recordName = recordName
        self.include = include
        self.exclude = exclude
        self.encryptedColumns = encryptedColumns
        self.assetColumns = assetColumns
    }
}
