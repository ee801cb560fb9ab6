import Foundation
import GatewayTesting
import PostgresSupport
import PostgresTesting

#if canImport(Glibc)
import Glibc
#endif

/// Servers that die under running gateways: the PostgreSQL store, the PostgreSQL cloud, and the
/// `gateway cloud serve` endpoint, stopped at random moments (as a crash: `pg_ctl -m immediate`,
/// SIGKILL) and started again, while programs keep writing. The gateways must neither hang nor
/// exit, and every side must end with what the writers left.
struct ServerDeaths {
    let root: URL
    let gateway: String
    let seed: UInt64

    /// The `gateway:` section of every service in these scenarios.
    static func gatewaySection(stateDirectory: String, extra: String = "") -> String {
        """
        gateway:
          state_dir: \(stateDirectory)
          parallelism: 2
          sync_interval: 1s
          retry: { max_attempts: 3, base_delay: 100ms, max_delay: 2s }
          control: { listen: "127.0.0.1:0" }
          shutdown_timeout: 10s
        \(extra)
        """
    }

    static func sqliteAdapter(_ name: String, path: String) -> String {
        "  - { name: \(name), kind: sqlite, path: \(path), zone: \(FaultZone.zone.zoneName), tables: [{ table: items, record_type: Item }] }\n"
    }

    static func postgresAdapter(_ name: String, endpoint: PostgresEndpoint, requestTimeout: String = "5s") -> String {
        "  - { name: \(name), kind: postgres, url: \"\(endpoint)\", zone: \(FaultZone.zone.zoneName), request_timeout: \(requestTimeout), "
            + "tables: [{ table: items, record_type: Item }] }\n"
    }

    /// The PostgreSQL store dies: a SQLite and a PostgreSQL store on one zone of the embedded
    /// cloud, both preloaded (the first sync goes both ways) and both written continuously.
    func postgresStore(faults: Int, preload: Int) async throws -> ScenarioResult {
        var scenario = try ServiceScenario(name: "postgres-store", root: root)
        let cluster = try await PostgresTestCluster.start(durableCommits: true)
        return try await withDestroying(cluster) { try await postgresStore(scenario: &scenario, cluster: cluster, faults: faults, preload: preload) }
    }

    private func postgresStore(scenario: inout ServiceScenario, cluster: PostgresTestCluster, faults: Int, preload: Int) async throws
        -> ScenarioResult
    {
        let folder = scenario.folder
        let database = try await cluster.freshDatabase("store")
        let sqliteRows = preloadRows("s", count: preload, seed: seed)
        let postgresRows = preloadRows("p", count: preload, seed: seed + 1)
        let app = try SQLiteItems.create(at: folder.path("app.sqlite"), rows: sqliteRows)
        let crm = try await PostgresItems.create(at: database, rows: postgresRows)
        scenario.preloaded = sqliteRows.lines.merging(postgresRows.lines) { a, _ in a }
        try folder.write(
            "config.yaml",
            Self.gatewaySection(stateDirectory: "state") + "cloud: { kind: embedded, path: cloud.sqlite }\nadapters:\n"
                + Self.sqliteAdapter("app", path: "app.sqlite") + Self.postgresAdapter("crm", endpoint: database))
        let service = GatewayProcess.service("gateway", config: "config.yaml", in: folder.url, gateway: gateway)
        scenario.gateways = [service]
        scenario.writers = [ItemWriter(store: app, prefix: "s", rate: 40), ItemWriter(store: crm, prefix: "p", rate: 40)]
        try service.start()

        var random = SeededGenerator(seed: seed)
        try await scenario.writing(seed: seed) {
            for _ in 0..<faults {
                try await Task.sleep(for: random.pause(0.3...2.5))
                try await cluster.stop(immediately: true)
                scenario.count("PostgreSQL store stopped (-m immediate)")
                try await Task.sleep(for: random.pause(0.2...2.0))
                try await cluster.start()
            }
            try await Task.sleep(for: .seconds(2))
        }
        let result = try await scenario.finish(sides: [
            ("app", { try await app.lines() }), ("crm", { try await crm.lines() }),
            ("cloud", { try await FaultZone.lines(inEmbedded: folder.path("cloud.sqlite")) }),
        ])
        await crm.close()
        return result
    }

    /// The PostgreSQL cloud dies: two gateways, each with a SQLite store, share it.
    func postgresCloud(faults: Int, preload: Int) async throws -> ScenarioResult {
        var scenario = try ServiceScenario(name: "postgres-cloud", root: root)
        let cluster = try await PostgresTestCluster.start(durableCommits: true)
        return try await withDestroying(cluster) { try await postgresCloud(scenario: &scenario, cluster: cluster, faults: faults, preload: preload) }
    }

    private func postgresCloud(scenario: inout ServiceScenario, cluster: PostgresTestCluster, faults: Int, preload: Int) async throws
        -> ScenarioResult
    {
        let folder = scenario.folder
        let cloud = try await cluster.freshDatabase("cloud")
        var stores: [SQLiteItems] = []
        for (index, name) in ["a", "b"].enumerated() {
            let rows = preloadRows(name, count: preload, seed: seed + UInt64(index))
            stores.append(try SQLiteItems.create(at: folder.path("\(name).sqlite"), rows: rows))
            scenario.preloaded.merge(rows.lines) { a, _ in a }
            try folder.write(
                "\(name).yaml",
                Self.gatewaySection(stateDirectory: "state-\(name)") + "cloud: { kind: postgres, url: \"\(cloud)\", request_timeout: 5s }\n"
                    + "adapters:\n" + Self.sqliteAdapter(name, path: "\(name).sqlite"))
            scenario.gateways.append(GatewayProcess.service("gateway-\(name)", config: "\(name).yaml", in: folder.url, gateway: gateway))
            scenario.writers.append(ItemWriter(store: stores[index], prefix: name, rate: 40))
        }
        for service in scenario.gateways { try service.start() }

        var random = SeededGenerator(seed: seed)
        try await scenario.writing(seed: seed) {
            for _ in 0..<faults {
                try await Task.sleep(for: random.pause(0.3...2.5))
                try await cluster.stop(immediately: true)
                scenario.count("PostgreSQL cloud stopped (-m immediate)")
                try await Task.sleep(for: random.pause(0.2...2.0))
                try await cluster.start()
            }
            try await Task.sleep(for: .seconds(2))
        }
        return try await scenario.finish(sides: [
            ("a", { [stores] in try await stores[0].lines() }), ("b", { [stores] in try await stores[1].lines() }),
            ("cloud", { try await FaultZone.lines(inPostgres: cloud) }),
        ])
    }

