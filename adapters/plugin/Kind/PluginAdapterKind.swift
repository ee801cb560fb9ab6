import AdapterKit
import CloudKitWeb
import Foundation
import GatewayCore
import GatewayConfig
import Logging
import Synchronization

/// `kind: plugin`: a process plugin, any executable speaking the plugin protocol over
/// stdin/stdout (`docs/writing-adapters.md`). Its sync state lives in
/// `<state_dir>/adapters/<name>.sqlite`.
///
/// Keys: `command` (required: a path, or a name looked up in `PATH`), `args`, `env` (variables
/// added to the gateway's environment), `working_directory`, `settings` (anything; passed to the
/// plugin in the handshake), `start_timeout` (default 10s), `request_timeout` (default 30s),
/// `poll_interval` (default 1s; how often a plugin without change notifications is listed),
/// `max_message_bytes` (default 64 MiB), `max_records_per_message` (default 2000) and
/// `record_types` (entries with `record_type` plus the shared record-type keys).
public struct PluginAdapterKind: AdapterKind {
    public let name = "plugin"

    /// The download page size a plugin adapter uses when the gateway's `fetch_limit` is larger and
    /// the adapter sets none. Measured (`BENCHMARKS.md`): SQLite → embedded cloud → the CSV
    /// example, 1,000,000 rows, as fast as pages of 5,000, the gateway's peak 112 against 176 MB.
    public static let largestDownloadPage = 2_000

    public init() {}

    enum Keys: String, CodingKey {
        case command, args, env, workingDirectory = "working_directory", settings, startTimeout = "start_timeout"
        case requestTimeout = "request_timeout", pollInterval = "poll_interval", maxMessageBytes = "max_message_bytes"
        case maxRecordsPerMessage = "max_records_per_message", recordTypes = "record_types"
    }

    public func decodePlan(settings: AdapterSettings, from decoder: any Decoder, context: ConfigContext) throws -> any AdapterPlan {
        let container = try decoder.container(keyedBy: Keys.self)
        let command = try container.decode(Located<String>.self, forKey: .command)
        guard !command.value.isEmpty else { throw command.problem(.invalidValue, "must name a program") }
        let arguments = try container.decodeIfPresent([String].self, forKey: .args) ?? []
        let environment = try container.decodeIfPresent([String: String].self, forKey: .env) ?? [:]
        let directory = try container.decodeIfPresent(Located<String>.self, forKey: .workingDirectory)
        let pluginSettings = try container.decodeIfPresent(JSONValue.self, forKey: .settings) ?? .object([:])
        func duration(_ key: Keys, default value: Duration) throws -> Duration {
            guard let located = try container.decodeIfPresent(Located<ConfigDuration>.self, forKey: key) else { return value }
            guard located.value.duration > .zero else { throw located.problem(.invalidValue, "must be longer than 0s") }
            return located.value.duration
        }
        let maxBytes = try container.decodeIfPresent(Located<ByteSize>.self, forKey: .maxMessageBytes)
        if let maxBytes, maxBytes.value.bytes < 1024 || maxBytes.value.bytes > Int64(Int32.max) {
            throw maxBytes.problem(.invalidValue, "must be between 1 KiB and 2 GiB")
        }
        let maxRecords = try container.decodeIfPresent(Located<Int>.self, forKey: .maxRecordsPerMessage)
        if let maxRecords, maxRecords.value < 1 { throw maxRecords.problem(.invalidValue, "must be at least 1") }
        // A command given as a relative path is relative to the config file, like every path.
        let program = command.value.contains("/") ? context.resolve(command.value) : command.value
        let configuration = PluginConfiguration(
            adapterName: settings.name.value, zoneID: settings.zoneID, command: program, arguments: arguments, environment: environment,
            workingDirectory: directory.map { context.resolve($0.value) }, settings: pluginSettings,
            startTimeout: try duration(.startTimeout, default: .seconds(10)), requestTimeout: try duration(.requestTimeout, default: .seconds(30)),
            maxMessageBytes: maxBytes.map { Int($0.value.bytes) } ?? 64 << 20, maxRecordsPerMessage: maxRecords?.value ?? PluginConfiguration.defaultMaxRecordsPerMessage)
        let statePath = context.adapterStatePath(named: settings.name.value)
        return Plan(
            configuration: configuration, statePath: statePath, pollInterval: try duration(.pollInterval, default: .seconds(1)),
            recordTypes: try container.decodeIfPresent([RecordTypeEntry].self, forKey: .recordTypes)?.map(\.settings) ?? [])
    }

    struct Plan: ScratchStorePlan {
        let configuration: PluginConfiguration
        let statePath: String
        let pollInterval: Duration
        let recordTypes: [RecordTypeSettings]
        /// The plugin ``checkBeforeOpening()`` started, for the ``open()`` that follows it.
        let checked = CheckedPlugin()

