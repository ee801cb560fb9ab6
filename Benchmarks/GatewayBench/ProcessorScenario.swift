import Foundation
import GRDB

/// What processors cost on the SQLite path: `gateway sync` as a whole process, file → embedded
/// cloud → file, without processors, with a rename of `title` on both adapters, and with a
/// Python processor process on both adapters (it adds a computed field on the way out and takes it
/// out on the way in, as `examples/processors/word_count.py` does), in alternating rounds on fresh
/// copies.
struct ProcessorProcessScenario: Scenario {
    let name = "processor-process"
    let summary =
        "Processors: `gateway sync` SQLite → embedded cloud → SQLite, without processors, with a rename on both sides, and with a Python processor process on both sides, 5 alternating rounds"

    /// A processor process computing `titleLength` on the way out and taking it out on the way in.
    static let script = """
        import json, sys
        for line in sys.stdin:
            m = json.loads(line)
            p = m.get("params") or {}
            if m["method"] == "hello":
                r = {"protocol": 1}
            else:
                records = p.get("records") or []
                for record in records:
                    fields = record["fields"]
                    if p.get("direction") == "outgoing":
                        title = fields.get("title")
                        if title is not None:
                            fields["titleLength"] = {"value": len(title["value"]), "type": "INT64"}
                    else:
                        fields.pop("titleLength", None)
                r = {"records": records}
            sys.stdout.write(json.dumps({"id": m["id"], "result": r}) + "\\n")
            sys.stdout.flush()
        """

    enum Variant: String, CaseIterable {
        case plain, rename, process

        var tableProcessors: String {
            self == .rename ? ", processors: [{ kind: rename, from: title, to: headline }]" : ""
        }
        var adapterProcessors: String {
            self == .process ? ", processors: [{ kind: process, processor: title-length }]" : ""
        }
    }

    func run(records: Int, workDirectory: URL) async throws -> [Measurement] {
        let source = workDirectory.appendingPathComponent("source.sqlite").path
        try BenchNotes.makeDatabase(source, rows: records)
        let script = workDirectory.appendingPathComponent("title_length.py")
        try Self.script.write(to: script, atomically: true, encoding: .utf8)
        var seconds: [Variant: [Double]] = [:]
        for round in 0..<GatewayProcess.rounds {
            for (index, variant) in Variant.allCases.enumerated() {
                let directory = try GatewayProcess.freshRun(round * Variant.allCases.count + index, of: source, in: workDirectory)
                try BenchNotes.makeDatabase(directory.appendingPathComponent("replica.sqlite").path, rows: 0)
                let (table, adapter) = (variant.tableProcessors, variant.adapterProcessors)
                let took = try await GatewayProcess.sync(
                    config: """
                        gateway: { state_dir: state }
                        cloud: { kind: embedded, path: cloud.sqlite }
                        adapters:
                          - { name: app, kind: sqlite, path: source.sqlite, zone: BenchNotes\(adapter), tables: [{ table: note\(table) }] }
                          - { name: replica, kind: sqlite, path: replica.sqlite, zone: BenchNotes\(adapter), tables: [{ table: note\(table) }] }
                        processors:
                          title-length: { command: python3, args: ["\(script.path)"] }
                        """, in: directory)
                let arrived = try await DatabaseQueue(path: directory.appendingPathComponent("replica.sqlite").path).read { db in
                    try Int.fetchOne(db, sql: "SELECT count(*) FROM note WHERE title IS NOT NULL") ?? 0
                }
                guard arrived == records else { throw BenchmarkError("the replica has \(arrived) titled rows, expected \(records)") }
                print(String(format: "  round %d, %@: %.2f s", round + 1, variant.rawValue, took))
                seconds[variant, default: []].append(took)
                try? FileManager.default.removeItem(at: directory)
            }
        }
        let plain = seconds[.plain] ?? []
        func ratio(_ variant: Variant) -> Double { GatewayProcess.median(zip(seconds[variant] ?? [], plain).map { $0 / $1 }) }
        return [
            Measurement(name: "sync without processors, median", value: GatewayProcess.median(plain), unit: "s"),
            Measurement(name: "sync with a rename on both sides, median", value: GatewayProcess.median(seconds[.rename] ?? []), unit: "s"),
            Measurement(name: "rename / plain, median of pairs", value: ratio(.rename), unit: "×", goal: .atMost(1.10)),
            Measurement(name: "sync with a Python processor process on both sides, median", value: GatewayProcess.median(seconds[.process] ?? []), unit: "s"),
            Measurement(name: "process / plain, median of pairs", value: ratio(.process), unit: "×"),
        ]
    }
}
