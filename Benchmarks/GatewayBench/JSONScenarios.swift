import AdapterKit
import EmbeddedCloud
import Foundation
import GatewayCore
import JSONFilesAdapter

enum BenchDocs {
    static let zone = ZoneID(zoneName: "BenchDocs")

    /// `count` documents of five fields in `<folder>/Note/`.
    static func makeFolder(_ folder: URL, documents count: Int) throws {
        let notes = folder.appendingPathComponent("Note")
        try FileManager.default.createDirectory(at: notes, withIntermediateDirectories: true)
        for index in 0..<count {
            let text = """
                {
                  "done": \(index % 2 == 0),
                  "score": \(Double(index) / 4),
                  "title": "Note number \(index)",
                  "body": "Lorem ipsum dolor sit amet, consectetur adipiscing elit. \(index)",
                  "views": \(index * 7)
                }

                """
            try Data(text.utf8).write(to: notes.appendingPathComponent(String(format: "n-%06d.json", index)))
        }
    }

    static func adapter(_ folder: URL, name: String) throws -> KitAdapter {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return try JSONFilesAdapter.open(
            configuration: JSONFilesAdapterConfiguration(name: name, directory: folder.path, zoneID: zone, statePath: folder.path + "-state.sqlite"))
    }
}

/// Initial sync of a folder of documents into the cloud and into an empty folder.
struct JSONInitialSyncScenario: Scenario {
    let name = "json-initial"
    let summary = "JSON files: initial sync of N documents (10,000 by default) folder → cloud → empty folder"

    func run(records: Int, workDirectory: URL) async throws -> [Measurement] {
        let count = records == 100_000 ? 10_000 : records
        let source = workDirectory.appendingPathComponent("source")
        try BenchDocs.makeFolder(source, documents: count)
        let cloud = try EmbeddedCloud(path: workDirectory.appendingPathComponent("cloud.sqlite").path)
        let up = Synchronizer(
            cloud: cloud, adapters: [SyncedAdapter(try BenchDocs.adapter(source, name: "source"))],
            configuration: SyncConfiguration(deviceID: "source"))
        let down = Synchronizer(
            cloud: cloud, adapters: [SyncedAdapter(try BenchDocs.adapter(workDirectory.appendingPathComponent("target"), name: "target"))],
            configuration: SyncConfiguration(deviceID: "target"))
        let (uploaded, upSeconds) = try await timed { try await BenchNotes.sync(up) }
        let (downloaded, downSeconds) = try await timed { try await BenchNotes.sync(down) }
        guard uploaded.uploaded == count, downloaded.downloaded == count else {
            throw BenchmarkError("moved \(uploaded.uploaded) up and \(downloaded.downloaded) down, expected \(count)")
        }
        let written = try FileManager.default.contentsOfDirectory(atPath: workDirectory.appendingPathComponent("target/Note").path).count
        guard written == count else { throw BenchmarkError("the target folder has \(written) documents, expected \(count)") }
        return [
            Measurement(name: "upload \(count) documents (folder → cloud)", value: Double(count) / upSeconds, unit: "docs/s"),
            Measurement(name: "download \(count) documents (cloud → folder)", value: Double(count) / downSeconds, unit: "docs/s"),
            Measurement(name: "end to end \(count) documents", value: Double(count) / (upSeconds + downSeconds), unit: "docs/s"),
        ]
    }
}

/// A rescan of a large folder in which a few documents changed: unchanged files cost one `stat`.
struct JSONRescanScenario: Scenario {
    let name = "json-rescan"
    let summary = "JSON files: rescan of N documents (100,000 by default) with 10 changed"

    func run(records: Int, workDirectory: URL) async throws -> [Measurement] {
        let folder = workDirectory.appendingPathComponent("docs")
        try BenchDocs.makeFolder(folder, documents: records)
        let adapter = try BenchDocs.adapter(folder, name: "docs")
        let (_, firstSeconds) = try await timed { try await adapter.pendingChangeCount() }
        let (_, quietSeconds) = try await timed { try await adapter.pendingChangeCount() }
        for index in stride(from: 0, to: records, by: max(1, records / 10)).prefix(10) {
            let url = folder.appendingPathComponent(String(format: "Note/n-%06d.json", index))
            try Data("{\n  \"title\": \"changed \(index)\"\n}\n".utf8).write(to: url)
        }
        let before = try await adapter.pendingChanges(limit: 1, after: Int64.max).count
        let (_, rescanSeconds) = try await timed { try await adapter.pendingChangeCount() }
        guard before == 0 else { throw BenchmarkError("unexpected pending changes after the last version") }
        return [
            Measurement(name: "first scan of \(records) documents (reads every file)", value: firstSeconds, unit: "s"),
            Measurement(name: "rescan of \(records) documents, none changed", value: quietSeconds, unit: "s"),
            Measurement(name: "rescan of \(records) documents, 10 changed", value: rescanSeconds, unit: "s", goal: .atMost(1.0)),
        ]
    }
}
