import Foundation
import GatewayCore
import GatewayTesting
import PostgresCloud
import PostgresSupport
import PostgresTesting

/// `gateway-harness soak`: two `gateway run` processes for minutes on a shared PostgreSQL cloud,
/// one with a SQLite and a PostgreSQL store, the other with a SQLite store, while programs write
/// all three stores steadily. Reports the change-to-cloud latency per minute (from each row's
/// write time to the moment the cloud's change feed shows it), the gateways' memory and open
/// descriptors, the server's connections, and whether every row arrived everywhere.
struct SoakRun {
    struct Minute: Encodable {
        var minute: Int
        var changes: Int
        var p50Milliseconds: Int
        var p99Milliseconds: Int
    }

    struct Sample: Encodable {
        var second: Int
        var residentMegabytes: [String: Double]
        var openDescriptors: [String: Int]
        var serverConnections: Int
    }

    struct Result: Encodable {
        var minutes: Double
        var writes: Int
        var latency: [Minute]
        var samples: [Sample]
        /// Memory growth of each gateway from the end of the first minute (warm-up) to the end.
        var residentGrowthPercent: [String: Double]
        var descriptorsAtStartAndEnd: [String: [Int]]
        var serverConnectionsAtStartAndEnd: [Int]
        var settled: Bool
        var lost: Int
        var duplicated: Int
        var stops: [String: String]
        var gatewaysThatExited: [String]
        /// Whether the leak bars apply: only runs of three minutes or more have a steady state to judge.
        var judgedForLeaks: Bool
        var passed: Bool
    }

    let minutes: Double
    let rate: Double
    let seed: UInt64
    let directory: URL
    let gateway: String

    func run() async throws -> Result {
        try? FileManager.default.removeItem(at: directory)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let cluster = try await PostgresTestCluster.start(durableCommits: true)
        return try await withDestroying(cluster) { try await run(cluster: cluster) }
    }

