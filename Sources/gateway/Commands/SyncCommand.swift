import ArgumentParser
import GatewayCore
import GatewayKinds
import GatewayService

struct SyncCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Sync once now, show progress, print a summary per adapter.",
        discussion: "Exits 0 when every adapter synced, 1 when one failed, 75 when another sync is running.")

    @OptionGroup var options: ConfigOptions

    @Option(name: .long, help: "Sync only this adapter (repeatable).")
    var adapter: [String] = []

    func run() async throws {
        let configuration = try options.load()
        let report = try await ManualSync.run(configuration, adapters: adapter, observer: Self.progressObserver())
        Console.out(SyncSummary.render(report, zones: Self.zones(configuration)))
        if !report.succeeded { throw ExitCode(ExitStatus.syncFailed) }
    }

    static func progressObserver() -> @Sendable (SyncEvent) -> Void {
        let view = SyncProgressView(interactive: SyncProgressView.standardErrorIsTerminal, write: Console.err)
        return { view.handle($0) }
    }

    static func zones(_ configuration: GatewayConfiguration) -> [String: String] {
        Dictionary(configuration.adapters.map { ($0.name, $0.settings.zone.value) }, uniquingKeysWith: { first, _ in first })
    }
}
