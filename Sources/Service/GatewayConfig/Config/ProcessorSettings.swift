import Foundation
import GatewayCore

/// One entry of a record type's `processors` list: how a field changes between the store and
/// the zone (``RecordProcessor``). Entries run in order on the way out, in reverse on the way in.
///
/// Kinds: `rename` (`from`: the store's field, `to`: the zone's), `file_reference` (`field`:
/// the store's field holding a path, `folder`: the folder the paths are relative to, itself
/// relative to the config file) and `process` (`processor`: an entry of the config's
/// `processors:` mapping, a program that changes records as it decides).
public enum ProcessorSettings: Sendable, Decodable {
    /// `kind: rename`.
    case rename(from: Located<String>, to: Located<String>)
    /// `kind: file_reference`.
    case fileReference(field: Located<String>, folder: Located<String>)
    /// `kind: process`.
    case process(processor: Located<String>)

    enum Keys: String, CodingKey { case kind, from, to, field, folder, processor }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        let kind = try container.decode(Located<String>.self, forKey: .kind)
        func name(_ key: Keys) throws -> Located<String> {
            let value = try container.decode(Located<String>.self, forKey: key)
            guard !value.value.isEmpty, value.value.utf8.count <= 255 else { throw value.problem(.invalidValue, "must be a field name of 1–255 bytes") }
            return value
        }
        switch kind.value {
        case "rename":
            let (from, to) = (try name(.from), try name(.to))
            guard from.value != to.value else { throw to.problem(.invalidValue, "renames '\(from.value)' to itself") }
            self = .rename(from: from, to: to)
        case "file_reference":
            let folder = try container.decode(Located<String>.self, forKey: .folder)
            guard !folder.value.isEmpty else { throw folder.problem(.invalidValue, "must name a folder") }
            self = .fileReference(field: try name(.field), folder: folder)
        case "process":
            self = .process(processor: try name(.processor))
        default:
            let kinds = ["file_reference", "process", "rename"]
            throw kind.problem(
                .unknownKind,
                "unknown processor kind '\(kind.value)'; this build has \(kinds.joined(separator: ", "))\(KeySuggestion.hint(for: kind.value, in: kinds))")
        }
    }

    /// The field of the store this processor reads (the renamed or the path field); `nil` for a
    /// process, which may read any.
    public var storeField: Located<String>? {
        switch self {
        case .rename(let from, _): from
        case .fileReference(let field, _): field
        case .process: nil
        }
    }

    /// The processor, with paths resolved against `context` and processes started (lazily) by
    /// `processes`.
    public func processor(context: ConfigContext, processes: ProcessorProcesses) -> any RecordProcessor {
        switch self {
        case .rename(let from, let to): RenameFieldProcessor(storeName: from.value, zoneName: to.value)
        case .fileReference(let field, let folder):
            FileReferenceProcessor(field: field.value, folder: URL(fileURLWithPath: context.resolve(folder.value)))
        case .process(let name): processes.processor(named: name.value)
        }
    }
}

/// The config's `processors:` mapping (processor processes by name) and what starts them.
public struct ProcessorProcesses: Sendable {
    /// The entries, by name.
    public var settings: [String: ProcessSettings]
    /// What starts them, from the registry; `nil` refuses them.
    public var starter: (any ProcessorProcessStarter)?

    /// No processes.
    public init(settings: [String: ProcessSettings] = [:], starter: (any ProcessorProcessStarter)? = nil) {
        self.settings = settings
        self.starter = starter
    }

    /// A processor running the process `name` (started on its first batch), or one that fails
    /// every batch when the config or the build cannot start it (the config check refuses both
    /// before a sync).
    func processor(named name: String) -> any RecordProcessor {
        guard let settings = settings[name], let starter else { return UnstartableProcessor(name: name) }
        return starter.processor(for: settings)
    }
}

/// Starts the processor processes a config names; ``GatewayRegistry/builtIn`` has the plugin
/// protocol's. A processor starts its process on its first batch and stops it when closed.
public protocol ProcessorProcessStarter: Sendable {
    /// The processor for `settings`; nothing runs until it is given records.
    func processor(for settings: ProcessSettings) -> any RecordProcessor

    /// Starts the processor's process, greets it and stops it (`gateway validate`).
    /// - Throws: why it cannot start or answer.
    func check(_ settings: ProcessSettings) async throws
}

/// A `process` entry whose process cannot be started.
private struct UnstartableProcessor: RecordProcessor {
    let name: String

    func outgoing(_ records: [Record]) async throws -> [Record] { throw failure }
    func incoming(_ records: [Record]) async throws -> [Record] { throw failure }

    private var failure: RecordProcessorError {
        RecordProcessorError("processor '\(name)' is not an entry of processors: or this build cannot start processor processes")
    }
}
