import Foundation
import GatewayCore
import Synchronization

/// Which zones changed, learned with one `changes/database` request per poll for all the zones a
/// gateway syncs, instead of one `zones/lookup` per zone per poll.
///
/// Every zone's change signals probe ``stamp(for:)``; the first probe of a poll interval asks the
/// service and bumps a counter for each zone the answer names; the others read the counters. So
/// N adapters polling every interval cost one request per interval. A service without
/// `changes/database` (it answers that the path does not exist) is remembered, and ``stamp(for:)``
/// returns `nil` so the caller probes the zone itself.
final class DatabaseChangeWatcher: Sendable {
    /// Asks `changes/database` with a token (`nil` the first time) and returns the answer.
    typealias Fetch = @Sendable (_ syncToken: String?) async throws -> JSONValue

    private struct State {
        var token: String?
        var counters: [ZoneID: Int] = [:]
        var lastPoll: ContinuousClock.Instant?
        var unsupported = false
    }

    private let state = Mutex(State())
    private let interval: Duration
    private let fetch: Fetch
    /// The clock the interval is measured on (a test's own, to step it without waiting).
    private let clock: any SyncClock
    /// Pages read per poll at most; a database with more changed zones than this finishes on the
    /// next poll.
    private let maximumPages = 20

    init(interval: Duration, clock: any SyncClock = LiveSyncClock(), fetch: @escaping Fetch) {
        self.interval = interval
        self.clock = clock
        self.fetch = fetch
    }

    /// A number that grows whenever `zone` changed, or `nil` when the service has no
    /// `changes/database`.
    func stamp(for zone: ZoneID) async throws -> Int? {
        let now = clock.now
        let (due, unsupported) = state.withLock { state in
            let due = state.lastPoll.map { now - $0 >= interval / 2 } ?? true
            if due { state.lastPoll = now }
            return (due, state.unsupported)
        }
        if unsupported { return nil }
        if due {
            do {
                try await poll()
            } catch let error as CloudError where error.code == .unknownItem {
                state.withLock { $0.unsupported = true }
                return nil
            } catch {
                state.withLock { $0.lastPoll = nil }  // the next probe asks again
                throw error
            }
        }
        return state.withLock { $0.counters[zone] ?? 0 }
    }

    private func poll() async throws {
        var token = state.withLock { $0.token }
        for _ in 0..<maximumPages {
            let answer = try await fetch(token)
            guard let next = answer["syncToken"]?.stringValue else {
                throw CloudError(.internalError, "changes/database: the answer has no syncToken")
            }
            var changed: [ZoneID] = []
            for entry in answer["zones"]?.arrayValue ?? [] where !CloudKitErrorCoding.isError(entry) {
                if let zoneID = entry["zoneID"] { changed.append(try CloudKitWireCoding.decodeZoneID(zoneID)) }
            }
            state.withLock { state in
                for zone in changed { state.counters[zone, default: 0] += 1 }
                state.token = next
            }
            token = next
            if answer["moreComing"]?.boolValue != true { return }
        }
    }
}
