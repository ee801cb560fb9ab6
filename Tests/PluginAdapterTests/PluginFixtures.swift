import AdapterKit
import CloudKitWeb
import Foundation
import GatewayCore
import GatewayTesting
import Logging
import PluginAdapter

/// Where the plugins the tests run live.
enum PluginFixtures {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let csvFolder = root.appendingPathComponent("examples/plugins/csv-folder/csv_folder.py").path
    static let misbehaving = root.appendingPathComponent("Tests/Fixtures/plugins/misbehaving_plugin.py").path
    static let zone = ZoneID(zoneName: "PluginZone")

    /// A kit adapter over the misbehaving plugin, its store and state inside `directory`. The
    /// timeouts are long unless a case is about them: thirty Python processes starting at once on
    /// a loaded machine can take seconds to answer.
    static func misbehavingAdapter(
        in directory: TemporaryDirectory, misbehave: JSONValue?, command: String = "python3", arguments: [String]? = nil,
        workingDirectory: String? = nil, startTimeout: Duration = .seconds(60), requestTimeout: Duration = .seconds(30),
        maxMessageBytes: Int = 200_000
    ) throws -> KitAdapter {
        var settings: [String: JSONValue] = ["directory": .string(directory.path("store")), "switch": .string(directory.path("misbehave"))]
        if let misbehave { settings["misbehave"] = misbehave }
        _ = FileManager.default.createFile(atPath: directory.path("misbehave"), contents: Data())
        let configuration = PluginConfiguration(
            adapterName: "plugged", zoneID: zone, command: command, arguments: arguments ?? [misbehaving], workingDirectory: workingDirectory,
            settings: .object(settings), startTimeout: startTimeout, requestTimeout: requestTimeout, maxMessageBytes: maxMessageBytes)
        return try KitAdapter(
            configuration: KitAdapterConfiguration(name: "plugged", zoneID: zone, statePath: directory.path("state.sqlite")),
            store: PluginStore(configuration: configuration, logger: Logger(label: "test.plugin")))
    }

    static func note(_ name: String, _ title: String) -> Record {
        Record(id: RecordID(recordName: name, zoneID: zone), recordType: "Note", fields: ["title": .string(title), "rank": .int64(1)])
    }

    /// A download of `records`, as the synchronizer hands one to an adapter.
    static func download(_ records: [Record], marker: String) -> DownloadedChanges {
        var state = SyncStateUpdate(zoneState: ZoneSyncState(token: ChangeToken(data: Data(marker.utf8))).encoded())
        var expected: [RecordID: Int64] = [:]
        for record in records {
            var synced = record
            synced.changeTag = "tag-\(marker)"
            state.metadata[record.id] = RecordMetadata(syncedRecord: synced).encoded()
            expected[record.id] = 0
        }
        return DownloadedChanges(writes: records, state: state, expectedPendingVersions: expected)
    }
}
