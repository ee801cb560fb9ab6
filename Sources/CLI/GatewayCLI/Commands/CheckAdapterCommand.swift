import AdapterConformance
import AdapterKit
import ArgumentParser
import Foundation
import GatewayCore
import GatewayConfig
import Synchronization

/// `gateway check-adapter NAME`: the adapter conformance suite against a configured adapter, each
/// case over a new scratch store, so an adapter's author proves it without writing Swift; or,
/// when NAME is an entry of `resolvers:` or `processors:`, the resolver or processor conformance
/// suite against that process.
struct CheckAdapterCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-adapter",
        abstract: "Run the adapter conformance suite against a configured adapter, in scratch stores.",
        discussion: """
            Each case opens the adapter's kind over a new, empty store in a temporary folder (a \
            plugin is told the folder in its handshake as 'scratch'), so the configured store and \
            the gateway's state are never touched. NAME may also be an entry of resolvers: or \
            processors:, whose process is then given made-up conflicts or records and held to its \
            protocol. Exit status 0 when every case passes, 1 when one fails.
            """)

    @OptionGroup var options: ConfigOptions

    @Argument(help: "The adapter's name in the config (or a resolver's under resolvers:, or a processor's under processors:).")
    var adapter: String

    @Option(name: .long, help: "Only the cases whose name contains this text.")
    var only: String?

    func run() async throws {
        let configuration = try options.load()
        guard let entry = configuration.adapters.first(where: { $0.name == adapter }) else {
            if let resolver = configuration.startResolverProcesses()[adapter] {
                try await runSuite("resolver", ResolverConformanceSuite.cases, on: resolver) { await resolver.close() }
                return
            }
            if let settings = configuration.processorProcesses.settings[adapter], let starter = configuration.processorProcesses.starter {
                let processor = starter.processor(for: settings)
                try await runSuite("processor", ProcessorConformanceSuite.cases, on: processor) { await processor.close() }
                return
            }
            let resolvers = configuration.resolverProcesses.keys.sorted()
            let processors = configuration.processorProcesses.settings.keys.sorted()
            throw GatewayError(
                .unknownAdapter,
                "the config has no adapter named \(adapter); it has \(configuration.adapters.map(\.name).joined(separator: ", "))"
                    + (resolvers.isEmpty ? "" : ", resolvers \(resolvers.joined(separator: ", "))")
                    + (processors.isEmpty ? "" : ", processors \(processors.joined(separator: ", "))"))
        }
        guard let plan = entry.plan as? any ScratchStorePlan else {
            throw ConfigError(
                .unsupported,
                "adapter \(adapter) is of kind \(entry.settings.kind.value), which cannot open a scratch store; its conformance runs in the package's tests")
        }
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("gateway-check-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: root) }
        let counter = CaseCounter()
        let harness = ScratchStoreHarness(
            scanning: plan.detectsChangesByScanning, keepsFailureMarks: plan.keepsFailureMarks, signalsChanges: plan.signalsChanges
        ) { zone in
            let folder = root.appendingPathComponent("store-\(counter.next())")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            return try await plan.openScratch(in: folder.path, zone: zone)
        }
        let cases = AdapterConformanceSuite.cases.filter { only == nil || $0.name.localizedCaseInsensitiveContains(only!) }
        // Stores on the adapter kit (plugins, JSON folders) are also held to the store contract's
        // rules, each on a scratch store of its own.
        let probe = try await plan.openScratch(in: Self.folder(root, counter).path, zone: Self.zone)
        let isKitStore = probe is KitScratchStore
        await probe.close()
        let rules = (isKitStore ? KitStoreContract.rules : []).filter { only == nil || $0.name.localizedCaseInsensitiveContains(only!) }
        let total = cases.count + rules.count
        Console.out("Checking adapter \(adapter) (kind \(entry.settings.kind.value)) against \(total) conformance case(s)\n")
        var failed = 0
        for check in cases {
            do {
                try await check.run(with: harness)
                Console.out("  pass  \(check.name)\n")
            } catch {
                failed += 1
                Console.out("  FAIL  \(check.name)\n        \(error)\n")
            }
            await harness.closeAll()
        }
        for rule in rules {
            let scratch = try await plan.openScratch(in: Self.folder(root, counter).path, zone: Self.zone)
            do {
                guard let kit = scratch as? KitScratchStore else { continue }
                try await rule.check(kit.kit.store, zone: Self.zone)
                Console.out("  pass  store contract: \(rule.name)\n")
            } catch {
                failed += 1
                Console.out("  FAIL  store contract: \(rule.name)\n        \(error)\n")
            }
            await scratch.close()
        }
        Console.out("\(total - failed) of \(total) case(s) passed\n")
        if failed > 0 { throw ExitCode(1) }
    }

    /// `cases` against the `role` process named `adapter`, which `close` stops afterwards.
    private func runSuite<Subject>(
        _ role: String, _ cases: [ConformanceCase<Subject>], on subject: Subject, close: () async -> Void
    ) async throws {
        let chosen = cases.filter { only == nil || $0.name.localizedCaseInsensitiveContains(only!) }
        Console.out("Checking \(role) \(adapter) against \(chosen.count) conformance case(s)\n")
        var failed = 0
        for check in chosen {
            do {
                try await check.run(with: subject)
                Console.out("  pass  \(check.name)\n")
            } catch {
                failed += 1
                Console.out("  FAIL  \(check.name)\n        \(error)\n")
            }
        }
        await close()
        Console.out("\(chosen.count - failed) of \(chosen.count) case(s) passed\n")
        if failed > 0 { throw ExitCode(1) }
    }

    /// The zone the store contract's scratch stores sync.
    private static let zone = ZoneID(zoneName: "ContractZone")

    /// A new, empty folder for one scratch store.
    private static func folder(_ root: URL, _ counter: CaseCounter) throws -> URL {
        let folder = root.appendingPathComponent("store-\(counter.next())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }
}

/// Numbers the scratch stores of one check.
private final class CaseCounter: Sendable {
    private let value = Mutex(0)
    func next() -> Int { value.withLock { $0 += 1; return $0 } }
}
