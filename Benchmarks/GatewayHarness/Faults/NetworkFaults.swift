import FaultProxy
import Foundation
import GatewayTesting
import PostgresSupport
import PostgresTesting

/// The network fails between running gateways and their servers: a proxy in front of the
/// PostgreSQL store and one in front of the CloudKit endpoint cut connections (RST), stall them
/// past `request_timeout`, and delay packets. The endpoint's cloud keeps tombstones for a few
/// seconds only, so change tokens expire now and then too, and answers lost to a cut come back as
/// `serverRecordChanged` on the retry.
struct NetworkFaults {
    let root: URL
    let gateway: String
    let seed: UInt64

    func run(faults: Int, preload: Int) async throws -> ScenarioResult {
        var scenario = try ServiceScenario(name: "network", root: root)
        let cluster = try await PostgresTestCluster.start(durableCommits: true)
        return try await withDestroying(cluster) { try await run(scenario: &scenario, cluster: cluster, faults: faults, preload: preload) }
    }

    private func run(scenario: inout ServiceScenario, cluster: PostgresTestCluster, faults: Int, preload: Int) async throws -> ScenarioResult {
        let folder = scenario.folder
        let database = try await cluster.freshDatabase("store")
        let storeProxy = try await FaultProxy.start(forwardingTo: database.host, port: database.port)
        var proxied = database
        proxied.port = storeProxy.port

        let endpointPort = try LoopbackPort.free()
        let endpoint = try await ServerDeaths.startEndpoint(
            in: folder, port: endpointPort, gateway: gateway, clients: ["a", "b"], cloudExtra: ", tombstone_retention: 5s")
        let cloudProxy = try await FaultProxy.start(forwardingTo: "127.0.0.1", port: endpointPort)

        let rowsA = preloadRows("a", count: preload, seed: seed)
        let rowsB = preloadRows("b", count: preload, seed: seed + 1)
        let rowsP = preloadRows("p", count: preload, seed: seed + 2)
        let storeA = try SQLiteItems.create(at: folder.path("a.sqlite"), rows: rowsA)
        let storeB = try SQLiteItems.create(at: folder.path("b.sqlite"), rows: rowsB)
        let crm = try await PostgresItems.create(at: database, rows: rowsP)
        scenario.preloaded = rowsA.lines.merging(rowsB.lines) { a, _ in a }.merging(rowsP.lines) { a, _ in a }
        try folder.write(
            "a.yaml",
            ServerDeaths.gatewaySection(stateDirectory: "state-a") + ServerDeaths.cloudKitCloud(port: cloudProxy.port, client: "a", requestTimeout: "2s")
                + "adapters:\n" + ServerDeaths.sqliteAdapter("a", path: "a.sqlite")
                + ServerDeaths.postgresAdapter("crm", endpoint: proxied, requestTimeout: "2s"))
        try folder.write(
            "b.yaml",
            ServerDeaths.gatewaySection(stateDirectory: "state-b") + ServerDeaths.cloudKitCloud(port: cloudProxy.port, client: "b", requestTimeout: "2s")
                + "adapters:\n" + ServerDeaths.sqliteAdapter("b", path: "b.sqlite"))
        scenario.gateways = [
            GatewayProcess.service("gateway-a", config: "a.yaml", in: folder.url, gateway: gateway),
            GatewayProcess.service("gateway-b", config: "b.yaml", in: folder.url, gateway: gateway),
        ]
        scenario.writers = [
            ItemWriter(store: storeA, prefix: "a", rate: 30), ItemWriter(store: storeB, prefix: "b", rate: 30),
            ItemWriter(store: crm, prefix: "p", rate: 30),
        ]
        for service in scenario.gateways { try service.start() }

        var random = SeededGenerator(seed: seed)
        try await scenario.writing(seed: seed) {
            for _ in 0..<faults {
                try await Task.sleep(for: random.pause(0.3...2.0))
                let (proxy, place) = Bool.random(using: &random) ? (storeProxy, "PostgreSQL store") : (cloudProxy, "CloudKit endpoint")
                switch Int.random(in: 0..<3, using: &random) {
                case 0:
                    proxy.cut()
                    scenario.count("connections to the \(place) cut")
                case 1:
                    proxy.stall()
                    scenario.count("route to the \(place) stalled past request_timeout")
                    try await Task.sleep(for: random.pause(2.5...5.0))
                    proxy.pass()
                default:
                    proxy.delay(random.pause(0.05...0.3))
                    scenario.count("packets to the \(place) delayed")
                    try await Task.sleep(for: random.pause(1.5...3.0))
                    proxy.pass()
                }
            }
            try await Task.sleep(for: .seconds(2))
        }
        var result = try await scenario.finish(sides: [
            ("a", { try await storeA.lines() }), ("b", { try await storeB.lines() }), ("crm", { try await crm.lines() }),
            ("cloud", { try await FaultZone.lines(inEmbedded: folder.path("endpoint-cloud.sqlite")) }),
        ])
        let stopped = try await endpoint.stop(within: .seconds(30))
        result.stops["endpoint"] = "\(stopped.status) after \(stopped.took.secondsText) s"
        await crm.close()
        await storeProxy.close()
        await cloudProxy.close()
        return result
    }
}
