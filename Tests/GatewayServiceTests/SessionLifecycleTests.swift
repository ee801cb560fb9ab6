import Foundation
import GatewayConfig
import GatewayCore
import GatewayKinds
import GatewayTesting
import Logging
import PostgresNIO
import PostgresSupport
import PostgresTesting
import TestScheduling
import ServiceLifecycle
import Testing

@testable import GatewayService

/// What a syncing process opens, a session's end closes: plugin processes stop, and no
/// connection to PostgreSQL (cloud or store) stays open.
@Suite("A session's end", .heavy)
struct SessionLifecycleTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let plugin = root.appendingPathComponent("examples/plugins/csv-folder/csv_folder.py").path

    /// This process's children running `marker` in `directory` (from `/proc`): other tests of
    /// this process run the same plugin at the same time, each in a folder of its own.
    static func children(running marker: String, in directory: String) -> [Int32] {
        let me = getpid()
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap { entry -> Int32? in
            guard let pid = Int32(entry),
                let status = try? String(contentsOfFile: "/proc/\(entry)/status", encoding: .utf8),
                let line = status.split(separator: "\n").first(where: { $0.hasPrefix("PPid:") }),
                Int32(line.dropFirst(5).trimmingCharacters(in: .whitespaces)) == me,
                let command = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline"),
                String(decoding: command, as: UTF8.self).contains(marker),
                let workingDirectory = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(entry)/cwd"),
                URL(fileURLWithPath: workingDirectory).standardizedFileURL.resolvingSymlinksInPath().path
                    == URL(fileURLWithPath: directory).standardizedFileURL.resolvingSymlinksInPath().path
            else { return nil }
            return pid
        }
    }

    /// The client connections to `observer`'s database other than its own.
    ///
    /// One observer connection asks every time: a new connection per question would leave the
    /// backends of the earlier ones in the count until the server has ended them, which a
    /// loaded machine takes its time to do.
    static func connections(asking observer: PostgresConnectionPool) async throws -> Int64 {
        try await observer.withConnection(doing: "counting connections") { connection in
            let rows = try await connection.query(
                """
                SELECT count(*)::int8 FROM pg_stat_activity
                WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'
                """,
                logger: connection.logger)
            var count: Int64 = 0
            for try await (number) in rows.decode(Int64.self) { count = number }
            return count
        }
    }

    /// What the other connections are doing, for a failure's message.
    static func describeConnections(asking observer: PostgresConnectionPool) async throws -> [String] {
        try await observer.withConnection(doing: "describing connections") { connection in
            let rows = try await connection.query(
                """
                SELECT backend_type || ' ' || coalesce(state, '?') || ' ' || left(coalesce(query, ''), 80) FROM pg_stat_activity
                WHERE datname = current_database() AND pid <> pg_backend_pid()
                """,
                logger: connection.logger)
            var described: [String] = []
            for try await (line) in rows.decode(String.self) { described.append(line) }
            return described
        }
    }

    /// A config with a PostgreSQL cloud, a PostgreSQL store and the CSV plugin, in `directory`.
    static func configuration(in directory: TemporaryDirectory, database: PostgresEndpoint) throws -> GatewayConfiguration {
        let config = """
            gateway: { sync_interval: 1h }
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
        return try GatewayConfiguration.load(file: directory.path("config.yaml"), registry: .builtIn)
    }

    /// Expects the plugin running in `directory` to have ended, and every connection but
    /// `observer`'s to close (the server notices a closed connection when its backend reads the
    /// end of the stream, which takes a moment on a loaded machine).
    static func expectReleased(in directory: TemporaryDirectory, asking observer: PostgresConnectionPool) async throws {
        #expect(Self.children(running: "csv_folder.py", in: directory.url.path).isEmpty, "the plugin process ended with the session")
        let deadline = ContinuousClock.now + .seconds(30)
        var left = try await Self.connections(asking: observer)
        while left > 0, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
            left = try await Self.connections(asking: observer)
        }
        let remaining = left == 0 ? [] : try await Self.describeConnections(asking: observer)
        #expect(left == 0, "no connection outlives the session: \(remaining)")
    }

    @Test("ending a session stops its plugin process and closes every PostgreSQL connection it opened", .timeLimit(.minutes(2)))
    func endReleasesEverything() async throws {
        let directory = try TemporaryDirectory(prefix: "session-end")
        defer { directory.remove() }
        let database = try await PostgresTestServer.freshDatabase("session_end")
        try await PostgresConnectionPool.execute(
            ["CREATE TABLE note (id int8 PRIMARY KEY, title text)", "INSERT INTO note VALUES (1, 'one')"], on: database, doing: "setup")
        let configuration = try Self.configuration(in: directory, database: database)

        // Closed at the end, or by its deinit when the test throws.
        let observer = PostgresConnectionPool(endpoint: database, maximumConnections: 1)
        let session = try await SyncSession.open(configuration, adapters: configuration.adapters)
        let report = try await session.synchronizer(configuration).sync()
        #expect(report.succeeded, "\(report)")
        #expect(Self.children(running: "csv_folder.py", in: directory.url.path).count == 1, "the plugin runs while the session is open")
        #expect(try await Self.connections(asking: observer) > 0, "the cloud and the store hold connections")

        await session.end()
        try await Self.expectReleased(in: directory, asking: observer)
        await observer.close()
    }

    @Test(
        "under a service group, the session service opens what the scheduler syncs and ends it after the scheduler stops",
        .timeLimit(.minutes(2)))
    func serviceGroupEndsTheSession() async throws {
        let directory = try TemporaryDirectory(prefix: "session-service")
        defer { directory.remove() }
        let database = try await PostgresTestServer.freshDatabase("session_service")
        try await PostgresConnectionPool.execute(
            ["CREATE TABLE note (id int8 PRIMARY KEY, title text)", "INSERT INTO note VALUES (1, 'one')"], on: database, doing: "setup")
        let configuration = try Self.configuration(in: directory, database: database)
        let observer = PostgresConnectionPool(endpoint: database, maximumConnections: 1)
        let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        let scheduler = SyncScheduler(configuration: configuration, logger: logger)
        let group = ServiceGroup(services: [scheduler.session, scheduler], logger: logger)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            let report = try await scheduler.monitor.waitForSync(after: 0)
            #expect(report?.succeeded == true, "\(String(describing: report))")
            #expect(Self.children(running: "csv_folder.py", in: directory.url.path).count == 1, "the plugin runs while the group does")
            #expect(try await Self.connections(asking: observer) > 0, "the cloud and the store hold connections")
            // The state folder is locked while the session is open.
            await #expect(throws: GatewayError.self) { _ = try await SyncSession.open(configuration, adapters: configuration.adapters) }

            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
        try await Self.expectReleased(in: directory, asking: observer)
        // The locks went with the session: another process's session opens.
        let next = try await SyncSession.open(configuration, adapters: configuration.adapters)
        await next.end()
        await observer.close()
    }
}
