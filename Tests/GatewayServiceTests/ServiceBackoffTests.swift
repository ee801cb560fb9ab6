import EmbeddedCloud
import Foundation
import GRDB
import GatewayCore
import GatewayTesting
import TestScheduling
import Testing

@Suite("service mode with a broken store", .heavy)
struct ServiceBackoffTests {
    @Test("a failing adapter backs off while the other keeps syncing, and says when it retries, in JSON log lines with sync ids")
    func failingAdapterBacksOff() async throws {
        let directory = try TemporaryDirectory(prefix: "gateway-backoff")
        defer { directory.remove() }
        // The running gateway writes these files too: wait for its lock instead of failing.
        func database(_ name: String) throws -> DatabaseQueue {
            var configuration = Configuration()
            configuration.busyMode = .timeout(30)
            return try DatabaseQueue(path: directory.path("\(name).sqlite"), configuration: configuration)
        }
        for name in ["good", "broken"] {
            try await database(name).write { db in
                try db.execute(sql: "CREATE TABLE item (id INTEGER PRIMARY KEY, title TEXT)")
            }
        }
        let config = """
            gateway: { sync_interval: 1s, control: { listen: "127.0.0.1:0" } }
            adapters:
              - { name: good, kind: sqlite, path: good.sqlite, zone: Good, tables: [{ table: item }] }
              - { name: broken, kind: sqlite, path: broken.sqlite, zone: Broken, tables: [{ table: item }] }
            """
        try Data(config.utf8).write(to: directory.url.appendingPathComponent("config.yaml"))
        let running = try RunningGateway(in: directory)
        let service = running.process
        defer { if service.isRunning { service.kill() } }
        let log = running.log
        let waitFor = running.waitFor
        try await waitFor("the first sync") { log().contains("\"message\":\"sync finished\"") }

        // The broken store loses its table: its syncs fail from now on.
        try await database("broken").write { db in try db.execute(sql: "DROP TABLE item") }
        try await waitFor("the broken adapter's failure") { log().contains("\"adapter\":\"broken\"") && log().contains("\"retry_in\"") }

        // The other adapter's changes keep reaching the cloud.
        let cloud = try EmbeddedCloud(path: directory.path(".gateway/cloud.sqlite"))
        for index in 1...3 {
            try await database("good").write { db in
                try db.execute(sql: "INSERT INTO item (id, title) VALUES (?, 'row')", arguments: [index])
            }
            try await waitFor("row \(index) of the good adapter in the cloud") {
                try await zoneContents(of: cloud, zone: ZoneID(zoneName: "Good"))["\(index)"] != nil
            }
        }
        struct Line: Decodable {
            var time: String
            var level: String
            var message: String
            var adapter: String?
            var sync: String?
            var retry_in: String?
            var health: String?
        }
        let lines = try log().split(separator: "\n").map { try JSONDecoder().decode(Line.self, from: Data($0.utf8)) }
        let failures = lines.filter { $0.message == "adapter failed" && $0.adapter == "broken" }
        #expect(!failures.isEmpty)
        #expect(failures.allSatisfy { $0.retry_in != nil && $0.level == "error" && Int($0.sync ?? "") != nil }, "\(failures)")
        let syncs = lines.filter { $0.message == "adapter synced" && $0.adapter == "good" }.compactMap { $0.sync.flatMap(Int.init) }
        #expect(syncs == syncs.sorted() && Set(syncs).count == syncs.count, "each sync has its own, growing id")
        // Each outcome line carries the adapter's health, as /status and the page say it.
        // (its table is gone: the store cannot be read as configured, as `gateway status` says too).
        #expect(failures.allSatisfy { $0.health == "unreachable" }, "\(failures)")
        #expect(lines.filter { $0.message == "adapter synced" && $0.adapter == "good" }.last?.health == "ok")
        // Without control.token, reading is allowed on loopback and asking for a sync is refused.
        let port = try #require(log().firstMatch(of: /"address":"127\.0\.0\.1:(\d+)"/).flatMap { Int($0.1) })
        #expect(try await LoopbackHTTP.send("GET", port: port, path: "/healthz").status == 200)
        let refused = try await LoopbackHTTP.send("POST", port: port, path: "/sync")
        #expect(refused.status == 403 && String(decoding: refused.body, as: UTF8.self) == "set control.token to allow this request\n")
        service.terminate()
        #expect(try await service.wait(timeout: .seconds(30)) == 0, "\(log())")
    }

    @Test("an adapter that failed is synced again when its back-off ends, without waiting for the sync interval")
    func retriedWhenBackoffEnds() async throws {
        let directory = try TemporaryDirectory(prefix: "gateway-retry")
        defer { directory.remove() }
        func database() throws -> DatabaseQueue {
            var configuration = Configuration()
            configuration.busyMode = .timeout(30)
            return try DatabaseQueue(path: directory.path("flaky.sqlite"), configuration: configuration)
        }
        try await database().write { db in
            try db.execute(sql: "CREATE TABLE item (id INTEGER PRIMARY KEY, title TEXT)")
        }
        // The interval is an hour: only the back-off's own retry can bring the row up in time.
        let config = """
            gateway: { sync_interval: 1h, control: { listen: "127.0.0.1:0" } }
            adapters:
              - { name: flaky, kind: sqlite, path: flaky.sqlite, zone: Flaky, tables: [{ table: item }] }
            """
        try Data(config.utf8).write(to: directory.url.appendingPathComponent("config.yaml"))
        let running = try RunningGateway(in: directory)
        let service = running.process
        defer { if service.isRunning { service.kill() } }
        let log = running.log
        let waitFor = running.waitFor
        try await waitFor("the first sync") { log().contains("\"message\":\"sync finished\"") }

        // The store loses its table (its sync fails and backs off), then gets it back with a row
        // while the adapter waits: the change signal arrives during the back-off.
        try await database().write { db in try db.execute(sql: "DROP TABLE item") }
        service.send(SIGUSR1)
        try await waitFor("the adapter's failure") { log().contains("\"message\":\"adapter failed\"") }
        try await database().write { db in
            try db.execute(sql: "CREATE TABLE item (id INTEGER PRIMARY KEY, title TEXT)")
            try db.execute(sql: "INSERT INTO item (id, title) VALUES (1, 'back')")
        }
        let cloud = try EmbeddedCloud(path: directory.path(".gateway/cloud.sqlite"))
        try await waitFor("the row in the cloud") {
            try await zoneContents(of: cloud, zone: ZoneID(zoneName: "Flaky"))["1"] != nil
        }
        service.terminate()
        #expect(try await service.wait(timeout: .seconds(30)) == 0, "\(log())")
    }
}
