import EmbeddedCloud
import Foundation
import GRDB
import GatewayCore
import GatewayTesting
import TestScheduling
import Testing

/// Processor processes as a user meets them, on the example `examples/processors/`: a Python
/// process adds a computed field to every record the zone holds and takes it out on the way in,
/// `file_reference` carries the attachments, a processor that crashes or answers nonsense stops
/// its adapter with nothing lost until it is fixed, and `gateway check-adapter` holds a
/// processor to the protocol.
@Suite("Processor processes through the CLI", .heavy)
struct ProcessorProcessCLITests {
    static let config = "examples/processors/config.yaml"
    static let state = ".gateway/examples/processors"

    static func database(_ clone: CLITests.FreshClone, _ name: String) throws -> DatabaseQueue {
        var configuration = Configuration()
        configuration.busyMode = .timeout(30)
        return try DatabaseQueue(path: clone.directory.path("\(state)/\(name).sqlite"), configuration: configuration)
    }

    static func zone(_ clone: CLITests.FreshClone) async throws -> [String: [String: FieldValue]] {
        try await zoneContents(of: EmbeddedCloud(path: clone.directory.path("\(state)/cloud.sqlite")), zone: ZoneID(zoneName: "Documents"))
    }

    /// A copy of the example's config whose processor runs `script` (in the example's folder).
    static func config(_ clone: CLITests.FreshClone, running script: String, source: String) throws -> String {
        let folder = clone.url.appendingPathComponent("examples/processors")
        try source.write(to: folder.appendingPathComponent(script), atomically: true, encoding: .utf8)
        let text = try String(contentsOf: folder.appendingPathComponent("config.yaml"), encoding: .utf8)
            .replacingOccurrences(of: "args: [word_count.py]", with: "args: [\(script)]")
        let name = "examples/processors/\(script).yaml"
        try text.write(to: clone.url.appendingPathComponent(name), atomically: true, encoding: .utf8)
        return name
    }

    static func exampleSource(_ clone: CLITests.FreshClone) throws -> String {
        try String(contentsOf: clone.url.appendingPathComponent("examples/processors/word_count.py"), encoding: .utf8)
    }

