import Foundation
import GRDB
import GatewayCore
import GatewayTesting
import SQLiteAdapter
import TestScheduling
import Testing

/// Runs the adapter conformance suite on real database files, edited through another connection.
struct SQLiteAdapterHarness: AdapterConformanceHarness {
    let directory: TemporaryDirectory
    private let files = LockedValue<[String: SQLiteFile]>([:])

    init(directory: TemporaryDirectory) {
        self.directory = directory
    }

    func makeAdapter(zone: ZoneID) async throws -> any ModelAdapter {
        let file = try SQLiteFile(directory, schema: Notes.schema)
        files.withLock { $0[file.path] = file }
        return try SQLiteAdapter(
            configuration: SQLiteAdapterConfiguration(
                name: "conformance", path: file.path, zoneID: zone, tables: [TableMapping(table: "Note")],
                signalPollInterval: .milliseconds(10)))
    }

    func saveLocally(_ record: Record, in adapter: any ModelAdapter) async throws {
        var title: String?
        if case .string(let value)? = record["title"] { title = value }
        var rank: Int64?
        if case .int64(let value)? = record["rank"] { rank = value }
        try file(of: adapter).execute(
            #"INSERT INTO "Note" (name, title, rank) VALUES (?, ?, ?) ON CONFLICT (name) DO UPDATE SET title = excluded.title, rank = excluded.rank"#,
            [record.id.recordName, title, rank])
    }

    func deleteLocally(_ id: RecordID, in adapter: any ModelAdapter) async throws {
        try file(of: adapter).execute(#"DELETE FROM "Note" WHERE name = ?"#, [id.recordName])
    }

    func storedRecords(in adapter: any ModelAdapter) async throws -> [RecordID: Record] {
        let contents = try Notes.contents(try file(of: adapter))
        var records: [RecordID: Record] = [:]
        for (name, fields) in contents {
            let id = RecordID(recordName: name, zoneID: adapter.zoneID)
            records[id] = Record(id: id, recordType: "Note", fields: fields)
        }
        return records
    }

    func recordThatFailsToApply(zone: ZoneID) -> Record {
        Record(id: RecordID(recordName: "refused", zoneID: zone), recordType: "Note", fields: ["rank": .int64(-1)])
    }

    private func file(of adapter: any ModelAdapter) throws -> SQLiteFile {
        let path = (adapter as! SQLiteAdapter).configuration.path
        return try unwrap(files.withLock { $0[path] }, "the harness made this adapter")
    }
}

@Suite("SQLite adapter conformance", .heavy)
struct SQLiteAdapterConformanceTests {
    @Test(arguments: AdapterConformanceSuite.cases)
    func conformance(_ check: AdapterConformanceCase) async throws {
        let directory = try TemporaryDirectory(prefix: "sqlite-adapter")
        defer { directory.remove() }
        try await check.run(with: SQLiteAdapterHarness(directory: directory))
    }
}
