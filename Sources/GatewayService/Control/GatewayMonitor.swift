import Foundation
import GatewayCore
import Synchronization

/// What the running service knows about its syncs, for `/status`, `/readyz` and `POST /sync?wait=1`.
public final class GatewayMonitor: Sendable {
    /// One adapter's sync history.
    public struct AdapterHealth: Sendable, Codable, Equatable {
        public var lastSuccessAt: Date?
        public var consecutiveFailures = 0
        public var lastError: String?
        public var batchSize: Int?
    }

    /// A sync under way.
    public struct SyncInProgress: Sendable, Codable, Equatable {
        public var startedAt: Date
        public var reasons: [String]
    }

    struct State {
        var adapters: [OpenedAdapter] = []
        var health: [String: AdapterHealth] = [:]
        var inProgress: SyncInProgress?
        var completedSyncs = 0
        var lastReport: SyncReport?
        /// Why the service has not opened its stores yet, while it keeps trying.
        var waitingFor: String?
    }

    private let state = Mutex(State())
    /// Failures in a row after which `/readyz` reports the gateway as not ready.
    public let failuresBeforeNotReady = 3

    public init() {}

    func started(with adapters: [OpenedAdapter]) {
        state.withLock { state in
            state.adapters = adapters
            state.waitingFor = nil
        }
    }

    /// The service cannot open its cloud yet, for this reason; it keeps trying.
    func waiting(for reason: String) {
        state.withLock { $0.waitingFor = reason }
    }

    func syncStarted(reasons: [String]) {
        state.withLock { $0.inProgress = SyncInProgress(startedAt: Date(), reasons: reasons) }
    }

    func syncFinished(_ report: SyncReport?, error: (any Error)?) {
        state.withLock { state in
            state.inProgress = nil
            state.completedSyncs += 1
            state.lastReport = report
            for adapter in report?.adapters ?? [] {
                var health = state.health[adapter.adapter] ?? AdapterHealth()
                health.batchSize = adapter.batchSize
                switch adapter.outcome {
                case .synced:
                    health.lastSuccessAt = Date()
                    health.consecutiveFailures = 0
                    health.lastError = nil
                case .paused(let reason):
                    health.consecutiveFailures += 1
                    health.lastError = "paused: \(reason)"
                case .failed(let code, let message):
                    health.consecutiveFailures += 1
                    health.lastError = "\(code): \(message)"
                }
                state.health[adapter.adapter] = health
            }
            if let error {
                for name in state.adapters.map(\.name) {
                    state.health[name, default: AdapterHealth()].consecutiveFailures += 1
                    state.health[name, default: AdapterHealth()].lastError = "\(error)"
                }
            }
        }
    }

    /// The opened adapters (empty until the service has opened its stores).
    var adapters: [OpenedAdapter] { state.withLock { $0.adapters } }

    var health: [String: AdapterHealth] { state.withLock { $0.health } }

    var inProgress: SyncInProgress? { state.withLock { $0.inProgress } }

    /// How many syncs have finished.
    var completedSyncs: Int { state.withLock { $0.completedSyncs } }

    /// Why the gateway is not ready, or `nil` when it is.
    public var notReadyReason: String? {
        state.withLock { state in
            if state.adapters.isEmpty && state.completedSyncs == 0 {
                return state.waitingFor.map { "the cloud cannot be opened yet: \($0)" } ?? "the stores are not open yet"
            }
            if state.completedSyncs == 0 { return "the first sync has not finished" }
            let failing = state.health.filter { $0.value.consecutiveFailures >= failuresBeforeNotReady }.keys.sorted()
            return failing.isEmpty ? nil : "adapters failing repeatedly: \(failing.joined(separator: ", "))"
        }
    }

    /// Waits until a sync that starts after this call has finished, and returns its report.
    func waitForSync(after completed: Int) async throws -> SyncReport? {
        while true {
            let (done, report) = state.withLock { ($0.completedSyncs, $0.lastReport) }
            if done > completed { return report }
            try await Task.sleep(for: .milliseconds(20))
        }
    }
}
