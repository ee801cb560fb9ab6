import Foundation
import GRDB

/// What a `rename` processor costs on the SQLite path: `gateway sync` as a whole process, file →
/// embedded cloud → file, with and without a rename of `title` on both adapters, in alternating
/// pairs on fresh copies.
struct ProcessorProcessScenario: Scenario {
    let name = "processor-process"
    let summary = "Processors: `gateway sync` SQLite → embedded cloud → SQLite, without and with a rename processor on both sides, 5 alternating pairs"

    func run(records: Int, workDirectory: URL) async throws -> [Measurement] {
        let source = workDirectory.appendingPathComponent("source.sqlite").path
        try BenchNotes.makeDatabase(source, rows: records)
        var plain: [Double] = []
        var renamed: [Double] = []
        for round in 0..<GatewayProcess.rounds {
            for renames in [false, true] {
                let directory = try GatewayProcess.freshRun(round * 2 + (renames ? 1 : 0), of: source, in: workDirectory)
                try BenchNotes.makeDatabase(directory.appendingPathComponent("replica.sqlite").path, rows: 0)
                let processors = renames ? ", processors: [{ kind: rename, from: title, to: headline }]" : ""
                let seconds = try await GatewayProcess.sync(
                    config: """
                        gateway: { state_dir: state }
                        cloud: { kind: embedded, path: cloud.sqlite }
                        adapters:
                          - { name: app, kind: sqlite, path: source.sqlite, zone: BenchNotes, tables: [{ table: note\(processors) }] }
                          - { name: replica, kind: sqlite, path: replica.sqlite, zone: BenchNotes, tables: [{ table: note\(processors) }] }
                        """, in: directory)
                let arrived = try await DatabaseQueue(path: directory.appendingPathComponent("replica.sqlite").path).read { db in
                    try Int.fetchOne(db, sql: "SELECT count(*) FROM note WHERE title IS NOT NULL") ?? 0
                }
                guard arrived == records else { throw BenchmarkError("the replica has \(arrived) titled rows, expected \(records)") }
                print(String(format: "  pair %d, %@: %.2f s", round + 1, renames ? "rename" : "plain", seconds))
                if renames { renamed.append(seconds) } else { plain.append(seconds) }
                try? FileManager.default.removeItem(at: directory)
            }
        }
        let ratio = GatewayProcess.median(zip(renamed, plain).map { $0 / $1 })
        return [
            Measurement(name: "sync without processors, median", value: GatewayProcess.median(plain), unit: "s"),
            Measurement(name: "sync with a rename on both sides, median", value: GatewayProcess.median(renamed), unit: "s"),
            Measurement(name: "rename / plain, median of pairs", value: ratio, unit: "×", goal: .atMost(1.10)),
        ]
    }
}
