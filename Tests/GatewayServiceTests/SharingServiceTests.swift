import Foundation
import GRDB
import GatewayConfig
import GatewayTesting
import PostgresTesting
import TestScheduling
import Testing

/// Three users of one PostgreSQL cloud, each with their own gateway: the owner shares a zone
/// read-write with one and read-only with another, and the shared-database templates of the
/// other two make, sync and retire an adapter per shared zone.
@Suite("Sharing zones between users end to end", .heavy)
struct SharingServiceTests {
    static let schema = "CREATE TABLE item (name TEXT PRIMARY KEY, title TEXT, rank INTEGER);"

    /// One user's gateway folder.
    struct UserFolder {
        let directory: TemporaryDirectory
        var url: URL { directory.url }

        /// A folder whose gateway acts as `user` of the PostgreSQL cloud at `cloud`.
        init(_ user: String, cloud: String, adapters: String, interval: String = "60s") throws {
            try self.init(
                user, cloudSection: "{ kind: postgres, url: \"\(cloud)\", schema: sharing_cloud, user: \(user) }",
                gateway: "sync_interval: \(interval), control: { listen: \"127.0.0.1:0\" }", adapters: adapters)
        }

        /// A folder whose gateway acts as `user` of the embedded cloud file at `embeddedCloud`.
        init(_ user: String, embeddedCloud path: String, gateway: String = "control: { listen: \"127.0.0.1:0\" }", adapters: String) throws {
            try self.init(user, cloudSection: "{ kind: embedded, path: \"\(path)\", user: \(user) }", gateway: gateway, adapters: adapters)
        }

        private init(_ user: String, cloudSection: String, gateway: String, adapters: String) throws {
            directory = try TemporaryDirectory(prefix: "sharing-\(user)")
            try Data(SharingServiceTests.schema.utf8).write(to: directory.url.appendingPathComponent("schema.sql"))
            let config = "gateway: { \(gateway) }\ncloud: \(cloudSection)\nadapters:\n\(adapters)\n"
            try Data(config.utf8).write(to: directory.url.appendingPathComponent("config.yaml"))
        }

        func gateway(_ arguments: String...) async throws -> CLIResult {
            try await GatewayCLI.run(arguments, in: directory.url)
        }

        func rows(_ file: String) async throws -> [String] {
            guard FileManager.default.fileExists(atPath: directory.path(file)) else { return [] }
            return try await DatabaseQueue(path: directory.path(file), configuration: Self.waiting).read { db in
                try Row.fetchAll(db, sql: "SELECT name, title, rank FROM item ORDER BY name").map { row in
                    "\(row[0] as String)|\((row[1] as String?) ?? "")|\((row[2] as Int64?).map(String.init) ?? "")"
                }
            }
        }

        func execute(_ file: String, _ sql: String) async throws {
            try await DatabaseQueue(path: directory.path(file), configuration: Self.waiting).write { try $0.execute(sql: sql) }
        }

        /// Waits for a gateway's write to the same file instead of failing at once.
        static var waiting: Configuration {
            var configuration = Configuration()
            configuration.busyMode = .timeout(10)
            return configuration
        }
    }

    static let template = """
          - { name: shared, kind: sqlite, database: shared, path: "shared/{owner}/{zone}.sqlite", seed: schema.sql, poll_interval: 100ms,
              tables: [{ table: item }] }
        """

