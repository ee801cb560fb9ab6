import ArgumentParser
import GatewayKinds
import GatewayConfig
import GatewayCore

struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show, per adapter, whether it has changes to upload (reads the stores, with read access only; no service needed).")

    @OptionGroup var options: ConfigOptions

    @Option(name: .long, help: "Only this adapter (repeatable).")
    var adapter: [String] = []

    @Flag(name: .long, help: "Print JSON.")
    var json = false

    @Flag(name: .long, help: "Exit 1 when any adapter has changes to upload (for monitoring; an unreadable store exits 3 either way).")
    var failOnChanges = false

    @Flag(name: .long, help: "Also list each adapter's failed records with their errors (the first 1,000 per adapter).")
    var failed = false

    func run() async throws {
        let configuration = try options.load()
        var selected = try GatewayStores.select(adapter, in: configuration)
        if adapter.isEmpty, !configuration.sharedTemplates.isEmpty {
            selected += try await Self.sharedAdapters(configuration)
        }
        // Every adapter gets its line: one whose store cannot be opened or read shows the error
        // in its row instead of hiding the healthy ones.
        var lines: [AdapterStatus] = []
        for adapterConfiguration in selected {
            // Reading may open the store: a plugin the check started serves it, and is stopped after
            // (when reading did not need it, by `discardCheck`).
            do {
                try await GatewayStores.check(configuration, adapters: [adapterConfiguration], cloud: false, beforeOpening: true)
                let status: Result<AdapterStatus, any Error>
                do {
                    status = .success(try await GatewayStores.readStatus(adapterConfiguration, in: configuration))
                } catch {
                    status = .failure(error)
                }
                await adapterConfiguration.plan.discardCheck()
                var line = try status.get()
                if !failed { line.failures = nil }
                lines.append(line)
            } catch {
                // A store that does not match the config (a table dropped since) is one row too.
                lines.append(AdapterStatus(unreadable: adapterConfiguration, error: (error as? GatewayError)?.message ?? "\(error)"))
            }
        }
        let status = GatewayStatus(adapters: lines)
        if json {
            try Console.json(status)
        } else {
            Console.out(Self.render(status))
        }
        if status.hasUnreadableStores { throw ExitCode(ExitStatus.unhealthy) }
        if failOnChanges, status.hasChanges { throw ExitCode(ExitStatus.syncFailed) }
    }

    /// The adapters the config's templates make for the zones shared with its user now, as
    /// `gateway sync` would make them.
    /// - Throws: ``GatewayError`` when the cloud cannot be reached or a template does not fit a zone.
    static func sharedAdapters(_ configuration: GatewayConfiguration) async throws -> [AdapterConfiguration] {
        try GatewayStores.prepareStateDirectory(configuration)
        let cloud = try await GatewayStores.openCloud(configuration)
        let zones: [ZoneID]
        do {
            zones = try await (cloud as? any SharedZoneListing)?.sharedZones() ?? []
            await cloud.close()
        } catch {
            await cloud.close()
            throw GatewayError(.cloudUnavailable, "cannot list the zones shared with this user: \(error)", underlying: error)
        }
        var made: [AdapterConfiguration] = []
        for template in configuration.sharedTemplates {
            for zone in zones.sorted(by: { ($0.ownerName, $0.zoneName) < ($1.ownerName, $1.zoneName) }) where template.takes(zone) {
                let adapter = try template.adapter(for: zone)
                // As a session would: a zone whose store another adapter already uses gets none.
                if let identity = adapter.plan.storeIdentity,
                    let other = (configuration.adapters + made).first(where: { $0.plan.storeIdentity == identity })
                {
                    throw ConfigError(
                        .inconsistent,
                        "template \(template.name) gives zone \(zone) the same store as adapter \(other.name); put {zone} and {owner} in its path, directory or schema")
                }
                made.append(adapter)
            }
        }
        return made
    }

    static func render(_ status: GatewayStatus) -> String {
        guard !status.adapters.isEmpty else { return "No adapters configured.\n" }
        var rows = [["adapter", "kind", "zone", "changes", "pending", "failed", "batch", "state"]]
        var errors: [String] = []
        for adapter in status.adapters {
            if let error = adapter.error {
                rows.append([adapter.name, adapter.kind, adapter.zone, "?", "?", "?", "?", "unreadable"])
                let prefix = "adapter \(adapter.name): "
                errors.append("\(adapter.name): \(error.hasPrefix(prefix) ? String(error.dropFirst(prefix.count)) : error)")
                continue
            }
            let state =
                adapter.pausedReason.map { "paused: \($0)" }
                ?? (adapter.failedRecords > 0 ? "failing records" : adapter.hasSynced ? "synced" : "never synced")
            rows.append([
                adapter.name, adapter.kind, adapter.zone, adapter.hasChanges ? "yes" : "no", "\(adapter.pendingChanges)",
                "\(adapter.failedRecords)", "\(adapter.batchSize)", state,
            ])
        }
        let notes = status.adapters.compactMap { adapter in adapter.note.map { "note: \(adapter.name): \($0)\n" } }
        return TextTable.render(rows, rightAligned: [4, 5, 6]) + notes.joined() + errors.map { "error: \($0)\n" }.joined()
            + status.adapters.map(renderFailures).joined()
    }

    /// The adapter's failed records, one per line, when they were asked for and there are some.
    static func renderFailures(_ adapter: AdapterStatus) -> String {
        guard let failures = adapter.failures, !failures.isEmpty else { return "" }
        var text = "\nfailed records of \(adapter.name):\n"
        for failure in failures {
            text += "  \(TerminalText.printable(failure.recordName))  \(failure.code)  \(TerminalText.printable(failure.message))\n"
        }
        if adapter.failedRecords > failures.count {
            text += "  … and \(adapter.failedRecords - failures.count) more\n"
        }
        return text
    }
}
