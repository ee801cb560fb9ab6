import Foundation
import GRDB
import GatewayTesting
import PostgresSupport
import PostgresTesting
import TestScheduling
import Testing

/// A mistake an operator makes around a valid configuration — a wrong path, a folder where a
/// file belongs, a server that is down, a program that is not one — and what the gateway must say.
struct OperatorMistake: Sendable, CustomTestStringConvertible {
    var name: String
    /// `config.yaml`; `$PG` stands for a PostgreSQL URL of the test server, `$DB` for a fresh
    /// database on it.
    var yaml: String
    /// The command, after `gateway`; `--config config.yaml` is added to every command but `init`.
    var command: [String] = ["sync"]
    /// Files made before the command: relative path → contents (a path ending in `/` is a folder).
    var files: [String: String] = [:]
    /// Statements run on `$DB` before the command.
    var sql: [String] = []
    var status: Int32
    /// Each must appear in what the command printed (standard error and output): the thing it
    /// names and what to do. `$DIR` stands for the test's folder.
    var says: [String]

    var testDescription: String { name }
}

/// A SQLite adapter over `app.sqlite`, whose table `notes` every case's database has.
private func sqlite(path: String = "app.sqlite", extra: String = "") -> String {
    """
    adapters:
      - name: app
        kind: sqlite
        path: \(path)
        zone: AppZone
        tables: [{ table: notes }]\(extra)
    """
}

private func plugin(command: String, extra: String = "") -> String {
    """
    adapters:
      - name: crm
        kind: plugin
        command: \(command)
        zone: AppZone\(extra)
    """
}

private func postgres(url: String, table: String = "notes") -> String {
    """
    adapters:
      - name: crm
        kind: postgres
        url: "\(url)"
        zone: AppZone
        tables: [{ table: \(table) }]
    """
}