    @Test("owner shares read-write and read-only; the participants' templates sync, refuse, retire and pick up a second zone live")
    func threeUsers() async throws {
        let cloud = "\(try await PostgresTestServer.freshDatabase("sharing"))"
        let alice = try UserFolder(
            "alice", cloud: cloud,
            adapters: """
                  - { name: notes, kind: sqlite, path: notes.sqlite, seed: schema.sql, zone: Notes, tables: [{ table: item }] }
                  - { name: tasks, kind: sqlite, path: tasks.sqlite, seed: schema.sql, zone: Tasks, tables: [{ table: item }] }
                """)
        let bob = try UserFolder("bob", cloud: cloud, adapters: Self.template, interval: "1h")
        let carol = try UserFolder("carol", cloud: cloud, adapters: Self.template)
        defer {
            for folder in [alice, bob, carol] { folder.directory.remove() }
        }
        #expect(try await alice.gateway("sync").status == 0)
        try await alice.execute("notes.sqlite", "INSERT INTO item VALUES ('n1', 'first', 1), ('n2', 'second', 2), ('n3', 'third', 3)")
        try await alice.execute("tasks.sqlite", "INSERT INTO item VALUES ('t1', 'task', 1)")
        #expect(try await alice.gateway("sync").status == 0)
        for arguments in [["share", "create", "Notes"], ["share", "add", "Notes", "bob", "--permission", "read-write"], ["share", "add", "Notes", "carol"]] {
            let result = try await GatewayCLI.run(arguments, in: alice.url)
            #expect(result.status == 0, "\(arguments): \(result)")
        }
        let listed = try await alice.gateway("share", "list", "--json")
        #expect(listed.stdout.contains("\"READ_ONLY\"") && listed.stdout.contains("\"PENDING\""), "\(listed)")
        #expect(try await bob.gateway("share", "accept", "alice", "Notes").status == 0)
        #expect(try await carol.gateway("share", "accept", "alice", "Notes").status == 0)

        // Bob's running gateway makes a SQLite file for the zone from seed: and syncs it both ways.
        let run = try RunningGateway(in: bob.directory)
        defer { if run.process.isRunning { run.process.kill() } }
        let ownerRows = try await alice.rows("notes.sqlite")
        try await run.waitFor("bob's copy of Notes") { try await bob.rows("shared/alice/Notes.sqlite") == ownerRows }
        try await bob.execute("shared/alice/Notes.sqlite", "UPDATE item SET title = 'edited by bob' WHERE name = 'n1'")
        try await run.waitFor("bob's edit in the owner's store") {
            _ = try await alice.gateway("sync")
            return try await alice.rows("notes.sqlite").contains("n1|edited by bob|1")
        }

        // Carol reads; her edit is refused and reported, and her copy stays the owner's.
        #expect(try await carol.gateway("sync").status == 0)
        #expect(try await carol.rows("shared/alice/Notes.sqlite") == alice.rows("notes.sqlite"))
        let status = try await carol.gateway("status")
        #expect(status.status == 0 && status.stdout.contains("shared.alice.Notes"), "\(status)")
        try await carol.execute("shared/alice/Notes.sqlite", "UPDATE item SET title = 'edited by carol' WHERE name = 'n2'; DELETE FROM item WHERE name = 'n3'")
        let refused = try await carol.gateway("sync")
        #expect(refused.status == 0, "\(refused)")
        #expect(refused.stdout.contains("2 local edit(s) refused by a read-only share"), "\(refused)")
        #expect(try await carol.rows("shared/alice/Notes.sqlite") == alice.rows("notes.sqlite"))
        #expect(try await alice.rows("notes.sqlite").contains("n2|second|2"))
        let kept = try String(contentsOfFile: carol.directory.path(".gateway/refused/shared.alice.Notes.jsonl"), encoding: .utf8)
        #expect(kept.contains("edited by carol") && kept.contains("\"deleted\":true"), "\(kept)")

        // A second zone shared with bob appears as a second adapter without a restart.
        #expect(try await alice.gateway("share", "create", "Tasks").status == 0)
        #expect(try await alice.gateway("share", "add", "Tasks", "bob", "--permission", "read-write").status == 0)
        // Accepting asks bob's running gateway to sync (its interval is an hour away).
        let accepted = try await bob.gateway("share", "accept", "alice", "Tasks")
        #expect(accepted.status == 0 && accepted.stdout.contains("Asked the running gateway"), "\(accepted)")
        try await run.waitFor("bob's copy of Tasks") { try await bob.rows("shared/alice/Tasks.sqlite") == ["t1|task|1"] }
        #expect(run.log().contains("shared zone joined"))

        // The owner revokes bob from Notes: his adapter retires, his copy is kept.
        let beforeRevoke = try await bob.rows("shared/alice/Notes.sqlite")
        #expect(try await alice.gateway("share", "remove", "Notes", "bob").status == 0)
        try await run.waitFor("bob's Notes adapter retiring") { run.log().contains("its adapter retired and its store is kept") }
        #expect(try await bob.rows("shared/alice/Notes.sqlite") == beforeRevoke)
        try await bob.execute("shared/alice/Notes.sqlite", "UPDATE item SET title = 'after revoke' WHERE name = 'n1'")
        try await bob.execute("shared/alice/Tasks.sqlite", "UPDATE item SET title = 'still shared' WHERE name = 't1'")
        try await run.waitFor("bob's Tasks edit in the owner's store") {
            _ = try await alice.gateway("sync")
            return try await alice.rows("tasks.sqlite") == ["t1|still shared|1"]
        }
        #expect(try await alice.rows("notes.sqlite").contains("n1|edited by bob|1"), "a revoked participant's edit never reaches the owner")
        run.process.terminate()
        #expect(try await run.process.wait(timeout: .seconds(30)) == 0, "\(run.log())")

        // A share that goes while no gateway runs is retired by the next sync, the copy kept.
        #expect(try await alice.gateway("share", "remove", "Notes", "carol").status == 0)
        let afterRevoke = try await carol.gateway("sync")
        #expect(afterRevoke.status == 0 && afterRevoke.stderr.contains("shared zone left"), "\(afterRevoke)")
        #expect(try await !carol.rows("shared/alice/Notes.sqlite").isEmpty)
    }

