import Foundation
import GatewayCore
import GatewayTesting
import Testing

@Suite("Core types")
struct CoreTypesTests {
    @Test("timestamps keep milliseconds and truncate towards the past")
    func timestamps() {
        #expect(Timestamp(Date(timeIntervalSince1970: 1.2349)).millisecondsSince1970 == 1234)
        #expect(Timestamp(Date(timeIntervalSince1970: -0.0005)).millisecondsSince1970 == -1)
        let value = Timestamp(millisecondsSince1970: 1_716_000_000_123)
        #expect(Timestamp(value.date) == value)
    }

    @Test("error codes are distinct and only the transient ones are retryable")
    func errorCodes() {
        #expect(Set(CloudError.Code.all).count == CloudError.Code.all.count)
        #expect(Set(CloudError.Code.all.filter(\.isTransient)) == [.requestRateLimited, .zoneBusy, .serviceUnavailable, .networkFailure])
        let error = CloudError(.requestRateLimited, "slow down", retryAfter: .seconds(3))
        #expect(error.description.contains("requestRateLimited") && error.description.contains("3"))
    }

    @Test("asset checksums are lower-case SHA-256 hex")
    func checksums() {
        #expect(AssetChecksum.of(Data()) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(AssetChecksum.isWellFormed(AssetChecksum.of(Data("x".utf8))))
        #expect(!AssetChecksum.isWellFormed("ABC"))
    }

    @Test("polling change signals fire once per change and end on cancellation")
    func pollingSignals() async throws {
        let version = LockedValue(0)
        let signals = ChangeSignals.polling(every: .milliseconds(5)) { version.get() }
        let received = LockedValue(0)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for await _ in signals {
                    received.withLock { $0 += 1 }
                }
            }
            try await Task.sleep(for: .milliseconds(30))
            #expect(received.get() == 0, "no signal without a change")
            version.set(1)
            try await withTimeout(.seconds(10), "first signal") {
                while received.get() < 1 { try await Task.sleep(for: .milliseconds(2)) }
            }
            version.set(2)
            try await withTimeout(.seconds(10), "second signal") {
                while received.get() < 2 { try await Task.sleep(for: .milliseconds(2)) }
            }
            group.cancelAll()
        }
        #expect(received.get() == 2)
    }
}
