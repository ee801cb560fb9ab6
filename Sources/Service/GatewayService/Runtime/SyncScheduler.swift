import Foundation
import GatewayConfig
import GatewayCore
import Logging
import ServiceLifecycle
import Synchronization
import UnixSignals

/// The service behind `gateway run`: syncs every adapter at start, then on `sync_interval`, when
/// an adapter's store changes (debounced), when the cloud signals a change in a zone, and on
/// SIGUSR1. Requests that arrive during a sync are coalesced into one more sync. An adapter whose
/// sync failed is left out of the next syncs for a while (``AdapterBackoff``: 1 s, doubling up to
/// `retry.max_delay`), so it neither blocks nor floods the others, and is synced again as soon as
/// its wait ends (a `retry` sync), whatever asked for syncs meanwhile.
///
/// It syncs the adapters of ``session``, a ``SyncSessionService`` that must run in the same
/// service group, before this one: that service holds the state folder's process lock (so
/// `gateway sync` on the same config exits 75 meanwhile), opens the cloud and the stores, and
/// ends them after this service has stopped. On graceful shutdown (SIGTERM, SIGINT) no new sync
/// starts and the current one stops after its page or batch, committed; then `run()` returns.
public struct SyncScheduler: Service {
    public let configuration: GatewayConfiguration
    public let logger: Logger
    /// What the control server reports.
    public let monitor: GatewayMonitor
    /// Where sync metrics go.
    public let metrics: GatewayMetrics
    /// How long a store's change signal waits for more changes before it asks for a sync
    /// (`gateway.debounce` unless given).
    public var debounce: Duration
    private let requests: SyncRequests
    /// Adapters whose last syncs failed wait before they are tried again.
    let backoff: AdapterBackoff
    /// The clock of the interval, the debounce, the back-off and the cloud's retries (a test's
    /// own, to step it without waiting).
    public let clock: any SyncClock
    /// The service that opens and ends what this one syncs; run it first in the same group.
    public let session: SyncSessionService

    /// - Parameter session: the service whose session this one syncs; by default one over the
    ///   same configuration, monitor and clock.
    public init(
        configuration: GatewayConfiguration, logger: Logger, monitor: GatewayMonitor = GatewayMonitor(),
        metrics: GatewayMetrics = GatewayMetrics(), debounce: Duration? = nil, clock: any SyncClock = LiveSyncClock(),
        session: SyncSessionService? = nil
    ) {
        self.configuration = configuration
        self.logger = logger
        self.monitor = monitor
        self.metrics = metrics
        self.clock = clock
        self.session = session ?? SyncSessionService(configuration: configuration, logger: logger, monitor: monitor, clock: clock)
        self.debounce = debounce ?? configuration.settings.debounce.duration
        self.requests = SyncRequests()
        self.backoff = AdapterBackoff(baseDelay: .seconds(1), maxDelay: configuration.settings.retry.maxDelay.duration)
    }

    /// Why a sync was asked for.
    public enum Trigger: String, Sendable {
        case start, interval, store, cloud, signal, http
        /// An adapter's back-off after a failure ended.
        case retry
    }

    /// Asks for a sync; requests made during a sync are coalesced into one more.
    public func requestSync(_ trigger: Trigger) {
        metrics.recordRequest(trigger: trigger.rawValue)
        requests.request(trigger)
    }

    /// Collapses sync requests: the wake-up stream buffers one element, and the reasons gathered
    /// meanwhile are taken together by the next sync.
    final class SyncRequests: Sendable {
        let wakeUps: AsyncStream<Void>
        private let continuation: AsyncStream<Void>.Continuation
        private let requested = Mutex<Set<Trigger>>([])
        private let syncCount = Mutex(0)
        private let followUps = Mutex(0)

        /// Whether a follow-up sync may be asked for, given whether one is needed: no more than
        /// three in a row.
        func allowFollowUp(_ needed: Bool) -> Bool {
            followUps.withLock { count in
                guard needed, count < 3 else {
                    count = 0
                    return false
                }
                count += 1
                return true
            }
        }

        /// The next sync's number, which its log lines carry as `sync`.
        func nextSyncID() -> Int {
            syncCount.withLock { count in
                count += 1
                return count
            }
        }