    private func run(cluster: PostgresTestCluster) async throws -> Result {
        var scenario = try ServiceScenario(name: "soak", root: directory)
        let folder = scenario.folder
        let cloudDatabase = try await cluster.freshDatabase("soak_cloud")
        let storeDatabase = try await cluster.freshDatabase("soak_store")
        let appA = try SQLiteItems.create(at: folder.path("a.sqlite"), rows: [])
        let appB = try SQLiteItems.create(at: folder.path("b.sqlite"), rows: [])
        let crm = try await PostgresItems.create(at: storeDatabase, rows: [])
        let cloudSection = "cloud: { kind: postgres, url: \"\(cloudDatabase)\" }\n"
        try folder.write(
            "a.yaml",
            ServerDeaths.gatewaySection(stateDirectory: "state-a").replacingOccurrences(of: "sync_interval: 1s", with: "sync_interval: 30s")
                + cloudSection + "adapters:\n" + ServerDeaths.sqliteAdapter("a", path: "a.sqlite")
                + ServerDeaths.postgresAdapter("crm", endpoint: storeDatabase))
        try folder.write(
            "b.yaml",
            ServerDeaths.gatewaySection(stateDirectory: "state-b").replacingOccurrences(of: "sync_interval: 1s", with: "sync_interval: 30s")
                + cloudSection + "adapters:\n" + ServerDeaths.sqliteAdapter("b", path: "b.sqlite"))
        let gatewayA = GatewayProcess.service("gateway-a", config: "a.yaml", in: folder.url, gateway: gateway)
        let gatewayB = GatewayProcess.service("gateway-b", config: "b.yaml", in: folder.url, gateway: gateway)
        scenario.gateways = [gatewayA, gatewayB]
        scenario.writers = [
            ItemWriter(store: appA, prefix: "a", rate: rate), ItemWriter(store: crm, prefix: "p", rate: rate),
            ItemWriter(store: appB, prefix: "b", rate: rate),
        ]
        for service in scenario.gateways { try service.start() }

        let cloud = try await PostgresCloud.open(cloudDatabase)
        let latencies = LockedValue<[Int: [Int]]>([:])
        let samples = LockedValue<[Sample]>([])
        let started = ContinuousClock.now
        let length = Duration.milliseconds(Int(minutes * 60_000))
        let gateways = scenario.gateways
        try await scenario.writing(seed: seed) {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await Self.watchLatency(cloud: cloud, started: started, until: started + length, into: latencies) }
                group.addTask {
                    while ContinuousClock.now < started + length {
                        let second = Int((ContinuousClock.now - started).components.seconds)
                        let connections = (try? await Self.connections(on: cluster.endpoint)) ?? -1
                        samples.withLock {
                            $0.append(
                                Sample(
                                    second: second,
                                    residentMegabytes: Dictionary(uniqueKeysWithValues: gateways.map { ($0.name, Double($0.residentBytes ?? 0) / 1_048_576) }),
                                    openDescriptors: Dictionary(uniqueKeysWithValues: gateways.map { ($0.name, $0.openDescriptors ?? -1) }),
                                    serverConnections: connections))
                        }
                        try await Task.sleep(for: .seconds(15))
                    }
                }
                try await group.waitForAll()
            }
        }
        // Catch the last changes' latency while settling.
        let finished = try await scenario.finish(sides: [
            ("a", { try await appA.lines() }), ("b", { try await appB.lines() }), ("crm", { try await crm.lines() }),
            ("cloud", { try await FaultZone.lines(inPostgres: cloudDatabase) }),
        ])
        await cloud.close()
        await crm.close()

        let byMinute = latencies.get()
        let minuteTable = byMinute.keys.sorted().map { minute -> Minute in
            let values = byMinute[minute]!.sorted()
            return Minute(
                minute: minute + 1, changes: values.count, p50Milliseconds: values[values.count / 2],
                p99Milliseconds: values[min(values.count - 1, Int(Double(values.count) * 0.99))])
        }
        let taken = samples.get()
        let warm = taken.first { $0.second >= 60 } ?? taken.first
        let last = taken.last
        var growth: [String: Double] = [:]
        var descriptors: [String: [Int]] = [:]
        for gateway in gateways {
            let from = warm?.residentMegabytes[gateway.name] ?? 0
            let to = last?.residentMegabytes[gateway.name] ?? 0
            growth[gateway.name] = from > 0 ? ((to - from) / from * 1000).rounded() / 10 : 0
            descriptors[gateway.name] = [warm?.openDescriptors[gateway.name] ?? -1, last?.openDescriptors[gateway.name] ?? -1]
        }
        let connections = [warm?.serverConnections ?? -1, last?.serverConnections ?? -1]
        let judged = minutes >= 3
        let leaksOK =
            !judged
            || (growth.values.allSatisfy { $0 <= 5 } && descriptors.values.allSatisfy { $0[1] <= $0[0] + 4 } && connections[1] <= connections[0] + 1)
        return Result(
            minutes: minutes, writes: finished.writes, latency: minuteTable, samples: taken, residentGrowthPercent: growth,
            descriptorsAtStartAndEnd: descriptors, serverConnectionsAtStartAndEnd: connections, settled: finished.settled, lost: finished.lost,
            duplicated: finished.duplicated, stops: finished.stops, gatewaysThatExited: finished.gatewaysThatExited, judgedForLeaks: judged,
            passed: finished.passed && leaksOK)
    }

    /// Follows the cloud's change feed every 100 ms; a record's latency is the time from its row's
    /// write (`t`) to the poll that first shows it.
    static func watchLatency(cloud: PostgresCloud, started: ContinuousClock.Instant, until end: ContinuousClock.Instant, into latencies: LockedValue<[Int: [Int]]>)
        async throws
    {
        var token: ChangeToken?
        while ContinuousClock.now < end {
            do {
                if token == nil { token = try await cloud.currentChangeToken(in: FaultZone.zone) }
                var more = true
                while more {
                    let page = try await cloud.fetchChanges(in: FaultZone.zone, since: token, limit: 2_000)
                    let now = Int64(Date().timeIntervalSince1970 * 1000)
                    let minute = Int((ContinuousClock.now - started).components.seconds / 60)
                    let values = page.modified.compactMap { record -> Int? in
                        guard case .int64(let written)? = record.fields["t"] else { return nil }
                        return Int(now - written)
                    }
                    if !values.isEmpty { latencies.withLock { $0[minute, default: []].append(contentsOf: values) } }
                    token = page.token
                    more = page.moreComing
                }
            } catch {
                // The zone does not exist until a gateway creates it.
            }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    /// Client connections to the server, as `pg_stat_activity` counts them.
    static func connections(on endpoint: PostgresEndpoint) async throws -> Int {
        try await PostgresConnectionPool.withOneConnection(to: endpoint, doing: "counting connections") { connection in
            let rows = try await connection.query(
                "SELECT count(*)::int8 FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()",
                logger: connection.logger)
            var count: Int64 = 0
            for try await (value) in rows.decode(Int64.self) { count = value }
            return Int(count)
        }
    }
}