    /// The endpoint dies: `gateway cloud serve` over an embedded cloud is killed with SIGKILL and
    /// started again on its port while two gateways sync through it.
    func endpoint(faults: Int, preload: Int) async throws -> ScenarioResult {
        var scenario = try ServiceScenario(name: "endpoint", root: root)
        let folder = scenario.folder
        let port = try LoopbackPort.free()
        let endpoint = try await Self.startEndpoint(in: folder, port: port, gateway: gateway, clients: ["a", "b"])
        var stores: [SQLiteItems] = []
        for (index, name) in ["a", "b"].enumerated() {
            let rows = preloadRows(name, count: preload, seed: seed + UInt64(index))
            stores.append(try SQLiteItems.create(at: folder.path("\(name).sqlite"), rows: rows))
            scenario.preloaded.merge(rows.lines) { a, _ in a }
            try folder.write(
                "\(name).yaml",
                Self.gatewaySection(stateDirectory: "state-\(name)") + Self.cloudKitCloud(port: port, client: name) + "adapters:\n"
                    + Self.sqliteAdapter(name, path: "\(name).sqlite"))
            scenario.gateways.append(GatewayProcess.service("gateway-\(name)", config: "\(name).yaml", in: folder.url, gateway: gateway))
            scenario.writers.append(ItemWriter(store: stores[index], prefix: name, rate: 40))
        }
        for service in scenario.gateways { try service.start() }

        var random = SeededGenerator(seed: seed)
        try await scenario.writing(seed: seed) {
            for _ in 0..<faults {
                try await Task.sleep(for: random.pause(0.3...2.5))
                try await endpoint.kill()
                scenario.count("gateway cloud serve killed (SIGKILL)")
                try await Task.sleep(for: random.pause(0.2...2.0))
                try endpoint.start()
                _ = try await endpoint.waitForLog(/address=127\.0\.0\.1:(\d+)/)
            }
            try await Task.sleep(for: .seconds(2))
        }
        var result = try await scenario.finish(sides: [
            ("a", { [stores] in try await stores[0].lines() }), ("b", { [stores] in try await stores[1].lines() }),
            ("cloud", { try await FaultZone.lines(inEmbedded: folder.path("endpoint-cloud.sqlite")) }),
        ])
        let stopped = try await endpoint.stop(within: .seconds(30))
        result.stops["endpoint"] = "\(stopped.status) after \(stopped.took.secondsText) s"
        return result
    }

    /// The `cloud:` section of a gateway using the scenario's endpoint with the key of `client`.
    static func cloudKitCloud(port: Int, client: String, requestTimeout: String = "5s") -> String {
        """
        cloud:
          kind: cloudkit
          base_url: http://127.0.0.1:\(port)
          container: iCloud.com.example.Faults
          auth: server_to_server
          key_id: gateway-\(client)
          private_key_file: keys/\(client).pem
          poll_interval: 500ms
          request_timeout: \(requestTimeout)

        """
    }

    /// Makes a key per client, writes the endpoint's config and starts `gateway cloud serve` on
    /// `port`, over the embedded cloud `endpoint-cloud.sqlite`.
    static func startEndpoint(in folder: ScenarioFolder, port: Int, gateway: String, clients: [String], cloudExtra: String = "") async throws
        -> GatewayProcess
    {
        var keys = ""
        for client in clients {
            let keygen = try ChildProcess(
                gateway, arguments: ["cloud", "keygen", "keys/\(client).pem"], directory: folder.url.path,
                standardOutput: folder.path("keygen.out"), standardError: folder.path("keygen.err"))
            guard try await keygen.wait() == 0 else { throw HarnessFailure("gateway cloud keygen failed") }
            keys += "    - { key_id: gateway-\(client), public_key_file: keys/\(client).pem.pub }\n"
        }
        try folder.write(
            "endpoint.yaml",
            """
            gateway: { state_dir: state-endpoint }
            cloud: { kind: embedded, path: endpoint-cloud.sqlite\(cloudExtra) }
            endpoint:
              port: \(port)
              container: iCloud.com.example.Faults
              keys:
            \(keys)
            """)
        let endpoint = GatewayProcess(
            name: "endpoint", directory: folder.url, arguments: ["cloud", "serve", "--config", "endpoint.yaml"], gateway: gateway)
        try endpoint.start()
        _ = try await endpoint.waitForLog(/address=127\.0\.0\.1:(\d+)/)
        return endpoint
    }
}

/// Runs `body`, then stops and deletes `cluster`, whatever happens.
func withDestroying<T>(_ cluster: PostgresTestCluster, _ body: () async throws -> T) async throws -> T {
    do {
        let value = try await body()
        await cluster.destroy()
        return value
    } catch {
        await cluster.destroy()
        throw error
    }
}