        /// Starts the plugin, checks its handshake against the configured record types, stops it.
        func check() async throws {
            let store = try await checkedStore()
            await store.close()
        }

        /// Checks as ``check()`` does, and keeps the plugin running for the ``open()`` that
        /// follows, so it starts once, not twice (a slow-starting plugin pays its start once).
        func checkBeforeOpening() async throws {
            await checked.keep(try await checkedStore())
        }

        /// Stops the plugin ``checkBeforeOpening()`` kept, if no open took it.
        func discardCheck() async {
            await checked.take()?.close()
        }

        /// A store whose plugin is running and serves every configured record type; a plugin that
        /// does not is stopped.
        private func checkedStore() async throws -> PluginStore {
            let store = PluginStore(configuration: configuration, logger: Logger(label: "gateway.plugin"))
            let handshake: PluginStore.Handshake
            do {
                handshake = try await store.handshake()
            } catch {
                await store.close()
                throw error
            }
            let served = Set(handshake.recordTypes.map(\.name))
            for type in recordTypes where !served.contains(type.recordType) {
                await store.close()
                throw ConfigError(
                    .storeMismatch,
                    "adapter \(configuration.adapterName): record type \(type.recordType) is configured, but plugin \(configuration.displayName) serves only \(served.sorted().joined(separator: ", "))",
                    at: type.location)
            }
            return store
        }

        func open() async throws -> any ModelAdapter {
            let started = checked.take()
            do {
                return try makeAdapter(configuration: configuration, statePath: statePath, store: started)
            } catch {
                await started?.close()
                throw error
            }
        }

        /// Reads through the adapter (which starts the plugin) when this account can record a
        /// listing; otherwise from the state file alone (``KitRecordedStatus``), writing nothing.
        func readStatus() async throws -> StoreStatusSnapshot {
            try await KitRecordedStatus.snapshot(statePath: statePath, zoneID: configuration.zoneID, lookingAgain: "asking the plugin again", open: open)
        }

        var detectsChangesByScanning: Bool { true }

        /// Pages of 2,000: the kit journals a page whole and it crosses three forms (records, the
        /// journal, the messages), so larger pages raised the gateway's resident memory by half
        /// for no speed (``PluginAdapterKind/largestDownloadPage``).
        var largestDownloadPage: Int? { PluginAdapterKind.largestDownloadPage }

        /// The plugin started with `scratch` in its handshake: it keeps its data in a new folder.
        func openScratch(in directory: String, zone: ZoneID) async throws -> any ScratchStore {
            var scratch = configuration
            scratch.zoneID = zone
            scratch.scratchDirectory = URL(fileURLWithPath: directory).appendingPathComponent("store").path
            try FileManager.default.createDirectory(atPath: scratch.scratchDirectory!, withIntermediateDirectories: true)
            let adapter = try makeAdapter(configuration: scratch, statePath: URL(fileURLWithPath: directory).appendingPathComponent("state.sqlite").path)
            // The protocol's JSON carries no infinite number: such a write fails before anything
            // reaches the plugin. (A name it cannot carry is left out instead, not refused.)
            return KitScratchStore(kit: adapter) { zone in
                Record(
                    id: RecordID(recordName: "refused", zoneID: zone), recordType: "Note",
                    fields: ["title": .string("refused"), "rank": .double(.infinity)])
            }
        }

        /// The adapter over `store`, or over a new store whose plugin starts at its first request.
        func makeAdapter(configuration: PluginConfiguration, statePath: String, store: PluginStore? = nil) throws -> KitAdapter {
            let store = store ?? PluginStore(configuration: configuration, logger: Logger(label: "gateway.plugin"))
            return try KitAdapter(
                configuration: KitAdapterConfiguration(
                    name: configuration.adapterName, zoneID: configuration.zoneID, statePath: statePath, pollInterval: pollInterval),
                store: store)
        }
    }
}

/// The plugin a plan's `checkBeforeOpening()` started and left running for the plan's `open()`.
/// It holds one at most: a second check stops the first one's plugin, so a check whose open
/// failed leaves one idle plugin, stopped by the next check or when the gateway exits (its
/// standard input closes).
final class CheckedPlugin: Sendable {
    private let store = Mutex<PluginStore?>(nil)

    /// Keeps `started` for the next ``take()``, stopping the plugin kept before it.
    func keep(_ started: PluginStore) async {
        let replaced = store.withLock { kept in
            defer { kept = started }
            return kept
        }
        await replaced?.close()
    }

    /// The kept plugin, handed over once.
    func take() -> PluginStore? {
        store.withLock { kept in
            defer { kept = nil }
            return kept
        }
    }
}