        init() {
            (wakeUps, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        }

        func request(_ trigger: Trigger) {
            requested.withLock { _ = $0.insert(trigger) }
            continuation.yield(())
        }

        func take() -> Set<Trigger> {
            requested.withLock { reasons in
                defer { reasons.removeAll() }
                return reasons
            }
        }
    }

    public func run() async throws {
        let sessionService = session
        guard let session = await cancelWhenGracefulShutdown({ await sessionService.opened() }) else { return }
        _ = await session.shared?.refresh()
        var adapters = await session.allAdapters()
        let (cloud, deviceID) = (session.cloud, session.deviceID)
        let conflicts = ConflictLog(logger: logger)
        var synchronizer = session.synchronizer(configuration, adapters: adapters, observer: conflicts.observe)
        logger.info(
            "gateway running", metadata: ["adapters": "\(adapters.map(\.name))", "device": "\(deviceID)", "pid": "\(getpid())"])

        monitor.started(with: adapters)
        // Every ask is counted in `gateway_sync_requests_total`, as `requestSync` counts it.
        let request: @Sendable (Trigger) -> Void = { [requests, metrics] trigger in
            metrics.recordRequest(trigger: trigger.rawValue)
            requests.request(trigger)
        }
        request(.start)
        let clock = clock
        await withThrowingTaskGroup(of: Void.self) { group in
            let interval = configuration.settings.syncInterval.duration
            group.addTask {
                while !Task.isCancelled {
                    try await clock.sleep(for: interval)
                    request(.interval)
                }
            }
            // Signals of a shared zone's adapter stop asking once it is retired.
            let watch: @Sendable ([OpenedAdapter], Set<ZoneID>) -> [@Sendable () async throws -> Void] = { [debounce, shared = session.shared] opened, zones in
                let isCurrent: @Sendable (String) async -> Bool = { name in await shared?.isCurrent(name) ?? true }
                return opened.map { opened -> @Sendable () async throws -> Void in
                    {
                        for await _ in opened.adapter.changeSignals() {
                            guard await isCurrent(opened.name) else { return }
                            try await clock.sleep(for: debounce)
                            request(.store)
                        }
                    }
                } + zones.map { zone -> @Sendable () async throws -> Void in { for await _ in cloud.changeSignals(in: zone) { request(.cloud) } } }
            }
            for task in watch(adapters, Set(adapters.map(\.adapter.zoneID))) { group.addTask(operation: task) }
            group.addTask {
                for await _ in await UnixSignalsSequence(trapping: .sigusr1) { request(.signal) }
            }

            var retryScheduled: ContinuousClock.Instant?
            for await _ in requests.wakeUps.cancelOnGracefulShutdown() {
                // On shutdown the sync stops after its current page or batch, committed.
                let reasons = requests.take()
                // A wake-up whose reason the previous sync already took (its request landed
                // between that sync's take and its own wake-up) asks for nothing new.
                if reasons.isEmpty { continue }
                // Zones shared or unshared since the last sync gain or lose their adapters now.
                if let shared = session.shared {
                    let change = await shared.refresh()
                    if !change.isEmpty {
                        let watched = Set(adapters.map(\.adapter.zoneID))
                        adapters = await session.allAdapters()
                        synchronizer = session.synchronizer(configuration, adapters: adapters, observer: conflicts.observe)
                        monitor.started(with: adapters)
                        let newZones = Set(change.added.map(\.adapter.zoneID)).subtracting(watched)
                        for task in watch(change.added, newZones) { group.addTask(operation: task) }
                    }
                }
                let (current, syncing) = (adapters, synchronizer)
                await cancelWhenGracefulShutdown { await sync(syncing, adapters: current, reasons: reasons) }
                if Task.isShuttingDownGracefully { break }
                // An adapter that is backing off is synced when its wait ends: the requests that
                // arrived meanwhile (store and cloud signals) left it out.
                if let retryAt = backoff.nextRetry(), retryAt != retryScheduled {
                    retryScheduled = retryAt
                    group.addTask {
                        try await clock.sleep(for: retryAt - clock.now)
                        request(.retry)
                    }
                }
            }
            group.cancelAll()
        }
        logger.info("gateway stopped")
    }

