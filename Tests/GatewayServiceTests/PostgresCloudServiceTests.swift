import Foundation
import GRDB
import GatewayTesting
import PostgresTesting
import Testing

/// Gateways on different machines share one PostgreSQL cloud; here, separate processes with
/// separate state folders on one machine.
@Suite("gateways sharing a PostgreSQL cloud")
struct PostgresCloudServiceTests {
    static let schema = "CREATE TABLE item (name TEXT PRIMARY KEY, title TEXT, rank INTEGER);"

    /// A gateway's folder: its config, its SQLite store and its state folder.
    struct GatewayFolder {
        let directory: TemporaryDirectory
        var database: String { directory.path("items.sqlite") }

        init(_ label: String, cloudURL: String, deviceID: String? = nil, seedRows: Int = 0) async throws {
            directory = try TemporaryDirectory(prefix: "gateway-pg-\(label)")
            let device = deviceID.map { ", device_id: \($0)" } ?? ""
            let config = """
                gateway: { sync_interval: 1s, batch_size: 100, control: { listen: "127.0.0.1:0" }\(device) }
                cloud: { kind: postgres, url: "\(cloudURL)", schema: shared_cloud }
                adapters:
                  - { name: items, kind: sqlite, path: items.sqlite, zone: Items, poll_interval: 100ms, tables: [{ table: item }] }
                """
            try Data(config.utf8).write(to: directory.url.appendingPathComponent("config.yaml"))
            try await DatabaseQueue(path: directory.path("items.sqlite")).write { db in
                try db.execute(sql: PostgresCloudServiceTests.schema)
                for index in 0..<seedRows {
                    try db.execute(
                        sql: "INSERT INTO item (name, title, rank) VALUES (?, ?, ?)", arguments: ["seed-\(index)", "seed \(index)", index])
                }
            }
        }

        func start() throws -> ChildProcess {
            try ChildProcess(
                try BuiltExecutable.path("gateway"), arguments: ["run"], directory: directory.url.path,
                standardOutput: directory.path("run.out"), standardError: directory.path("run.err"))
        }

        func contents() async throws -> [String] {
            try await DatabaseQueue(path: database).read { db in
                try Row.fetchAll(db, sql: "SELECT name, title, rank FROM item ORDER BY name").map(\.description)
            }
        }

        var log: String { (try? String(contentsOfFile: directory.path("run.err"), encoding: .utf8)) ?? "" }
    }

    @Test("two gateway processes converge through a PostgreSQL cloud while a third program writes; a twin is locked out")
    func twoGateways() async throws {
        let cloud = try await PostgresTestServer.freshDatabase("two_gateways")
        let a = try await GatewayFolder("a", cloudURL: "\(cloud)", seedRows: 300)
        let b = try await GatewayFolder("b", cloudURL: "\(cloud)", deviceID: "twin-device")
        defer {
            a.directory.remove()
            b.directory.remove()
        }
        let gatewayA = try a.start()
        let gatewayB = try b.start()
        defer {
            if gatewayA.isRunning { gatewayA.kill() }
            if gatewayB.isRunning { gatewayB.kill() }
        }

        let writer = try ChildProcess(
            try BuiltExecutable.path("SQLiteWriter"), arguments: [a.database, "item", "w", "80", "10"],
            standardOutput: a.directory.path("writer.out"), standardError: a.directory.path("writer.err"))
        #expect(try await writer.wait(timeout: .seconds(120)) == 0)
        try await DatabaseQueue(path: b.database).write { db in
            try db.execute(sql: "UPDATE item SET title = 'edited on b' WHERE name IN ('seed-1', 'seed-2')")
        }

        let deadline = ContinuousClock.now + .seconds(90)
        var converged = false
        while ContinuousClock.now < deadline {
            let (left, right) = (try await a.contents(), try await b.contents())
            if left.count == 380 && left == right {
                converged = true
                break
            }
            try await Task.sleep(for: .milliseconds(250))
        }
        #expect(converged, "a: \(a.log)\nb: \(b.log)")
        let final = try await a.contents()
        #expect(final.filter { $0.contains("edited on b") }.count == 2)

        // Another machine's gateway with the same device id (the same state) is locked out by
        // the cloud's advisory lock, although its state folder is a different one.
        let twin = try await GatewayFolder("twin", cloudURL: "\(cloud)", deviceID: "twin-device")
        defer { twin.directory.remove() }
        let locked = try await GatewayCLI.run(["sync"], in: twin.directory.url)
        #expect(locked.status == 75, "\(locked)")
        #expect(locked.stderr.contains("device id twin-device"), "\(locked)")

        gatewayA.terminate()
        gatewayB.terminate()
        #expect(try await gatewayA.wait(timeout: .seconds(30)) == 0, "\(a.log)")
        #expect(try await gatewayB.wait(timeout: .seconds(30)) == 0, "\(b.log)")
        let afterStop = try await GatewayCLI.run(["sync"], in: twin.directory.url)
        #expect(afterStop.status == 0, "the lock is released when its holder stops: \(afterStop)")
    }
}
