import Foundation
@testable import GatewayCore
import GatewayTesting
import Synchronization
import Testing

/// A store whose calls can be made to hang: they wait on a gate that ignores cancellation, as a
/// library call that lost its continuation does.
final class StuckAdapter: ForwardingAdapter {
    let inner: InMemoryAdapter
    private let gate = Mutex<(armed: Bool, waiters: [CheckedContinuation<Void, Never>], watchers: [CheckedContinuation<Void, Never>])>(
        (false, [], []))

    init(_ inner: InMemoryAdapter) { self.inner = inner }

    /// The wrapped store through the protocol, whose calls all throw.
    private var store: any ModelAdapter { inner }

    var name: String { inner.name }
    var zoneID: ZoneID { inner.zoneID }

    /// From now on, counting pending changes (the start of every upload) hangs until ``release()``.
    func arm() { gate.withLock { $0.armed = true } }

    /// Lets every hung call go on, and later ones pass.
    func release() {
        let waiters = gate.withLock { state in
            state.armed = false
            defer { state.waiters = [] }
            return state.waiters
        }
        waiters.forEach { $0.resume() }
    }

    private func pass() async {
        await withCheckedContinuation { continuation in
            let (go, watchers) = gate.withLock { state -> (Bool, [CheckedContinuation<Void, Never>]) in
                guard state.armed else { return (true, []) }
                state.waiters.append(continuation)
                defer { state.watchers = [] }
                return (false, state.watchers)
            }
            watchers.forEach { $0.resume() }
            if go { continuation.resume() }
        }
    }

    /// Returns once a call hangs.
    func untilHanging() async {
        await withCheckedContinuation { continuation in
            let hanging = gate.withLock { state -> Bool in
                if !state.waiters.isEmpty { return true }
                state.watchers.append(continuation)
                return false
            }
            if hanging { continuation.resume() }
        }
    }

    func forwardingTarget() async throws -> any ModelAdapter { store }
    func pendingChangeCount() async throws -> Int {
        await pass()
        return try await store.pendingChangeCount()
    }
}

@Suite("Stall guard")
struct StallGuardTests {
    typealias F = SyncFixture

    /// The limits of the product's defaults' order; the guard reads them on a clock the tests step.
    static let guarded = SyncConfiguration(deviceID: "test", stallTimeout: .seconds(6), stopTimeout: .seconds(1))

    /// The fixture's environment with the stall guard on `clock`.
    static func environment(_ fixture: SyncFixture, clock: ManualSyncClock) -> SyncEnvironment {
        var environment = fixture.environment
        environment.clock = clock
        return environment
    }


    @Test("a store call that never returns fails its adapter with stalled, naming the call; the others sync", .timeLimit(.minutes(1)))
    func stalledCallFailsItsAdapter() async throws {
        let fixture = try SyncFixture()
        let stuck = StuckAdapter(fixture.adapter("stuck"))
        let fine = fixture.adapter("fine")
        await stuck.inner.save(F.note("a", ["title": .string("from stuck")]))
        await fine.save(F.note("b", ["title": .string("from fine")]))
        stuck.arm()
        let clock = ManualSyncClock()
        let synchronizer = Synchronizer(
            cloud: fixture.cloud, adapters: [SyncedAdapter(stuck), SyncedAdapter(fine)], configuration: Self.guarded,
            environment: Self.environment(fixture, clock: clock))

        let syncing = Task { try await synchronizer.sync() }
        await stuck.untilHanging()
        await clock.waitForPendingSleeps(1)  // the guard looks at the pass
        clock.advance(by: .seconds(7))  // no progress for longer than stall_timeout: the guard stops the pass
        await clock.waitForPendingSleeps(1)  // the stopped pass's deadline
        clock.advance(by: .seconds(1))  // the call ignores cancellation: the pass is left behind
        let first = try await syncing.value
        #expect(first.adapters[0].error?.code == .stalled)
        let message = first.adapters[0].error?.message ?? ""
        #expect(message.contains("no progress for 6s"), "\(message)")
        #expect(message.contains("the store: counting pending changes"), "the message names the call: \(message)")
        #expect(first.adapters[1].outcome == .synced, "the other adapter went on")
        #expect(try await fixture.cloudRecords().keys.sorted() == ["b"])

        // While the abandoned call still hangs, the adapter sits out instead of running twice.
        let second = try await synchronizer.sync()
        #expect(second.adapters[0].error?.code == .stalled)
        #expect(second.adapters[0].error?.message.contains("still stuck") == true, "\(second.adapters[0].error?.message ?? "")")
        #expect(second.adapters[1].outcome == .synced)

        stuck.release()
        // The abandoned pass ends on its own (it sees it was cancelled); then the adapter syncs.
        var report = try await synchronizer.sync()
        for _ in 0..<100 where report.adapters[0].outcome != .synced {
            try await Task.sleep(for: .milliseconds(20))
            report = try await synchronizer.sync()
        }
        #expect(report.adapters[0].outcome == .synced)
        #expect(try await fixture.cloudRecords().keys.sorted() == ["a", "b"], "nothing was lost")
        #expect(try await !stuck.hasChanges())
    }

    @Test("a cancelled sync whose store call ignores cancellation ends within stop_timeout, naming the call", .timeLimit(.minutes(1)))
    func cancelledSyncEnds() async throws {
        let fixture = try SyncFixture()
        let stuck = StuckAdapter(fixture.adapter("stuck"))
        await stuck.inner.save(F.note("a", ["title": .string("pending")]))
        stuck.arm()
        var configuration = Self.guarded
        configuration.stallTimeout = nil
        let clock = ManualSyncClock()
        let synchronizer = Synchronizer(
            cloud: fixture.cloud, adapters: [SyncedAdapter(stuck)], configuration: configuration,
            environment: Self.environment(fixture, clock: clock))
        let syncing = Task { try await synchronizer.sync() }
        await stuck.untilHanging()
        syncing.cancel()
        await clock.waitForPendingSleeps(1)  // the stopped pass's deadline
        clock.advance(by: .seconds(1))
        let report = try await syncing.value
        #expect(report.adapters[0].error?.code == .interrupted)
        #expect(report.adapters[0].error?.message.contains("the store: counting pending changes") == true, "\(report.adapters[0].error?.message ?? "")")
        stuck.release()
    }

    @Test("a pass that keeps making progress is never stalled, however long it runs", .timeLimit(.minutes(1)))
    func slowButMovingIsFine() async throws {
        let fixture = try SyncFixture()
        let source = fixture.adapter("source")
        for index in 0..<12 { await source.save(F.note("n\(index)", ["rank": .int64(Int64(index))])) }
        // Twelve batches of one, each read taking 700 ms of the guard's clock: 8.4 s in all,
        // against a 6 s stall limit.
        let clock = ManualSyncClock()
        let start = clock.now
        await source.runBeforePendingReads { clock.advance(by: .milliseconds(700)) }
        let report = try await Synchronizer(
            cloud: fixture.cloud, adapters: [SyncedAdapter(source, options: AdapterSyncOptions(batchSize: 1))], configuration: Self.guarded,
            environment: Self.environment(fixture, clock: clock)
        ).sync()
        #expect(clock.now - start >= .seconds(8), "the guard's clock moved on by more than the stall limit")
        #expect(report.adapters[0].outcome == .synced)
        #expect(report.adapters[0].uploaded == 12)
    }
}
