import Foundation
import GatewayCore
import GatewayConfig
import PostgresSupport

/// `kind: postgres`: tables of a PostgreSQL schema that other programs write, synced through
/// triggers.
///
/// Keys: `url` (required, `postgres://user@host:port/database[?sslmode=…]`), `password_env`
/// (the variable holding the password; default `PGPASSWORD`), `schema` (the synced tables'
/// schema, default `public`), `state_schema` (where the gateway keeps its change log and sync
/// state, default `gateway`), `max_connections` (default 2), `request_timeout` (default 60s) and
/// `tables`. Each table entry has
/// `table` (required), `record_type`, `record_name`, `include`, `exclude` and the shared
/// record-type keys; column types come from the catalog.
public struct PostgresAdapterKind: AdapterKind {
    public let name = "postgres"

    public init() {}

    enum Keys: String, CodingKey {
        case url, passwordEnv = "password_env", schema, stateSchema = "state_schema", maxConnections = "max_connections", tables
        case requestTimeout = "request_timeout"
    }

    public func decodePlan(settings: AdapterSettings, from decoder: any Decoder, context: ConfigContext) throws -> any AdapterPlan {
        let container = try decoder.container(keyedBy: Keys.self)
        let endpoint = try PostgresEndpoint.decode(url: .url, passwordVariable: .passwordEnv, from: container)
        var schemas: [String] = []
        for (key, fallback) in [(Keys.schema, "public"), (.stateSchema, "gateway")] {
            let value = try container.decodeIfPresent(Located<String>.self, forKey: key)
            if let value, value.value.isEmpty || value.value.utf8.count > 63 {
                throw value.problem(.invalidValue, "must be a schema name of 1 to 63 bytes")
            }
            schemas.append(value?.value ?? fallback)
        }
        if schemas[0] == schemas[1] {
            throw decoder.configProblem(.inconsistent, "schema and state_schema must differ: the gateway's tables live apart from yours")
        }
        var connections = 2
        if let value = try container.decodeIfPresent(Located<Int>.self, forKey: .maxConnections) {
            guard (1...100).contains(value.value) else { throw value.problem(.invalidValue, "must be between 1 and 100") }
            connections = value.value
        }
        let tables = try container.decode(Located<[PostgresTableEntry]>.self, forKey: .tables)
        guard !tables.value.isEmpty else { throw tables.problem(.invalidValue, "list at least one table to sync") }
        let configuration = PostgresAdapterConfiguration(
            name: settings.name.value, endpoint: endpoint, schema: schemas[0], stateSchema: schemas[1], zoneID: settings.zoneID,
            tables: tables.value.map(\.mapping), maximumConnections: connections,
            requestTimeout: try PostgresEndpoint.decodeRequestTimeout(.requestTimeout, from: container))
        return PostgresAdapterPlan(
            configuration: configuration, entries: tables.value, urlLocation: try container.decode(Located<String>.self, forKey: .url))
    }
}

/// One entry of a PostgreSQL adapter's `tables:`.
struct PostgresTableEntry: Decodable, Sendable {
    var mapping: PostgresTableMapping
    var settings: RecordTypeSettings
    var table: Located<String>

    enum Keys: String, CodingKey {
        case table, recordType = "record_type", recordName = "record_name", include, exclude
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        table = try container.decode(Located<String>.self, forKey: .table)
        let include = try container.decodeIfPresent([String].self, forKey: .include)
        let exclude = try container.decodeIfPresent([String].self, forKey: .exclude) ?? []
        mapping = PostgresTableMapping(
            table: table.value, recordType: try container.decodeIfPresent(String.self, forKey: .recordType),
            recordName: try container.decodeIfPresent(String.self, forKey: .recordName) ?? "<pk>", include: include, exclude: exclude)
        settings = try RecordTypeSettings(from: decoder)
        settings.recordType = mapping.recordType
        mapping.encryptedColumns = settings.encrypted.map(\.value)
        mapping.assetColumns = settings.assets.map(\.value)
        mapping.processedColumns = settings.processors.compactMap { $0.storeField?.value }
        mapping.renamedTo = settings.processors.compactMap { if case .rename(_, let to) = $0 { to.value } else { nil } }
        try settings.requireSynced(include: include, exclude: exclude)
    }
}

struct PostgresAdapterPlan: AdapterPlan {
    let configuration: PostgresAdapterConfiguration
    let entries: [PostgresTableEntry]
    let urlLocation: Located<String>

    var recordTypes: [RecordTypeSettings] { entries.map(\.settings) }
    var storeIdentity: String? {
        let endpoint = configuration.endpoint
        return "postgres:\(endpoint.host):\(endpoint.port)/\(endpoint.database)/\(configuration.schema)"
    }

    func check() async throws {
        try await mapped { try await PostgresAdapter.check(configuration) }
    }

    func readStatus() async throws -> StoreStatusSnapshot {
        try await PostgresAdapter.readStatus(configuration)
    }

    func open() async throws -> any ModelAdapter {
        try await mapped { try await PostgresAdapter.open(configuration) }
    }

    /// Turns a database that does not match the config into a config error at the table entry.
    private func mapped<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as PostgresAdapterError where error.isMappingMismatch {
            let entry = entries.first { $0.table.value == error.table }
            let location = entry?.table.location ?? urlLocation.location
            throw ConfigError(.storeMismatch, "adapter \(configuration.name): \(error.message)", at: location, underlying: error)
        }
    }
}
