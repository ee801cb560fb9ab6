import Foundation
import GatewayCore

/// An entry of the config's `resolvers:` mapping (a resolver process, which `merge_resolver`
/// names for `merge_policy: custom`) or `processors:` mapping (a processor process, which a
/// `processors` entry of `kind: process` names). Any executable speaking the resolver or processor
/// protocol (`docs/writing-adapters.md`); the gateway starts it when it first has work for it.
///
/// Keys: `command` (required: a path, relative to the config file, or a name looked up in
/// `PATH`), `args`, `env` (variables added to the gateway's environment), `working_directory`,
/// `settings` (anything; passed in the handshake), `start_timeout` (default 10s),
/// `request_timeout` (default 30s) and `max_conflicts_per_message` (resolvers) or
/// `max_records_per_message` (processors), default 1000.
public struct ProcessSettings: Sendable {
    /// The name the entry is known by.
    public var name: String
    /// The program: a path (resolved against the config's folder) or a name looked up in `PATH`.
    public var command: String
    /// The program's arguments.
    public var arguments: [String]
    /// Variables added to the gateway's environment for the process.
    public var environment: [String: String]
    /// The process's working directory (the gateway's when `nil`).
    public var workingDirectory: String?
    /// The resolver's own settings, passed in the handshake unchanged.
    public var settings: JSONValue
    /// How long the process may take to answer the handshake.
    public var startTimeout: Duration
    /// How long it may take to answer one message.
    public var requestTimeout: Duration
    /// Most conflicts or records in one message; larger batches are split.
    public var maxItemsPerMessage: Int
    /// Where the entry is in the file.
    public var location: ConfigLocation?
}

/// Starts the resolver processes a config names; ``GatewayRegistry/builtIn`` has the plugin
/// protocol's. A resolver starts its process lazily and stops it when closed.
public protocol ResolverProcessStarter: Sendable {
    /// The resolver for `settings`; nothing runs until it is asked about a conflict.
    func resolver(for settings: ProcessSettings) -> any BatchConflictResolver

    /// Starts the resolver's process, greets it and stops it (`gateway validate`).
    /// - Throws: why it cannot start or answer.
    func check(_ settings: ProcessSettings) async throws
}

/// Decodes the `resolvers:` or `processors:` mapping, by name.
struct ProcessSettingsReader {
    let context: ConfigContext
    /// `max_conflicts_per_message` or `max_records_per_message`.
    let batchKey: Keys

    private struct NameKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    enum Keys: String, CodingKey {
        case command, args, env, workingDirectory = "working_directory", settings, startTimeout = "start_timeout"
        case requestTimeout = "request_timeout", maxConflictsPerMessage = "max_conflicts_per_message"
        case maxRecordsPerMessage = "max_records_per_message"
    }

    func read(_ decoder: any Decoder) throws -> [String: ProcessSettings] {
        let names = try decoder.container(keyedBy: NameKey.self)
        var resolvers: [String: ProcessSettings] = [:]
        for key in names.allKeys {
            let entry = try names.superDecoder(forKey: key)
            let container = try entry.container(keyedBy: Keys.self)
            let command = try container.decode(Located<String>.self, forKey: .command)
            guard !command.value.isEmpty else { throw command.problem(.invalidValue, "must name a program") }
            func duration(_ key: Keys, default value: Duration) throws -> Duration {
                guard let located = try container.decodeIfPresent(Located<ConfigDuration>.self, forKey: key) else { return value }
                guard located.value.duration > .zero else { throw located.problem(.invalidValue, "must be longer than 0s") }
                return located.value.duration
            }
            let most = try container.decodeIfPresent(Located<Int>.self, forKey: batchKey)
            if let most, most.value < 1 { throw most.problem(.invalidValue, "must be at least 1") }
            let directory = try container.decodeIfPresent(Located<String>.self, forKey: .workingDirectory)
            resolvers[key.stringValue] = ProcessSettings(
                name: key.stringValue, command: command.value.contains("/") ? context.resolve(command.value) : command.value,
                arguments: try container.decodeIfPresent([String].self, forKey: .args) ?? [],
                environment: try container.decodeIfPresent([String: String].self, forKey: .env) ?? [:],
                workingDirectory: directory.map { context.resolve($0.value) },
                settings: try container.decodeIfPresent(JSONValue.self, forKey: .settings) ?? .object([:]),
                startTimeout: try duration(.startTimeout, default: .seconds(10)), requestTimeout: try duration(.requestTimeout, default: .seconds(30)),
                maxItemsPerMessage: most?.value ?? 1000, location: command.location)
        }
        return resolvers
    }
}
