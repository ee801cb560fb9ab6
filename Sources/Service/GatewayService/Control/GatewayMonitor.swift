import Foundation
import GatewayConfig
import GatewayCore
import Synchronization

/// What the running service knows about its syncs, for `/status`, `/readyz` and `POST /sync?wait=1`.
public final class GatewayMonitor: Sendable {
    /// One adapter's sync history.
    public struct AdapterHealth: Sendable, Codable, Equatable {
        public var lastSuccessAt: Date?
        public var consecutiveFailures = 0
        public var lastError: String?
        /// The code of the last failure (``AdapterSyncReport/failureCode``), `nil` after a success.
        public var lastErrorCode: String?
        public var batchSize: Int?
    }

    /// A sync under way.
    public struct SyncInProgress: Sendable, Codable, Equatable {
        public var startedAt: Date
        public var reasons: [String]
    }

    /// A finished sync, as the status page lists and charts it.
    public struct SyncSample: Sendable, Codable, Equatable {
        public var startedAt: Date
        public var finishedAt: Date
        public var reasons: [String]
        /// Records written to the stores (saves and deletes).
        public var downloaded: Int
        /// Records sent to the cloud (saves and deletes).
        public var uploaded: Int
        public var conflicts: Int
        public var failed: Int
        /// Adapters whose pass did not end synced, with why.
        public var problems: [String]

        public var duration: TimeInterval { finishedAt.timeIntervalSince(startedAt) }
    }

    /// Pending changes of all adapters together, read after a sync.
    public struct PendingSample: Sendable, Codable, Equatable {
        public var at: Date
        public var pending: Int
    }

    /// How far back the history goes, and how many entries it keeps at most (a sync every
    /// second for an hour): memory stays bounded however busy the service is.
    public static let historyWindow: TimeInterval = 3600
    public static let historyLimit = 3600

    struct State {
        var adapters: [OpenedAdapter] = []
        var syncs: [SyncSample] = []
        var pending: [PendingSample] = []
        var health: [String: AdapterHealth] = [:]
        var inProgress: SyncInProgress?
        var completedSyncs = 0
        var lastReport: SyncReport?
        /// Why the service has not opened its stores yet, while it keeps trying.
        var waitingFor: String?
        /// Callers of ``waitForSync(after:)``, by id: each waits for the count of finished syncs
        /// to pass its number.
        var syncWaiters: [Int: (after: Int, continuation: CheckedContinuation<SyncReport?, any Error>)] = [:]
        var nextWaiterID = 0
    }

    private let state = Mutex(State())
    /// Failures in a row after which `/readyz` reports the gateway as not ready.
    public let failuresBeforeNotReady = 3

    /// When the service started (when its monitor was made).
    public let serviceStartedAt = Date()

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
            let now = Date()
            if let started = state.inProgress {
                let adapters = report?.adapters ?? []
                var problems: [String] = adapters.compactMap { adapter in
                    switch adapter.outcome {
                    case .synced: nil
                    case .paused(let reason): "\(adapter.adapter) paused: \(reason)"
                    case .failed(let code, let message): "\(adapter.adapter) failed: \(adapter.failureCode ?? code.rawValue): \(message)"
                    }
                }
                if let error { problems.append("the sync could not start: \(error)") }
                state.syncs.append(
                    SyncSample(
                        startedAt: started.startedAt, finishedAt: now, reasons: started.reasons,
                        downloaded: adapters.reduce(0) { $0 + $1.downloaded + $1.deletedLocally },
                        uploaded: adapters.reduce(0) { $0 + $1.uploaded + $1.deletedRemotely },
                        conflicts: adapters.reduce(0) { $0 + $1.conflictCount }, failed: adapters.reduce(0) { $0 + $1.failedRecords },
                        problems: problems))
                Self.trim(&state.syncs, now: now, date: \.finishedAt)
            }
            state.inProgress = nil
            state.completedSyncs += 1
            state.lastReport = report
            for adapter in report?.adapters ?? [] {
                var health = state.health[adapter.adapter] ?? AdapterHealth()
                // A pass that never began (the cloud unreachable before it) reports no batch size.
                if adapter.batchSize > 0 { health.batchSize = adapter.batchSize }
                switch adapter.outcome {
                case .synced:
                    health.lastSuccessAt = Date()
                    health.consecutiveFailures = 0
                    health.lastError = nil
                    health.lastErrorCode = nil
                case .paused(let reason):
                    health.consecutiveFailures += 1
                    health.lastError = "paused: \(reason)"
                case .failed(let code, let message):
                    health.consecutiveFailures += 1
                    health.lastError = "\(adapter.failureCode ?? code.rawValue): \(message)"
                    health.lastErrorCode = adapter.failureCode ?? code.rawValue
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
        let satisfied = state.withLock { state -> [CheckedContinuation<SyncReport?, any Error>] in
            let done = state.completedSyncs
            let due = state.syncWaiters.filter { $0.value.after < done }
            for id in due.keys { state.syncWaiters[id] = nil }
            return due.values.map(\.continuation)
        }
        satisfied.forEach { $0.resume(returning: report) }
    }

    /// Records the pending changes of all adapters together, read after a sync.
    func pendingChanges(_ count: Int, at date: Date = Date()) {
        state.withLock { state in
            state.pending.append(PendingSample(at: date, pending: count))
            Self.trim(&state.pending, now: date, date: \.at)
        }
    }

    private static func trim<Sample>(_ samples: inout [Sample], now: Date, date: KeyPath<Sample, Date>) {
        let horizon = now.addingTimeInterval(-historyWindow)
        if let keep = samples.firstIndex(where: { $0[keyPath: date] >= horizon }) {
            samples.removeFirst(keep)
        } else {
            samples.removeAll()
        }
        if samples.count > historyLimit { samples.removeFirst(samples.count - historyLimit) }
    }

    /// The syncs of the last hour, oldest first.
    public var recentSyncs: [SyncSample] { state.withLock { $0.syncs } }

    /// Pending changes after each sync of the last hour, oldest first.
    public var recentPending: [PendingSample] { state.withLock { $0.pending } }

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

    /// Waits until the count of finished syncs passes `completed`, and returns the report of the
    /// sync that passed it; throws `CancellationError` when the waiting task is cancelled.
    func waitForSync(after completed: Int) async throws -> SyncReport? {
        let id = state.withLock { state in
            state.nextWaiterID += 1
            return state.nextWaiterID
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<SyncReport?, any Error>) in
                let ready = state.withLock { state -> Result<SyncReport?, any Error>? in
                    if Task.isCancelled { return .failure(CancellationError()) }
                    if state.completedSyncs > completed { return .success(state.lastReport) }
                    state.syncWaiters[id] = (completed, continuation)
                    return nil
                }
                if let ready { continuation.resume(with: ready) }
            }
        } onCancel: {
            state.withLock { $0.syncWaiters.removeValue(forKey: id) }?.continuation.resume(throwing: CancellationError())
        }
    }
}
