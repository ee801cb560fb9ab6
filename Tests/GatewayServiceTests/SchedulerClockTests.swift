import Foundation
import GRDB
import GatewayConfig
import GatewayKinds
import GatewayTesting
import Logging
import ServiceLifecycle
import Testing

@testable import GatewayService

/// The scheduler's timing on a clock the test steps: the interval and the debounce pass when the
/// test says so, and not before, however slow the machine.
@Suite("the scheduler on a stepped clock", .serialized)
struct SchedulerClockTests {
    /// The reasons of each sync the monitor has recorded, oldest first.
    static func reasons(_ monitor: GatewayMonitor) -> [[String]] { monitor.recentSyncs.map(\.reasons) }

    /// Waits until the monitor has recorded a sync that `matches`, and returns it. Each look is
    /// made after a sync finished (the test's time limit bounds the wait).
    @discardableResult
    static func sync(
        of monitor: GatewayMonitor, _ what: String, where matches: (GatewayMonitor.SyncSample) -> Bool
    ) async throws -> GatewayMonitor.SyncSample {
        while true {
            let finished = monitor.completedSyncs
            if let found = monitor.recentSyncs.last(where: matches) { return found }
            _ = try await monitor.waitForSync(after: finished)
        }
    }

    @Test("a sync at start; the next when the interval has passed on the clock; a store change syncs when its debounce ends", .timeLimit(.minutes(2)))
    func intervalAndDebounce() async throws {
        let directory = try TemporaryDirectory(prefix: "scheduler-clock")
        defer { directory.remove() }
        let database = try DatabaseQueue(path: directory.path("notes.sqlite"))
        try await database.write { db in try db.execute(sql: "CREATE TABLE note (id INTEGER PRIMARY KEY, title TEXT)") }
        // The cloud's own change signals (real time) are kept out of the way: every sync here is
        // one the test's clock or the store asked for.
        let yaml = """
            gateway: { sync_interval: 1h, debounce: 10m, state_dir: state }
            cloud: { kind: embedded, path: cloud.sqlite, poll_interval: 1h }
            adapters:
              - { name: notes, kind: sqlite, path: notes.sqlite, zone: Notes, tables: [{ table: note }] }
            """
        let configuration = try GatewayConfiguration.parse(
            yaml: yaml, file: directory.path("config.yaml"), baseDirectory: directory.url.path, registry: .builtIn, environment: [:])
        let clock = ManualSyncClock()
        let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        let scheduler = SyncScheduler(configuration: configuration, logger: logger, clock: clock)
        let group = ServiceGroup(services: [scheduler.session, scheduler], logger: logger)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            try await Self.sync(of: scheduler.monitor, "start") { $0.reasons.contains("start") }

            // A minute short of the interval, no interval sync; at the interval, one. The store,
            // open when the service started, is not signalled for that: no sync but these two.
            await clock.waitForPendingSleeps(1)
            clock.advance(by: .seconds(59 * 60))
            #expect(!Self.reasons(scheduler.monitor).joined().contains("interval"))
            clock.advance(by: .seconds(60))
            try await Self.sync(of: scheduler.monitor, "interval") { $0.reasons.contains("interval") }
            #expect(Self.reasons(scheduler.monitor) == [["start"], ["interval"]])

            // A store change is signalled (SQLite's polling, in real time), then waits for its
            // debounce on the clock: nothing uploads it before the clock passes the debounce.
            let before = scheduler.monitor.recentSyncs.count
            try await database.write { db in try db.execute(sql: "INSERT INTO note VALUES (1, 'one')") }
            await clock.waitForPendingSleeps(2)  // the interval and a debounce
            #expect(scheduler.monitor.recentSyncs.count == before, "no sync before the debounce ends: \(Self.reasons(scheduler.monitor))")
            clock.advance(by: .seconds(10 * 60))
            let stored = try await Self.sync(of: scheduler.monitor, "store") { $0.reasons.contains("store") && $0.uploaded == 1 }
            #expect(!stored.reasons.contains("interval"), "the interval is 50 minutes away: \(stored.reasons)")

            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
    }
}
