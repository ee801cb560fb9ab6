import ArgumentParser
import Foundation
import GatewayConfig
import GatewayService
import Logging
import ServiceLifecycle
import UnixSignals

struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run as a service: sync at start, on the interval, on store and cloud changes and on SIGUSR1.",
        discussion: """
            SIGTERM or SIGINT stops the sync after its current page or batch, committed, then exits 0; a sync that does not \
            stop within shutdown_timeout is abandoned (what it committed stays). While it runs it holds the state folder's \
            lock, so `gateway sync` on the same config exits 75.
            """)

    @OptionGroup var options: ConfigOptions

    @Option(help: "How log lines look on standard error: text, or json (one object per line, for log collectors).")
    var logFormat: LogFormat = .text

    enum LogFormat: String, ExpressibleByArgument, CaseIterable {
        case text, json
    }

    func run() async throws {
        let configuration = try options.load()
        AllocatorTuning.apply(for: configuration)
        let format = logFormat
        LoggingSystem.bootstrap { label in
            switch format {
            case .text:
                var handler = StreamLogHandler.standardError(label: label)
                handler.logLevel = .info
                return handler
            case .json:
                return JSONLogHandler(label: label)
            }
        }
        let logger = Logger(label: "gateway")
        let scheduler = SyncScheduler(configuration: configuration, logger: logger)
        let control = ControlServer.application(scheduler: scheduler, logger: logger)
        // Services stop in reverse order: the scheduler first (its sync ends after the current
        // page or batch, committed) while the control server still answers, then the server,
        // then the session (stores, cloud, plugin processes, locks), which nothing uses any more.
        // A service that returns asks the others to stop gracefully, never cancels them: a
        // cancelled server or sync logs errors on every clean stop.
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(
                services: [
                    .init(service: scheduler.session, successTerminationBehavior: .gracefullyShutdownGroup, serviceName: "sync session"),
                    .init(service: control, successTerminationBehavior: .gracefullyShutdownGroup, serviceName: "control server"),
                    .init(service: scheduler, successTerminationBehavior: .gracefullyShutdownGroup, serviceName: "sync scheduler"),
                ],
                gracefulShutdownSignals: [.sigterm, .sigint], cancellationSignals: [], logger: logger))
        let limit = configuration.settings.shutdownTimeout.duration + .seconds(5)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            tasks.addTask {
                // A backstop: whatever a stopping sync waits on, the process ends. The sync
                // gives up on its own after shutdown_timeout; this only catches what that misses.
                // It keeps listening until the group ends: a task that ended here would end the
                // group by cancelling it, and a cancelled server logs errors on a clean stop.
                var armed = false
                for await _ in await UnixSignalsSequence(trapping: .sigterm, .sigint) where !armed {
                    armed = true
                    DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(Int(limit.components.seconds))) {
                        logger.critical("the gateway did not stop within \(limit) of the signal; exiting without waiting")
                        Foundation.exit(1)
                    }
                }
            }
            try await tasks.next()
            tasks.cancelAll()
        }
    }
}
