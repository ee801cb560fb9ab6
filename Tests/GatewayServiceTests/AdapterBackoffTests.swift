import GatewayCore
import GatewayConfig
import GatewayService
import Testing

@Suite("adapter back-off in service mode")
struct AdapterBackoffTests {
    static func report(_ outcomes: [String: Bool]) -> SyncReport {
        SyncReport(
            adapters: outcomes.sorted { $0.key < $1.key }.map { name, ok in
                AdapterSyncReport(adapter: name, outcome: ok ? .synced : .failed(code: .adapterFailed, message: "broken"))
            })
    }

    @Test("the wait doubles with each failure in a row, capped, for every count")
    func delays() {
        let backoff = AdapterBackoff(baseDelay: .seconds(1), maxDelay: .seconds(60))
        #expect(backoff.delay(afterFailures: 0) == .zero)
        var expected = Duration.seconds(1)
        for count in 1...100 {
            #expect(backoff.delay(afterFailures: count) == min(expected, .seconds(60)), "after \(count) failures")
            expected = min(expected * 2, .seconds(120))
        }
    }

    @Test("a failed adapter sits out until its wait is over; the others stay eligible; a success clears it")
    func eligibility() {
        let backoff = AdapterBackoff(baseDelay: .seconds(1), maxDelay: .seconds(8))
        let start = ContinuousClock.now
        let names = ["a", "broken", "c"]
        #expect(backoff.eligible(names, at: start) == names)
        backoff.record(Self.report(["a": true, "broken": false, "c": true]), at: start)
        #expect(backoff.eligible(names, at: start + .milliseconds(999)) == ["a", "c"])
        #expect(backoff.eligible(names, at: start + .seconds(1)) == names)
        // Fail again: the wait doubles from the time of the second failure.
        let second = start + .seconds(1)
        backoff.record(Self.report(["broken": false]), at: second)
        #expect(backoff.retryAt("broken") == second + .seconds(2))
        #expect(backoff.eligible(names, at: second + .seconds(1)) == ["a", "c"])
        for _ in 0..<10 { backoff.record(Self.report(["broken": false]), at: second) }
        #expect(backoff.retryAt("broken") == second + .seconds(8), "capped at the maximum")
        backoff.record(Self.report(["broken": true]), at: second + .seconds(8))
        #expect(backoff.retryAt("broken") == nil)
        #expect(backoff.eligible(names, at: second + .seconds(8)) == names)
    }
}
