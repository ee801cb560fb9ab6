/// Keeps model adapters in sync with a cloud database: for each adapter, make sure its zone
/// exists, download and merge what changed in the cloud, then upload what changed locally
/// (DESIGN §6).
///
/// One sync runs at a time: a second call while one runs fails with
/// ``SyncError/Code/alreadySyncing`` (the service scheduler coalesces instead). Adapters run in
/// order, or several at once with ``SyncConfiguration/parallelism``; one adapter's failure does
/// not stop the others, except a rejected login, which stops the adapters not started yet.
public actor Synchronizer {
    /// The record store every adapter syncs with.
    public let cloud: any CloudDatabase
    /// The adapters, each bound to its zone.
    public let adapters: [SyncedAdapter]
    /// What every pass uses: batch sizes, parallelism, retries, the stall guard.
    public let configuration: SyncConfiguration
    let environment: SyncEnvironment
    let observer: @Sendable (SyncEvent) -> Void
    private var isSyncing = false
    /// Passes the stall guard gave up on while they still ran; their adapters sit out until they end.
    private let abandoned = AbandonedPasses()

    /// - Parameters:
    ///   - cloud: the record store every adapter syncs with.
    ///   - adapters: the adapters, each with the zone it is bound to.
    ///   - configuration: batch sizes, parallelism, retries and the stall guard.
    ///   - environment: the clock and sleeping, replaced by tests; `.live` otherwise.
    ///   - observer: receives progress events; it is called on the syncing task and must not block.
    public init(
        cloud: any CloudDatabase, adapters: [SyncedAdapter], configuration: SyncConfiguration = SyncConfiguration(),
        environment: SyncEnvironment = .live, observer: @escaping @Sendable (SyncEvent) -> Void = { _ in }
    ) {
        self.cloud = cloud
        self.adapters = adapters
        self.configuration = configuration
        self.environment = environment
        self.observer = observer
    }

    /// Syncs every adapter, or only those named.
    /// - Throws: ``SyncError/Code/alreadySyncing`` while another sync runs;
    ///   ``SyncError/Code/unknownAdapter`` for a name no adapter has. Every other failure is in the
    ///   report, per adapter.
    public func sync(adapters names: Set<String>? = nil) async throws -> SyncReport {
        guard !isSyncing else {
            throw SyncError(.alreadySyncing, "a sync of this gateway is already running; wait for it to finish")
        }
        if let names {
            let unknown = names.subtracting(adapters.map(\.adapter.name))
            guard unknown.isEmpty else {
                throw SyncError(
                    .unknownAdapter,
                    "no adapter named \(unknown.sorted().joined(separator: ", ")); the adapters are \(adapters.map(\.adapter.name).joined(separator: ", "))")
            }
        }
        isSyncing = true
        defer { isSyncing = false }
        let selected = adapters.filter { names?.contains($0.adapter.name) ?? true }
        let accountFailure = await Self.checkAccount(
            cloud, retrier: CloudRetrier(policy: configuration.retry, environment: environment, observer: observer, adapter: "account check"))
        if configuration.parallelism > 1, selected.count > 1 {
            return SyncReport(adapters: await syncInParallel(selected, stoppedBy: accountFailure))
        }
        return SyncReport(adapters: await syncInOrder(selected, stoppedBy: accountFailure))
    }

    /// How many times one sync may go back to adapters whose zone siblings uploaded after their
    /// pass began; bounded so that programs writing without pause cannot keep a sync going.
    static let maximumFollowUpRounds = 2

    /// Runs the adapters one after another, then runs again, up to ``maximumFollowUpRounds``
    /// times, each adapter whose zone got uploads from a sibling after its pass began, or whose
    /// saves the cloud completed with fields its store lacks (a partial save keeps them), so that
    /// one sync leaves every adapter of a zone holding what the zone holds.
    private func syncInOrder(_ selected: [SyncedAdapter], stoppedBy accountFailure: SyncError?) async -> [AdapterSyncReport] {
        var reports = [AdapterSyncReport?](repeating: nil, count: selected.count)
        var stop = accountFailure
        var ledger = ZoneUploadLedger(zones: selected.map(\.adapter.zoneID))
        var round = Array(selected.indices)
        for _ in 0...Self.maximumFollowUpRounds {
            for index in round {
                let synced = selected[index]
                if stop == nil, Task.isCancelled { stop = Self.cancelledBeforeTurn }
                if let stop {
                    // A stopped follow-up leaves the adapter's report of its earlier pass as it is.
                    guard reports[index] == nil else { continue }
                    reports[index] = Self.stoppedReport(synced, by: stop)
                } else {
                    observer(.adapterStarted(adapter: synced.adapter.name))
                    ledger.passStarts(index)
                    let report = await Self.guardedPass(
                        synced, abandoned: abandoned, cloud: cloud, configuration: configuration, environment: environment, observer: observer)
                    ledger.passEnded(index, uploaded: report.uploaded + report.deletedRemotely, completed: report.savesTheCloudCompleted)
                    reports[index] = reports[index].map { $0.adding(report) } ?? report
                    if report.error?.code == .notAuthenticated { stop = report.error }
                }
                observer(.adapterFinished(reports[index]!))
            }
            round = ledger.behind().filter { reports[$0]?.outcome == .synced }
            if stop != nil || round.isEmpty { break }
        }
        return reports.map { $0! }
    }

    /// Runs up to `configuration.parallelism` adapters at once, then again, up to
    /// ``maximumFollowUpRounds`` times, those whose last pass began before a sibling on their zone
    /// finished an uploading pass (a sibling that started only after they were done, for want of
    /// a free slot, is not followed page by page); reports keep the adapters' order.
    private func syncInParallel(_ selected: [SyncedAdapter], stoppedBy accountFailure: SyncError?) async -> [AdapterSyncReport] {
        var reports = [AdapterSyncReport?](repeating: nil, count: selected.count)
        var round = Array(selected.indices)
        for _ in 0...Self.maximumFollowUpRounds {
            let (roundReports, behind, stopped) = await syncRoundInParallel(round.map { selected[$0] }, stoppedBy: accountFailure)
            for (position, report) in zip(round, roundReports) {
                reports[position] = reports[position].map { $0.adding(report) } ?? report
            }
            round = zip(round, behind).filter { $0.1 && reports[$0.0]?.outcome == .synced }.map(\.0)
            if stopped || Task.isCancelled || round.isEmpty { break }
        }
        return reports.map { $0! }
    }

    /// One round of a parallel sync over `selected`. Returns the reports, which adapters a sibling
    /// on their zone uploaded to after their last pass began, and whether the sync must stop.
    private func syncRoundInParallel(
        _ selected: [SyncedAdapter], stoppedBy accountFailure: SyncError?
    ) async -> ([AdapterSyncReport], [Bool], Bool) {
        let activity = ZoneActivity(adapters: selected.map { ($0.adapter.name, $0.adapter.zoneID) })
        let (cloud, configuration, environment, observer, abandoned) = (cloud, configuration, environment, observer, abandoned)
        return await withTaskGroup(of: (Int, AdapterSyncReport, Int).self) { group in
            var reports = selected.map { AdapterSyncReport(adapter: $0.adapter.name) }
            // What each adapter's last pass had seen of its siblings' uploads when it began.
            var seen = [Int?](repeating: nil, count: selected.count)
            var stop = accountFailure
            var next = 0
            var running = 0
            while next < selected.count || running > 0 {
                while running < configuration.parallelism, next < selected.count {
                    let index = next
                    next += 1
                    if stop == nil, Task.isCancelled { stop = Self.cancelledBeforeTurn }
                    if let stop {
                        reports[index] = Self.stoppedReport(selected[index], by: stop)
                        activity.finishedPass(selected[index].adapter.name)
                        observer(.adapterFinished(reports[index]))
                        continue
                    }
                    running += 1
                    group.addTask {
                        let (report, seen) = await Self.syncFollowingSiblings(
                            selected[index], activity: activity, abandoned: abandoned, cloud: cloud, configuration: configuration, environment: environment,
                            observer: observer)
                        return (index, report, seen)
                    }
                }
                guard let (index, report, lastSeen) = await group.next() else { break }
                seen[index] = lastSeen
                running -= 1
                // A rejected login stops the adapters not started yet; those running fail on their own.
                if stop == nil, report.error?.code == .notAuthenticated { stop = report.error }
                observer(.adapterFinished(report))
                reports[index] = report
            }
            let behind = selected.indices.map { index in
                reports[index].savesTheCloudCompleted > 0
                    || (seen[index].map { activity.siblingUploads(of: selected[index].adapter.name) > $0 } ?? false)
            }
            return (reports, behind, stop != nil)
        }
    }

    /// Syncs one adapter of a parallel sync, then again each time a sibling on its zone has
    /// uploaded a page's worth, and once more after the sibling is done (see ``ZoneActivity``).
    /// The report adds up the passes.
    private nonisolated static func syncFollowingSiblings(
        _ synced: SyncedAdapter, activity: ZoneActivity, abandoned: AbandonedPasses, cloud: any CloudDatabase,
        configuration: SyncConfiguration,
        environment: SyncEnvironment, observer: @escaping @Sendable (SyncEvent) -> Void
    ) async -> (AdapterSyncReport, seen: Int) {
        let name = synced.adapter.name
        observer(.adapterStarted(adapter: name))
        let passObserver: @Sendable (SyncEvent) -> Void = { event in
            if case .didUpload(_, let saved, let deleted, _) = event, saved + deleted > 0 { activity.uploaded(saved + deleted, by: name) }
            observer(event)
        }
        var total = AdapterSyncReport(adapter: name)
        var pass = 0
        // Follow-up passes that download a sibling's pages are not limited (the sibling's passes
        // are); those that upload too mean programs write on both sides, and two stores answering
        // each other's uploads would never end: at most as many as an ordered sync makes.
        var uploadingFollowUps = 0
        while true {
            let seen = activity.siblingUploads(of: name)
            activity.startedPass(name)
            let report = await guardedPass(
                synced, abandoned: abandoned, cloud: cloud, configuration: configuration, environment: environment, observer: passObserver)
            activity.finishedPass(name)
            total = pass == 0 ? report : total.adding(report)
            if pass > 0, report.uploaded + report.deletedRemotely > 0 { uploadingFollowUps += 1 }
            pass += 1
            // A page's worth at a time: a pass per upload batch would cost the store a transaction
            // or more per batch.
            guard report.outcome == .synced, uploadingFollowUps < maximumFollowUpRounds,
                await activity.waitForSiblings(of: name, after: seen, enough: configuration.fetchLimit)
            else { return (total, seen) }
        }
    }

    /// One pass of one adapter under the stall guard. An adapter whose earlier pass was given up
    /// while still running fails at once, so two passes never write its store together.
    private nonisolated static func guardedPass(
        _ synced: SyncedAdapter, abandoned: AbandonedPasses, cloud: any CloudDatabase, configuration: SyncConfiguration,
        environment: SyncEnvironment, observer: @escaping @Sendable (SyncEvent) -> Void
    ) async -> AdapterSyncReport {
        let name = synced.adapter.name
        if let blocked = abandoned.blocking(name) { return stoppedReport(synced, by: blocked) }
        let activity = SyncActivity(clock: environment.clock)
        let guarding = StallGuard(
            adapter: name, activity: activity, stallTimeout: configuration.stallTimeout, stopTimeout: configuration.stopTimeout,
            clock: environment.clock)
        let (report, left) = await guarding.run {
            var run = AdapterSyncRun(
                cloud: cloud, synced: synced, configuration: configuration, environment: environment, observer: observer, activity: activity)
            return await run.run()
        }
        if let left { abandoned.leave(left, of: name, error: report.error) }
        return report
    }

    private static var cancelledBeforeTurn: SyncError {
        SyncError(.interrupted, "the sync was stopped before this adapter's turn; its changes stay pending")
    }

    private static func stoppedReport(_ synced: SyncedAdapter, by stop: SyncError) -> AdapterSyncReport {
        var report = AdapterSyncReport(adapter: synced.adapter.name, outcome: .failed(code: stop.code, message: stop.message))
        report.error = stop
        return report
    }

    /// The cloud's account check, which CloudKit requires before every sync; its failure fails
    /// every adapter of this sync, with nothing sent or fetched.
    private nonisolated static func checkAccount(_ cloud: any CloudDatabase, retrier: CloudRetrier) async -> SyncError? {
        do {
            try await retrier.run("checking the account") { try await cloud.checkAccount() }
            return nil
        } catch let error as SyncError {
            return error
        } catch let error as CloudError where error.code == .notAuthenticated {
            return SyncError(
                .notAuthenticated, "the cloud's account check failed (\(error.message)); sign in again or fix the credentials in the cloud section",
                underlying: error)
        } catch is CancellationError {
            return SyncError(.interrupted, "the sync was stopped during the account check; changes stay pending")
        } catch let error as CloudError {
            return SyncError(.cloudFailed, "the cloud's account check failed: \(error.code): \(error.message)", underlying: error)
        } catch {
            return SyncError(.cloudFailed, "the cloud's account check failed: \(error)", underlying: error)
        }
    }
}
