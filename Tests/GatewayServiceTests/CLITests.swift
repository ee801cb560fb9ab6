import Foundation
import GRDB
import GatewayConfig
import GatewayService
import GatewayTesting
import PostgresNIO
import PostgresSupport
import PostgresTesting
import TestScheduling
import Testing

/// The `gateway` executable end to end, as a user runs it on a fresh clone.
@Suite("gateway CLI", .heavy)
struct CLITests {
    /// A folder holding the repository's default config and example data.
    struct FreshClone {
        let directory: TemporaryDirectory
        var url: URL { directory.url }

        init() throws {
            directory = try TemporaryDirectory(prefix: "gateway-cli")
            try Repository.copyDefaultSetup(to: directory.url)
        }

        func gateway(_ arguments: String..., environment: [String: String] = [:], unprivileged: Bool = false) async throws -> CLIResult {
            try await GatewayCLI.run(arguments, in: url, environment: environment, unprivileged: unprivileged)
        }

        /// A connection as an app's: a running gateway writes these files too, so it waits for
        /// the write lock instead of failing at once.
        func database(_ name: String) throws -> DatabaseQueue {
            var configuration = Configuration()
            configuration.busyMode = .timeout(30)
            return try DatabaseQueue(path: directory.path(".gateway/examples/\(name).sqlite"), configuration: configuration)
        }
    }

    @Test("sync on the default config syncs the example data; a second run has nothing to do; status follows changes")
    func defaultConfig() async throws {
        let clone = try FreshClone()
        defer { clone.directory.remove() }

        let first = try await clone.gateway("sync")
        #expect(first.status == 0, "\(first)")
        #expect(
            first.stdout == """
                adapter        zone       downloaded  uploaded  conflicts  failed  result
                notes          NotesZone           0       100  0               0  synced
                notes-replica  NotesZone         100         0  0               0  synced
                docs           DocsZone            0         3  0               0  synced

                """, "\(first)")
        #expect(first.stderr.contains("notes: uploading 100 change(s)\n"), "plain progress lines when not on a terminal")
        // It closes what it opened: every SQLite file's WAL is checkpointed and removed.
        let leftOpen = (FileManager.default.enumerator(atPath: clone.directory.path(".gateway"))?.allObjects as? [String] ?? [])
            .filter { $0.hasSuffix("-wal") || $0.hasSuffix("-shm") }
        #expect(leftOpen.isEmpty, "\(leftOpen)")

        let second = try await clone.gateway("sync")
        #expect(second.status == 0, "\(second)")
        #expect(second.stdout == "Nothing to do: all 3 adapters are in sync.\n")

        let clean = try await clone.gateway("status", "--fail-on-changes")
        #expect(clean.status == 0, "\(clean)")

        try await clone.database("notes").write { db in try db.execute(sql: "UPDATE notes SET title = 'Edited' WHERE id = 7") }
        let dirty = try await clone.gateway("status", "--fail-on-changes")
        #expect(dirty.status == 1, "\(dirty)")
        #expect(dirty.stdout.contains("notes          sqlite  NotesZone  yes            1       0    400  synced"), "\(dirty)")

        let json = try await clone.gateway("status", "--json")
        let status = try JSONDecoder().decode(GatewayStatus.self, from: Data(json.stdout.utf8))
        #expect(status.hasChanges)
        #expect(status.adapters.map(\.pendingChanges) == [1, 0, 0])

