import Foundation
import GatewayTesting

/// Clocks that are wrong: a gateway and the CloudKit endpoint whose clocks are hours apart (the
/// endpoint refuses the signatures, and the error must say the clocks are the problem), and a
/// gateway restarted again and again with its clock jumped back or forward by hours to weeks,
/// sharing an embedded cloud with a gateway whose clock is right. Clocks are shifted with
/// libfaketime (Debian package `faketime`); monotonic clocks are left alone, as NTP leaves them.
struct ClockFaults {
    let root: URL
    let gateway: String
    let seed: UInt64

    static let libraries = ["/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1", "/usr/lib/aarch64-linux-gnu/faketime/libfaketime.so.1"]

    /// The environment that shifts a process's wall clock by `offset` (libfaketime's syntax: `-3d`).
    static func shifted(_ offset: String) throws -> [String: String] {
        guard let library = libraries.first(where: { FileManager.default.fileExists(atPath: $0) }) else {
            throw HarnessFailure("the clock scenario needs libfaketime; install Debian's faketime package (.ci/run does)")
        }
        return ["LD_PRELOAD": library, "FAKETIME": offset, "FAKETIME_DONT_FAKE_MONOTONIC": "1", "FAKETIME_NO_CACHE": "1"]
    }

    func run(faults: Int, preload: Int) async throws -> ScenarioResult {
        var scenario = try ServiceScenario(name: "clock", root: root)
        let folder = scenario.folder

        // 1. Skew between a gateway and the endpoint, both ways.
        let port = try LoopbackPort.free()
        var endpoint = try await ServerDeaths.startEndpoint(in: folder, port: port, gateway: gateway, clients: ["skewed"])
        _ = try SQLiteItems.create(at: folder.path("skewed.sqlite"), rows: preloadRows("k", count: 10, seed: seed))
        try folder.write(
            "skewed.yaml",
            "gateway: { state_dir: state-skewed, retry: { max_attempts: 1 } }\n" + ServerDeaths.cloudKitCloud(port: port, client: "skewed")
                + "adapters:\n" + ServerDeaths.sqliteAdapter("skewed", path: "skewed.sqlite"))
        var skewMessages: [String] = []
        for (offset, who) in [("+2h", "gateway"), ("-90m", "gateway"), ("+3h", "endpoint")] {
            if who == "endpoint" {
                _ = try await endpoint.stop(within: .seconds(30))
                endpoint = GatewayProcess(
                    name: "endpoint-shifted", directory: folder.url, arguments: ["cloud", "serve", "--config", "endpoint.yaml"], gateway: gateway,
                    environment: try Self.shifted(offset))
                try endpoint.start()
                _ = try await endpoint.waitForLog(/address=127\.0\.0\.1:(\d+)/)
            }
            let environment = who == "gateway" ? try Self.shifted(offset) : [:]
            let sync = try ChildProcess(
                gateway, arguments: ["sync", "--config", "skewed.yaml", "--progress", "none"], directory: folder.url.path,
                environment: ProcessInfo.processInfo.environment.merging(environment) { _, new in new },
                standardOutput: folder.path("skew-\(who)\(offset).out"), standardError: folder.path("skew-\(who)\(offset).err"))
            let status = try await sync.wait(timeout: .seconds(60))
            scenario.count("\(who) clock \(offset) against the other")
            let text = ["out", "err"].map { (try? String(contentsOfFile: folder.path("skew-\(who)\(offset).\($0)"), encoding: .utf8)) ?? "" }.joined()
            if status == 0 || !text.contains("clock") { skewMessages.append("\(who) \(offset): exit \(status): \(text.suffix(500))") }
        }
        _ = try await endpoint.stop(within: .seconds(30))
        scenario.checks["a signature refused for clock skew says the clocks differ"] =
            skewMessages.isEmpty ? "ok" : "FAILED: \(skewMessages.joined(separator: "; "))"

        // 2. A gateway restarted with its clock jumped, next to one whose clock is right.
        let rowsA = preloadRows("a", count: preload, seed: seed)
        let rowsB = preloadRows("b", count: preload, seed: seed + 1)
        let storeA = try SQLiteItems.create(at: folder.path("a.sqlite"), rows: rowsA)
        let storeB = try SQLiteItems.create(at: folder.path("b.sqlite"), rows: rowsB)
        scenario.preloaded = rowsA.lines.merging(rowsB.lines) { a, _ in a }
        for name in ["a", "b"] {
            try folder.write(
                "\(name).yaml",
                ServerDeaths.gatewaySection(stateDirectory: "state-\(name)") + "cloud: { kind: embedded, path: shared-cloud.sqlite }\nadapters:\n"
                    + ServerDeaths.sqliteAdapter(name, path: "\(name).sqlite"))
        }
        let steady = GatewayProcess.service("gateway-b", config: "b.yaml", in: folder.url, gateway: gateway)
        scenario.writers = [ItemWriter(store: storeA, prefix: "a", rate: 30), ItemWriter(store: storeB, prefix: "b", rate: 30)]
        try steady.start()
        var jumping = GatewayProcess.service("gateway-a", config: "a.yaml", in: folder.url, gateway: gateway)
        try jumping.start()
        let offsets = ["-3d", "+40d", "-1h", "+2h", "-10m", "+45d", "-7d", "+1d"]
        var random = SeededGenerator(seed: seed)
        let jumps = max(1, faults - 3)
        var restarted: [GatewayProcess] = []
        try await scenario.writing(seed: seed) {
            for index in 0..<jumps {
                try await Task.sleep(for: random.pause(1.0...3.0))
                let (status, _) = try await jumping.stop(within: .seconds(30))
                if status != 0 { scenario.checks["gateway-a stopped cleanly before jump \(index + 1)"] = "FAILED: exit \(status)" }
                restarted.append(jumping)
                let offset = offsets[index % offsets.count]
                jumping = GatewayProcess.service(
                    "gateway-a-\(index + 1)", config: "a.yaml", in: folder.url, gateway: gateway, environment: try Self.shifted(offset))
                try jumping.start()
                scenario.count("gateway restarted with its clock at \(offset)")
            }
            try await Task.sleep(for: random.pause(1.0...3.0))
            _ = try await jumping.stop(within: .seconds(30))
            // The last start has the right clock again.
            jumping = GatewayProcess.service("gateway-a-final", config: "a.yaml", in: folder.url, gateway: gateway)
            try jumping.start()
            try await Task.sleep(for: .seconds(2))
        }
        scenario.gateways = [steady, jumping]
        return try await scenario.finish(sides: [
            ("a", { try await storeA.lines() }), ("b", { try await storeB.lines() }),
            ("cloud", { try await FaultZone.lines(inEmbedded: folder.path("shared-cloud.sqlite")) }),
        ])
    }
}
