import Foundation
import GRDB
import GatewayTesting
import TestScheduling
import Testing

@Suite("gateway run stops cleanly", .heavy)
struct CleanShutdownTests {
    struct Line: Decodable {
        var level: String
        var message: String
    }

    @Test("SIGTERM, idle or in the middle of a sync, exits 0 and logs nothing at error level")
    func sigtermLogsNoError() async throws {
        let directory = try TemporaryDirectory(prefix: "gateway-sigterm")
        defer { directory.remove() }
        try await DatabaseQueue(path: directory.path("app.sqlite")).write { db in
            try db.execute(sql: "CREATE TABLE item (id INTEGER PRIMARY KEY, title TEXT)")
        }
        let config = """
            gateway: { sync_interval: 1h, control: { listen: "127.0.0.1:0" } }
            adapters:
              - { name: app, kind: sqlite, path: app.sqlite, zone: App, tables: [{ table: item }] }
            """
        try Data(config.utf8).write(to: directory.url.appendingPathComponent("config.yaml"))
        for round in 0..<2 {
            let running = try RunningGateway(in: directory, name: "run-\(round)")
            let service = running.process
            defer { if service.isRunning { service.kill() } }
            let log = running.log
            try await running.waitFor("the first sync") { log().contains("\"message\":\"sync finished\"") }
            if round == 1 {
                // A sync with work to do is running when the signal arrives.
                // The running gateway writes this file too: wait for its lock instead of failing.
                var waiting = Configuration()
                waiting.busyMode = .timeout(30)
                try await DatabaseQueue(path: directory.path("app.sqlite"), configuration: waiting).write { db in
                    for id in 1...20_000 { try db.execute(sql: "INSERT INTO item (id, title) VALUES (?, 'row')", arguments: [id]) }
                }
                // A sync with work to do is (most likely) running when the signal arrives; the
                // rule holds either way.
                service.send(SIGUSR1)
            }
            service.terminate()
            #expect(try await service.wait(timeout: .seconds(30)) == 0, "\(log())")
            let lines = log().split(separator: "\n").compactMap { try? JSONDecoder().decode(Line.self, from: Data($0.utf8)) }
            #expect(lines.contains { $0.message == "gateway stopped" }, "\(log())")
            let loud = lines.filter { $0.level == "error" || $0.level == "critical" }
            #expect(loud.isEmpty, "error-level lines on a clean stop: \(loud.map(\.message))")
        }
    }
}