        let third = try await clone.gateway("sync")
        #expect(third.status == 0, "\(third)")
        let replicated = try await clone.database("notes-replica").read { db in
            try String.fetchOne(db, sql: "SELECT title FROM notes WHERE id = 7")
        }
        #expect(replicated == "Edited")
        #expect(try await clone.gateway("status", "--fail-on-changes").status == 0)
    }

    @Test("--version prints the release")
    func version() async throws {
        let clone = try FreshClone()
        defer { clone.directory.remove() }
        let result = try await clone.gateway("--version")
        #expect(result.status == 0)
        #expect(result.stdout == GatewayVersion.current + "\n", "\(result)")
    }

    @Test("status prints every adapter when one store is unreadable: that one row carries the error, --json stays JSON, exit 3 (not 1)")
    func statusWithUnreadableStore() async throws {
        let clone = try FreshClone()
        defer { clone.directory.remove() }
        #expect(try await clone.gateway("sync").status == 0)
        // The replica's database file is replaced by a folder: it cannot be opened.
        let replica = clone.directory.path(".gateway/examples/notes-replica.sqlite")
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: replica + suffix) }
        try FileManager.default.createDirectory(atPath: replica, withIntermediateDirectories: false)

        let text = try await clone.gateway("status")
        #expect(text.status == 3, "\(text)")
        #expect(text.stdout.contains("notes          sqlite  NotesZone  no"), "the healthy adapters are shown: \(text)")
        #expect(text.stdout.contains("docs"), "\(text)")
        #expect(text.stdout.contains("notes-replica  sqlite  NotesZone  ?"), "\(text)")
        #expect(text.stdout.contains("error: notes-replica:") && text.stdout.contains("notes-replica.sqlite"), "the row's error names the store: \(text)")

        let json = try await clone.gateway("status", "--json", "--fail-on-changes")
        #expect(json.status == 3, "unhealthy wins over changes waiting: \(json)")
        let status = try JSONDecoder().decode(GatewayStatus.self, from: Data(json.stdout.utf8))
        #expect(status.adapters.map(\.name) == ["notes", "notes-replica", "docs"])
        #expect(status.adapters.map { $0.error != nil } == [false, true, false])
        #expect(status.adapters.map(\.healthState) == [.ok, .unreachable, .ok], "one health word, as /status and the page say it")
        #expect(json.stdout.contains("\"health\" : \"unreachable\""), "\(json.stdout)")
        #expect(status.hasUnreadableStores)
    }

    @Test("status needs read access only: an account that may not write sees every adapter and the change made since, and no file changes")
    func statusReadOnly() async throws {
        let clone = try FreshClone()
        defer {
            try? FolderModes.makeWritable(clone.url)
            clone.directory.remove()
        }
        #expect(try await clone.gateway("sync").status == 0)
        try await clone.database("notes").write { db in try db.execute(sql: "UPDATE notes SET title = 'Edited' WHERE id = 7") }
        try FolderModes.makeReadOnly(clone.url)
        let before = try FolderSnapshot(clone.url)

        let text = try await clone.gateway("status", unprivileged: true)
        let listing = (try? FileManager.default.contentsOfDirectory(atPath: clone.directory.path(".gateway/examples")).sorted()) ?? []
        #expect(text.status == 0, "\(text) \(listing)")
        #expect(text.stdout.contains("notes          sqlite  NotesZone  yes            1       0    400  synced"), "\(text)")
        #expect(text.stdout.contains("notes-replica  sqlite  NotesZone  no             0       0    400  synced"), "\(text)")
        #expect(
            text.stdout.contains("note: docs: counted at the gateway's last look at the store: looking again needs write access to"),
            "a kit store says its counts are those of the last sync: \(text)")

        let json = try await clone.gateway("status", "--json", "--fail-on-changes", unprivileged: true)
        #expect(json.status == 1, "changes wait: \(json)")
        let status = try JSONDecoder().decode(GatewayStatus.self, from: Data(json.stdout.utf8))
        #expect(status.adapters.map(\.pendingChanges) == [1, 0, 0])
        #expect(status.adapters.map(\.healthState) == [.pending, .ok, .ok])
        #expect(status.adapters.map { $0.note != nil } == [false, false, true])
        #expect(try FolderSnapshot(clone.url) == before, "status wrote nothing")
    }

    @Test("status as an account that may only read: a database it may not read and a synced folder that is gone are unreadable rows, exit 3")
    func statusOfVanishedStores() async throws {
        let clone = try FreshClone()
        defer {
            try? FolderModes.makeWritable(clone.url)
            clone.directory.remove()
        }
        #expect(try await clone.gateway("sync").status == 0)
        try FileManager.default.moveItem(atPath: clone.directory.path(".gateway/examples/docs"), toPath: clone.directory.path("docs-moved"))
        try FolderModes.makeReadOnly(clone.url)
        try FileManager.default.setAttributes([.posixPermissions: 0], ofItemAtPath: clone.directory.path(".gateway/examples/notes.sqlite"))

        let text = try await clone.gateway("status", unprivileged: true)
        #expect(text.status == 3, "\(text)")
        #expect(text.stdout.contains("notes-replica  sqlite  NotesZone  no             0       0    400  synced"), "\(text)")
        #expect(text.stdout.contains("error: notes: ") && text.stdout.contains("notes.sqlite cannot be read: permission denied to this user"), "\(text)")
        #expect(
            text.stdout.contains("error: docs: ") && text.stdout.contains("does not exist, though the gateway synced it before"),
            "a folder that synced and vanished is no store waiting for its first sync: \(text)")
    }

    @Test("a database path that names no file (and no seed:) is one unreadable row of status, exit 3, and a config error of sync, exit 2")
    func statusWithMissingDatabase() async throws {
        let clone = try FreshClone()
        defer { clone.directory.remove() }
        #expect(try await clone.gateway("sync").status == 0)
        let config = try String(contentsOf: clone.url.appendingPathComponent("config.yaml"), encoding: .utf8)
        var lines = config.components(separatedBy: "\n")
        // The replica's path points at a file that is not there, and nothing creates it.
        lines = lines.map { $0.contains("notes-replica.sqlite") ? $0.replacingOccurrences(of: "notes-replica.sqlite", with: "notes-typo.sqlite") : $0 }
        lines = lines.filter { !$0.contains("seed: examples/data/notes-schema.sql") }
        try lines.joined(separator: "\n").write(to: clone.url.appendingPathComponent("config.yaml"), atomically: true, encoding: .utf8)

        let status = try await clone.gateway("status")
        #expect(status.status == 3, "\(status)")
        #expect(status.stdout.contains("notes          sqlite  NotesZone  no"), "the others are shown: \(status)")
        #expect(status.stdout.contains("notes-typo.sqlite does not exist; check the path, or give 'seed: FILE.sql' to create it"), "\(status)")
        let sync = try await clone.gateway("sync")
        #expect(sync.status == 2, "\(sync)")
        #expect(!FileManager.default.fileExists(atPath: clone.directory.path(".gateway/examples/notes-typo.sqlite")))
    }

    @Test("status of a store the gateway has not set up yet says so, and creates nothing")
    func statusBeforeFirstSync() async throws {
        let clone = try FreshClone()
        defer { clone.directory.remove() }
        let before = try FolderSnapshot(clone.url)
        let text = try await clone.gateway("status")
        #expect(text.status == 0, "\(text)")
        #expect(text.stdout.contains("notes          sqlite  NotesZone  yes            0       0    400  never synced"), "\(text)")
        #expect(text.stdout.contains("notes.sqlite does not exist yet; the first sync creates it from seed:"), "\(text)")
        let after = try FolderSnapshot(clone.url)
        #expect(after == before, "status created no database, folder or state: \(after)")
    }

    @Test("sync --adapter syncs only that adapter; an unknown adapter is a usage error")
    func selectAdapter() async throws {
        let clone = try FreshClone()
        defer { clone.directory.remove() }
        let only = try await clone.gateway("sync", "--adapter", "notes")
        #expect(only.status == 0, "\(only)")
        #expect(!only.stdout.contains("notes-replica"))
        let unknown = try await clone.gateway("sync", "--adapter", "note")
        #expect(unknown.status == 2)
        #expect(
            unknown.stderr
                == "error: config.yaml has no adapter named 'note'; its adapters are notes, notes-replica, docs; did you mean 'notes'?\n")
    }

    @Test("a second sync while one holds the state folder's lock exits 75")
    func alreadySyncing() async throws {
        let clone = try FreshClone()
        defer { clone.directory.remove() }
        try FileManager.default.createDirectory(at: clone.url.appendingPathComponent(".gateway"), withIntermediateDirectories: true)
        let lock = try ProcessLock(stateDirectory: clone.directory.path(".gateway"))
        let blocked = try await clone.gateway("sync")
        withExtendedLifetime(lock) {}
        #expect(blocked.status == 75, "\(blocked)")
        #expect(blocked.stderr.hasPrefix("error: another gateway process (process \(getpid())) is syncing with state folder"))
    }

    @Test("a failed adapter exits 1 and the summary says why")
    func syncFailure() async throws {
        let clone = try FreshClone()
        defer { clone.directory.remove() }
        // A newer gateway (model version 2) writes the zone; this one (version 1) must refuse it.
        let newer = try String(contentsOf: clone.url.appendingPathComponent("config.yaml"), encoding: .utf8)
            .replacingOccurrences(of: "compatibility_version: 1", with: "compatibility_version: 2")
        try Data(newer.utf8).write(to: clone.url.appendingPathComponent("newer.yaml"))
        #expect(try await clone.gateway("sync", "--config", "newer.yaml", "--adapter", "notes").status == 0)

        let result = try await clone.gateway("sync", "--adapter", "notes-replica")
        #expect(result.status == 1, "\(result)")
        #expect(result.stdout.contains("notes-replica  NotesZone           0         0  0               0  failed"), "\(result)")
        #expect(result.stdout.contains("error: adapter notes-replica: "), "\(result)")
        #expect(result.stdout.contains("(higherModelVersionFound)"), "\(result)")
        let rows = try await clone.database("notes-replica").read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM notes") }
        #expect(rows == 0, "nothing from the newer model was applied")
    }

    @Test("validate checks config, cloud and tables and writes nothing")
    func validate() async throws {
        let clone = try FreshClone()
        defer { clone.directory.remove() }
        let before = try FolderSnapshot(clone.url)
        let result = try await clone.gateway("validate")
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout == "config.yaml is valid: embedded cloud, 3 adapter(s) (notes, notes-replica, docs)\n")
        #expect(try FolderSnapshot(clone.url) == before)
    }

    @Test(
        "every example config validates",
        arguments: ["minimal.yaml", "two-apps.yaml", "service.yaml", "encrypted.yaml", "shared-postgres-cloud.yaml", "sqlite-to-postgres.yaml"])
    func exampleConfig(_ name: String) async throws {
        let clone = try FreshClone()
        defer { clone.directory.remove() }
        let database = name.contains("postgres") ? try await PostgresTestServer.freshDatabase("example") : nil
        if let database, name == "sqlite-to-postgres.yaml" {
            // The table the example's comment asks for.
            try await PostgresConnectionPool.execute(
                [
                    "CREATE SCHEMA crm",
                    """
                    CREATE TABLE crm.notes (id integer PRIMARY KEY, title text NOT NULL, body text NOT NULL DEFAULT '',
                        pinned boolean NOT NULL DEFAULT false, rating double precision, created_at timestamptz NOT NULL, thumbnail bytea)
                    """,
                ], on: database, doing: "creating the example's table")
        }
        let cloudURL = database.map { "\($0)" } ?? ""
        let result = try await clone.gateway(
            "validate", "--config", "examples/\(name)",
            environment: [
                "GATEWAY_TOKEN": "example-token", "NOTES_KEY": Data(repeating: 7, count: 32).base64EncodedString(),
                "GATEWAY_CLOUD_URL": cloudURL, "CRM_URL": cloudURL,
            ])
        #expect(result.status == 0, "\(result)")
        #expect(result.stdout.hasPrefix("examples/\(name) is valid"))
        if let database, name == "sqlite-to-postgres.yaml" {
            // Both adapters at once (`parallelism: 2`): one sync brings every note into PostgreSQL.
            let sync = try await clone.gateway("sync", "--config", "examples/\(name)", environment: ["CRM_URL": cloudURL])
            #expect(sync.status == 0, "\(sync)")
            let copied = try await PostgresConnectionPool.withOneConnection(to: database, doing: "counting") { connection in
                var count: Int64 = -1
                for try await value in try await connection.query("SELECT count(*)::int8 FROM crm.notes", logger: connection.logger)
                    .decode(Int64.self)
                {
                    count = value
                }
                return count
            }
            #expect(copied == 50, "the example's 50 notes are in crm.notes after one sync")
            let again = try await clone.gateway("sync", "--config", "examples/\(name)", environment: ["CRM_URL": cloudURL])
            #expect(again.status == 0 && again.stdout.contains("Nothing to do"), "\(again)")
        }
    }

    @Test("the example configs in the repository are the ones tested")
    func examplesAreListed() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: Repository.root.appendingPathComponent("examples").path)
            .filter { $0.hasSuffix(".yaml") }.sorted()
        #expect(
            names == [
                "cloudkit-client.yaml", "cloudkit-endpoint.yaml", "encrypted.yaml", "minimal.yaml", "service.yaml", "shared-postgres-cloud.yaml",
                "sqlite-to-postgres.yaml", "two-apps.yaml",
            ])
    }

    @Test("the CloudKit examples work together: keygen, cloud serve, then validate and sync through the endpoint")
    func cloudKitExamples() async throws {
        let clone = try FreshClone()
        defer { clone.directory.remove() }
        let keygen = try await clone.gateway("cloud", "keygen", ".gateway/keys/site-a.pem")
        #expect(keygen.status == 0, "\(keygen)")
        let endpoint = try await CloudKitServiceTests.Endpoint.start(
            in: clone.directory, config: "examples/cloudkit-endpoint.yaml", environment: ["CLOUDKIT_ENDPOINT_PORT": "0"])
        defer { if endpoint.process.isRunning { endpoint.process.kill() } }
        let environment = ["CLOUDKIT_URL": "http://127.0.0.1:\(endpoint.port)"]
        let validate = try await clone.gateway("validate", "--config", "examples/cloudkit-client.yaml", environment: environment)
        #expect(validate.status == 0 && validate.stdout.hasPrefix("examples/cloudkit-client.yaml is valid"), "\(validate)")
        let sync = try await clone.gateway("sync", "--config", "examples/cloudkit-client.yaml", environment: environment)
        #expect(sync.status == 0 && sync.stdout.contains("synced"), "\(sync)")
        let zones = try await clone.gateway("zones", "--config", "examples/cloudkit-client.yaml", environment: environment)
        #expect(zones.stdout.contains("NotesZone"), "\(zones)")
        #expect(try await endpoint.stop() == 0, "\(endpoint.log())")
    }

    @Test("a missing config file, an unknown option and a missing argument are usage errors (exit 2)")
    func usageErrors() async throws {
        let directory = try TemporaryDirectory(prefix: "gateway-usage")
        defer { directory.remove() }
        let missing = try await GatewayCLI.run(["status"], in: directory.url)
        #expect(missing.status == 2)
        #expect(
            missing.stderr
                == "error: config.yaml: cannot read the configuration: it does not exist; pass --config PATH or run `gateway init`\n")
        #expect(try await GatewayCLI.run(["sync", "--bogus"], in: directory.url).status == 2)
        #expect(try await GatewayCLI.run(["reset"], in: directory.url).status == 2)
        #expect(try await GatewayCLI.run(["--help"], in: directory.url).status == 0)
    }

    @Test("init writes a starter config that validates, and refuses to overwrite it")
    func initCommand() async throws {
        let directory = try TemporaryDirectory(prefix: "gateway-init")
        defer { directory.remove() }
        let first = try await GatewayCLI.run(["init"], in: directory.url)
        #expect(first.status == 0, "\(first)")
        #expect(try await GatewayCLI.run(["validate"], in: directory.url).status == 0)
        let again = try await GatewayCLI.run(["init"], in: directory.url)
        #expect(again.status == 2)
        #expect(again.stderr == "error: config.yaml already exists; pass --force to replace it\n")
        #expect(try await GatewayCLI.run(["init", "--force"], in: directory.url).status == 0)
    }

    @Test("keygen writes a 256-bit key readable by its owner only, and never replaces one")
    func keygen() async throws {
        let directory = try TemporaryDirectory(prefix: "gateway-keygen")
        defer { directory.remove() }
        let result = try await GatewayCLI.run(["keygen", "--id", "k2"], in: directory.url)
        #expect(result.status == 0, "\(result)")
        let path = directory.path(".gateway/keys/k2.key")
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(Data(base64Encoded: text.trimmingCharacters(in: .newlines))?.count == 32)
        #expect(result.stdout.contains("- { id: k2, file: .gateway/keys/k2.key }"))

        let again = try await GatewayCLI.run(["keygen", "--id", "k2"], in: directory.url)
        #expect(again.status == 2)
        #expect(try String(contentsOfFile: path, encoding: .utf8) == text, "the existing key is untouched")
        let other = try await GatewayCLI.run(["keygen", "--id", "k3"], in: directory.url)
        #expect(try String(contentsOfFile: directory.path(".gateway/keys/k3.key"), encoding: .utf8) != text)
        #expect(other.status == 0)
    }

    @Test("a key replaced by another under the same id is refused before anything is encrypted with it; keygen shows a key file's fingerprint")
    func keyReplacedUnderItsId() async throws {
        let clone = try FreshClone()
        defer { clone.directory.remove() }
        let first = Data(repeating: 7, count: 32).base64EncodedString()
        let other = Data(repeating: 9, count: 32).base64EncodedString()
        let synced = try await clone.gateway("sync", "--config", "examples/encrypted.yaml", environment: ["NOTES_KEY": first])
        #expect(synced.status == 0, "\(synced)")
        let record = clone.url.appendingPathComponent(".gateway/encrypted/key-fingerprints.json")
        let recorded = try String(contentsOf: record, encoding: .utf8)
        #expect(recorded.contains("\"notes-2026\""), "\(recorded)")

        let refused = try await clone.gateway("sync", "--config", "examples/encrypted.yaml", environment: ["NOTES_KEY": other])
        #expect(refused.status == 2, "\(refused)")
        #expect(refused.stderr.contains("key notes-2026 in examples/encrypted.yaml is not the key this gateway synced with under that id"), "\(refused)")
        let validated = try await clone.gateway("validate", "--config", "examples/encrypted.yaml", environment: ["NOTES_KEY": other])
        #expect(validated.status == 2, "validate refuses it too: \(validated)")
        #expect(!refused.stderr.contains(other) && !refused.stderr.contains(first), "no key in the message")
        #expect(try String(contentsOf: record, encoding: .utf8) == recorded, "the record keeps the key that was used")
        let again = try await clone.gateway("sync", "--config", "examples/encrypted.yaml", environment: ["NOTES_KEY": first])
        #expect(again.status == 0, "\(again)")

        // A gateway whose first sync meets values its key cannot open records nothing: the right
        // key, put back, is taken.
        // (A new gateway on the same cloud: everything but the cloud file goes.)
        let state = clone.url.appendingPathComponent(".gateway/encrypted")
        for name in try FileManager.default.contentsOfDirectory(atPath: state.path) where name != "cloud.sqlite" {
            try FileManager.default.removeItem(at: state.appendingPathComponent(name))
        }
        let wrongFirst = try await clone.gateway("sync", "--config", "examples/encrypted.yaml", environment: ["NOTES_KEY": other])
        #expect(wrongFirst.stdout.contains("undecryptableField"), "the records that do not open are listed: \(wrongFirst)")
        let afterWrongKey = (try? String(contentsOf: record, encoding: .utf8)) ?? ""
        #expect(!afterWrongKey.contains("notes-2026"), "a key that opened nothing is not recorded: \(afterWrongKey)")
        let right = try await clone.gateway("sync", "--config", "examples/encrypted.yaml", environment: ["NOTES_KEY": first])
        #expect(right.status == 0, "\(right)")
        let healed = try await clone.gateway("status", "--failed", "--config", "examples/encrypted.yaml", environment: ["NOTES_KEY": first])
        #expect(!healed.stdout.contains("undecryptableField"), "the right key opens the records left out: \(healed)")

        // The fingerprint an operator compares across machines is the one the record holds.
        let keyFile = clone.url.appendingPathComponent("first.key")
        try Data((first + "\n").utf8).write(to: keyFile)
        let shown = try await clone.gateway("keygen", "--fingerprint", "first.key")
        #expect(shown.status == 0, "\(shown)")
        let fingerprint = try #require(shown.stdout.split(separator: " ").first.map(String.init))
        #expect(fingerprint.count == 8)
        #expect(recorded.contains("\"\(fingerprint)\""), "\(recorded) \(shown)")
    }

    @Test("reset resyncs an adapter in full without duplicating anything")
    func reset() async throws {
        let clone = try FreshClone()
        defer { clone.directory.remove() }
        #expect(try await clone.gateway("sync").status == 0)
        let result = try await clone.gateway("reset", "--adapter", "notes-replica")
        #expect(result.status == 0, "\(result)")
        let pending = try await clone.gateway("status", "--fail-on-changes")
        #expect(pending.status == 1, "a reset adapter has everything to send again")

        let resync = try await clone.gateway("sync")
        #expect(resync.status == 0, "\(resync)")
        // Every record is downloaded again and matches the local row: nothing is written,
        // uploaded or counted as a conflict, and the summary says what the full resync did.
        #expect(!resync.stdout.contains("Nothing to do"), "\(resync)")
        #expect(
            resync.stdout.contains(
                "note: adapter notes-replica: 100 record(s) held the same values as the cloud and were adopted as synced (nothing written)"),
            "\(resync)")
        let counts = try await clone.database("notes-replica").read { db in
            try [Int.fetchOne(db, sql: "SELECT COUNT(*) FROM notes"), Int.fetchOne(db, sql: "SELECT COUNT(*) FROM tags")]
        }
        #expect(counts == [50, 5])
        #expect(try await clone.gateway("status", "--fail-on-changes").status == 0)
        #expect(!result.stderr.contains("warning"), "nothing was pending: \(result)")

        // A change not yet synced: reset says it joins the zone and how to keep it, and the
        // sync that follows names the record whose edit lost in its progress lines.
        try await clone.database("notes-replica").write { db in try db.execute(sql: "UPDATE notes SET title = 'edited here' WHERE id = 1") }
        let warned = try await clone.gateway("reset", "--adapter", "notes-replica")
        #expect(warned.status == 0, "\(warned)")
        #expect(warned.stderr.contains("warning: adapter notes-replica had 1 local change(s) not yet synced"), "\(warned)")
        #expect(warned.stderr.contains("--store-wins notes-replica"), "\(warned)")
        let joined = try await clone.gateway("sync", "--progress", "lines")
        #expect(joined.status == 0, "\(joined)")
        #expect(joined.stderr.contains("notes-replica: conflict Note.1 policy=merge resolution=serverWon"), "\(joined)")
    }

    @Test("retry sends failed records again once the cause is fixed")
    func retry() async throws {
        let clone = try FreshClone()
        defer { clone.directory.remove() }
        let config = clone.url.appendingPathComponent("config.yaml")
        let original = try String(contentsOf: config, encoding: .utf8)
        let small = original.replacingOccurrences(
            of: "  path: .gateway/cloud.sqlite", with: "  path: .gateway/cloud.sqlite\n  limits: { max_record_size: 2KB }")
        try Data(small.utf8).write(to: config)
        #expect(try await clone.gateway("sync").status == 0)
        try await clone.database("notes").write { db in
            try db.execute(sql: "UPDATE notes SET body = ? WHERE id = 1", arguments: [String(repeating: "long text ", count: 400)])
        }
        let failing = try await clone.gateway("sync")
        #expect(failing.status == 0, "a failed record does not fail the adapter: \(failing)")
        #expect(failing.stdout.contains("note: adapter notes has 1 failed record(s)"), "\(failing)")
        let status = try JSONDecoder().decode(GatewayStatus.self, from: Data(try await clone.gateway("status", "--json").stdout.utf8))
        #expect(status.adapters.first?.failedRecords == 1)
        #expect(status.adapters.first?.failures == nil, "the list only when asked for")
        let table = try await clone.gateway("status").stdout
        #expect(table.contains("NotesZone  yes") && table.contains("1    400  failing records"), "\(table)")
        #expect(!table.contains("failed records of"), "\(table)")
        // The list, read-only: what failed and why, without the service's status page.
        let listed = try await clone.gateway("status", "--failed").stdout
        #expect(listed.contains("failed records of notes:\n  Note.1  limitExceeded  record "), "\(listed)")
        let listedJSON = try JSONDecoder().decode(GatewayStatus.self, from: Data(try await clone.gateway("status", "--failed", "--json").stdout.utf8))
        let failures = listedJSON.adapters.first { $0.name == "notes" }?.failures
        #expect(failures?.map(\.recordName) == ["Note.1"])
        #expect(failures?.first?.code == "limitExceeded")
        #expect(listedJSON.adapters.first { $0.name != "notes" }?.failures == [])

        try Data(original.utf8).write(to: config)
        let retried = try await clone.gateway("retry")
        #expect(retried.status == 0, "\(retried)")
        #expect(retried.stdout.hasPrefix("retrying 1 failed record(s)\n"), "\(retried)")
        let body = try await clone.database("notes-replica").read { db in try String.fetchOne(db, sql: "SELECT body FROM notes WHERE id = 1") }
        #expect(body?.count == 4_000)
    }

    @Test("status sees a synced table rebuilt by a migration (its change capture gone) and says what the next sync does")
    func statusSeesARebuiltTable() async throws {
        let clone = try FreshClone()
        defer { clone.directory.remove() }
        #expect(try await clone.gateway("sync").status == 0)
        try await clone.database("notes").write { db in
            let create = try #require(try String.fetchOne(db, sql: "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'notes'"))
            try db.execute(sql: "ALTER TABLE notes RENAME TO notes_before")
            try db.execute(sql: create)
            try db.execute(sql: "INSERT INTO notes SELECT * FROM notes_before")
            try db.execute(sql: "DROP TABLE notes_before")
        }
        let status = try JSONDecoder().decode(GatewayStatus.self, from: Data(try await clone.gateway("status", "--json").stdout.utf8))
        let notes = try #require(status.adapters.first { $0.name == "notes" })
        #expect(notes.hasChanges, "nothing captured the rebuild's changes: the store is not known to be synced")
        #expect(notes.note?.contains("table notes was created again since the last sync") == true, "\(notes)")
        #expect(notes.note?.contains("--store-wins notes") == true)
        #expect(try await clone.gateway("status", "--fail-on-changes").status == 1)
        #expect(try await clone.gateway("sync").status == 0)
        let after = try JSONDecoder().decode(GatewayStatus.self, from: Data(try await clone.gateway("status", "--json").stdout.utf8))
        #expect(after.adapters.first { $0.name == "notes" }?.note == nil, "the sync put the capture back")

        // A table added to the configuration: its rows are not synced yet.
        try await clone.database("notes").write { db in
            try db.execute(sql: "CREATE TABLE extra (id INTEGER PRIMARY KEY, title TEXT); INSERT INTO extra VALUES (1, 'one')")
        }
        let config = clone.url.appendingPathComponent("config.yaml")
        let yaml = try String(contentsOf: config, encoding: .utf8)
        try Data(
            yaml.replacingOccurrences(of: "      - table: note_tags\n", with: "      - table: extra\n        record_name: \"<Type>.<pk>\"\n      - table: note_tags\n", options: [], range: yaml.range(of: "      - table: note_tags\n"))
                .utf8
        ).write(to: config)
        let added = try JSONDecoder().decode(GatewayStatus.self, from: Data(try await clone.gateway("status", "--json", "--adapter", "notes").stdout.utf8))
        #expect(added.adapters.first?.hasChanges == true)
        let addedText = try await clone.gateway("status", "--adapter", "notes")
        #expect(added.adapters.first?.note?.contains("table extra is configured but not synced yet") == true, "\(added) \(addedText)")
    }

    @Test("the embedded cloud put back to an older copy stops the zone's adapters instead of rolling every store back; reset and --store-wins put the newest data back")
    func cloudRestoredFromACopy() async throws {
        let clone = try FreshClone()
        defer { clone.directory.remove() }
        #expect(try await clone.gateway("sync").status == 0)
        let cloud = clone.directory.path(".gateway/cloud.sqlite")
        let copy = clone.directory.path("cloud-copy.sqlite")
        try DatabaseQueue(path: cloud).backup(to: try DatabaseQueue(path: copy))
        try await clone.database("notes").write { db in
            try db.execute(sql: "UPDATE notes SET title = 'after the copy' WHERE id = 7; INSERT INTO notes (id, title, body, created_at) VALUES (1000, 'new', 'made after the copy', '2026-11-29T10:00:00Z')")
        }
        #expect(try await clone.gateway("sync").status == 0)
        func replicaTitles() async throws -> [String] {
            try await clone.database("notes-replica").read { db in try String.fetchAll(db, sql: "SELECT title FROM notes WHERE id IN (7, 1000) ORDER BY id") }
        }
        #expect(try await replicaTitles() == ["after the copy", "new"])

        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: cloud + suffix) }
        try FileManager.default.copyItem(atPath: copy, toPath: cloud)
        let stopped = try await clone.gateway("sync")
        #expect(stopped.status == 1, "\(stopped)")
        #expect(stopped.stdout.contains("changeTokenAhead") || stopped.stderr.contains("changeTokenAhead"), "\(stopped)")
        #expect(try await replicaTitles() == ["after the copy", "new"], "nothing rolled back")

        for adapter in ["notes", "notes-replica"] { #expect(try await clone.gateway("reset", "--adapter", adapter).status == 0) }
        let restored = try await clone.gateway("sync", "--store-wins", "notes")
        #expect(restored.status == 0, "\(restored)")
        #expect(try await clone.gateway("sync").status == 0)
        #expect(try await replicaTitles() == ["after the copy", "new"])
        // The zone syncs again both ways.
        try await clone.database("notes-replica").write { db in try db.execute(sql: "UPDATE notes SET title = 'edited in the replica' WHERE id = 1000") }
        #expect(try await clone.gateway("sync").status == 0)
        let title = try await clone.database("notes").read { db in try String.fetchOne(db, sql: "SELECT title FROM notes WHERE id = 1000") }
        #expect(title == "edited in the replica")
    }

    @Test("--store-wins says when it decided nothing, and is refused for an adapter the sync leaves out")
    func storeWinsFeedback() async throws {
        let clone = try FreshClone()
        defer { clone.directory.remove() }
        #expect(try await clone.gateway("sync").status == 0)
        let idle = try await clone.gateway("sync", "--store-wins", "notes")
        #expect(idle.status == 0, "\(idle)")
        #expect(idle.stdout.contains("note: --store-wins notes decided nothing"), "\(idle)")
        #expect(idle.stdout.contains("`gateway reset --adapter notes` first"), "\(idle)")
        let leftOut = try await clone.gateway("sync", "--adapter", "notes", "--store-wins", "notes-replica")
        #expect(leftOut.status == 2, "\(leftOut)")
        #expect(leftOut.stderr.contains("--store-wins names adapter 'notes-replica', which this sync leaves out; add --adapter notes-replica"), "\(leftOut)")

        // The documented way to make it the truth: forget its state, then let it win the join.
        try await clone.database("notes").write { db in try db.execute(sql: "UPDATE notes SET title = 'from the backup' WHERE id = 1") }
        try await clone.database("notes-replica").write { db in try db.execute(sql: "UPDATE notes SET title = 'newer elsewhere' WHERE id = 1") }
        #expect(try await clone.gateway("sync", "--adapter", "notes-replica").status == 0)
        #expect(try await clone.gateway("reset", "--adapter", "notes").status == 0)
        let wins = try await clone.gateway("sync", "--adapter", "notes", "--store-wins", "notes")
        #expect(wins.status == 0 && !wins.stdout.contains("decided nothing"), "\(wins)")
        #expect(try await clone.gateway("sync").status == 0)
        let title = try await clone.database("notes-replica").read { db in try String.fetchOne(db, sql: "SELECT title FROM notes WHERE id = 1") }
        #expect(title == "from the backup")
    }

    @Test("a record_name changed on a synced table is refused before anything is written: its records would fork from the zone's")
    func renamedRecordsRefused() async throws {
        let clone = try FreshClone()
        defer { clone.directory.remove() }
        #expect(try await clone.gateway("sync").status == 0)
        let config = clone.url.appendingPathComponent("config.yaml")
        let yaml = try String(contentsOf: config, encoding: .utf8)
        let first = try #require(yaml.range(of: "        record_type: Note\n        record_name: \"<Type>.<pk>\"\n"))
        try Data(yaml.replacingCharacters(in: first, with: "        record_type: Note\n        record_name: \"note-<pk>\"\n").utf8).write(to: config)
        let refused = try await clone.gateway("sync")
        #expect(refused.status == 2, "\(refused)")
        #expect(
            refused.stderr.contains(
                "the record_name configured for table notes would give its rows other names than those they were synced under, leaving the zone's records behind"),
            "\(refused)")
        #expect(try await clone.gateway("status").status == 3, "status names it as the store that does not match")

        // A table added beside synced ones whose names it could take: the advice is not to
        // rename the synced records.
        try await clone.database("notes").write { db in try db.execute(sql: "CREATE TABLE extra (id TEXT PRIMARY KEY, title TEXT)") }
        try Data(yaml.replacingOccurrences(of: "      - table: tags\n", with: "      - table: extra\n      - table: tags\n", options: [], range: yaml.range(of: "      - table: tags\n")).utf8)
            .write(to: config)
        let collision = try await clone.gateway("sync", "--adapter", "notes")
        #expect(collision.status == 2, "\(collision)")
        #expect(collision.stderr.contains("is synced already under its names, which another record_name would change"), "\(collision)")
    }

    @Test("status lists a JSON file that stopped parsing since the last sync, and forgets it once fixed, without a sync")
    func statusSeesFilesBetweenSyncs() async throws {
        let clone = try FreshClone()
        defer { clone.directory.remove() }
        #expect(try await clone.gateway("sync").status == 0)
        let broken = clone.url.appendingPathComponent(".gateway/examples/docs/Article/broken.json")
        try Data("{ \"title\": ".utf8).write(to: broken)
        func docs() async throws -> AdapterStatus? {
            let status = try JSONDecoder().decode(GatewayStatus.self, from: Data(try await clone.gateway("status", "--failed", "--json").stdout.utf8))
            return status.adapters.first { $0.name == "docs" }
        }
        let failing = try await docs()
        #expect(failing?.failures?.map(\.recordName) == ["broken"], "\(String(describing: failing))")
        #expect(failing?.failures?.first?.code == "invalidJSON")
        #expect(failing?.hasChanges == true, "a file the cloud has not seen, as a record the cloud refused")
        #expect(try await clone.gateway("status", "--fail-on-changes").status == 1)
        try FileManager.default.removeItem(at: broken)
        let fixed = try await docs()
        #expect(fixed?.failures == [] && fixed?.hasChanges == false, "\(String(describing: fixed))")
    }

    @Test("zones lists the cloud's zones and the adapters bound to them")
    func zones() async throws {
        let clone = try FreshClone()
        defer { clone.directory.remove() }
        #expect(try await clone.gateway("zones").stdout == "The cloud has no zones yet; `gateway sync` creates them.\n")
        #expect(try await clone.gateway("sync").status == 0)
        let result = try await clone.gateway("zones")
        #expect(result.status == 0)
        #expect(result.stdout == "zone       owner        adapters\nDocsZone   (this user)  docs\nNotesZone  (this user)  notes, notes-replica\n")
    }

    @Test("encrypted fields: no plaintext in the cloud's files, the replica reads every value, a gateway without the key stops")
    func encryptedFields() async throws {
        let clone = try FreshClone()
        defer { clone.directory.remove() }
        #expect(try await clone.gateway("keygen", "--id", "k1").status == 0)
        let configURL = clone.url.appendingPathComponent("config.yaml")
        let encrypted = try String(contentsOf: configURL, encoding: .utf8)
            .replacingOccurrences(of: "cloud:\n", with: "encryption:\n  keys: [{ id: k1, file: .gateway/keys/k1.key }]\n\ncloud:\n")
            .replacingOccurrences(
                of: "        columns: { created_at: iso8601 }",
                with: "        columns: { created_at: iso8601 }\n        encrypted: [title, body, rating, created_at, thumbnail]")
        try Data(encrypted.utf8).write(to: configURL)

        let sync = try await clone.gateway("sync")
        #expect(sync.status == 0, "\(sync)")
        let select = "SELECT id, title, body, pinned, rating, created_at, hex(thumbnail) FROM notes ORDER BY id"
        let original = try await clone.database("notes").read { db in try Row.fetchAll(db, sql: select).map(\.description) }
        let replica = try await clone.database("notes-replica").read { db in try Row.fetchAll(db, sql: select).map(\.description) }
        #expect(original.count == 50)
        #expect(replica.count == 50)
        // The replica stores timestamps in its own ISO-8601 form; compare everything else exactly.
        let strip: (String) -> String = { $0.replacingOccurrences(of: ".000Z", with: "Z") }
        #expect(replica.map(strip) == original.map(strip))

        let texts = try await clone.database("notes").read { db in
            try Row.fetchAll(db, sql: "SELECT title, body, thumbnail FROM notes").flatMap { row -> [Data] in
                var needles = [Data((row["title"] as String).utf8), Data((row["body"] as String).utf8)]
                if let blob = row["thumbnail"] as Data? { needles.append(blob) }
                return needles
            }
        }
        let gatewayFolder = clone.url.appendingPathComponent(".gateway")
        let cloudBytes = try FileManager.default.contentsOfDirectory(atPath: gatewayFolder.path).filter { $0.hasPrefix("cloud.sqlite") }
            .reduce(into: Data()) { $0.append(try Data(contentsOf: gatewayFolder.appendingPathComponent($1))) }
        #expect(cloudBytes.range(of: Data("Tag".utf8)) != nil, "the search sees the cloud's clear text")
        #expect(texts.count > 100)
        #expect(texts.allSatisfy { cloudBytes.range(of: $0) == nil }, "no title, body or thumbnail is stored in clear")

        // Another gateway on the same cloud with a key of its own cannot read the zone: it stops
        // before applying anything.
        #expect(try await clone.gateway("keygen", "--id", "k9", "--output", "stranger/k9.key").status == 0)
        let stranger = """
            gateway: { state_dir: stranger }
            encryption: { keys: [{ id: k9, file: stranger/k9.key }] }
            cloud: { kind: embedded, path: .gateway/cloud.sqlite }
            adapters:
              - name: stranger
                kind: sqlite
                path: stranger/notes.sqlite
                seed: examples/data/notes-schema.sql
                zone: NotesZone
                tables: [{ table: notes, record_type: Note, record_name: "<Type>.<pk>" }]
            """
        try Data(stranger.utf8).write(to: clone.url.appendingPathComponent("stranger.yaml"))
        let refused = try await clone.gateway("sync", "--config", "stranger.yaml")
        #expect(refused.status == 1, "\(refused)")
        #expect(refused.stdout.contains("(undecryptableField)"), "\(refused)")
        #expect(refused.stdout.contains("cannot be decrypted: it was encrypted with key k1, which the key ring does not have"))
        let strangerRows = try await DatabaseQueue(path: clone.directory.path("stranger/notes.sqlite")).read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM notes")
        }
        #expect(strangerRows == 0)
    }

    @Test("gateway run syncs at start and on store changes, serves its control API, holds the lock, and stops on SIGTERM with exit 0")
    func runService() async throws {
        let clone = try FreshClone()
        defer { clone.directory.remove() }
        let configURL = clone.url.appendingPathComponent("config.yaml")
        // The JSON adapter polls rarely here, so a change to it waits for POST /sync and the test
        // can see it pending first.
        let config = try String(contentsOf: configURL, encoding: .utf8)
            .replacingOccurrences(of: "listen: \"127.0.0.1:8787\"", with: "listen: \"127.0.0.1:0\"")
            .replacingOccurrences(of: "    zone: DocsZone\n", with: "    zone: DocsZone\n    poll_interval: 1h\n")
        try Data(config.utf8).write(to: configURL)
        let service = try ChildProcess(
            try BuiltExecutable.path("gateway"), arguments: ["run"], directory: clone.url.path,
            environment: ProcessInfo.processInfo.environment.merging(["TERM": "dumb", "GATEWAY_TOKEN": "test-token"]) { _, new in new },
            standardOutput: clone.directory.path("run.out"), standardError: clone.directory.path("run.err"))
        defer { if service.isRunning { service.kill() } }

        func replicaTitle(_ id: Int) async throws -> String? {
            guard FileManager.default.fileExists(atPath: clone.directory.path(".gateway/examples/notes-replica.sqlite")) else { return nil }
            return try await clone.database("notes-replica").read { db in
                try String.fetchOne(db, sql: "SELECT title FROM notes WHERE id = ?", arguments: [id])
            }
        }
        func waitFor(_ what: String, _ condition: () async throws -> Bool) async throws {
            let deadline = ContinuousClock.now + .seconds(60)
            while ContinuousClock.now < deadline {
                if try await condition() { return }
                try await Task.sleep(for: .milliseconds(100))
            }
            let log = (try? String(contentsOfFile: clone.directory.path("run.err"), encoding: .utf8)) ?? ""
            throw ConformanceFailure("\(what) did not happen within 60 s; the service logged:\n\(log)")
        }

        try await waitFor("the initial sync") { try await replicaTitle(7) != nil }
        try await clone.database("notes").write { db in try db.execute(sql: "UPDATE notes SET title = 'Live' WHERE id = 7") }
        try await waitFor("the sync of a store change") { try await replicaTitle(7) == "Live" }

        // The control server: its port is in the log (port 0 picks a free one).
        try await waitFor("the control server") {
            ((try? String(contentsOfFile: clone.directory.path("run.err"), encoding: .utf8)) ?? "").contains("control server listening")
        }
        let log = try String(contentsOfFile: clone.directory.path("run.err"), encoding: .utf8)
        let port = try #require(log.firstRange(of: /address=127\.0\.0\.1:(\d+)/).map { log[$0].split(separator: ":").last.map(String.init) } ?? nil)
        func call(_ method: String, _ path: String, token: String? = nil) async throws -> (Int, Data) {
            let response = try await LoopbackHTTP.send(
                method, port: Int(port)!, path: path, headers: token.map { ["Authorization": "Bearer \($0)"] } ?? [:])
            return (response.status, response.body)
        }
        #expect(try await call("GET", "/healthz").0 == 200)
        #expect(try await call("GET", "/readyz").0 == 200)
        let (statusCode, statusBody) = try await call("GET", "/status")
        #expect(statusCode == 200)
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        let status = try decoder.decode(ServiceStatus.self, from: statusBody)
        #expect(status.adapters.map(\.name) == ["notes", "notes-replica", "docs"])
        #expect(status.adapters.allSatisfy { $0.lastSuccessAt != nil && $0.consecutiveFailures == 0 })
        let (metricsCode, metricsBody) = try await call("GET", "/metrics")
        let metrics = String(decoding: metricsBody, as: UTF8.self)
        #expect(metricsCode == 200)
        #expect(metrics.contains("gateway_records_uploaded_total{adapter=\"notes\"} 101"), "100 at start, then the edit")
        #expect(metrics.contains("gateway_has_changes{adapter=\"notes\"} 0"))
        #expect(metrics.contains("gateway_adapter_health{adapter=\"notes\",health=\"ok\"} 1"), "\(metrics)")
        #expect(metrics.contains("gateway_adapter_health{adapter=\"notes\",health=\"failing\"} 0"))
        #expect(metrics.contains("gateway_last_success_timestamp_seconds{adapter=\"docs\"}"))
        #expect(metrics.contains("gateway_syncs_total{result=\"succeeded\"}"))
        #expect(try await call("POST", "/sync").0 == 401, "POST needs the token")
        #expect(try await call("POST", "/sync", token: "wrong").0 == 401)
        #expect(try await call("POST", "/sync?adapter=nope", token: "test-token").0 == 404)
        // A change the scheduler has not synced yet shows in /status and /metrics, and is gone
        // after POST /sync?wait=1. The edit above also fires the cloud's change signal, which
        // asks for one more sync; on a loaded machine it can come late, so the test first waits
        // until no sync runs and the sync count has held for two seconds.
        func completedSyncs() async throws -> String {
            let text = String(decoding: try await call("GET", "/metrics").1, as: UTF8.self)
            return text.split(separator: "\n").filter { $0.hasPrefix("gateway_syncs_total") }.sorted().joined(separator: "\n")
        }
        var quietSince = (ContinuousClock.now, try await completedSyncs())
        try await waitFor("a quiet moment") {
            let count = try await completedSyncs()
            let running = try decoder.decode(ServiceStatus.self, from: try await call("GET", "/status").1).syncInProgress != nil
            if running || count != quietSince.1 { quietSince = (ContinuousClock.now, count) }
            return ContinuousClock.now - quietSince.0 >= .seconds(2)
        }
        try Data("{\"title\": \"Fresh\"}".utf8).write(to: clone.url.appendingPathComponent(".gateway/examples/docs/Article/fresh.json"))
        let pending = try decoder.decode(ServiceStatus.self, from: try await call("GET", "/status").1)
        #expect(pending.adapters.first { $0.name == "docs" }?.pendingChanges == 1)
        #expect(pending.hasChanges)
        #expect(String(decoding: try await call("GET", "/metrics").1, as: UTF8.self).contains("gateway_has_changes{adapter=\"docs\"} 1"))
        let (syncCode, syncBody) = try await call("POST", "/sync?wait=1", token: "test-token")
        #expect(syncCode == 200, "\(String(decoding: syncBody, as: UTF8.self))")
        #expect(String(decoding: syncBody, as: UTF8.self).contains("\"result\" : \"synced\""))
        let synced = try decoder.decode(ServiceStatus.self, from: try await call("GET", "/status").1)
        #expect(!synced.hasChanges, "\(synced)")
        #expect(String(decoding: try await call("GET", "/metrics").1, as: UTF8.self).contains("gateway_has_changes{adapter=\"docs\"} 0"))

        let blocked = try await clone.gateway("sync")
        #expect(blocked.status == 75, "\(blocked)")
        #expect(blocked.stderr.contains("another gateway process (process \(service.pid))"), "\(blocked)")

        service.terminate()
        #expect(try await service.wait(timeout: .seconds(30)) == 0)
        let finalLog = try String(contentsOfFile: clone.directory.path("run.err"), encoding: .utf8)
        #expect(finalLog.contains("gateway stopped"))
        #expect(try await clone.gateway("sync").status == 0, "the lock is released")
    }

    @Test("SIGTERM during a long sync stops after the current batch, exits 0, and loses nothing")
    func gracefulStopDuringSync() async throws {
        let directory = try TemporaryDirectory(prefix: "gateway-sigterm")
        defer { directory.remove() }
        let rows = 30_000
        let schema = "CREATE TABLE item (id INTEGER PRIMARY KEY, title TEXT, n INTEGER);"
        try await DatabaseQueue(path: directory.path("source.sqlite")).write { db in
            try db.execute(sql: schema)
            try db.execute(
                sql: """
                    WITH RECURSIVE seq(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM seq WHERE i < ?)
                    INSERT INTO item (id, title, n) SELECT i, 'item ' || i, i * 3 FROM seq
                    """, arguments: [rows])
        }
        try await DatabaseQueue(path: directory.path("replica.sqlite")).write { db in try db.execute(sql: schema) }
        let config = """
            gateway: { batch_size: 50, control: { listen: "127.0.0.1:0" } }
            adapters:
              - { name: source, kind: sqlite, path: source.sqlite, zone: Items, tables: [{ table: item }] }
              - { name: replica, kind: sqlite, path: replica.sqlite, zone: Items, tables: [{ table: item }] }
            """
        try Data(config.utf8).write(to: directory.url.appendingPathComponent("config.yaml"))
        let service = try ChildProcess(
            try BuiltExecutable.path("gateway"), arguments: ["run"], directory: directory.url.path,
            standardOutput: directory.path("run.out"), standardError: directory.path("run.err"))
        defer { if service.isRunning { service.kill() } }

        // Wait until the upload is under way, then ask the service to stop.
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            let sent = try? await DatabaseQueue(path: directory.path("source.sqlite")).read { db in
                try Int.fetchOne(db, sql: #"SELECT COUNT(*) FROM "_gateway_records""#) ?? 0
            }
            if (sent ?? 0) > 0 { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        service.terminate()
        #expect(try await service.wait(timeout: .seconds(60)) == 0)
        let log = try String(contentsOfFile: directory.path("run.err"), encoding: .utf8)
        #expect(log.contains("interrupted"), "the sync stopped between batches rather than running to its end: \(log)")
        #expect(log.contains("gateway stopped"))

        var runs = 0
        while true {
            runs += 1
            let result = try await GatewayCLI.run(["sync", "--progress", "none"], in: directory.url)
            #expect(result.status == 0, "\(result)")
            if result.stdout.hasPrefix("Nothing to do") || runs > 5 { break }
        }
        let select = "SELECT COUNT(*), SUM(n), MIN(title), MAX(title) FROM item"
        let source = try await DatabaseQueue(path: directory.path("source.sqlite")).read { db in
            try Row.fetchOne(db, sql: select)!.description
        }
        let replica = try await DatabaseQueue(path: directory.path("replica.sqlite")).read { db in
            try Row.fetchOne(db, sql: select)!.description
        }
        #expect(replica == source)
        #expect(source.contains("\(rows)"))
    }
}
