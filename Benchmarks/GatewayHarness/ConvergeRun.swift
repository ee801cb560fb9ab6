import Foundation
import GRDB
import GatewayTesting

/// Three gateway processes, each with its own SQLite database, sync one cloud through
/// `FaultInjectingCloud` while writers change overlapping records in all three databases. Then
/// quiet rounds without faults: every database and the cloud must hold the same records.
struct ConvergeRun {
    struct Result: Encodable {
        var gateways: Int
        var writes: Int
        var faultySyncs: Int
        var faultySyncsFailed: Int
        var quietRounds: Int
        var records: Int
        var checksums: [String: String]
        var converged: Bool
    }

    let gateways: Int
    let sharedRecords: Int
    let writes: Int
    let faultProbability: Double
    let seed: UInt64
    let directory: URL
    let harness: String

    func run() async throws -> Result {
        try? FileManager.default.removeItem(at: directory)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        for gateway in 0..<gateways {
            try HarnessData.createDatabase(at: path("db\(gateway).sqlite"), rows: [])
            let faulty = HarnessData.config(
                stateDirectory: "state\(gateway)",
                cloud: "  kind: faulty-embedded\n  path: cloud.sqlite\n  fault_probability: \(faultProbability)\n  seed: \(Int(seed) + gateway)",
                adapters: [("db\(gateway)", "db\(gateway).sqlite")], batchSize: 20)
            try Data(faulty.utf8).write(to: directory.appendingPathComponent("faulty\(gateway).yaml"))
            let quiet = HarnessData.config(
                stateDirectory: "state\(gateway)", cloud: "  kind: embedded\n  path: cloud.sqlite",
                adapters: [("db\(gateway)", "db\(gateway).sqlite")], batchSize: 20)
            try Data(quiet.utf8).write(to: directory.appendingPathComponent("quiet\(gateway).yaml"))
        }

        // Writers and gateways run at once: each gateway process syncs in a loop until the writers stop.
        let writing = LockedValue(true)
        let counts = LockedValue((syncs: 0, failed: 0))
        try await withThrowingTaskGroup(of: Void.self) { group in
            for gateway in 0..<gateways {
                group.addTask {
                    var round = 0
                    while writing.get() {
                        round += 1
                        let child = try ChildProcess(
                            harness, arguments: ["sync", "--config", "faulty\(gateway).yaml", "--progress", "none"],
                            directory: directory.path, standardOutput: path("faulty\(gateway)-\(round).out"),
                            standardError: path("faulty\(gateway)-\(round).err"))
                        let status = try await child.wait(timeout: .seconds(300))
                        // 1 is an adapter that failed on an injected fault; 75 cannot happen (own state folders).
                        guard status == 0 || status == 1 else {
                            throw HarnessFailure("gateway \(gateway) exited \(status) under faults; see faulty\(gateway)-\(round).err")
                        }
                        counts.withLock { $0 = ($0.syncs + 1, $0.failed + (status == 0 ? 0 : 1)) }
                    }
                }
            }
            group.addTask {
                defer { writing.set(false) }
                try await write()
            }
            try await group.waitForAll()
        }

        var rounds = 0
        while true {
            rounds += 1
            guard rounds <= 12 else { throw HarnessFailure("the gateways did not settle in 12 quiet rounds") }
            var quiet = true
            for gateway in 0..<gateways {
                let output = path("quiet\(gateway)-\(rounds).out")
                let child = try ChildProcess(
                    harness, arguments: ["sync", "--config", "quiet\(gateway).yaml", "--progress", "none"], directory: directory.path,
                    standardOutput: output, standardError: path("quiet\(gateway)-\(rounds).err"))
                let status = try await child.wait(timeout: .seconds(300))
                guard status == 0 else { throw HarnessFailure("quiet sync of gateway \(gateway) exited \(status)") }
                let summary = try String(contentsOfFile: output, encoding: .utf8)
                if !summary.hasPrefix("Nothing to do") { quiet = false }
            }
            if quiet { break }
        }

        var sides = ["cloud": try await HarnessData.read(cloud: path("cloud.sqlite"))]
        for gateway in 0..<gateways { sides["db\(gateway)"] = try HarnessData.read(database: path("db\(gateway).sqlite")) }
        let reference = sides["cloud"]!
        var converged = true
        for (side, lines) in sides.sorted(by: { $0.key < $1.key }) where lines != reference {
            converged = false
            let differing = Set(lines.keys).union(reference.keys).filter { lines[$0] != reference[$0] }
            print("\(side) differs from the cloud in \(differing.count) records, for example \(differing.sorted().first ?? "")")
        }
        let tally = counts.get()
        return Result(
            gateways: gateways, writes: writes, faultySyncs: tally.syncs, faultySyncsFailed: tally.failed, quietRounds: rounds,
            records: reference.count, checksums: sides.mapValues(HarnessData.checksum), converged: converged)
    }

    /// Random inserts, updates and deletes on a pool of ids shared by every database.
    private func write() async throws {
        var random = SeededGenerator(seed: seed)
        let databases = try (0..<gateways).map { try HarnessData.open(path("db\($0).sqlite")) }
        for step in 0..<writes {
            let database = databases[Int.random(in: 0..<gateways, using: &random)]
            let id = String(format: "shared-%04d", Int.random(in: 0..<sharedRecords, using: &random))
            if random.chance(0.15) {
                try await database.write { db in try db.execute(sql: "DELETE FROM items WHERE id = ?", arguments: [id]) }
            } else if random.chance(0.5) {
                // A one-field edit, so concurrent edits of other fields merge.
                let value = Int64(step)
                try await database.write { db in
                    try db.execute(sql: "UPDATE items SET n = ? WHERE id = ?", arguments: [value, id])
                }
            } else {
                let row = HarnessData.Row.generated(id: id, using: &random)
                try await database.write { db in try HarnessData.upsert(row, db: db) }
            }
            try await Task.sleep(for: .milliseconds(Int.random(in: 0...4, using: &random)))
        }
        for database in databases { try database.close() }
    }

    private func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
}
