import Foundation
import GRDB
import GatewayTesting
import TestScheduling
import Testing

/// Resolver processes as a user meets them: the Python example settles concurrent edits of two
/// SQLite stores as it decides, and a resolver that crashes or answers nonsense leaves its records
/// failed and reported, each store keeping its own version, until it is fixed.
@Suite("Resolver processes through the CLI", .heavy)
struct ResolverCLITests {
    static let config = "examples/resolvers/longer-text/config.yaml"

    static func title(_ clone: CLITests.FreshClone, _ store: String, note: Int) throws -> String? {
        try clone.database("longer-text/\(store)").read { db in try String.fetchOne(db, sql: "SELECT title FROM notes WHERE id = ?", arguments: [note]) }
    }

    static func setTitle(_ clone: CLITests.FreshClone, _ store: String, note: Int, to title: String) throws {
        try clone.database("longer-text/\(store)").write { db in try db.execute(sql: "UPDATE notes SET title = ? WHERE id = ?", arguments: [title, note]) }
    }

    /// A copy of the example's config whose resolver runs `script` (in the example's folder).
    static func config(_ clone: CLITests.FreshClone, running script: String, source: String) throws -> String {
        let folder = clone.url.appendingPathComponent("examples/resolvers/longer-text")
        try source.write(to: folder.appendingPathComponent(script), atomically: true, encoding: .utf8)
        let text = try String(contentsOf: folder.appendingPathComponent("config.yaml"), encoding: .utf8)
            .replacingOccurrences(of: "args: [longer_text.py]", with: "args: [\(script)]")
        let name = "examples/resolvers/longer-text/\(script).yaml"
        try text.write(to: clone.url.appendingPathComponent(name), atomically: true, encoding: .utf8)
        return name
    }

    @Test("two stores' concurrent edits resolve through the Python resolver exactly as it decides")
    func resolvesAsTheResolverDecides() async throws {
        let clone = try CLITests.FreshClone()
        defer { clone.directory.remove() }
        let first = try await clone.gateway("sync", "--config", Self.config)
        #expect(first.status == 0, "\(first)")

        // Note 1: both change the title (the longer wins). Note 2: the laptop changes the title
        // and the desktop the body (each side's change is kept).
        try Self.setTitle(clone, "laptop", note: 1, to: "short")
        try Self.setTitle(clone, "desktop", note: 1, to: "a much longer title from the desktop")
        try Self.setTitle(clone, "laptop", note: 2, to: "the laptop's longer title for note two")
        try await clone.database("longer-text/desktop").write { db in try db.execute(sql: "UPDATE notes SET title = 'two', body = 'desktop body' WHERE id = 2") }
        let resolved = try await clone.gateway("sync", "--config", Self.config)
        #expect(resolved.status == 0, "\(resolved)")
        #expect(resolved.stdout.contains("conflict"), "the summary counts the conflicts: \(resolved)")
        let settled = try await clone.gateway("sync", "--config", Self.config)
        #expect(settled.status == 0, "\(settled)")
        for store in ["laptop", "desktop"] {
            #expect(try Self.title(clone, store, note: 1) == "a much longer title from the desktop", "\(store)")
            #expect(try Self.title(clone, store, note: 2) == "the laptop's longer title for note two", "\(store)")
            let body = try await clone.database("longer-text/\(store)").read { db in try String.fetchOne(db, sql: "SELECT body FROM notes WHERE id = 2") }
            #expect(body == "desktop body", "\(store)")
        }
    }

