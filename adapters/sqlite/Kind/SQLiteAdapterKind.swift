import Foundation
import GatewayCore
import GatewayConfig

extension ColumnKind: ConfigChoice {}

/// `kind: sqlite`: a SQLite database file that other programs write, synced through triggers.
///
/// Keys: `path` (required), `seed` (a SQL script that creates the database when `path` does
/// not exist), `busy_timeout` (default 30s), `poll_interval` (default 100ms) and `tables`.
/// Each table entry has `table` (required), `record_type`, `record_name`, `include`,
/// `exclude`, `columns` (column → type override) and the shared record-type keys.
public struct SQLiteAdapterKind: AdapterKind {
    public let name = "sqlite"

    public init() {}

    enum Keys: String, CodingKey {
        case path, seed, tables, busyTimeout = "busy_timeout", pollInterval = "poll_interval"
    }

    public func decodePlan(settings: AdapterSettings, from decoder: any Decoder, context: ConfigContext) throws -> any AdapterPlan {
        let container = try decoder.container(keyedBy: Keys.self)
        let path = try container.decode(Located<String>.self, forKey: .path)
        let seed = try container.decodeIfPresent(Located<String>.self, forKey: .seed)
        let busyTimeout = try container.decodeIfPresent(ConfigDuration.self, forKey: .busyTimeout)?.duration ?? .seconds(30)
        let pollInterval = try container.decodeIfPresent(Located<ConfigDuration>.self, forKey: .pollInterval)
        if let pollInterval, pollInterval.value.duration <= .zero {
            throw pollInterval.problem(.invalidValue, "must be longer than 0s")
        }
        let tables = try container.decode(Located<[SQLiteTableEntry]>.self, forKey: .tables)
        guard !tables.value.isEmpty else { throw tables.problem(.invalidValue, "list at least one table to sync") }

        let resolvedPath = context.resolve(path.value)
        var seedScript: (text: String, name: String)?
        if let seed {
            let seedPath = context.resolve(seed.value)
            guard let data = FileManager.default.contents(atPath: seedPath), let text = String(data: data, encoding: .utf8) else {
                throw seed.problem(.unreadableFile, "cannot read the seed script \(seed.value)")
            }
            seedScript = (text, seed.value)
        }
        let configuration = SQLiteAdapterConfiguration(
            name: settings.name.value, path: resolvedPath, zoneID: settings.zoneID, tables: tables.value.map(\.mapping),
            signalPollInterval: pollInterval?.value.duration ?? .milliseconds(100), busyTimeout: busyTimeout)
        return SQLiteAdapterPlan(
            configuration: configuration, entries: tables.value, pathLocation: path, seedScript: seedScript)
    }
}

/// One entry of a SQLite adapter's `tables:`.
struct SQLiteTableEntry: Decodable, Sendable {
    var mapping: TableMapping
    var settings: RecordTypeSettings
    var table: Located<String>

    enum Keys: String, CodingKey {
        case table, recordType = "record_type", recordName = "record_name", include, exclude, columns
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        table = try container.decode(Located<String>.self, forKey: .table)
        let recordType = try container.decodeIfPresent(String.self, forKey: .recordType)
        let recordName = try TableEntryChecks.recordName(container, forKey: .recordName)
        try TableEntryChecks.includeAndExclude(container, include: .include, exclude: .exclude)
        let include = try container.decodeIfPresent([String].self, forKey: .include)
        let exclude = try container.decodeIfPresent([String].self, forKey: .exclude) ?? []
        let columns = try container.decodeIfPresent([String: ColumnKind].self, forKey: .columns) ?? [:]
        mapping = TableMapping(
            table: table.value, recordType: recordType, recordName: recordName, include: include, exclude: exclude,
            columnTypes: columns)
        settings = try RecordTypeSettings(from: decoder)
        settings.recordType = mapping.recordType
        mapping.encryptedColumns = settings.encrypted.map(\.value)
        mapping.assetColumns = settings.assets.map(\.value)
        mapping.processedColumns = settings.processors.compactMap { $0.storeField?.value }
        mapping.renamedTo = settings.processors.compactMap { if case .rename(_, let to) = $0 { to.value } else { nil } }
        try settings.requireSynced(include: include, exclude: exclude)
    }
}

struct SQLiteAdapterPlan: AdapterPlan {
    let configuration: SQLiteAdapterConfiguration
    let entries: [SQLiteTableEntry]
    let pathLocation: Located<String>
    let seedScript: (text: String, name: String)?

    var recordTypes: [RecordTypeSettings] { entries.map(\.settings) }
    var storeIdentity: String? { "sqlite:" + URL(fileURLWithPath: configuration.path).resolvingSymlinksInPath().path }

    /// A database that does not exist and that no `seed:` creates, as a config error at `path:`
    /// (checked when the store is, not when the config is read: commands that do not touch the
    /// store work, and `gateway status` shows the other adapters).
    private func requireDatabase() throws {
        guard seedScript == nil, !FileManager.default.fileExists(atPath: configuration.path) else { return }
        throw pathLocation.problem(
            .unreadableFile, "the database \(pathLocation.value) does not exist; check the path, or give 'seed: FILE.sql' to create it")
    }

    func check() async throws {
        try requireDatabase()
        try mapped {
            if let seedScript, !FileManager.default.fileExists(atPath: configuration.path) {
                try SQLiteAdapter.check(configuration, seedScript: seedScript.text, seedName: seedScript.name)
            } else {
                try SQLiteAdapter.check(configuration)
            }
        }
    }

    func open() async throws -> any ModelAdapter {
        try requireDatabase()
        return try mapped {
            if let seedScript, !FileManager.default.fileExists(atPath: configuration.path) {
                try SQLiteAdapter.createDatabase(at: configuration.path, seedScript: seedScript.text, seedName: seedScript.name)
            }
            return try SQLiteAdapter(configuration: configuration)
        }
    }

    func readStatus() async throws -> StoreStatusSnapshot {
        try requireDatabase()
        if seedScript != nil, !FileManager.default.fileExists(atPath: configuration.path) {
            return .notSetUp("\(configuration.path) does not exist yet; the first sync creates it from seed: and syncs every row")
        }
        return try SQLiteAdapter.readStatus(configuration)
    }

    var canDeleteStore: Bool { true }

    /// Removes the database file with its write-ahead log, shared memory and rollback journal.
    func deleteStore() async throws {
        for suffix in ["", "-wal", "-shm", "-journal"] where FileManager.default.fileExists(atPath: configuration.path + suffix) {
            try FileManager.default.removeItem(atPath: configuration.path + suffix)
        }
    }

    /// Turns a database that does not match the config into a config error at the table entry.
    private func mapped<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as SQLiteAdapterError where error.isMappingMismatch {
            let entry = entries.first { $0.table.value == error.table }
            let location = entry?.table.location ?? pathLocation.location
            throw ConfigError(.storeMismatch, "adapter \(configuration.name): \(error.message)", at: location, underlying: error)
        }
    }
}
