import Foundation

/// What every stage of one adapter's pass shares: the cloud, the store, the settings, and the
/// calls to them, each registered with the stall guard under a label and failing with an error
/// that names the adapter. A value, so child tasks of the pipelines can use it.
struct SyncContext: Sendable {
    let cloud: any CloudDatabase
    let adapter: any ModelAdapter
    let options: AdapterSyncOptions
    let configuration: SyncConfiguration
    let environment: SyncEnvironment
    let observer: @Sendable (SyncEvent) -> Void
    /// What the pass waits on, for the stall guard.
    let activity: SyncActivity
    /// This replica's writer stamp, `<deviceID>:<adapter>`: the gateway's device id and the
    /// adapter, since several adapters of one gateway may share a zone. The device field of an
    /// uploaded record holds it followed by `@<version>` (``writerStampField(_:version:)``).
    let writerStamp: String

    init(
        cloud: any CloudDatabase, synced: SyncedAdapter, configuration: SyncConfiguration, environment: SyncEnvironment,
        observer: @escaping @Sendable (SyncEvent) -> Void, activity: SyncActivity
    ) {
        self.cloud = cloud
        self.adapter = synced.adapter
        self.options = synced.options
        self.configuration = configuration
        self.environment = environment
        self.observer = observer
        self.activity = activity
        self.writerStamp = "\(configuration.deviceID):\(synced.adapter.name)"
    }

    var name: String { adapter.name }
    var zone: ZoneID { adapter.zoneID }
    /// Whether the zone is this gateway's user's own, not another user's shared with it.
    var ownsZone: Bool { zone.ownerName == ZoneID.defaultOwnerName }

    /// Runs a cloud call, retrying transient failures as the retry policy says.
    func retrying<T>(_ what: String, _ body: () async throws -> T) async throws -> T {
        try await retrier.run(what, body)
    }

    var retrier: CloudRetrier {
        CloudRetrier(policy: configuration.retry, environment: environment, observer: observer, adapter: name, activity: activity)
    }

    /// Runs a store call, naming the adapter in its failure; `what` says what it does.
    func store<T>(_ what: String, _ body: () async throws -> T) async throws -> T {
        do {
            return try await activity.during("the store: \(what)", body)
        } catch let error as SyncError {
            throw error
        } catch {
            // The store's message may already name the adapter; the report and the log do too.
            let described = "\(error)"
            let prefix = "adapter \(name): "
            let detail = described.hasPrefix(prefix) ? String(described.dropFirst(prefix.count)) : described
            // A store that could not be opened says so itself ("cannot open its store: …"), and a
            // record processor's failure is not the store's.
            let code = (error as? any FailureCoded)?.failureCode
            let lead = code == "storeUnavailable" ? "" : code == "processorFailed" ? "a record processor failed: " : "the store failed: "
            throw SyncError(.adapterFailed, lead + detail, adapter: name, underlying: error)
        }
    }

    /// Stops between pages and batches when the pass's task is cancelled (the service shutting
    /// down, or the stall guard): what was done is committed, the rest stays pending.
    func stopIfCancelled() throws {
        if Task.isCancelled {
            throw SyncError(.interrupted, "the sync was stopped between batches; what was not sent stays pending", adapter: name)
        }
    }

    /// Any error of a pass as the report gives it.
    func syncError(_ error: any Error) -> SyncError {
        switch error {
        case is CancellationError:
            return SyncError(.interrupted, "the sync was stopped; what was not sent stays pending", adapter: name, underlying: error)
        case var error as SyncError:
            error.adapter = error.adapter ?? name
            return error
        case let error as CloudError:
            return SyncError(.cloudFailed, "the cloud failed: \(error.code): \(error.message)", adapter: name, underlying: error)
        default:
            return SyncError(.adapterFailed, "\(error)", adapter: name, underlying: error)
        }
    }
}

/// Retries transient cloud failures; a value, so a child task can use it.
struct CloudRetrier: Sendable {
    let policy: RetryPolicy
    let environment: SyncEnvironment
    let observer: @Sendable (SyncEvent) -> Void
    let adapter: String
    var activity: SyncActivity?

    func run<T>(_ what: String, _ body: () async throws -> T) async throws -> T {
        var attempt = 0
        while true {
            do {
                if let activity { return try await activity.during("the cloud: \(what)", body) }
                return try await body()
            } catch let error as CloudError where error.code.isTransient {
                attempt += 1
                guard attempt < policy.maxAttempts else {
                    throw SyncError(
                        .retriesExhausted,
                        "the cloud kept failing (\(error.code)) after \(attempt) attempts; everything unsent stays pending for the next sync",
                        adapter: adapter, underlying: error)
                }
                let delay = error.retryAfter ?? policy.backoff(afterAttempt: attempt, jitter: environment.jitter())
                observer(.retrying(adapter: adapter, error: error, attempt: attempt, delay: delay))
                activity?.expectDelay(delay)
                try await environment.sleep(delay)
            } catch let error as CloudError where error.code == .notAuthenticated {
                throw SyncError(
                    .notAuthenticated,
                    "the cloud rejected the gateway's credentials (\(error.message)); check the cloud section of the configuration and sign in again",
                    adapter: adapter, underlying: error)
            }
        }
    }
}