    @Test("a template whose pattern gives two zones one store makes an adapter for the first only, and says why for the second")
    func oneStoreForTwoZones() async throws {
        let directory = try TemporaryDirectory(prefix: "sharing-one-store")
        defer { directory.remove() }
        let cloud = directory.path("cloud.sqlite")
        func folder(_ user: String, _ adapters: String) throws -> UserFolder {
            try UserFolder(user, embeddedCloud: cloud, adapters: adapters)
        }
        let alice = try folder(
            "alice",
            "  - { name: a, kind: sqlite, path: a.sqlite, seed: schema.sql, zone: A, tables: [{ table: item }] }\n"
                + "  - { name: b, kind: sqlite, path: b.sqlite, seed: schema.sql, zone: B, tables: [{ table: item }] }")
        let erin = try folder("erin", "  - { name: one, kind: sqlite, database: shared, path: one.sqlite, seed: schema.sql, tables: [{ table: item }] }")
        defer {
            alice.directory.remove()
            erin.directory.remove()
        }
        #expect(try await alice.gateway("sync").status == 0)
        for zone in ["A", "B"] {
            #expect(try await alice.gateway("share", "add", zone, "erin").status == 0)
            #expect(try await erin.gateway("share", "accept", "alice", zone).status == 0)
        }
        let synced = try await erin.gateway("sync")
        #expect(synced.status == 1, "\(synced)")
        #expect(synced.stdout.contains("one.alice.A") && synced.stdout.contains("the same store as"), "\(synced)")
    }
}

