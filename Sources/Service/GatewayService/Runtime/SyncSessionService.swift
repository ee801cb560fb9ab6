import Foundation
import GatewayConfig
import GatewayCore
import Logging
import ServiceLifecycle
import Synchronization

/// The service that owns what `gateway run` holds open: the state folder's lock, the cloud and
/// its lock, the adapters' stores (files, connections, plugin processes) and the resolver and
/// processor processes — one ``SyncSession``.
///
/// `run()` opens the session, waiting for a cloud that cannot be reached yet (1 s, doubling up
/// to `retry.max_delay`; a store that cannot be reached fails only its adapter), hands it to
/// whoever waits in ``opened()``, and ends it when the service group shuts down. Put it first
/// in the group: services stop in reverse order, so the scheduler and the control server stop
/// before the session they use is ended. A config that does not match a store, or a held lock,
/// ends the service with that error.
public final class SyncSessionService: Service, Sendable {
    /// The configuration whose session is opened.
    public let configuration: GatewayConfiguration
    /// Where the waits for the cloud are logged.
    public let logger: Logger
    /// Where the wait for the cloud is reported.
    public let monitor: GatewayMonitor
    /// The clock of the waits between attempts to open the cloud.
    public let clock: any SyncClock

    private enum Stage {
        case opening(waiters: [Int: CheckedContinuation<SyncSession?, Never>], next: Int)
        case opened(SyncSession)
        case ended
    }

    private let stage = Mutex(Stage.opening(waiters: [:], next: 0))

    /// A service that opens `configuration`'s session, reporting its wait for the cloud to `monitor`.
    public init(configuration: GatewayConfiguration, logger: Logger, monitor: GatewayMonitor, clock: any SyncClock = LiveSyncClock()) {
        self.configuration = configuration
        self.logger = logger
        self.monitor = monitor
        self.clock = clock
    }

    /// Opens the session, hands it to ``opened()``, and ends it when the group shuts down.
    public func run() async throws {
        let session: SyncSession?
        do {
            session = try await open()
        } catch {
            publish(nil)
            throw error
        }
        guard let session else {
            publish(nil)
            logger.info("gateway stopped before it could open its cloud")
            return
        }
        publish(session)
        // Held until the group shuts down; the services after this one have stopped by then.
        try? await gracefulShutdown()
        stage.withLock { $0 = .ended }
        await session.end()
    }

    /// The session once it is open; `nil` when the service ended without opening one (shutdown
    /// while waiting for the cloud, or a failure), or when the caller is cancelled.
    public func opened() async -> SyncSession? {
        let id: Int? = stage.withLock { stage in
            guard case .opening(let waiters, let next) = stage else { return nil }
            stage = .opening(waiters: waiters, next: next + 1)
            return next
        }
        guard let id else { return stage.withLock { if case .opened(let session) = $0 { session } else { nil } } }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let now: SyncSession?? = stage.withLock { stage in
                    switch stage {
                    case .opening(var waiters, let next):
                        if Task.isCancelled { return .some(nil) }
                        waiters[id] = continuation
                        stage = .opening(waiters: waiters, next: next)
                        return nil
                    case .opened(let session): return .some(session)
                    case .ended: return .some(nil)
                    }
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            let waiter = stage.withLock { stage -> CheckedContinuation<SyncSession?, Never>? in
                guard case .opening(var waiters, let next) = stage, let waiter = waiters.removeValue(forKey: id) else { return nil }
                stage = .opening(waiters: waiters, next: next)
                return waiter
            }
            waiter?.resume(returning: nil)
        }
    }

    private func publish(_ session: SyncSession?) {
        let waiters = stage.withLock { stage -> [CheckedContinuation<SyncSession?, Never>] in
            guard case .opening(let waiters, _) = stage else { return [] }
            stage = session.map(Stage.opened) ?? .ended
            return Array(waiters.values)
        }
        for waiter in waiters { waiter.resume(returning: session) }
    }

    /// Opens the cloud and the stores, trying an unreachable cloud again until it can be opened
    /// or the group shuts down (then `nil`).
    private func open() async throws -> SyncSession? {
        var delay = Duration.seconds(1)
        while true {
            do {
                let session = try await SyncSession.open(
                    configuration, adapters: configuration.adapters, tolerateUnavailableStores: true, tolerateMismatchedStores: true)
                for name in session.unopenedAdapters {
                    logger.warning(
                        "store cannot be opened yet; the adapter fails its syncs until it can",
                        metadata: ["adapter": "\(name)", "error": "\(session.startFailures[name] ?? "unknown")"])
                }
                return session
            } catch let error as GatewayError where error.code == .cloudUnavailable {
                monitor.waiting(for: error.message)
                logger.error("cannot open the cloud; trying again", metadata: ["error": "\(error.message)", "retry_in": "\(delay)"])
                let wait = delay
                let slept: Void? = try? await cancelWhenGracefulShutdown { [clock] in try await clock.sleep(for: wait) }
                if slept == nil || Task.isShuttingDownGracefully { return nil }
                delay = min(delay * 2, max(configuration.settings.retry.maxDelay.duration, .seconds(1)))
            }
        }
    }
}
