import ArgumentParser
import GatewayCore
import GatewayKinds
import GatewayConfig

struct SyncCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Sync once now, show progress, print a summary per adapter.",
        discussion: "Exits 0 when every adapter synced, 1 when one failed, 75 when another sync is running.")

    @OptionGroup var options: ConfigOptions

    @Option(name: .long, help: "Sync only this adapter (repeatable).")
    var adapter: [String] = []

    @Option(
        name: .long,
        help: "Keep this adapter's store as the truth for this sync (repeatable): a record it and the cloud both hold without a common ancestor (a restored or replaced store) takes the store's version instead of the cloud's.")
    var storeWins: [String] = []

    @Option(name: .long, help: "Progress on standard error: auto (a bar on a terminal, lines otherwise), bar, lines, json (one JSON object per event) or none.")
    var progress: ProgressStyle = .auto

    func run() async throws {
        var configuration = try options.load()
        AllocatorTuning.apply(for: configuration)
        for name in storeWins {
            guard let index = configuration.adapters.firstIndex(where: { $0.name == name }) else {
                throw ValidationError("--store-wins names adapter '\(name)', which is not in \(configuration.file)")
            }
            guard adapter.isEmpty || adapter.contains(name) else {
                throw ValidationError("--store-wins names adapter '\(name)', which this sync leaves out; add --adapter \(name)")
            }
            configuration.adapters[index].settings.joinPrefers = .store
        }
        let report = try await ManualSync.run(configuration, adapters: adapter, observer: Self.progressObserver(progress))
        Console.out(SyncSummary.render(report, zones: Self.zones(configuration), templates: !configuration.sharedTemplates.isEmpty))
        for name in storeWins {
            guard let synced = report.adapters.first(where: { $0.adapter == name }), synced.outcome == .synced, synced.conflicts[.localWon, default: 0] == 0
            else { continue }
            if synced.matched > 0, synced.conflictCount == 0 {
                // After a reset, records that already hold the cloud's values are adopted: nothing to decide.
                Console.out(
                    "note: --store-wins \(name) decided nothing: the \(synced.matched) record(s) of its store that met the cloud's without a common ancestor held the same values\n")
                continue
            }
            Console.out(
                "note: --store-wins \(name) decided nothing: no record of its store met the cloud's without a common ancestor (a store restored with its sync state is rolled forward instead); to make it the truth anyway, run `gateway reset --adapter \(name)` first\n"
            )
        }
        if !report.succeeded { throw ExitCode(ExitStatus.syncFailed) }
    }

    enum ProgressStyle: String, ExpressibleByArgument, CaseIterable {
        case auto, bar, lines, json, none
    }

    static func progressObserver(_ style: ProgressStyle = .auto) -> @Sendable (SyncEvent) -> Void {
        switch style {
        case .none:
            return { _ in }
        case .json:
            return { Console.err(SyncEventLine($0).text) }
        case .auto, .bar, .lines:
            let interactive = style == .bar || (style == .auto && SyncProgressView.standardErrorIsTerminal)
            let view = SyncProgressView(interactive: interactive, write: Console.err)
            return { view.handle($0) }
        }
    }

    static func zones(_ configuration: GatewayConfiguration) -> [String: String] {
        Dictionary(configuration.adapters.map { ($0.name, $0.settings.zone.value) }, uniquingKeysWith: { first, _ in first })
    }
}
