import AdapterKit
import Foundation
import GatewayCore
import GatewayConfig

extension JSONFilesAdapterConfiguration.Layout: ConfigChoice {}

/// `kind: json`: a folder of JSON documents, scanned for changes, on the adapter kit. Its sync
/// state lives in `<state_dir>/adapters/<name>.sqlite`, its file index in
/// `<state_dir>/adapters/<name>.files.sqlite`.
///
/// Keys: `directory` (required), `seed` (a folder copied to `directory` when it does not exist),
/// `layout` (`file-per-record`, the default, or `collection`), `poll_interval` (default 1s), and
/// `record_types`: optional entries with `record_type` plus the shared record-type keys (merge
/// overrides, `encrypted`, `assets`, `force_data`) for the types the folder holds.
public struct JSONFilesAdapterKind: AdapterKind {
    public let name = "json"

    public init() {}

    enum Keys: String, CodingKey {
        case directory, seed, layout, pollInterval = "poll_interval", recordTypes = "record_types"
    }

    public func decodePlan(settings: AdapterSettings, from decoder: any Decoder, context: ConfigContext) throws -> any AdapterPlan {
        let container = try decoder.container(keyedBy: Keys.self)
        let directory = try container.decode(Located<String>.self, forKey: .directory)
        let seed = try container.decodeIfPresent(Located<String>.self, forKey: .seed)
        let layout = try container.decodeIfPresent(JSONFilesAdapterConfiguration.Layout.self, forKey: .layout) ?? .filePerRecord
        let interval = try container.decodeIfPresent(Located<ConfigDuration>.self, forKey: .pollInterval)
        if let interval, interval.value.duration <= .zero { throw interval.problem(.invalidValue, "must be longer than 0s") }
        let recordTypes = try container.decodeIfPresent([RecordTypeEntry].self, forKey: .recordTypes) ?? []
        let resolved = context.resolve(directory.value)
        var seedPath: String?
        if let seed {
            let path = context.resolve(seed.value)
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else {
                throw seed.problem(.unreadableFile, "the seed folder \(seed.value) does not exist")
            }
            seedPath = path
        } else {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: resolved, isDirectory: &isDirectory) else {
                throw directory.problem(
                    .unreadableFile, "the folder \(directory.value) does not exist; create it, or give 'seed: FOLDER' to copy one")
            }
            guard isDirectory.boolValue else {
                throw directory.problem(.unreadableFile, "\(directory.value) is a file, not a folder; point 'directory' at the folder of documents")
            }
        }
        let statePath = context.adapterStatePath(named: settings.name.value)
        return Plan(
            configuration: JSONFilesAdapterConfiguration(
                name: settings.name.value, directory: resolved, zoneID: settings.zoneID, layout: layout,
                pollInterval: interval?.value.duration ?? .seconds(1), statePath: statePath),
            seed: seedPath, recordTypes: recordTypes.map(\.settings))
    }

    struct Plan: ScratchStorePlan {
        let configuration: JSONFilesAdapterConfiguration
        let seed: String?
        let recordTypes: [RecordTypeSettings]

        var storeIdentity: String? { "json:" + URL(fileURLWithPath: configuration.directory).resolvingSymlinksInPath().path }

        func check() async throws {
            let path = FileManager.default.fileExists(atPath: configuration.directory) ? configuration.directory : seed
            guard let path, FileManager.default.isReadableFile(atPath: path) else {
                throw JSONFilesAdapterError(.folderMissing, "the folder \(configuration.directory) cannot be read")
            }
        }

        func open() async throws -> any ModelAdapter {
            if let seed, !FileManager.default.fileExists(atPath: configuration.directory) {
                try FileManager.default.createDirectory(
                    at: URL(fileURLWithPath: configuration.directory).deletingLastPathComponent(), withIntermediateDirectories: true)
                try FileManager.default.copyItem(atPath: seed, toPath: configuration.directory)
            }
            return try JSONFilesAdapter.open(configuration: configuration)
        }

        /// A folder gone or replaced by a file is an error; otherwise ``KitRecordedStatus``.
        func readStatus() async throws -> StoreStatusSnapshot {
            let statePath = configuration.statePath
            var isFolder: ObjCBool = false
            if !FileManager.default.fileExists(atPath: configuration.directory, isDirectory: &isFolder) {
                // A folder the gateway synced before is gone: that is no store waiting for its
                // first sync, and an operator must hear of it.
                if FileManager.default.fileExists(atPath: statePath) {
                    throw JSONFilesAdapterError(
                        .folderMissing,
                        "the folder \(configuration.directory) does not exist, though the gateway synced it before (its state is \(statePath)); restore it, or the next sync creates it\(seed == nil ? "" : " from seed:") and joins the zone again")
                }
                if let seed {
                    return .notSetUp("\(configuration.directory) does not exist yet; the first sync copies it from \(seed) and syncs every document")
                }
            } else if !isFolder.boolValue {
                throw JSONFilesAdapterError(.folderMissing, "\(configuration.directory) is a file, not a folder; point directory: at the folder of JSON documents")
            }
            return try await KitRecordedStatus.snapshot(
                statePath: statePath, zoneID: configuration.zoneID, alsoWritten: [configuration.directory],
                earlierState: URL(fileURLWithPath: configuration.directory).appendingPathComponent(".gateway/state.sqlite").path,
                lookingAgain: "looking again", open: open)
        }

        var detectsChangesByScanning: Bool { true }

        var canDeleteStore: Bool { true }

        /// Removes the folder and the sync state kept for it.
        func deleteStore() async throws {
            for path in [configuration.directory, configuration.statePath] where FileManager.default.fileExists(atPath: path) {
                try FileManager.default.removeItem(atPath: path)
            }
        }

        /// A new, empty folder of the same layout, with its state beside it.
        func openScratch(in directory: String, zone: ZoneID) async throws -> any ScratchStore {
            var scratch = configuration
            scratch.zoneID = zone
            scratch.directory = URL(fileURLWithPath: directory).appendingPathComponent("folder").path
            scratch.statePath = URL(fileURLWithPath: directory).appendingPathComponent("state.sqlite").path
            try FileManager.default.createDirectory(atPath: scratch.directory, withIntermediateDirectories: true)
            // A name with NUL has no file name: the store refuses the write whole.
            return KitScratchStore(kit: try JSONFilesAdapter.open(configuration: scratch)) { zone in
                Record(id: RecordID(recordName: "refused\u{0}", zoneID: zone), recordType: "Note", fields: ["title": .string("refused")])
            }
        }
    }
}
