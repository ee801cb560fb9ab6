import ArgumentParser
import GatewayKinds
import GatewayConfig

struct ResetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reset",
        abstract: "Forget an adapter's sync state: the next sync downloads its zone and uploads its records again.",
        discussion: "Local data is kept; the full resync merges it with the zone, so nothing is duplicated.")

    @OptionGroup var options: ConfigOptions

    @Option(name: .long, help: "The adapter to reset.")
    var adapter: String

    func run() async throws {
        let configuration = try options.load()
        let selected = try GatewayStores.select([adapter], in: configuration)
        try await GatewayStores.check(configuration, adapters: selected, cloud: false, beforeOpening: true)
        try GatewayStores.prepareStateDirectory(configuration)
        let lock = try ProcessLock(stateDirectory: configuration.context.stateDirectory)
        for opened in try await GatewayStores.open(selected) {
            try await opened.adapter.resetSyncState(keepData: true)
        }
        withExtendedLifetime(lock) {}
        Console.out("adapter \(adapter) reset; the next `gateway sync` resyncs it in full\n")
    }
}
