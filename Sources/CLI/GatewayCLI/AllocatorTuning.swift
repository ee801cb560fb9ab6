import Foundation
import GatewayConfig

#if canImport(Glibc)
import Glibc
#endif

/// glibc's malloc gives a thread that meets another in an arena one of its own, up to eight per
/// core, and an arena keeps the pages of its high-water mark. A gateway running plugin adapters
/// passes each downloaded page through several threads (the cloud's reads, the kit's state, the
/// plugin's messages), so a dozen arenas each kept a page's worth: 112–117 MB resident for
/// 1,000,000 records into the CSV example, 92 MB with four arenas, as fast (`BENCHMARKS.md`).
/// The sync then waits on the plugin, so the threads rarely contend; a SQLite-to-SQLite sync is
/// CPU-bound and was 5.7% slower with four arenas, so it keeps glibc's default.
enum AllocatorTuning {
    /// The arenas of a gateway whose configuration has a plugin adapter.
    static let arenasWithPlugins: Int32 = 4
    /// `M_ARENA_MAX` of glibc's `malloc.h`, which the `Glibc` module does not import.
    private static let arenaMaxParameter: Int32 = -8

    /// Caps glibc's arenas at ``arenasWithPlugins`` when `configuration` has a plugin adapter,
    /// unless the environment sets `MALLOC_ARENA_MAX` (the operator's choice wins).
    static func apply(for configuration: GatewayConfiguration) {
        #if canImport(Glibc)
        guard capsArenas(for: configuration, environment: ProcessInfo.processInfo.environment) else { return }
        // Looked up at run time: `mallopt` is declared in `malloc.h`, outside the `Glibc` module.
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "mallopt") else { return }
        let mallopt = unsafeBitCast(symbol, to: (@convention(c) (Int32, Int32) -> Int32).self)
        _ = mallopt(arenaMaxParameter, arenasWithPlugins)
        #endif
    }

    /// Whether ``apply(for:)`` caps the arenas: a plugin adapter is configured and the environment
    /// leaves `MALLOC_ARENA_MAX` to the gateway.
    static func capsArenas(for configuration: GatewayConfiguration, environment: [String: String]) -> Bool {
        environment["MALLOC_ARENA_MAX"] == nil && configuration.adapters.contains { $0.settings.kind.value == "plugin" }
    }
}
