import Foundation
import GatewayCore
import GatewayConfig
import PostgresNIO
import PostgresSupport

/// `kind: postgres`: tables of a PostgreSQL schema that other programs write, synced through
/// triggers.
///
/// Keys: `url` (required, `postgres://user@host:port/database[?sslmode=…]`), `password_env`
/// (the variable holding the password; default `PGPASSWORD`), `schema` (the synced tables'
/// schema, default `public`), `seed` (a SQL script that creates the tables when `schema` does
/// not exist yet: the schema is created and the script run in it, in one transaction), `state_schema` (where the gateway keeps its change log and sync
/// state, default `gateway`), `max_connections` (default 2), `request_timeout` (default 60s) and
/// `tables`. Each table entry has
/// `table` (required), `record_type`, `record_name`, `include`, `exclude` and the shared
/// record-type keys; column types come from the catalog.
public struct PostgresAdapterKind: AdapterKind {
    public let name = "postgres"

    public init() {}

    enum Keys: String, CodingKey {
        case url, passwordEnv = "password_env", schema, stateSchema = "state_schema", maxConnections = "max_connections", tables
        case requestTimeout = "request_timeout", seed
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
        var seedScript: String?
        if let seed = try container.decodeIfPresent(Located<String>.self, forKey: .seed) {
            guard schemas[0] != "public" else { throw seed.problem(.inconsistent, "seed: creates a schema of its own; name it with schema:") }
            guard let data = FileManager.default.contents(atPath: context.resolve(seed.value)), let text = String(data: data, encoding: .utf8) else {
                throw seed.problem(.unreadableFile, "cannot read the seed script \(seed.value)")
            }
            seedScript = text
        }
        return PostgresAdapterPlan(
            configuration: configuration, entries: tables.value, urlLocation: try container.decode(Located<String>.self, forKey: .url),
            seedScript: seedScript)
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
            recordName: try TableEntryChecks.recordName(container, forKey: .recordName), include: include, exclude: exclude)
        try TableEntryChecks.includeAndExclude(container, include: .include, exclude: .exclude)
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
    /// Creates the schema's tables when the schema does not exist yet.
    var seedScript: String?

    var recordTypes: [RecordTypeSettings] { entries.map(\.settings) }
    var storeIdentity: String? {
        let endpoint = configuration.endpoint
        return "postgres:\(endpoint.host):\(endpoint.port)/\(endpoint.database)/\(configuration.schema)"
    }

    func check() async throws {
        if seedScript != nil, try await !schemaExists() { return }  // the first open creates it
        try await mapped { try await PostgresAdapter.check(configuration) }
    }

    /// Whether the synced tables' schema exists.
    private func schemaExists() async throws -> Bool {
        let schema = configuration.schema
        return try await PostgresConnectionPool.withOneConnection(to: configuration.endpoint, doing: "looking for schema \(schema)") { connection in
            let rows = try await connection.query("SELECT count(*)::int8 FROM pg_namespace WHERE nspname = \(schema)", logger: connection.logger)
            var count: Int64 = 0
            for try await value in rows.decode(Int64.self) { count = value }
            return count > 0
        }
    }

    /// Creates the schema and runs the seed script in it, in one transaction; another process
    /// that created it meanwhile wins and the script is not run twice.
    private func createSchemaIfMissing() async throws {
        guard let seedScript, try await !schemaExists() else { return }
        let quoted = "\"" + configuration.schema.replacingOccurrences(of: "\"", with: "\"\"") + "\""
        let statements = ["BEGIN", "CREATE SCHEMA \(quoted)", "SET LOCAL search_path TO \(quoted)"] + SQLScript.statements(seedScript) + ["COMMIT"]
        try await PostgresConnectionPool.withOneConnection(to: configuration.endpoint, doing: "creating schema \(configuration.schema) from seed:") { connection in
            do {
                for statement in statements { try await connection.query(PostgresQuery(unsafeSQL: statement), logger: connection.logger) }
            } catch {
                _ = try? await connection.query("ROLLBACK", logger: connection.logger)
                throw error
            }
        }
    }

    func readStatus() async throws -> StoreStatusSnapshot {
        if seedScript != nil, try await !schemaExists() {
            return .notSetUp("schema \(configuration.schema) does not exist yet; the first sync creates it from seed: and syncs every row")
        }
        return try await PostgresAdapter.readStatus(configuration)
    }

    func open() async throws -> any ModelAdapter {
        try await createSchemaIfMissing()
        return try await mapped { try await PostgresAdapter.open(configuration) }
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