/// The catalogue. Every message names the thing that is wrong (the path, the adapter, the
/// server, the key) and what to do, in the gateway's words, not a library's.
let operatorMistakes: [OperatorMistake] = [
    // Files and folders.
    OperatorMistake(
        name: "configuration file missing", yaml: "", command: ["sync", "--config", "gateway.yaml"], status: 2,
        says: ["gateway.yaml", "does not exist", "gateway init"]),
    OperatorMistake(
        name: "configuration path is a folder", yaml: "", command: ["sync", "--config", "conf"], files: ["conf/": ""], status: 2,
        says: ["conf", "is a folder", "--config"]),
    OperatorMistake(
        name: "state folder is a file", yaml: "gateway: { state_dir: state }\nadapters: []", files: ["state": "x"], status: 1,
        says: ["$DIR/state", "is a file", "gateway.state_dir"]),
    OperatorMistake(
        name: "embedded cloud path is a folder", yaml: "cloud: { kind: embedded, path: clouds }\nadapters: []", files: ["clouds/": ""],
        status: 1, says: ["$DIR/clouds", "is a folder", "cloud.path"]),
    OperatorMistake(
        name: "embedded cloud file is not a database", yaml: "cloud: { kind: embedded, path: cloud.txt }\nadapters: []",
        files: ["cloud.txt": "notes\n"], status: 1, says: ["$DIR/cloud.txt", "not a SQLite database", "cloud.path"]),
    OperatorMistake(
        name: "database path is a folder", yaml: sqlite(path: "data"), files: ["data/": ""], status: 1,
        says: ["adapter app", "$DIR/data", "is a folder", "path"]),
    OperatorMistake(
        name: "database file is not a database", yaml: sqlite(path: "notes.csv"), files: ["notes.csv": "id,title\n1,one\n"], status: 1,
        says: ["adapter app", "$DIR/notes.csv", "not a SQLite database"]),
    OperatorMistake(
        name: "seed script with an error", yaml: sqlite(path: "new.sqlite", extra: "\n    seed: seed.sql"),
        files: ["seed.sql": "CREATE TABLE notes (id INTEGER PRIMARY KEY, title TEXT);\nINSERT INTO nots VALUES (1, 'a');\n"], status: 1,
        says: ["adapter app", "seed.sql", "no such table: nots", "new.sqlite was not created"]),
    OperatorMistake(
        name: "JSON folder is a file",
        yaml: "adapters:\n  - name: docs\n    kind: json\n    directory: docs.json\n    zone: AppZone", files: ["docs.json": "{}"], status: 2,
        says: ["docs.json", "is a file", "directory"]),
    OperatorMistake(
        name: "JSON folder missing", yaml: "adapters:\n  - name: docs\n    kind: json\n    directory: docs\n    zone: AppZone", status: 2,
        says: ["docs", "does not exist", "seed"]),
    OperatorMistake(
        name: "JSON seed folder missing",
        yaml: "adapters:\n  - name: docs\n    kind: json\n    directory: docs\n    seed: template\n    zone: AppZone", status: 2,
        says: ["template", "does not exist"]),
    OperatorMistake(
        name: "JSON document that is not JSON", yaml: "adapters:\n  - name: docs\n    kind: json\n    directory: docs\n    zone: AppZone",
        files: ["docs/Note/1.json": "{\"title\": \"broken"], status: 0, says: ["adapter docs has 1 failed record(s)", "Note/1.json", "JSON"]),
    // Plugins.
    OperatorMistake(
        name: "plugin program not on PATH", yaml: plugin(command: "crm-plugin"), status: 1,
        says: ["adapter crm", "crm-plugin", "not found in PATH"]),
    OperatorMistake(
        name: "plugin path that does not exist", yaml: plugin(command: "./tools/crm.py"), status: 1,
        says: ["adapter crm", "$DIR/tools/crm.py", "does not exist"]),
    OperatorMistake(
        name: "plugin file that is not executable", yaml: plugin(command: "./crm.sh"), files: ["crm.sh": "#!/bin/sh\nexit 0\n"], status: 1,
        says: ["adapter crm", "$DIR/crm.sh", "not executable", "chmod +x"]),
    OperatorMistake(
        name: "plugin path is a folder", yaml: plugin(command: "./tools"), files: ["tools/": ""], status: 1,
        says: ["adapter crm", "$DIR/tools", "is a folder"]),
    OperatorMistake(
        name: "plugin that exits at once", yaml: plugin(command: "/bin/false"), status: 1,
        says: ["adapter crm", "/bin/false", "exited with status 1"]),
    OperatorMistake(
        name: "plugin that prints text instead of the protocol", yaml: plugin(command: "/bin/echo", extra: "\n    args: [hello]"), status: 1,
        says: ["adapter crm", "/bin/echo hello", "not JSON"]),
    OperatorMistake(
        name: "plugin that never answers", yaml: plugin(command: "/bin/sleep", extra: "\n    args: [\"30\"]\n    start_timeout: 1s"), status: 1,
        says: ["adapter crm", "/bin/sleep 30", "no answer", "start_timeout"]),
    OperatorMistake(
        name: "plugin working folder missing", yaml: plugin(command: "/bin/cat", extra: "\n    working_directory: plugins"), status: 1,
        says: ["adapter crm", "$DIR/plugins", "does not exist", "working_directory"]),
    // Servers.
    OperatorMistake(
        name: "PostgreSQL adapter server down", yaml: postgres(url: "postgres://gateway@127.0.0.1:1/app"), status: 1,
        says: ["adapter crm", "127.0.0.1:1", "cannot connect", "is the server running"]),
    OperatorMistake(
        name: "PostgreSQL cloud server down", yaml: "cloud: { kind: postgres, url: \"postgres://gateway@127.0.0.1:1/cloud\" }\nadapters: []",
        status: 1, says: ["127.0.0.1:1", "cannot connect", "is the server running"]),
    OperatorMistake(
        name: "PostgreSQL database that does not exist", yaml: postgres(url: "$PG/no_such_database"), status: 1,
        says: ["adapter crm", "no_such_database", "does not exist"]),
    OperatorMistake(
        name: "PostgreSQL role that does not exist", yaml: postgres(url: "$PGROLE"), status: 1,
        says: ["adapter crm", "nobody_here", "does not exist"]),
    OperatorMistake(
        name: "PostgreSQL table missing", yaml: postgres(url: "$DB", table: "contacts"), sql: ["CREATE TABLE notes (id bigint PRIMARY KEY)"],
        status: 2, says: ["contacts", "does not exist"]),
    OperatorMistake(
        name: "CloudKit endpoint down",
        yaml: """
            gateway:
              retry: { max_attempts: 2, base_delay: 50ms }
            cloud:
              kind: cloudkit
              container: iCloud.com.example.notes
              base_url: http://127.0.0.1:1
              auth: server_to_server
              key_id: k1
              private_key_file: key.pem
            adapters: []
            """, files: ["key.pem": testPrivateKeyPEM], status: 1, says: ["127.0.0.1:1", "could not connect", "nothing was sent"]),
    OperatorMistake(
        name: "CloudKit key file that is not a key",
        yaml: """
            cloud:
              kind: cloudkit
              container: iCloud.com.example.notes
              auth: server_to_server
              key_id: k1
              private_key_file: key.pem
            adapters: []
            """, files: ["key.pem": "ssh-ed25519 AAAA me@host\n"], status: 2, says: ["key.pem", "PEM", "gateway cloud keygen"]),
    // Commands.
    OperatorMistake(
        name: "sync of an adapter that is not configured", yaml: sqlite(), command: ["sync", "--adapter", "ap"], status: 2,
        says: ["ap", "app"]),
    OperatorMistake(
        name: "reset of an adapter that is not configured", yaml: sqlite(), command: ["reset", "--adapter", "notes"], status: 2,
        says: ["notes", "app"]),
    OperatorMistake(
        name: "status with a store that cannot be opened", yaml: sqlite(path: "notes.csv"), command: ["status"],
        files: ["notes.csv": "id,title\n"], status: 3, says: ["app", "$DIR/notes.csv", "not a SQLite database"]),
    OperatorMistake(
        name: "control port in use", yaml: "gateway: { control: { listen: \"127.0.0.1:$PORT\" } }\nadapters: []", command: ["run"], status: 1,
        says: ["127.0.0.1:$PORT", "in use", "control.listen"]),
    OperatorMistake(
        name: "init over an existing configuration", yaml: "adapters: []", command: ["init"], status: 2, says: ["config.yaml", "exists"]),
]

