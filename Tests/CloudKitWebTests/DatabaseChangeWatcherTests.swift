import Foundation
import GatewayCore
import GatewayTesting
import Synchronization
import Testing

@testable import CloudKitWeb

/// Change signals for many zones from one `changes/database` poll.
@Suite("database change watcher")
struct DatabaseChangeWatcherTests {
    /// A `changes/database` that names the zones queued for it, and counts its calls.
    final class FakeFeed: Sendable {
        let calls = Mutex(0)
        let pending = Mutex<[String]>([])
        let tokens = Mutex<[String?]>([])

        func answer(_ token: String?) -> JSONValue {
            let count = calls.withLock { $0 += 1; return $0 }
            tokens.withLock { $0.append(token) }
            let zones = pending.withLock { zones in defer { zones = [] }; return zones }
            return [
                "zones": .array(zones.map { ["zoneID": ["zoneName": .string($0)], "syncToken": "t", "atomic": true] }),
                "syncToken": .string("db-\(count)"), "moreComing": false,
            ]
        }
    }

    @Test("three zones probed together cost one request per interval; each sees only its own changes")
    func sharedPoll() async throws {
        let feed = FakeFeed()
        let watcher = DatabaseChangeWatcher(interval: .seconds(3600)) { token in feed.answer(token) }
        let zones = ["A", "B", "C"].map { ZoneID(zoneName: $0) }
        feed.pending.withLock { $0 = ["A", "B", "C"] }
        var first: [Int?] = []
        for zone in zones { first.append(try await watcher.stamp(for: zone)) }
        #expect(first == [1, 1, 1])
        #expect(feed.calls.withLock { $0 } == 1, "one request for the three zones")

        // Within the interval nobody asks again.
        feed.pending.withLock { $0 = ["B"] }
        for zone in zones { _ = try await watcher.stamp(for: zone) }
        #expect(feed.calls.withLock { $0 } == 1)
    }

    @Test("after the interval the next probe asks with the last token, and only the changed zone's stamp moves")
    func laterPolls() async throws {
        let feed = FakeFeed()
        let clock = ManualSyncClock()
        let watcher = DatabaseChangeWatcher(interval: .seconds(20), clock: clock) { token in feed.answer(token) }
        let a = ZoneID(zoneName: "A")
        let b = ZoneID(zoneName: "B")
        feed.pending.withLock { $0 = ["A", "B"] }
        #expect(try await watcher.stamp(for: a) == 1)
        #expect(try await watcher.stamp(for: b) == 1)
        feed.pending.withLock { $0 = ["B"] }
        clock.advance(by: .seconds(9))
        #expect(try await watcher.stamp(for: a) == 1)
        #expect(feed.calls.withLock { $0 } == 1, "not asked again within half the interval")
        clock.advance(by: .seconds(1))
        #expect(try await watcher.stamp(for: a) == 1)
        #expect(try await watcher.stamp(for: b) == 2)
        #expect(feed.tokens.withLock { $0 } == [nil, "db-1"])
    }

    @Test("a service without changes/database makes the watcher step aside for good")
    func unsupported() async throws {
        let calls = Mutex(0)
        let clock = ManualSyncClock()
        let watcher = DatabaseChangeWatcher(interval: .seconds(1), clock: clock) { _ in
            calls.withLock { $0 += 1 }
            throw CloudError(.unknownItem, "no such path")
        }
        #expect(try await watcher.stamp(for: ZoneID(zoneName: "A")) == nil)
        clock.advance(by: .seconds(5))
        #expect(try await watcher.stamp(for: ZoneID(zoneName: "A")) == nil)
        #expect(calls.withLock { $0 } == 1)
    }

    @Test("a failed poll is asked again by the next probe, not skipped for the interval")
    func failures() async throws {
        let fail = Mutex(true)
        let feed = FakeFeed()
        let watcher = DatabaseChangeWatcher(interval: .seconds(3600)) { token in
            if fail.withLock({ $0 }) { throw CloudError(.networkFailure, "down") }
            return feed.answer(token)
        }
        await #expect(throws: CloudError.self) { try await watcher.stamp(for: ZoneID(zoneName: "A")) }
        fail.withLock { $0 = false }
        feed.pending.withLock { $0 = ["A"] }
        #expect(try await watcher.stamp(for: ZoneID(zoneName: "A")) == 1)
    }
}
