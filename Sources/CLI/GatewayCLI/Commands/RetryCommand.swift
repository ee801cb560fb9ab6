import ArgumentParser
import GatewayKinds
import GatewayConfig
import Synchronization

struct RetryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "retry", abstract: "Send failed records again: clear their failure marks, then sync.")

    @OptionGroup var options: ConfigOptions

    @Option(name: .long, help: "Only this adapter (repeatable).")
    var adapter: [String] = []

    func run() async throws {
        let configuration = try options.load()
        let cleared = Mutex(0)
        let report = try await ManualSync.run(
            configuration, adapters: adapter,
            beforeSync: { adapters in
                for opened in adapters {
                    let count = try await opened.adapter.failedRecords().count
                    try await opened.adapter.retryFailedRecords()
                    cleared.withLock { $0 += count }
                }
            },
            observer: SyncCommand.progressObserver())
        Console.out("retrying \(cleared.withLock { $0 }) failed record(s)\n")
        Console.out(SyncSummary.render(report, zones: SyncCommand.zones(configuration)))
        if !report.succeeded { throw ExitCode(ExitStatus.syncFailed) }
    }
}
