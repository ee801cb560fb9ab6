import AdapterKit
import Foundation
import GatewayCore
import GatewayTesting
@testable import JSONFilesAdapter
import TestScheduling
import Testing

/// Runs the adapter conformance suite on real folders, edited by writing files as a person would.
struct JSONFilesHarness: AdapterConformanceHarness {
    let directory: TemporaryDirectory
    let layout: JSONFilesAdapterConfiguration.Layout
    var detectsChangesByScanning: Bool { true }

    func makeAdapter(zone: ZoneID) async throws -> any ModelAdapter {
        let folder = directory.url.appendingPathComponent(UUID().uuidString)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        // A plain file where a record type's folder or collection would go: writing that type fails.
        try Data("not a folder".utf8).write(to: folder.appendingPathComponent(layout == .filePerRecord ? "Blocked" : "Blocked.json.d"))
        if layout == .collection {
            try FileManager.default.createDirectory(at: folder.appendingPathComponent("Blocked.json"), withIntermediateDirectories: true)
        }
        return try JSONFilesAdapter.open(
            configuration: JSONFilesAdapterConfiguration(
                name: "conformance", directory: folder.path, zoneID: zone, layout: layout, pollInterval: .milliseconds(10),
                statePath: folder.path + "-state.sqlite"))
    }

    static func folder(of adapter: any ModelAdapter) -> URL {
        URL(fileURLWithPath: ((adapter as! KitAdapter).store as! JSONFolderStore).directory)
    }

    static func object(_ record: Record) -> JSONValue {
        var members: [String: JSONValue] = [:]
        if case .string(let title)? = record["title"] { members["title"] = .string(title) }
        if case .int64(let rank)? = record["rank"] { members["rank"] = .integer(rank) }
        return .object(members)
    }

    func saveLocally(_ record: Record, in adapter: any ModelAdapter) async throws {
        let folder = Self.folder(of: adapter)
        switch layout {
        case .filePerRecord:
            let url = folder.appendingPathComponent("Note/\(record.id.recordName).json")
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(Self.object(record).prettyText().utf8).write(to: url)
        case .collection:
            let url = folder.appendingPathComponent("Note.json")
            var members: [String: JSONValue] = [:]
            if let data = try? Data(contentsOf: url), case .object(let existing) = try JSONValue.parse(data, numbers: .exact) { members = existing }
            members[record.id.recordName] = Self.object(record)
            try Data(JSONValue.object(members).prettyText().utf8).write(to: url)
        }
    }

    func deleteLocally(_ id: RecordID, in adapter: any ModelAdapter) async throws {
        let folder = Self.folder(of: adapter)
        switch layout {
        case .filePerRecord:
            try FileManager.default.removeItem(at: folder.appendingPathComponent("Note/\(id.recordName).json"))
        case .collection:
            let url = folder.appendingPathComponent("Note.json")
            guard case .object(var members) = try JSONValue.parse(try Data(contentsOf: url), numbers: .exact) else { return }
            members[id.recordName] = nil
            try Data(JSONValue.object(members).prettyText().utf8).write(to: url)
        }
    }

    func storedRecords(in adapter: any ModelAdapter) async throws -> [RecordID: Record] {
        let folder = Self.folder(of: adapter)
        var objects: [String: [String: JSONValue]] = [:]
        switch layout {
        case .filePerRecord:
            let notes = folder.appendingPathComponent("Note")
            for name in (try? FileManager.default.contentsOfDirectory(atPath: notes.path)) ?? [] where name.hasSuffix(".json") && !name.hasPrefix(".") {
                if case .object(let members) = try JSONValue.parse(try Data(contentsOf: notes.appendingPathComponent(name)), numbers: .exact) {
                    objects[SafeFileName.decode(String(name.dropLast(5)))!] = members
                }
            }
        case .collection:
            if let data = try? Data(contentsOf: folder.appendingPathComponent("Note.json")), case .object(let members) = try JSONValue.parse(data, numbers: .exact) {
                for (name, value) in members { if case .object(let fields) = value { objects[name] = fields } }
            }
        }
        let mapping = JSONFieldMapping(directory: folder, zoneID: adapter.zoneID)
        var records: [RecordID: Record] = [:]
        for (name, object) in objects {
            let id = RecordID(recordName: name, zoneID: adapter.zoneID)
            records[id] = Record(id: id, recordType: "Note", fields: try mapping.fields(of: object))
        }
        return records
    }

    func recordThatFailsToApply(zone: ZoneID) -> Record {
        Record(id: RecordID(recordName: "refused", zoneID: zone), recordType: "Blocked", fields: ["rank": .int64(1)])
    }
}

@Suite("JSON files adapter conformance", .heavy)
struct JSONFilesConformanceTests {
    @Test(arguments: AdapterConformanceSuite.cases, [JSONFilesAdapterConfiguration.Layout.filePerRecord, .collection])
    func conformance(_ check: AdapterConformanceCase, layout: JSONFilesAdapterConfiguration.Layout) async throws {
        let directory = try TemporaryDirectory(prefix: "json-adapter")
        defer { directory.remove() }
        try await check.run(with: JSONFilesHarness(directory: directory, layout: layout))
    }
}
