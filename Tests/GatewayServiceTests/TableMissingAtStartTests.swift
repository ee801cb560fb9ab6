import Foundation
import GRDB
import GatewayTesting
import Testing

/// A service started while one application migrates its database (a synced table renamed for a
/// moment) keeps the other stores syncing, and takes that one up once the table is back.
@Suite("gateway run with a store that does not match its config at start")
struct TableMissingAtStartTests {
    @Test("the other adapters sync; that one fails alone, named, and syncs once its table is back", .timeLimit(.minutes(2)))
    func renamedTableAtStart() async throws {
        let directory = try TemporaryDirectory(prefix: "table-missing-at-start")
        defer { directory.remove() }
        for name in ["a", "b"] {
            try await DatabaseQueue(path: directory.path("\(name).sqlite")).write { db in
                try db.execute(sql: "CREATE TABLE items (id INTEGER PRIMARY KEY, title TEXT)")
            }
        }
        try await DatabaseQueue(path: directory.path("a.sqlite")).write { db in
            try db.execute(sql: "INSERT INTO items VALUES (1, 'from a'), (2, 'also from a')")
        }
        try await DatabaseQueue(path: directory.path("b.sqlite")).write { db in try db.execute(sql: "ALTER TABLE items RENAME TO items_old") }
        try Data(
            """
            gateway: { sync_interval: 1s, retry: { base_delay: 100ms, max_delay: 1s }, control: { listen: "127.0.0.1:0" } }
            adapters:
              - { name: a, kind: sqlite, path: a.sqlite, zone: Items, tables: [{ table: items }] }
              - { name: b, kind: sqlite, path: b.sqlite, zone: Items, tables: [{ table: items }] }
            """.utf8
        ).write(to: directory.url.appendingPathComponent("config.yaml"))
        let running = try RunningGateway(in: directory)
        let service = running.process
        defer { if service.isRunning { service.kill() } }
        // Lines of the JSON log, each an object.
        func logged(_ fields: [String: String]) -> Bool {
            running.log().split(separator: "\n").contains { line in
                guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String] else { return false }
                return fields.allSatisfy { key, value in object[key]?.contains(value) == true }
            }
        }

        try await running.waitFor("a synced") { logged(["adapter": "a", "message": "adapter synced"]) }
        #expect(logged(["adapter": "b", "message": "store cannot be opened yet", "error": "table items does not exist"]), "\(running.log())")
        try await running.waitFor("b failed alone") { logged(["adapter": "b", "message": "adapter failed", "code": "missingTable"]) }

        try await DatabaseQueue(path: directory.path("b.sqlite")).write { db in try db.execute(sql: "ALTER TABLE items_old RENAME TO items") }
        try await running.waitFor("b took a's rows") {
            let count = try? await DatabaseQueue(path: directory.path("b.sqlite")).read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM items") }
            return count == 2
        }
        service.terminate()
        #expect(try await service.wait(timeout: .seconds(30)) == 0)
    }
}
