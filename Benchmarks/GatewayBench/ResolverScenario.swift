import Foundation
import GRDB
import GatewayTesting

/// What a resolver process costs per conflict: two SQLite stores on one zone both edit every
/// row's title; one uploads, then the other's `gateway sync --adapter b` (a whole process) meets
/// every row as a conflict and settles it, with the built-in `merge` policy (`merge_prefers:
/// client`) or with the Python example resolver (`examples/resolvers/longer-text/longer_text.py`,
/// the longer title, b's), in alternating pairs: both keep b's titles and upload every row.
struct ResolverProcessScenario: Scenario {
    let name = "resolver-process"
    let summary = "Resolver: `gateway sync` of a store whose every row conflicts, built-in merge vs the Python resolver, 5 alternating pairs"

    func run(records: Int, workDirectory: URL) async throws -> [Measurement] {
        let script = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
            .appendingPathComponent("examples/resolvers/longer-text/longer_text.py").path
        guard FileManager.default.fileExists(atPath: script) else {
            throw BenchmarkError("run gateway-bench from the repository's root: \(script) is missing")
        }
        let source = workDirectory.appendingPathComponent("source.sqlite").path
        try BenchNotes.makeDatabase(source, rows: records)
        var merge: [Double] = []
        var custom: [Double] = []
        for round in 0..<GatewayProcess.rounds {
            for usesResolver in [false, true] {
                let seconds = try await conflictingSync(
                    records: records, source: source, script: script, usesResolver: usesResolver,
                    in: workDirectory.appendingPathComponent("run-\(round)-\(usesResolver)"))
                print(String(format: "  pair %d, %@: %.2f s", round + 1, usesResolver ? "resolver" : "merge", seconds))
                if usesResolver { custom.append(seconds) } else { merge.append(seconds) }
            }
        }
        let (mergeMedian, customMedian) = (GatewayProcess.median(merge), GatewayProcess.median(custom))
        return [
            Measurement(name: "sync with \(records) conflicts, merge, median", value: mergeMedian, unit: "s"),
            Measurement(name: "sync with \(records) conflicts, resolver, median", value: customMedian, unit: "s"),
            Measurement(name: "resolver overhead per conflict", value: (customMedian - mergeMedian) / Double(records) * 1e6, unit: "µs"),
            Measurement(name: "resolver / merge, median of pairs", value: GatewayProcess.median(zip(custom, merge).map { $0 / $1 }), unit: "×"),
        ]
    }

    /// Times the sync of store `b` after both stores edited every title and `a` uploaded.
    private func conflictingSync(records: Int, source: String, script: String, usesResolver: Bool, in directory: URL) async throws -> Double {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        for store in ["a", "b"] {
            try FileManager.default.copyItem(atPath: source, toPath: directory.appendingPathComponent("\(store).sqlite").path)
        }
        // Both keep b's title, so both upload every row again: only the deciding differs.
        let merge = usesResolver ? "merge_policy: custom, merge_resolver: longer" : "merge_policy: merge, merge_prefers: client"
        let config = """
            gateway: { state_dir: state }
            cloud: { kind: embedded, path: cloud.sqlite }
            adapters:
              - { name: a, kind: sqlite, path: a.sqlite, zone: BenchNotes, tables: [{ table: note, \(merge) }] }
              - { name: b, kind: sqlite, path: b.sqlite, zone: BenchNotes, tables: [{ table: note, \(merge) }] }
            resolvers:
              longer: { command: python3, args: ["\(script)"] }
            """
        try Data(config.utf8).write(to: directory.appendingPathComponent("config.yaml"))
        // One store at a time: two stores seeded alike and uploading at once race for the same
        // records (a known limit: past ten rounds of conflicts the second one gives up for that sync).
        _ = try await gateway(["sync", "--adapter", "a"], in: directory)
        _ = try await gateway(["sync", "--adapter", "b"], in: directory)
        for (store, suffix) in [("a", " edited in a"), ("b", " edited in b, longer")] {
            let database = try DatabaseQueue(path: directory.appendingPathComponent("\(store).sqlite").path)
            try await database.write { db in try db.execute(sql: "UPDATE note SET title = title || ?", arguments: [suffix]) }
            try database.close()
        }
        _ = try await gateway(["sync", "--adapter", "a"], in: directory)
        let seconds = try await gateway(["sync", "--adapter", "b"], in: directory)
        let database = try DatabaseQueue(path: directory.appendingPathComponent("b.sqlite").path)
        let settled = try await database.read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM note WHERE title LIKE ?", arguments: ["% edited in b, longer"]) ?? 0
        }
        try database.close()
        guard settled == records else { throw BenchmarkError("\(settled) of \(records) conflicts settled as expected") }
        return seconds
    }

    private func gateway(_ arguments: [String], in directory: URL) async throws -> Double {
        let log = directory.appendingPathComponent("gateway.log").path
        let (status, seconds) = try await timed {
            try await ChildProcess(
                try GatewayProcess.executable(), arguments: arguments + ["--config", "config.yaml", "--progress", "none"], directory: directory.path,
                standardOutput: log, standardError: log
            ).wait(timeout: .seconds(1800))
        }
        guard status == 0 else {
            throw BenchmarkError("gateway \(arguments.joined(separator: " ")) failed (\(status)): \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
        }
        return seconds
    }
}
