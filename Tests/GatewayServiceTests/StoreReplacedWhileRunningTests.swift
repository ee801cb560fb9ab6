import EmbeddedCloud
import Foundation
import GRDB
import GatewayCore
import GatewayTesting
import TestScheduling
import Testing

/// A SQLite file replaced behind `gateway run` (a restore, a new file moved in): the service
/// must sync the file the path names now, not go on writing to the one it opened first.
@Suite("service mode with a store file replaced", .heavy)
struct StoreReplacedWhileRunningTests {
    @Test("a SQLite file replaced while the service runs: its rows reach the cloud, the zone's rows reach it, nothing goes to the old file")
    func replacedFile() async throws {
        let directory = try TemporaryDirectory(prefix: "gateway-replaced")
        defer { directory.remove() }
        func database(_ name: String) throws -> DatabaseQueue {
            var configuration = Configuration()
            configuration.busyMode = .timeout(30)
            return try DatabaseQueue(path: directory.path("\(name).sqlite"), configuration: configuration)
        }
        for name in ["a", "b"] {
            try await database(name).write { db in try db.execute(sql: "CREATE TABLE item (id INTEGER PRIMARY KEY, title TEXT)") }
        }
        try await database("a").write { db in try db.execute(sql: "INSERT INTO item VALUES (1, 'from a')") }
        // An hour between syncs: only change signals can bring the new file's rows up in time.
        let config = """
            gateway: { sync_interval: 1h, control: { listen: "127.0.0.1:0" } }
            adapters:
              - { name: a, kind: sqlite, path: a.sqlite, zone: Items, tables: [{ table: item }] }
              - { name: b, kind: sqlite, path: b.sqlite, zone: Items, tables: [{ table: item }] }
            """
        try Data(config.utf8).write(to: directory.url.appendingPathComponent("config.yaml"))
        let running = try RunningGateway(in: directory)
        let service = running.process
        defer { if service.isRunning { service.kill() } }
        let waitFor = running.waitFor
        func title(_ id: Int, in name: String) async throws -> String? {
            try await database(name).read { db in try String.fetchOne(db, sql: "SELECT title FROM item WHERE id = ?", arguments: [id]) }
        }
        try await waitFor("row 1 in b") { try await title(1, in: "b") == "from a" }

        // b.sqlite is replaced by another file (built aside, then moved over it, as a restore does).
        let replacement = try DatabaseQueue(path: directory.path("b-new.sqlite"))
        try await replacement.write { db in
            try db.execute(sql: "CREATE TABLE item (id INTEGER PRIMARY KEY, title TEXT)")
            try db.execute(sql: "INSERT INTO item VALUES (2, 'from the new b')")
        }
        try replacement.close()
        for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: directory.path("b.sqlite" + suffix)) }
        #expect(rename(directory.path("b-new.sqlite"), directory.path("b.sqlite")) == 0)

        try await waitFor("the new file's row in a") { try await title(2, in: "a") == "from the new b" }
        try await waitFor("the zone's row in the new file") { try await title(1, in: "b") == "from a" }
        // And the new file keeps syncing: an edit in a reaches it, an edit in it reaches a.
        try await database("a").write { db in try db.execute(sql: "UPDATE item SET title = 'edited in a' WHERE id = 1") }
        try await waitFor("a's edit in the new file") { try await title(1, in: "b") == "edited in a" }
        try await database("b").write { db in try db.execute(sql: "UPDATE item SET title = 'edited in the new b' WHERE id = 2") }
        try await waitFor("the new file's edit in a") { try await title(2, in: "a") == "edited in the new b" }
        service.terminate()
        #expect(try await service.wait(timeout: .seconds(30)) == 0, "\(running.log())")
    }
}