/// A P-256 key in PEM, as `gateway cloud keygen` writes one (tests only).
let testPrivateKeyPEM = """
    -----BEGIN PRIVATE KEY-----
    MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgjcnFUnfkw93dnzA8
    3rq0w10iZ8osOrG0f2gJ7u4TeEOhRANCAARifD35R/hhVtqhBHbPIBMmjHj+MMMY
    EzYvBvGPPRUgzmY8VtCIuNP4QdmUQjuF3/f2jqpl7LMJC2bI771G1n0G
    -----END PRIVATE KEY-----

    """

@Suite("operator mistakes", .heavy)
struct OperatorMistakeCatalogueTests {
    @Test("the catalogue has at least 30 mistakes with distinct names")
    func catalogueSize() {
        #expect(operatorMistakes.count >= 30)
        #expect(Set(operatorMistakes.map(\.name)).count == operatorMistakes.count)
    }

    @Test("the gateway names the thing and what to do, in its own words", arguments: operatorMistakes)
    func named(_ mistake: OperatorMistake) async throws {
        let directory = try TemporaryDirectory(prefix: "operator-mistake")
        defer { directory.remove() }
        var yaml = mistake.yaml
        if yaml.contains("$PG") || yaml.contains("$DB") {
            let admin = try await PostgresTestServer.endpoint()
            let database = try await PostgresTestServer.freshDatabase("mistake")
            if !mistake.sql.isEmpty { try await PostgresConnectionPool.execute(mistake.sql, on: database, doing: "preparing the mistake") }
            func url(_ endpoint: PostgresEndpoint) -> String {
                "postgres://\(endpoint.username)@\(endpoint.host):\(endpoint.port)/\(endpoint.database)?sslmode=disable"
                    + (endpoint.socketDirectory.map { "&host=\($0)" } ?? "")
            }
            var stranger = admin
            stranger.username = "nobody_here"
            yaml = yaml.replacingOccurrences(of: "$DB", with: url(database)).replacingOccurrences(of: "$PGROLE", with: url(stranger))
                .replacingOccurrences(of: "$PG/no_such_database", with: url(admin.with(database: "no_such_database")))
        }
        let held = try ControlPortTests.HeldPort()
        yaml = yaml.replacingOccurrences(of: "$PORT", with: "\(held.port)")
        try Data(yaml.utf8).write(to: directory.url.appendingPathComponent("config.yaml"))
        for (path, contents) in mistake.files {
            let url = directory.url.appendingPathComponent(path)
            if path.hasSuffix("/") {
                try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
            } else {
                try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
                try Data(contents.utf8).write(to: url)
            }
        }
        let database = try DatabaseQueue(path: directory.path("app.sqlite"))
        try await database.write { db in try db.execute(sql: "CREATE TABLE notes (id INTEGER PRIMARY KEY, title TEXT)") }
        try database.close()

        let arguments = mistake.command.contains("--config") || mistake.command == ["init"] ? mistake.command : mistake.command + ["--config", "config.yaml"]
        let result = try await GatewayCLI.run(arguments, in: directory.url, timeout: .seconds(60))
        let printed = result.stderr + result.stdout
        let folder = directory.url.resolvingSymlinksInPath().path
        #expect(result.status == mistake.status, "\(result)")
        for phrase in mistake.says {
            let expected = phrase.replacingOccurrences(of: "$DIR", with: folder).replacingOccurrences(of: "$PORT", with: "\(held.port)")
            #expect(printed.contains(expected), "missing '\(expected)' in:\n\(result)")
        }
        // A library's words, a repeated prefix or a dangling bracket say nothing to an operator.
        for jargon in ["errno", "SingleConnectionFailure", "[underlying", "internalError:", "Error Domain", "NIOCore", "connectionError ("] {
            #expect(!printed.contains(jargon), "'\(jargon)' in:\n\(result)")
        }
        for name in ["app", "crm", "docs"] {
            #expect(!printed.contains("adapter \(name): adapter \(name)"), "a repeated prefix in:\n\(result)")
            #expect(!printed.contains("adapter \(name): the store failed: adapter \(name)"), "a repeated prefix in:\n\(result)")
        }
        for line in printed.split(separator: "\n") {
            #expect(line.filter { $0 == "(" }.count == line.filter { $0 == ")" }.count, "unbalanced brackets in: \(line)")
        }
    }
}
