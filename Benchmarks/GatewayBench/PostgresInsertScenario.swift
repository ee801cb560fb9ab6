import Foundation
import GatewayCore
import PostgresAdapter
import PostgresNIO
import PostgresSupport
import PostgresTesting

/// What change capture costs a program writing to PostgreSQL: inserts into a table the gateway
/// tracks (its capture triggers installed) against the same inserts into an untracked twin, on
/// one connection, alternating round by round. Three ways programs write: one statement of many
/// rows, a statement per row inside one transaction, and a transaction per row.
struct PostgresInsertScenario: Scenario {
    let name = "postgres-insert"
    let summary = "PostgreSQL: insert throughput into a tracked table vs an untracked one (a statement of many rows, a statement per row, a transaction per row)"

    func run(records: Int, workDirectory: URL) async throws -> [Measurement] {
        let database = try await PostgresTestServer.freshDatabase("bench_insert")
        try await PostgresConnectionPool.execute(
            ["CREATE SCHEMA tracked", "CREATE SCHEMA untracked"]
                + ["tracked", "untracked"].map { PostgresInitialSyncScenario.table.replacingOccurrences(of: "%@", with: $0) },
            on: database, doing: "setting up")
        let configuration = PostgresAdapterConfiguration(
            name: "tracked", endpoint: database, schema: "tracked", zoneID: BenchNotes.zone, tables: [PostgresTableMapping(table: "note")])
        await (try await PostgresAdapter.open(configuration)).close()  // the triggers stay; capture needs no gateway running

        let rounds = 5
        let batch = max(1, records / rounds)
        let singles = max(1, min(records, 10_000) / rounds)
        return try await PostgresConnectionPool.withOneConnection(to: database, doing: "inserting") { connection in
            var next = ["tracked": 1, "untracked": 1]
            func insert(_ schema: String, rows: Int, statement: (Int) -> String) async throws {
                let first = next[schema]!
                try await connection.query(PostgresQuery(unsafeSQL: statement(first)), logger: connection.logger)
                next[schema] = first + rows
            }
            let values = "'Note number ' || i, 'Lorem ipsum dolor sit amet, consectetur adipiscing elit. ' || i, i * 7, i / 3.0, now(), i % 2 = 0"
            func manyRows(_ schema: String) async throws -> Double {
                let (_, seconds) = try await timed {
                    try await insert(schema, rows: batch) { first in
                        "INSERT INTO \(schema).note SELECT i, \(values) FROM generate_series(\(first), \(first + batch - 1)) AS i"
                    }
                }
                return Double(batch) / seconds
            }
            func rowByRow(_ schema: String, inOneTransaction: Bool) async throws -> Double {
                let (_, seconds) = try await timed {
                    if inOneTransaction { try await connection.query("BEGIN", logger: connection.logger) }
                    for _ in 0..<singles {
                        let id = next[schema]!
                        try await connection.query(
                            "INSERT INTO \(unescaped: schema).note VALUES (\(id), 'title', 'body', 1, 1.5, now(), false)", logger: connection.logger)
                        next[schema] = id + 1
                    }
                    if inOneTransaction { try await connection.query("COMMIT", logger: connection.logger) }
                }
                return Double(singles) / seconds
            }
            var rates: [String: [Double]] = [:]
            for round in 0..<rounds {
                let order = round.isMultiple(of: 2) ? ["tracked", "untracked"] : ["untracked", "tracked"]
                for schema in order { rates["\(schema) many", default: []].append(try await manyRows(schema)) }
                for schema in order { rates["\(schema) statements", default: []].append(try await rowByRow(schema, inOneTransaction: true)) }
                for schema in order { rates["\(schema) transactions", default: []].append(try await rowByRow(schema, inOneTransaction: false)) }
            }
            let median = { (key: String) in GatewayProcess.median(rates[key]!) }
            let adapter = try await PostgresAdapter.open(configuration)
            let captured = try await adapter.pendingChangeCount()
            await adapter.close()
            let written = next["tracked"]! - 1
            guard captured == written else { throw BenchmarkError("the triggers captured \(captured) changes of \(written) rows written") }
            return [
                Measurement(name: "untracked, one statement of \(batch) rows", value: median("untracked many"), unit: "rows/s"),
                Measurement(name: "tracked, one statement of \(batch) rows", value: median("tracked many"), unit: "rows/s"),
                Measurement(name: "tracked / untracked, one statement of many rows", value: median("tracked many") / median("untracked many"), unit: "×", goal: .atLeast(0.5)),
                Measurement(name: "untracked, a statement per row, one transaction", value: median("untracked statements"), unit: "rows/s"),
                Measurement(name: "tracked, a statement per row, one transaction", value: median("tracked statements"), unit: "rows/s"),
                Measurement(
                    name: "tracked / untracked, a statement per row", value: median("tracked statements") / median("untracked statements"), unit: "×", goal: .atLeast(0.5)),
                Measurement(name: "untracked, a transaction per row", value: median("untracked transactions"), unit: "rows/s"),
                Measurement(name: "tracked, a transaction per row", value: median("tracked transactions"), unit: "rows/s"),
                Measurement(
                    name: "tracked / untracked, a transaction per row", value: median("tracked transactions") / median("untracked transactions"), unit: "×",
                    goal: .atLeast(0.5)),
            ]
        }
    }
}
