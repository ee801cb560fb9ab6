import AdapterKit
import Foundation
import GRDB
import GatewayCore
import SQLiteSupport

/// The JSON files adapter: a ``KitAdapter`` over a ``JSONFolderStore``.
///
/// The kit keeps the sync state (change log, metadata, zone state) in the sidecar database at
/// ``JSONFilesAdapterConfiguration/statePath``; the store keeps its file index beside it. Releases
/// before the adapter kit kept both in `<directory>/.gateway/state.sqlite`: opening carries that
/// state over once and renames the old file `state.sqlite.migrated`.
public enum JSONFilesAdapter {
    /// Opens the folder (it must exist) and its state, creating or migrating the latter.
    public static func open(configuration: JSONFilesAdapterConfiguration) throws -> KitAdapter {
        let root = URL(fileURLWithPath: configuration.directory).standardizedFileURL
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: root.path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw JSONFilesAdapterError(.folderMissing, "the folder \(configuration.directory) of adapter \(configuration.name) does not exist")
        }
        try JSONFilesLegacyState.migrate(folder: root, configuration: configuration)
        let store = try JSONFolderStore(
            directory: configuration.directory, layout: configuration.layout, zoneID: configuration.zoneID, indexPath: configuration.indexPath)
        return try KitAdapter(
            configuration: KitAdapterConfiguration(
                name: configuration.name, zoneID: configuration.zoneID, statePath: configuration.statePath,
                pollInterval: configuration.pollInterval),
            store: store)
    }
}
