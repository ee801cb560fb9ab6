import ArgumentParser
import GatewayKinds
import GatewayConfig

struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show, per adapter, whether it has changes to upload (reads the stores; no service needed).")

    @OptionGroup var options: ConfigOptions

    @Option(name: .long, help: "Only this adapter (repeatable).")
    var adapter: [String] = []

    @Flag(name: .long, help: "Print JSON.")
    var json = false

    @Flag(name: .long, help: "Exit 1 when any adapter has changes to upload (for monitoring).")
    var failOnChanges = false

    func run() async throws {
        let configuration = try options.load()
        let selected = try GatewayStores.select(adapter, in: configuration)
        try await GatewayStores.check(configuration, adapters: selected, cloud: false)
        let adapters = try await GatewayStores.open(selected)
        let status = try await GatewayStatus.read(adapters, configuration: configuration)
        if json {
            try Console.json(status)
        } else {
            Console.out(Self.render(status))
        }
        if failOnChanges, status.hasChanges { throw ExitCode(ExitStatus.syncFailed) }
    }

    static func render(_ status: GatewayStatus) -> String {
        guard !status.adapters.isEmpty else { return "No adapters configured.\n" }
        var rows = [["adapter", "kind", "zone", "changes", "pending", "failed", "batch", "state"]]
        for adapter in status.adapters {
            let state = adapter.pausedReason.map { "paused: \($0)" } ?? (adapter.hasSynced ? "synced" : "never synced")
            rows.append([
                adapter.name, adapter.kind, adapter.zone, adapter.hasChanges ? "yes" : "no", "\(adapter.pendingChanges)",
                "\(adapter.failedRecords)", "\(adapter.batchSize)", state,
            ])
        }
        return TextTable.render(rows, rightAligned: [4, 5, 6])
    }
}