    /// Asks for one more sync when a synced adapter still has changes it can send: they were
    /// made during the sync, and a store whose signals fire on the synced-to-changed transition
    /// would not signal them, since it never looked synced. At most three follow-ups in a row,
    /// so a change that can never leave does not keep the service busy. `pending` and `failing`
    /// are what each store held after the sync (absent or `nil`: not read).
    private func requestFollowUpIfNeeded(after report: SyncReport, pending pendingByAdapter: [String: Int?], failing: [String: Int], logger: Logger) {
        var unsent = false
        for result in report.adapters where result.outcome == .synced {
            let pending = (pendingByAdapter[result.adapter] ?? nil) ?? 0
            guard pending > 0 else { continue }
            // Records a resolver could not settle stay pending until the next sync asks it again,
            // and an edit of a record whose download the store refuses waits for that download.
            let failed = (failing[result.adapter] ?? pending) + result.unresolvedFailures.count + result.refusedAtEnd.count
            if pending > failed {
                unsent = true
                break
            }
        }
        if requests.allowFollowUp(unsent) {
            logger.debug("changes arrived during the sync; syncing again")
            requests.request(.store)
        }
    }

    /// An adapter's health after its sync, as `/status` and the page compute it
    /// (``AdapterStatus/health(consecutiveFailures:lastFailureCode:)``), from the sync's report,
    /// what its store still holds (`nil`: the store cannot be read) and its recent history.
    private func health(after report: AdapterSyncReport, pending: Int?, failing: Int, adapters: [OpenedAdapter]) -> AdapterHealthState {
        guard let configured = adapters.first(where: { $0.name == report.adapter })?.configuration else { return .failing }
        let history = monitor.health[report.adapter] ?? GatewayMonitor.AdapterHealth()
        var status: AdapterStatus
        if let pending {
            var pausedReason: String?
            if case .paused(let reason) = report.outcome { pausedReason = "\(reason)" }
            status = AdapterStatus(
                name: configured.name, kind: configured.settings.kind.value, zone: configured.settings.zoneID.zoneName, hasChanges: pending > 0,
                pendingChanges: pending, failedRecords: failing, batchSize: report.batchSize,
                hasSynced: report.outcome == .synced || history.lastSuccessAt != nil, pausedReason: pausedReason)
        } else {
            status = AdapterStatus(unreadable: configured, error: "its store cannot be read")
        }
        return status.health(consecutiveFailures: history.consecutiveFailures, lastFailureCode: history.lastErrorCode)
    }

