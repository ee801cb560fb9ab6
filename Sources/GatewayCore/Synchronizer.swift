/// Keeps model adapters in sync with a cloud database: for each adapter, make sure its zone
/// exists, download and merge what changed in the cloud, then upload what changed locally
/// (DESIGN §6).
///
/// One sync runs at a time: a second call while one runs fails with
/// ``SyncError/Code/alreadySyncing`` (the service scheduler coalesces instead). Adapters run in
/// order; one adapter's failure does not stop the others, except a rejected login, which stops
/// the sync.
public actor Synchronizer {
    public let cloud: any CloudDatabase
    public let adapters: [SyncedAdapter]
    public let configuration: SyncConfiguration
    let environment: SyncEnvironment
    let observer: @Sendable (SyncEvent) -> Void
    private var isSyncing = false

    /// - Parameters:
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
        var reports: [AdapterSyncReport] = []
        var stop = await Self.checkAccount(
            cloud, retrier: CloudRetrier(policy: configuration.retry, environment: environment, observer: observer, adapter: "account check"))
        for synced in adapters where names?.contains(synced.adapter.name) ?? true {
            var report: AdapterSyncReport
            if stop == nil, Task.isCancelled {
                stop = SyncError(.interrupted, "the sync was stopped before this adapter's turn; its changes stay pending")
            }
            if let stop {
                report = AdapterSyncReport(adapter: synced.adapter.name, outcome: .failed(code: stop.code, message: stop.message))
                report.error = stop
            } else {
                var run = AdapterSyncRun(
                    cloud: cloud, synced: synced, configuration: configuration, environment: environment, observer: observer)
                report = await run.run()
                if report.error?.code == .notAuthenticated { stop = report.error }
            }
            observer(.adapterFinished(report))
            reports.append(report)
        }
        return SyncReport(adapters: reports)
    }

    /// The cloud's account check, which CloudKit requires before every sync; its failure fails
    /// every adapter of this sync, with nothing sent or fetched.
    private nonisolated static func checkAccount(_ cloud: any CloudDatabase, retrier: CloudRetrier) async -> SyncError? {
        do {
            try await retrier.run { try await cloud.checkAccount() }
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
