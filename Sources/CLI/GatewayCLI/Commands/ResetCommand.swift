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
            // A change not yet synced loses its synced version with the rest of the state, so it
            // joins the zone as a store's value without an ancestor: say so before it is too late
            // to sync it first.
            let pending = (try? await opened.adapter.pendingChangeCount()) ?? 0
            try await opened.adapter.resetSyncState(keepData: true)
            if pending > 0 {
                Console.err(
                    "warning: adapter \(opened.name) had \(pending) local change(s) not yet synced; they now join the zone without their synced versions, so where the cloud holds such a record differently the cloud's version wins (join_prefers). To keep this store's values, sync it next with `gateway sync --adapter \(opened.name) --store-wins \(opened.name)` (its values then win every record it and the cloud hold differently)\n"
                )
            }
        }
        withExtendedLifetime(lock) {}
        Console.out("adapter \(adapter) reset; the next `gateway sync` resyncs it in full\n")
    }
}