extension SharingServiceTests {
    @Test("PostgreSQL and JSON templates make a schema and a folder per shared zone; a zone named '..' stays inside its folder and schema")
    func templatesOfEveryKind() async throws {
        let database = try await PostgresTestServer.freshDatabase("sharing_templates")
        let alice = try UserFolder(
            "alice", cloud: "\(database)",
            adapters: """
                  - { name: notes, kind: sqlite, path: notes.sqlite, seed: schema.sql, zone: Notes, tables: [{ table: item }] }
                  - { name: dots, kind: sqlite, path: dots.sqlite, seed: schema.sql, zone: "..", tables: [{ table: item }] }
                """)
        let dave = try UserFolder(
            "dave", cloud: "\(database)",
            adapters: """
                  - { name: pg, kind: postgres, database: shared, url: "\(database)", schema: "z_{owner}_{zone}", state_schema: "gw_{owner}_{zone}",
                      seed: pg.sql, tables: [{ table: item }] }
                  - { name: docs, kind: json, database: shared, directory: "docs/{owner}/{zone}", seed: empty, layout: file-per-record,
                      record_types: [{ record_type: item }] }
                """)
        defer {
            alice.directory.remove()
            dave.directory.remove()
        }
        try Data("CREATE TABLE item (name text PRIMARY KEY, title text, rank bigint);".utf8).write(to: dave.url.appendingPathComponent("pg.sql"))
        try FileManager.default.createDirectory(at: dave.url.appendingPathComponent("empty"), withIntermediateDirectories: true)
        #expect(try await alice.gateway("sync").status == 0)
        try await alice.execute("notes.sqlite", "INSERT INTO item VALUES ('n1', 'note', 1)")
        try await alice.execute("dots.sqlite", "INSERT INTO item VALUES ('d1', 'dots', 2)")
        #expect(try await alice.gateway("sync").status == 0)
        for zone in ["Notes", ".."] {
            #expect(try await alice.gateway("share", "add", zone, "dave").status == 0)
            #expect(try await dave.gateway("share", "accept", "alice", zone).status == 0)
        }
        let synced = try await dave.gateway("sync")
        #expect(synced.status == 0, "\(synced)")
        let dots = SharedAdapterTemplate.safeName("..")
        #expect(dots.hasPrefix("__-") && !dots.contains("."))
        for (zone, row) in [("Notes", "n1|note|1"), (dots, "d1|dots|2")] {
            let rows = try await PostgresCloudServiceTests.postgresContents(database, table: "\"z_alice_\(zone)\".item")
            #expect(rows == [row], "schema z_alice_\(zone)")
            let folder = dave.directory.path("docs/alice/\(zone)/item")
            let files = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
            #expect(files.count == 1, "folder \(folder): \(files)")
        }
        // Nothing was written above the folder the pattern names.
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: dave.directory.path("docs"))) == ["alice"])
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: dave.directory.path("docs/alice"))) == ["Notes", dots])
    }

    @Test("with refused_edits: keep, a read-only participant's edit stays in its store, marked failed, and the owner's next change replaces it")
    func refusedEditKept() async throws {
        let directory = try TemporaryDirectory(prefix: "sharing-keep")
        defer { directory.remove() }
        let cloud = directory.path("cloud.sqlite")
        func folder(_ user: String, _ gateway: String, _ adapters: String) throws -> UserFolder {
            try UserFolder(user, embeddedCloud: cloud, gateway: gateway, adapters: adapters)
        }
        let alice = try folder("alice", "control: { listen: \"127.0.0.1:0\" }", "  - { name: a, kind: sqlite, path: a.sqlite, seed: schema.sql, zone: A, tables: [{ table: item }] }")
        let frank = try folder("frank", "refused_edits: keep", Self.template)
        defer {
            alice.directory.remove()
            frank.directory.remove()
        }
        #expect(try await alice.gateway("sync").status == 0)
        try await alice.execute("a.sqlite", "INSERT INTO item VALUES ('r1', 'owner', 1)")
        #expect(try await alice.gateway("sync").status == 0)
        #expect(try await alice.gateway("share", "add", "A", "frank").status == 0)
        #expect(try await frank.gateway("share", "accept", "alice", "A").status == 0)
        #expect(try await frank.gateway("sync").status == 0)
        try await frank.execute("shared/alice/A.sqlite", "UPDATE item SET title = 'frank' WHERE name = 'r1'")
        let refused = try await frank.gateway("sync")
        #expect(refused.stdout.contains("permissionFailure") && !refused.stdout.contains("replaced by the owner"), "\(refused)")
        #expect(try await frank.rows("shared/alice/A.sqlite") == ["r1|frank|1"])
        #expect(!FileManager.default.fileExists(atPath: frank.directory.path(".gateway/refused")))
        try await alice.execute("a.sqlite", "UPDATE item SET title = 'owner again', rank = 2 WHERE name = 'r1'")
        #expect(try await alice.gateway("sync").status == 0)
        #expect(try await frank.gateway("sync").status == 0)
        #expect(try await frank.rows("shared/alice/A.sqlite") == alice.rows("a.sqlite"))
    }
}

@Suite("Names made from shared zones")
struct SharedNameTests {
    @Test("safe names keep plain names, and make every other name a distinct path and schema component")
    func safeNames() {
        #expect(SharedAdapterTemplate.safeName("Notes") == "Notes")
        #expect(SharedAdapterTemplate.safeName("_alice") == "_alice")
        var seen: [String: String] = [:]
        for name in ["..", ".", "a/b", "a\\b", "", "a b", "a_b", "é", "e\u{301}", String(repeating: "x", count: 41), String(repeating: "x", count: 300), "%2e%2e", "a;DROP"] {
            let safe = SharedAdapterTemplate.safeName(name)
            #expect(!safe.isEmpty && safe.utf8.count <= 40, "\(name) → \(safe)")
            #expect(safe.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "-" || $0 == "_") }, "\(safe)")
            if let earlier = seen[safe] { Issue.record("\(name) and \(earlier) both became \(safe)") }
            seen[safe] = name
        }
    }
}