    @Test("the example: the zone holds a computed field the stores never see, attachments arrive as files; a broken processor stops its adapter, nothing lost, until fixed")
    func computedFieldAndFailures() async throws {
        let clone = try CLITests.FreshClone()
        defer { clone.directory.remove() }
        let first = try await clone.gateway("sync", "--config", Self.config)
        #expect(first.status == 0, "\(first)")
        var zone = try await Self.zone(clone)
        #expect(zone["1"]?["wordCount"] == .int64(10), "computed from the body on the way out: \(zone["1"] ?? [:])")
        #expect(zone["3"]?["wordCount"] == .int64(5))
        let minutes = try Data(contentsOf: clone.url.appendingPathComponent("examples/processors/files/minutes.txt"))
        let archived = try await Self.database(clone, "archive").read { db in
            try Row.fetchAll(db, sql: "SELECT id, title, attachment FROM documents ORDER BY id").map { ($0[0] as Int64, $0[1] as String, $0[2] as String?) }
        }
        #expect(archived.map(\.1) == ["Planning meeting", "New logo", "Reading list"])
        #expect(archived[0].2 == AssetChecksum.of(minutes), "the archive holds the file's name in its own folder")
        #expect(FileManager.default.contents(atPath: clone.directory.path("\(Self.state)/archive-files/\(AssetChecksum.of(minutes))")) == minutes)
        let again = try await clone.gateway("sync", "--config", Self.config)
        #expect(again.status == 0, "\(again)")
        #expect(try await clone.gateway("status", "--config", Self.config, "--fail-on-changes").status == 0, "the computed field is not a change of the stores")

        // An edit in the archive goes out with the field computed again, and reaches the office.
        try await Self.database(clone, "archive").write { db in
            try db.execute(sql: "UPDATE documents SET body = 'Three short books' WHERE id = 3")
        }
        #expect(try await clone.gateway("sync", "--config", Self.config).status == 0)
        zone = try await Self.zone(clone)
        #expect(zone["3"]?["wordCount"] == .int64(3))
        #expect(try await Self.database(clone, "office").read { db in try String.fetchOne(db, sql: "SELECT body FROM documents WHERE id = 3") } == "Three short books")

        // A processor that crashes, then one that answers nonsense: the office's edit stays in the
        // office, pending and reported; the zone and the archive keep what they had.
        let source = try Self.exampleSource(clone)
        let broken = [
            ("crashes", source.replacingOccurrences(of: "        elif method == \"process\":", with: "        elif method == \"process\" and sys.exit(3):")),
            ("renames", source.replacingOccurrences(of: "    return record\n\n\ndef incoming", with: "    record[\"recordName\"] = \"other\"\n    return record\n\n\ndef incoming")),
            // Drops a store's field on the way out without giving it back: caught before anything
            // is sent, since a download would empty the column in the other store.
            ("drops", source.replacingOccurrences(of: "    return record\n\n\ndef incoming", with: "    fields.pop(\"title\", None)\n    return record\n\n\ndef incoming")),
        ]
        try await Self.database(clone, "office").write { db in
            try db.execute(sql: "UPDATE documents SET title = 'Planning meeting, revised' WHERE id = 1")
        }
        for (name, text) in broken {
            #expect(text != source, "\(name) changes the example")
            let config = try Self.config(clone, running: "\(name).py", source: text)
            let failed = try await clone.gateway("sync", "--config", config)
            #expect(failed.status == 1, "\(name): \(failed)")
            #expect(failed.stdout.contains("processor 'word-count'") && failed.stdout.contains("(processorFailed)"), "\(name) names the processor: \(failed)")
            if name == "drops" { #expect(failed.stdout.contains("does not give field 'title' back on the way in"), "\(failed)") }
            #expect(try await Self.zone(clone)["1"]?["title"] == .string("Planning meeting"), "\(name): nothing went up")
            #expect(try await Self.database(clone, "office").read { db in try String.fetchOne(db, sql: "SELECT title FROM documents WHERE id = 1") } == "Planning meeting, revised")
        }
        let fixed = try await clone.gateway("sync", "--config", Self.config)
        #expect(fixed.status == 0, "\(fixed)")
        #expect(try await Self.database(clone, "archive").read { db in try String.fetchOne(db, sql: "SELECT title FROM documents WHERE id = 1") } == "Planning meeting, revised")
    }

    /// Copies of the example, each breaking one rule of the processor protocol.
    static let brokenProcessors: [BrokenCopy] = [
        BrokenCopy("dropping", "[change(r) for r in params.get(\"records\") or []]", "[change(r) for r in (params.get(\"records\") or [])[1:]]", "answers every record of a batch"),
        BrokenCopy("one-way", "    fields.pop(FIELD, None)\n    record[\"fields\"] = fields\n    return record\n\n\ndef main", "    record[\"fields\"] = fields\n    return record\n\n\ndef main", "goes out and comes back is the record it was"),
        BrokenCopy("clocked", "        fields[FIELD] = {\"value\": len(body[\"value\"].split()), \"type\": \"INT64\"}", "        fields[FIELD] = {\"value\": len(body[\"value\"].split()), \"type\": \"INT64\"}\n        import time\n        fields[\"sentAt\"] = {\"value\": time.time_ns(), \"type\": \"INT64\"}", "the same records processed again get the same answers"),
    ]

    @Test("gateway check-adapter holds a processor to the protocol: the example passes every case, broken copies fail naming the rule; validate greets it")
    func checkProcessor() async throws {
        let clone = try CLITests.FreshClone()
        defer { clone.directory.remove() }
        let result = try await clone.gateway("check-adapter", "word-count", "--config", Self.config)
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout.contains("Checking processor word-count"), "\(result)")
        #expect(result.stdout.hasSuffix("5 of 5 case(s) passed\n"), "\(result)")

        let source = try Self.exampleSource(clone)
        try await BrokenCopy.expectEachFails(Self.brokenProcessors, of: source, entry: "word-count", in: clone) { script, text in
            try Self.config(clone, running: script, source: text)
        }

        let valid = try await clone.gateway("validate", "--config", Self.config)
        #expect(valid.status == 0, "\(valid)")
        let missing = try Self.config(clone, running: "missing.py", source: "import sys\nsys.exit(2)\n")
        let refused = try await clone.gateway("validate", "--config", missing)
        #expect(refused.status != 0, "\(refused)")
        #expect((refused.stdout + refused.stderr).contains("missing.py.yaml:44:"), "names the entry's place: \(refused)")
        #expect((refused.stdout + refused.stderr).contains("processor word-count"), "names the processor: \(refused)")

        // A `process` entry naming no processor is refused where it stands.
        let text = try String(contentsOf: clone.url.appendingPathComponent(Self.config), encoding: .utf8)
        try text.replacingOccurrences(of: "processor: word-count }\n    tables:\n      - table: documents\n        record_type: Document\n        processors:\n          - { kind: file_reference, field: attachment, folder: files }", with: "processor: word-cout }\n    tables:\n      - table: documents\n        record_type: Document\n        processors:\n          - { kind: file_reference, field: attachment, folder: files }")
            .write(to: clone.url.appendingPathComponent("examples/processors/typo.yaml"), atomically: true, encoding: .utf8)
        let typo = try await clone.gateway("validate", "--config", "examples/processors/typo.yaml")
        #expect(typo.status != 0, "\(typo)")
        #expect((typo.stdout + typo.stderr).contains("no processor named 'word-cout'"), "\(typo)")
        #expect((typo.stdout + typo.stderr).contains("word-count"), "suggests the near name: \(typo)")
    }
}
