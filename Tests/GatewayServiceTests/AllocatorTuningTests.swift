import Foundation
import GatewayConfig
import GatewayTesting
import Testing

@testable import GatewayCLI

/// `gateway sync` and `gateway run` cap glibc's malloc arenas for configurations with a plugin
/// adapter, and leave the allocator alone otherwise or when the operator set `MALLOC_ARENA_MAX`.
@Suite("allocator tuning")
struct AllocatorTuningTests {
    @Test("arenas are capped with a plugin adapter, not without one, and never over MALLOC_ARENA_MAX")
    func capsArenasForPlugins() throws {
        let directory = try ConfigDecodingTests.directoryWithDatabase()
        defer { directory.remove() }
        let sqliteOnly = try ConfigDecodingTests.parse(
            "adapters:\n  - { name: app, kind: sqlite, path: app.sqlite, zone: AppZone, tables: [{ table: notes }] }", in: directory)
        let withPlugin = try ConfigDecodingTests.parse(
            """
            adapters:
              - { name: app, kind: sqlite, path: app.sqlite, zone: AppZone, tables: [{ table: notes }] }
              - { name: csv, kind: plugin, command: python3, zone: AppZone }
            """, in: directory)
        #expect(!AllocatorTuning.capsArenas(for: sqliteOnly, environment: [:]))
        #expect(AllocatorTuning.capsArenas(for: withPlugin, environment: ["PATH": "/usr/bin"]))
        #expect(!AllocatorTuning.capsArenas(for: withPlugin, environment: ["MALLOC_ARENA_MAX": "16"]))
    }
}
