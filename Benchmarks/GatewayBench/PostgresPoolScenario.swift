import Foundation
import Logging
import PostgresNIO
import PostgresSupport
import PostgresTesting

/// The gateway's own connection pool against PostgresNIO's `PostgresClient`, on the work the
/// gateway gives a pool: short transactions (a lookup by key) one after another, and four callers
/// at once, each pool holding at most four connections. The two alternate round by round.
struct PostgresPoolScenario: Scenario {
    let name = "postgres-pool"
    let summary = "PostgreSQL: short transactions through the gateway's pool vs PostgresNIO's PostgresClient (sequential, and four callers)"

    func run(records: Int, workDirectory: URL) async throws -> [Measurement] {
        let database = try await PostgresTestServer.freshDatabase("bench_pool")
        try await PostgresConnectionPool.execute(
            [
                "CREATE TABLE item (id int8 PRIMARY KEY, title text)",
                "INSERT INTO item SELECT i, 'item ' || i FROM generate_series(1, 10000) AS i",
            ], on: database, doing: "setting up")
        let operations = max(1_000, min(records, 20_000))
        let logger = Logger(label: "bench", factory: { _ in SwiftLogNoOpLogHandler() })

        let ours = PostgresConnectionPool(endpoint: database, maximumConnections: 4)
        var configuration: PostgresClient.Configuration
        if let socket = database.socketDirectory {
            configuration = .init(
                unixSocketPath: "\(socket)/.s.PGSQL.\(database.port)", username: database.username, password: database.password,
                database: database.database)
        } else {
            configuration = .init(
                host: database.host, port: database.port, username: database.username, password: database.password,
                database: database.database, tls: .disable)
        }
        configuration.options.maximumConnections = 4
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)

        @Sendable func oursLookup(_ id: Int) async throws {
            try await ours.transaction(doing: "looking up") { connection in
                let rows = try await connection.query("SELECT title FROM item WHERE id = \(Int64(id))", logger: connection.logger)
                for try await _ in rows {}
            }
        }
        @Sendable func clientLookup(_ id: Int) async throws {
            try await client.withTransaction(logger: logger) { connection in
                let rows = try await connection.query("SELECT title FROM item WHERE id = \(Int64(id))", logger: logger)
                for try await _ in rows {}
            }
        }
        func rate(callers: Int, _ lookup: @escaping @Sendable (Int) async throws -> Void) async throws -> Double {
            let (_, seconds) = try await timed {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for caller in 0..<callers {
                        group.addTask {
                            for index in stride(from: caller, to: operations, by: callers) { try await lookup(index % 10_000 + 1) }
                        }
                    }
                    try await group.waitForAll()
                }
            }
            return Double(operations) / seconds
        }

        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            var rates: [String: [Double]] = [:]
            // Warm both pools up first: connecting is not what is compared.
            _ = try await rate(callers: 4, oursLookup)
            _ = try await rate(callers: 4, clientLookup)
            for round in 0..<3 {
                for (label, lookup) in round.isMultiple(of: 2)
                    ? [("gateway pool", oursLookup), ("PostgresClient", clientLookup)] : [("PostgresClient", clientLookup), ("gateway pool", oursLookup)]
                {
                    rates["\(label), one caller", default: []].append(try await rate(callers: 1, lookup))
                    rates["\(label), four callers", default: []].append(try await rate(callers: 4, lookup))
                }
            }
            group.cancelAll()
            await ours.close()
            return rates.keys.sorted().map { key in
                let sorted = rates[key]!.sorted()
                return Measurement(name: "\(key): \(operations) short transactions, median of 3", value: sorted[1], unit: "transactions/s")
            }
        }
    }
}
