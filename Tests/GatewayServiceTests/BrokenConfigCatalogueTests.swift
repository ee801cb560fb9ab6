import Foundation
import GRDB
import GatewayTesting
import Testing

/// A configuration the gateway must refuse, with the exact message it must print.
struct BrokenConfig: Sendable, CustomTestStringConvertible {
    var name: String
    var yaml: String
    /// Extra files next to config.yaml.
    var files: [String: String] = [:]
    var environment: [String: String] = [:]
    /// The whole of standard error; `$DIR` stands for the test's folder.
    var message: String

    var testDescription: String { name }
}

/// An adapter entry over `app.sqlite`; cases append its `tables:` or more keys.
private let app = """
    adapters:
      - name: app
        kind: sqlite
        path: app.sqlite
        zone: AppZone
    """

/// The catalogue: each broken config is refused by `gateway sync` with exit code 2, its exact
/// message (file, line, column, what to change), and nothing written anywhere.
let brokenConfigs: [BrokenConfig] = [
    BrokenConfig(
        name: "unbalanced brackets", yaml: "gateway: {batch_size: 1]\nadapters: []",
        message: "config.yaml:1:24: invalid YAML: did not find expected ',' or '}' while parsing a flow mapping"),
    BrokenConfig(
        name: "bad indentation", yaml: "gateway:\n  batch_size: 1\n   sync_interval: 5s",
        message: "config.yaml:3:17: invalid YAML: mapping values are not allowed in this context"),
    BrokenConfig(
        name: "tab indentation", yaml: "\tgateway: {}",
        message: "config.yaml:1:1: invalid YAML: found character that cannot start any token while scanning for the next token"),
    BrokenConfig(
        name: "empty file", yaml: "", message: "config.yaml: the configuration is empty; run `gateway init` for a starter"),
    BrokenConfig(
        name: "duplicate key", yaml: "gateway:\n  batch_size: 1\n  batch_size: 2",
        message: "config.yaml:2:3: key 'batch_size' appears twice in one mapping"),
    BrokenConfig(
        name: "unknown top-level key", yaml: "adaptors: []",
        message: "config.yaml:1:1: unknown key 'adaptors' at the top level; did you mean 'adapters'?"),
    BrokenConfig(
        name: "unknown gateway key", yaml: "gateway: { batch_sise: 10 }",
        message: "config.yaml:1:12: unknown key 'batch_sise' in 'gateway'; did you mean 'batch_size'?"),
    BrokenConfig(
        name: "misspelt required key", yaml: "adapters:\n  - name: app\n    knd: sqlite\n    path: app.sqlite\n    zone: Z",
        message: "config.yaml:3:5: unknown key 'knd' in 'adapters[0]'; did you mean 'kind'?"),
    BrokenConfig(
        name: "unknown table key", yaml: "\(app)\n    tables: [{ table: notes, exclud: [body] }]",
        message: "config.yaml:6:30: unknown key 'exclud' in 'adapters[0].tables[0]'; did you mean 'exclude'?"),
    BrokenConfig(
        name: "no adapter may sync", yaml: "gateway: { parallelism: 0 }",
        message: "config.yaml:1:25: 'gateway.parallelism': must be from 1 to 64"),
    BrokenConfig(
        name: "text where a number belongs", yaml: "gateway: { batch_size: ten }",
        message: "config.yaml:1:24: 'gateway.batch_size': expected a whole number, found 'ten'"),
    BrokenConfig(
        name: "list where a number belongs", yaml: "gateway:\n  batch_size: [1, 2]",
        message: "config.yaml:2:15: 'gateway.batch_size': expected a whole number, found a list"),
    BrokenConfig(
        name: "mapping where a list belongs", yaml: "adapters: { name: app }",
        message: "config.yaml:1:11: 'adapters': expected a list, found a mapping"),
    BrokenConfig(
        name: "not a boolean", yaml: "\(app)\n    tables: [{ table: notes, force_data: maybe }]",
        message: "config.yaml:6:42: 'adapters[0].tables[0].force_data': expected true or false, found 'maybe'"),
    BrokenConfig(
        name: "duration without unit", yaml: "gateway: { sync_interval: 60 }",
        message: "config.yaml:1:27: 'gateway.sync_interval': expected a duration such as 500ms, 30s, 5m, 1h or 1h30m, found '60'"),
    BrokenConfig(
        name: "duration in words", yaml: "gateway: { retry: { max_delay: 5 minutes } }",
        message:
            "config.yaml:1:32: 'gateway.retry.max_delay': expected a duration such as 500ms, 30s, 5m, 1h or 1h30m, found '5 minutes'"),
    BrokenConfig(
        name: "bad size", yaml: "cloud: { kind: embedded, limits: { max_record_size: 1 megabyte } }",
        message: "config.yaml:1:53: 'cloud.limits.max_record_size': expected a size such as 512KB, 1MB or 2MiB, found '1 megabyte'"),
    BrokenConfig(
        name: "a zero record size after the request size",
        yaml: "cloud: { kind: embedded, limits: { max_request_size: 200KB, max_record_size: 0 } }",
        message: "config.yaml:1:78: 'cloud.limits.max_record_size': must be between 1 byte and 2GB"),
    BrokenConfig(
        name: "a request size below the record size", yaml: "cloud: { kind: embedded, limits: { max_request_size: 200KB } }",
        message:
            "config.yaml:1:34: 'cloud.limits': max_request_size (200000 bytes) must be at least max_record_size (1000000 bytes, the default): a record of the largest size must fit in a request; raise max_request_size or lower max_record_size"),
    BrokenConfig(
        name: "misspelt merge policy", yaml: "gateway: { merge_policy: mrege }",
        message: "config.yaml:1:26: 'gateway.merge_policy': expected one of server, client, merge, custom, found 'mrege'; did you mean 'merge'?"),
    BrokenConfig(
        name: "unknown column type", yaml: "\(app)\n    tables: [{ table: notes, columns: { title: varchar } }]",
        message:
            "config.yaml:6:48: 'adapters[0].tables[0].columns.title': expected one of integer, real, text, blob, boolean, iso8601, unix, unix_ms, found 'varchar'"),
    BrokenConfig(
        name: "negative compatibility version", yaml: "gateway: { compatibility_version: -1 }",
        message: "config.yaml:1:35: 'gateway.compatibility_version': must be 0 or more"),
    BrokenConfig(
        name: "zero fetch limit", yaml: "gateway: { fetch_limit: 0 }",
        message: "config.yaml:1:25: 'gateway.fetch_limit': must be at least 1"),
    BrokenConfig(
        name: "zero retry attempts", yaml: "gateway: { retry: { max_attempts: 0 } }",
        message: "config.yaml:1:35: 'gateway.retry.max_attempts': must be at least 1"),
    BrokenConfig(
        name: "postgres cloud without a url", yaml: "cloud: { kind: postgres, schema: shared }",
        message: "config.yaml:1:8: missing key 'url' in 'cloud'"),
    BrokenConfig(
        name: "postgres cloud url that is not one", yaml: "cloud: { kind: postgres, url: \"mysql://u@h/db\" }",
        message: "config.yaml:1:31: 'cloud.url': the PostgreSQL URL must look like postgres://user@host:5432/database"),
    BrokenConfig(
        name: "postgres cloud url with a bad sslmode", yaml: "cloud: { kind: postgres, url: \"postgres://u@h/db?sslmode=maybe\" }",
        message: "config.yaml:1:31: 'cloud.url': sslmode must be one of disable, prefer, require"),
    BrokenConfig(
        name: "postgres adapter whose schema and state schema are one",
        yaml: """
            adapters:
              - { name: crm, kind: postgres, url: "postgres://u@127.0.0.1/crm", schema: app, state_schema: app, zone: Z, tables: [{ table: t }] }
            """,
        message: "config.yaml:2:5: 'adapters[0]': schema and state_schema must differ: the gateway's tables live apart from yours"),
    BrokenConfig(
        name: "unknown cloud kind", yaml: "cloud: { kind: icloud }",
        message: "config.yaml:1:16: 'cloud.kind': unknown cloud kind 'icloud'; this build has cloudkit, embedded, postgres"),
    BrokenConfig(
        name: "cloudkit public database", yaml: "cloud: { kind: cloudkit, container: iCloud.x, database: public, auth: web_token }",
        message: "config.yaml:1:57: 'cloud.database': CloudKit's public database has no custom zones and no change tokens, so the gateway cannot sync it without losing deletions; use the private database"),
    BrokenConfig(
        name: "cloudkit missing private key file",
        yaml: "cloud: { kind: cloudkit, container: iCloud.x, auth: server_to_server, key_id: k, private_key_file: missing.pem }",
        message: "config.yaml:1:100: 'cloud.private_key_file': cannot read $DIR/missing.pem; create a key with `gateway cloud keygen $DIR/missing.pem`"),
    BrokenConfig(
        name: "cloudkit unknown auth", yaml: "cloud: { kind: cloudkit, container: iCloud.x, auth: password }",
        message: "config.yaml:1:53: 'cloud.auth': must be server_to_server or web_token"),
    BrokenConfig(
        name: "endpoint that lets nobody in", yaml: "endpoint: { container: iCloud.x }",
        message: "config.yaml:1:11: 'endpoint': list at least one key under 'keys' (or configure 'web_tokens'); the endpoint lets nobody in otherwise"),
    BrokenConfig(
        name: "endpoint web token variable unset",
        yaml: "endpoint: { container: iCloud.x, web_tokens: { api_token_env: GATEWAY_UNSET_TOKEN, users: [] } }",
        message: "config.yaml:1:63: 'endpoint.web_tokens.api_token_env': the variable GATEWAY_UNSET_TOKEN is not set; export the API token there"),
    BrokenConfig(
        name: "endpoint webhook that is not a URL",
        yaml: "endpoint: { container: iCloud.x, keys: [], web_tokens: { api_token_env: HOME, users: [] }, webhooks: [{ url: hooks, secret_env: HOME }] }",
        message: "config.yaml:1:110: 'endpoint.webhooks[0].url': must be an http:// or https:// URL"),
    BrokenConfig(
        name: "endpoint webhook secret unset",
        yaml: "endpoint: { container: iCloud.x, web_tokens: { api_token_env: HOME, users: [] }, webhooks: [{ url: \"http://h/x\", secret_env: GATEWAY_UNSET_SECRET }] }",
        message: "config.yaml:1:126: 'endpoint.webhooks[0].secret_env': the variable GATEWAY_UNSET_SECRET is not set; export the webhook's signing secret there"),
    BrokenConfig(
        name: "unknown adapter kind", yaml: "adapters:\n  - name: app\n    kind: sqlit\n    zone: Z",
        message: "config.yaml:3:11: 'adapters[0].kind': unknown adapter kind 'sqlit'; this build has json, plugin, postgres, sqlite; did you mean 'sqlite'?"),
    BrokenConfig(
        name: "missing zone", yaml: "adapters:\n  - name: app\n    kind: sqlite\n    path: app.sqlite\n    tables: [{ table: notes }]",
        message: "config.yaml:2:5: missing key 'zone' in 'adapters[0]'"),
    BrokenConfig(
        name: "the default zone", yaml: "adapters:\n  - name: app\n    kind: sqlite\n    zone: _defaultZone",
        message:
            "config.yaml:4:11: 'adapters[0].zone': the default zone has no change feed and cannot sync; name a custom zone such as NotesZone"),
    BrokenConfig(
        name: "zone name with a space", yaml: "adapters:\n  - name: app\n    kind: sqlite\n    zone: My Zone",
        message: "config.yaml:4:11: 'adapters[0].zone': zone names use ASCII letters, digits, '_', '-' and '.'"),
    BrokenConfig(
        name: "adapter name with a colon", yaml: "adapters:\n  - name: \"app:1\"\n    kind: sqlite\n    zone: Z",
        message: "config.yaml:2:11: 'adapters[0].name': adapter names use 1 to 64 letters, digits, '-', '_' or '.'"),
    BrokenConfig(
        name: "duplicate adapter names",
        yaml: "\(app)\n    tables: [{ table: notes }]\n  - name: app\n    kind: sqlite\n    path: app.sqlite\n    zone: Z\n    tables: [{ table: notes }]",
        message: "config.yaml:7:11: 'adapters[1].name': adapter name 'app' is already used at line 2; adapter names must be unique"),
    BrokenConfig(
        name: "two adapters on one database",
        yaml: "\(app)\n    tables: [{ table: notes }]\n  - name: app2\n    kind: sqlite\n    path: ./app.sqlite\n    zone: Z\n    tables: [{ table: notes }]",
        message: "config.yaml:7:11: 'adapters[1].name': adapters 'app' and 'app2' use the same store; give each store one adapter"),
    BrokenConfig(
        name: "missing database file", yaml: "adapters:\n  - name: app\n    kind: sqlite\n    path: missing.sqlite\n    zone: Z\n    tables: [{ table: notes }]",
        message:
            "config.yaml:4:11: 'adapters[0].path': the database missing.sqlite does not exist; check the path, or give 'seed: FILE.sql' to create it"),
    BrokenConfig(
        name: "missing seed script", yaml: "\(app)\n    seed: missing.sql\n    tables: [{ table: notes }]",
        message: "config.yaml:6:11: 'adapters[0].seed': cannot read the seed script missing.sql"),
    BrokenConfig(
        name: "no tables", yaml: "\(app)\n    tables: []",
        message: "config.yaml:6:13: 'adapters[0].tables': list at least one table to sync"),
    BrokenConfig(
        name: "missing table", yaml: "\(app)\n    tables: [{ table: nots }]",
        message: "config.yaml:6:23: adapter app: table nots does not exist in $DIR/app.sqlite; create it or remove it from the configuration"),
    BrokenConfig(
        // The stores are checked at once; whichever check ends first, config order decides.
        name: "two stores that do not match: the first in config order is reported",
        yaml: """
            \(app)
                tables: [{ table: nots }]
              - { name: second, kind: sqlite, path: other.sqlite, zone: SecondZone, tables: [{ table: gone }] }
            """,
        files: ["other.sqlite": ""],
        message: "config.yaml:6:23: adapter app: table nots does not exist in $DIR/app.sqlite; create it or remove it from the configuration"),
    BrokenConfig(
        name: "table without primary key", yaml: "\(app)\n    tables: [{ table: log }]",
        message:
            "config.yaml:6:23: adapter app: table log in $DIR/app.sqlite has no primary key, so its rows cannot be named; add one"),
    BrokenConfig(
        name: "missing column", yaml: "\(app)\n    tables: [{ table: notes, exclude: [bdy] }]",
        message: "config.yaml:6:23: adapter app: column bdy named in the configuration of table notes does not exist in $DIR/app.sqlite"),
    BrokenConfig(
        name: "record name without key", yaml: "\(app)\n    tables: [{ table: notes, record_name: \"<Type>\" }]",
        message: "config.yaml:6:43: 'adapters[0].tables[0].record_name': the record name template must contain <pk> exactly once"),
    BrokenConfig(
        name: "custom merge without resolver", yaml: "gateway: { merge_policy: custom }",
        message: "config.yaml:1:26: 'gateway.merge_policy': merge_policy: custom needs merge_resolver: NAME, an entry of resolvers: or a resolver registered in code"),
    BrokenConfig(
        name: "unregistered merge resolver", yaml: "gateway: { merge_policy: custom, merge_resolver: newest }",
        message: "config.yaml:1:50: 'gateway.merge_resolver': no merge resolver named 'newest'; none is configured under resolvers: or registered in this build"),
    BrokenConfig(
        name: "merge resolver without custom policy", yaml: "\(app)\n    merge_resolver: newest\n    tables: [{ table: notes }]",
        message: "config.yaml:6:21: 'adapters[0].merge_resolver': merge_resolver is used only with merge_policy: custom"),
    BrokenConfig(
        name: "encrypted field without keys", yaml: "\(app)\n    tables: [{ table: notes, encrypted: [body] }]",
        message:
            "config.yaml:6:42: 'adapters[0].tables[0].encrypted[0]': encrypted fields need a key: add encryption.keys (create one with `gateway keygen`)"),
    BrokenConfig(
        name: "encrypted field that is excluded", yaml: "\(app)\n    tables: [{ table: notes, encrypted: [body], exclude: [body] }]",
        message:
            "config.yaml:6:42: 'adapters[0].tables[0].encrypted[0]': column 'body' is excluded, so it is never synced; remove it from one list"),
    BrokenConfig(
        name: "missing key file", yaml: "encryption: { keys: [{ id: k1, file: k1.key }] }",
        message:
            "config.yaml:1:28: 'encryption.keys[0].id': key file k1.key cannot be read; create it with `gateway keygen --id k1 --output k1.key`"),
    BrokenConfig(
        name: "key file that is not a key", yaml: "encryption: { keys: [{ id: k1, file: k1.key }] }", files: ["k1.key": "not a key\n"],
        message: "config.yaml:1:28: 'encryption.keys[0].id': key k1 is not the base64 of 32 bytes; create one with `gateway keygen`"),
    BrokenConfig(
        name: "key variable unset", yaml: "encryption: { keys: [{ id: k1, env: NOTES_KEY }] }",
        message: "config.yaml:1:28: 'encryption.keys[0].id': environment variable NOTES_KEY holding key k1 is not set"),
    BrokenConfig(
        name: "encrypted column that does not exist",
        yaml: "encryption: { keys: [{ id: k1, env: NOTES_KEY }] }\n\(app)\n    tables: [{ table: notes, encrypted: [secret] }]",
        environment: ["NOTES_KEY": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="],
        message:
            "config.yaml:7:23: adapter app: column secret named in the configuration of table notes does not exist in $DIR/app.sqlite"),
    BrokenConfig(
        name: "encrypted key column",
        yaml: "encryption: { keys: [{ id: k1, env: NOTES_KEY }] }\n\(app)\n    tables: [{ table: notes, encrypted: [id] }]",
        environment: ["NOTES_KEY": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="],
        message:
            "config.yaml:7:23: adapter app: column id of table notes is part of the primary key, which becomes the record name and is never encrypted; encrypt other columns"),
    BrokenConfig(
        name: "record name template with a misspelt placeholder", yaml: "\(app)\n    tables: [{ table: notes, record_name: \"<Typ>.<pk>\" }]",
        message: "config.yaml:6:43: 'adapters[0].tables[0].record_name': unknown placeholder <Typ> in the record name template; it knows <Type> and <pk> (did you mean <Type>?)"),
    BrokenConfig(
        name: "a column both included and excluded", yaml: "\(app)\n    tables: [{ table: notes, include: [title], exclude: [title] }]",
        message: "config.yaml:6:58: 'adapters[0].tables[0].exclude[0]': column title is both included and excluded; name it in one list"),
    BrokenConfig(
        name: "asset column that does not exist", yaml: "\(app)\n    tables: [{ table: notes, assets: [photo] }]",
        message: "config.yaml:6:23: adapter app: column photo named in the configuration of table notes does not exist in $DIR/app.sqlite"),
    BrokenConfig(
        name: "encrypted field listed as an asset",
        yaml: "encryption: { keys: [{ id: k1, env: NOTES_KEY }] }\n\(app)\n    tables: [{ table: notes, encrypted: [body], assets: [body] }]",
        environment: ["NOTES_KEY": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="],
        message:
            "config.yaml:7:58: 'adapters[0].tables[0].assets[0]': field 'body' is encrypted, and encrypted fields travel inline as ciphertext; remove it from one list"),
    BrokenConfig(
        name: "key with file and env", yaml: "encryption: { keys: [{ id: k1, file: k1.key, env: KEY }] }",
        message: "config.yaml:1:22: 'encryption.keys[0]': give the key exactly one of 'file' or 'env'"),
    BrokenConfig(
        name: "batch size above the cloud's limit", yaml: "gateway: { batch_size: 500 }",
        message: "config.yaml:1:24: 'gateway.batch_size': 500 is more than the cloud's max_operations (400)"),
    BrokenConfig(
        name: "unset environment variable", yaml: "gateway: { state_dir: \"${STATE_ROOT}/gw\" }",
        message:
            "config.yaml:1:23: 'gateway.state_dir': environment variable STATE_ROOT is not set; set it, or write ${STATE_ROOT:-default} to give a default"),
    BrokenConfig(
        name: "public control server without token", yaml: "gateway: { control: { listen: \"0.0.0.0:8787\" } }",
        message:
            "config.yaml:1:31: 'gateway.control.listen': listening on a non-loopback address needs control.token; set it from the environment: token: \"${GATEWAY_TOKEN}\""),
    BrokenConfig(
        name: "listen without port", yaml: "gateway: { control: { listen: localhost } }",
        message: "config.yaml:1:31: 'gateway.control.listen': expected host:port, such as 127.0.0.1:8787, found 'localhost'"),
]

@Suite("broken configurations")
struct BrokenConfigCatalogueTests {
    @Test("the catalogue has at least 25 cases with distinct names")
    func catalogueSize() {
        #expect(brokenConfigs.count >= 25)
        #expect(Set(brokenConfigs.map(\.name)).count == brokenConfigs.count)
    }

    @Test("gateway sync refuses it with the exact message, exit code 2, and writes nothing", arguments: brokenConfigs)
    func refused(_ broken: BrokenConfig) async throws {
        let directory = try TemporaryDirectory(prefix: "broken-config")
        defer { directory.remove() }
        try Self.prepare(broken, in: directory)
        let before = try FolderSnapshot(directory.url)

        let result = try await GatewayCLI.run(["sync", "--config", "config.yaml"], in: directory.url, environment: broken.environment)

        let folder = directory.url.resolvingSymlinksInPath().path
        #expect(result.status == 2, "\(result)")
        #expect(result.stderr == "error: " + broken.message.replacingOccurrences(of: "$DIR", with: folder) + "\n")
        #expect(result.stdout.isEmpty)
        #expect(try FolderSnapshot(directory.url) == before, "the refused sync wrote files")
    }

    static func prepare(_ broken: BrokenConfig, in directory: TemporaryDirectory) throws {
        try Data(broken.yaml.utf8).write(to: directory.url.appendingPathComponent("config.yaml"))
        for (name, contents) in broken.files { try Data(contents.utf8).write(to: directory.url.appendingPathComponent(name)) }
        let database = try DatabaseQueue(path: directory.path("app.sqlite"))
        try database.write { db in
            try db.execute(
                sql: """
                    CREATE TABLE notes (id INTEGER PRIMARY KEY, title TEXT, body TEXT);
                    CREATE TABLE log (message TEXT);
                    INSERT INTO notes (title, body) VALUES ('a', 'b');
                    """)
        }
        try database.close()
    }
}
