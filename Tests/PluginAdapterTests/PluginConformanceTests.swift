import Foundation
import GatewayCore
import GatewayKinds
import GatewayConfig
import GatewayTesting
import TestScheduling
import Testing

/// The adapter conformance suite against the example CSV plugin, opened the way
/// `gateway check-adapter` opens it: from a config, over scratch stores.
@Suite("Plugin adapter conformance", .heavy)
struct PluginConformanceTests {
    static func plan(in directory: TemporaryDirectory) throws -> any ScratchStorePlan {
        let config = """
            adapters:
              - name: csv
                kind: plugin
                command: python3
                args: ["\(PluginFixtures.csvFolder)"]
                zone: Anything
                settings: { directory: csv, record_types: [Note] }
                poll_interval: 200ms
            """
        try config.write(toFile: directory.path("config.yaml"), atomically: true, encoding: .utf8)
        let configuration = try GatewayConfiguration.load(file: directory.path("config.yaml"), registry: .builtIn)
        return try unwrap(configuration.adapters.first?.plan as? any ScratchStorePlan, "kind plugin opens scratch stores")
    }

    @Test(arguments: AdapterConformanceSuite.cases)
    func conformance(_ check: AdapterConformanceCase) async throws {
        let directory = try TemporaryDirectory(prefix: "plugin-conformance")
        defer { directory.remove() }
        let plan = try Self.plan(in: directory)
        let counter = Counter()
        let harness = ScratchStoreHarness(scanning: plan.detectsChangesByScanning) { zone in
            let folder = directory.path("scratch-\(counter.next())")
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            return try await plan.openScratch(in: folder, zone: zone)
        }
        do {
            try await check.run(with: harness)
        } catch {
            await harness.closeAll()
            throw error
        }
        await harness.closeAll()
    }
}

final class Counter: Sendable {
    private let value = LockedValue(0)
    func next() -> Int { value.withLock { $0 += 1; return $0 } }
}