    private func sync(_ synchronizer: Synchronizer, adapters: [OpenedAdapter], reasons: Set<Trigger>) async {
        let started = clock.now
        let all = adapters.map(\.name)
        // Adapters that failed recently wait their turn; the others sync now.
        let names = backoff.eligible(all, at: started)
        guard !names.isEmpty else {
            logger.debug("every adapter is backing off after failures", metadata: ["reasons": "\(reasons.map(\.rawValue).sorted())"])
            return
        }
        monitor.syncStarted(reasons: reasons.map(\.rawValue).sorted())
        var logger = logger
        logger[metadataKey: "sync"] = "\(requests.nextSyncID())"
        do {
            let report = try await (names.count == all.count ? synchronizer.sync() : synchronizer.sync(adapters: Set(names)))
            backoff.record(report, at: clock.now)
            KeyFingerprints.record(configuration, after: report)
            // What each store still holds after the sync; `nil` where the store cannot be read
            // (a read cut short by shutdown says nothing about the store: left out).
            var pendingByAdapter: [String: Int?] = [:]
            // Records that stay failed, marked in this sync or before (as `/status` counts them).
            var failingByAdapter: [String: Int] = [:]
            for opened in adapters {
                do {
                    pendingByAdapter[opened.name] = try await opened.adapter.pendingChangeCount()
                    failingByAdapter[opened.name] = try await opened.adapter.failedRecords().count
                } catch {
                    let cutShort = error is CancellationError || Task.isCancelled || Task.isShuttingDownGracefully
                    if !cutShort { pendingByAdapter[opened.name] = .some(nil) }
                }
            }
            monitor.pendingChanges(pendingByAdapter.values.reduce(0) { $0 + ($1 ?? 0) })
            requestFollowUpIfNeeded(after: report, pending: pendingByAdapter, failing: failingByAdapter, logger: logger)
            // Recorded once the follow-up is decided: a change made after a watcher saw this sync
            // finish is then the store's to signal (and debounce), never taken for one made during it.
            monitor.syncFinished(report, error: nil)
            metrics.record(
                report, duration: clock.now - started,
                policies: Dictionary(
                    adapters.map { ($0.name, configuration.syncOptions(for: $0.configuration).merge.policy) },
                    uniquingKeysWith: { first, _ in first }))
            func failing(_ adapter: AdapterSyncReport) -> Int {
                max(adapter.markedFailedRecords, (failingByAdapter[adapter.adapter] ?? 0) + adapter.refusedAtEnd.count)
            }
            for adapter in report.adapters {
                var metadata: Logger.Metadata = [
                    "adapter": "\(adapter.adapter)", "downloaded": "\(adapter.downloaded + adapter.deletedLocally)",
                    "uploaded": "\(adapter.uploaded + adapter.deletedRemotely)", "conflicts": "\(adapter.conflictCount)",
                    "failed": "\(failing(adapter))",
                ]
                if !adapter.unresolvedFailures.isEmpty { metadata["unresolved"] = "\(adapter.unresolvedFailures.count)" }
                if let pending = pendingByAdapter[adapter.adapter] {
                    metadata["health"] = "\(health(after: adapter, pending: pending, failing: failing(adapter), adapters: adapters))"
                }
                if adapter.matched > 0 { metadata["matched"] = "\(adapter.matched)" }
                if !adapter.refusedAtEnd.isEmpty, adapter.outcome == .synced {
                    metadata["refused_downloads"] = "\(adapter.refusedAtEnd.count)"
                    let first = adapter.refusedAtEnd.map(\.recordID.recordName).sorted().prefix(3).joined(separator: ", ")
                    logger.warning(
                        "the store refuses the cloud's version of \(adapter.refusedAtEnd.count) record(s) (\(first)); it keeps its own, the zone goes on, and every sync tries again: `gateway status --failed` says why",
                        metadata: ["adapter": "\(adapter.adapter)"])
                }
                if let recovery = adapter.zoneRecovery {
                    logger.warning("\(recovery)", metadata: ["adapter": "\(adapter.adapter)"])
                }
                if adapter.refusedEdits > 0 {
                    metadata["refused_edits"] = "\(adapter.refusedEdits)"
                    logger.warning(
                        "a read-only share refused local edits; the owner's versions replaced them and the edits are kept",
                        metadata: ["adapter": "\(adapter.adapter)", "refused_edits": "\(adapter.refusedEdits)", "kept_in": "\(configuration.refusedEditsDirectory)"])
                }
                switch adapter.outcome {
                case .synced:
                    logger.info("adapter synced", metadata: metadata)
                case .paused(let reason):
                    metadata["reason"] = "\(reason)"
                    logger.warning("adapter paused", metadata: metadata)
                case .failed(let code, let message) where code == .interrupted && Task.isShuttingDownGracefully:
                    // Stopping is what the operator asked for: not an error.
                    metadata["code"] = "\(code)"
                    metadata["error"] = "\(message)"
                    logger.notice("adapter sync stopped for shutdown", metadata: metadata)
                case .failed(let code, let message):
                    metadata["code"] = "\(adapter.failureCode ?? code.rawValue)"
                    metadata["error"] = "\(message)"
                    if let retryAt = backoff.retryAt(adapter.adapter) {
                        metadata["retry_in"] = "\(retryAt - clock.now)"
                    }
                    logger.error("adapter failed", metadata: metadata)
                }
            }
            logger.info(
                "sync finished",
                metadata: ["reasons": "\(reasons.map(\.rawValue).sorted())", "duration": "\(clock.now - started)"])
        } catch {
            monitor.syncFinished(nil, error: error)
            logger.error("sync could not start", metadata: ["error": "\(error)"])
        }
    }
}
