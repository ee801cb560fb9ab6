import Foundation
import GatewayConfig
import GatewayCore
import GatewayKinds
import GatewayTesting
import PostgresNIO
import PostgresSupport
import PostgresTesting
import TestScheduling
import Testing

/// What a syncing process opens, a session's end closes: plugin processes stop, and no
/// connection to PostgreSQL (cloud or store) stays open.
@Suite("A session's end", .heavy)
struct SessionLifecycleTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let plugin = root.appendingPathComponent("examples/plugins/csv-folder/csv_folder.py").path

    /// This process's children running `marker` (from `/proc`).
    static func children(running marker: String) -> [Int32] {
        let me = getpid()
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { entry -> Int32? in
            guard let pid = Int32(entry),
                let status = try? String(contentsOfFile: "/proc/\(entry)/status", encoding: .utf8),
                let line = status.split(separator: "\n").first(where: { $0.hasPrefix("PPid:") }),
                Int32(line.dropFirst(5).trimmingCharacters(in: .whitespaces)) == me,
                let command = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline"),
                String(decoding: command, as: UTF8.self).contains(marker)
            else { return nil }
            return pid
        }
    }

    /// The connections other than the asking one to `endpoint`'s database.
    static func connections(to endpoint: PostgresEndpoint) async throws -> Int64 {
        let observer = PostgresConnectionPool(endpoint: endpoint, maximumConnections: 1)
        let counted: Result<Int64, any Error>
        do {
            counted = .success(try await observer.withConnection(doing: "counting connections") { connection in
                let rows = try await connection.query(
                    "SELECT count(*)::int8 FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()",
                    logger: connection.logger)
                var count: Int64 = 0
                for try await (number) in rows.decode(Int64.self) { count = number }
                return count
            })
        } catch {
            counted = .failure(error)
        }
        await observer.close()
        return try counted.get()
    }

    @Test("ending a session stops its plugin process and closes every PostgreSQL connection it opened", .timeLimit(.minutes(2)))
    func endReleasesEverything() async throws {
        let directory = try TemporaryDirectory(prefix: "session-end")
        defer { directory.remove() }
        let database = try await PostgresTestServer.freshDatabase("session_end")
        try await PostgresConnectionPool.execute(
            ["CREATE TABLE note (id int8 PRIMARY KEY, title text)", "INSERT INTO note VALUES (1, 'one')"], on: database, doing: "setup")
        let config = """
            cloud: { kind: postgres, url: "\(database)", schema: cloud }
            adapters:
              - { name: table, kind: postgres, url: "\(database)", zone: Notes, tables: [{ table: note }] }
              - name: csv
                kind: plugin
                command: python3
                args: ["\(Self.plugin)"]
                zone: Csv
                working_directory: .
                settings: { directory: csv, record_types: [Note] }
            """
        try config.write(toFile: directory.path("config.yaml"), atomically: true, encoding: .utf8)
        let configuration = try GatewayConfiguration.load(file: directory.path("config.yaml"), registry: .builtIn)

        let session = try await SyncSession.open(configuration, adapters: configuration.adapters)
        let report = try await session.synchronizer(configuration).sync()
        #expect(report.succeeded, "\(report)")
        #expect(Self.children(running: "csv_folder.py").count == 1, "the plugin runs while the session is open")
        #expect(try await Self.connections(to: database) > 0, "the cloud and the store hold connections")

        await session.end()
        #expect(Self.children(running: "csv_folder.py").isEmpty, "the plugin process ended with the session")
        // The server notices a closed connection when its backend reads the end of the stream.
        let deadline = ContinuousClock.now + .seconds(30)
        var left = try await Self.connections(to: database)
        while left > 0, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
            left = try await Self.connections(to: database)
        }
        #expect(left == 0, "no connection outlives the session")
    }
}