    @Test(
        "a resolver that crashes or answers nonsense leaves the record pending and reported, both versions kept; once fixed, the next sync resolves it",
        arguments: [
            (
                "crashes",
                "import json, sys\nfor line in sys.stdin:\n    m = json.loads(line)\n    if m['method'] != 'hello':\n        sys.exit(3)\n    print(json.dumps({'id': m['id'], 'result': {'protocol': 1}}), flush=True)\n"
            ),
            (
                "nonsense",
                "import json, sys\nfor line in sys.stdin:\n    m = json.loads(line)\n    if m['method'] == 'hello':\n        r = {'protocol': 1}\n    else:\n        r = {'resolutions': [{'recordName': c['recordName'], 'fields': {'title': {'value': 5, 'type': 'INT64'}}} for c in m['params']['conflicts']]}\n    print(json.dumps({'id': m['id'], 'result': r}), flush=True)\n"
            ),
        ])
    func brokenResolver(_ broken: (name: String, source: String)) async throws {
        let clone = try CLITests.FreshClone()
        defer { clone.directory.remove() }
        let brokenConfig = try Self.config(clone, running: "\(broken.name).py", source: broken.source)
        let first = try await clone.gateway("sync", "--config", brokenConfig)
        #expect(first.status == 0, "\(first)")

        try Self.setTitle(clone, "laptop", note: 3, to: "laptop's")
        try Self.setTitle(clone, "desktop", note: 3, to: "the desktop's longer title")
        let failed = try await clone.gateway("sync", "--config", brokenConfig)
        #expect(
            failed.stdout.contains("1 conflict(s) its resolver could not settle stay pending") && failed.stdout.contains("resolverFailed")
                && !failed.stdout.contains("gateway retry"),
            "the summary names the unsettled record and why, and asks for no retry: \(failed)")
        let status = try await clone.gateway("status", "--config", brokenConfig)
        #expect(status.stdout.contains("pending"), "the record stays pending: \(status)")
        // Each store keeps its own version: nothing was written over either.
        #expect(try Self.title(clone, "laptop", note: 3) == "laptop's")
        #expect(try Self.title(clone, "desktop", note: 3) == "the desktop's longer title")

        // The resolver fixed (the example's), the next sync asks again and settles it.
        let retried = try await clone.gateway("sync", "--config", Self.config)
        #expect(retried.status == 0, "\(retried)")
        let settled = try await clone.gateway("sync", "--config", Self.config)
        #expect(settled.status == 0, "\(settled)")
        for store in ["laptop", "desktop"] {
            #expect(try Self.title(clone, store, note: 3) == "the desktop's longer title", "\(store)")
        }
    }

    /// Copies of the example, each breaking one rule of the resolver protocol.
    static let brokenResolvers: [BrokenCopy] = [
        BrokenCopy(
            "reversed",
            "[resolve(c) for c in params.get(\"conflicts\") or []]",
            "list(reversed([resolve(c) for c in params.get(\"conflicts\") or []]))",
            "answers every conflict of a batch, in order"
        ),
        BrokenCopy(
            "untyped",
            "    return {\"recordName\": name, \"fields\": fields}",
            "    return {\"recordName\": name, \"fields\": {k: {\"value\": v[\"value\"]} for k, v in fields.items()}}",
            "a field both sides hold alike comes back as it is"
        ),
        BrokenCopy(
            "moody",
            "    return {\"recordName\": name, \"fields\": fields}",
            "    import random\n    return {\"recordName\": name, \"take\": random.choice([\"local\", \"server\"])}",
            "the same conflicts asked again get the same answers"
        ),
    ]

    @Test("gateway check-adapter holds a resolver to the protocol: the example passes every case, broken copies fail naming the rule")
    func checkResolver() async throws {
        let clone = try CLITests.FreshClone()
        defer { clone.directory.remove() }
        let result = try await clone.gateway("check-adapter", "longer-text", "--config", Self.config)
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout.contains("Checking resolver longer-text"), "\(result)")
        #expect(result.stdout.hasSuffix("7 of 7 case(s) passed\n"), "\(result)")

        let source = try String(contentsOf: clone.url.appendingPathComponent("examples/resolvers/longer-text/longer_text.py"), encoding: .utf8)
        try await BrokenCopy.expectEachFails(Self.brokenResolvers, of: source, entry: "longer-text", in: clone) { script, text in
            try Self.config(clone, running: script, source: text)
        }

        // `validate` starts each resolver and greets it: one that cannot start is named.
        let valid = try await clone.gateway("validate", "--config", Self.config)
        #expect(valid.status == 0, "\(valid)")
        let missing = Self.config.replacingOccurrences(of: "config.yaml", with: "missing.yaml")
        let text = try String(contentsOf: clone.url.appendingPathComponent(Self.config), encoding: .utf8)
        try text.replacingOccurrences(of: "args: [longer_text.py]", with: "args: [no_such_script.py]")
            .write(to: clone.url.appendingPathComponent(missing), atomically: true, encoding: .utf8)
        let refused = try await clone.gateway("validate", "--config", missing)
        #expect(refused.status != 0, "\(refused)")
        #expect(refused.stderr.contains("resolver longer-text: program python3 no_such_script.py: exited"), "\(refused)")
    }
}
