import Foundation
import GatewayKinds
@testable import GatewayConfig
import GatewayTesting
import Testing

/// `docs/configuration.md` documents exactly the keys the decoder accepts, section by section.
@Suite("the configuration reference")
struct ConfigurationDocsTests {
    /// Documented key names per section (`gateway`, `cloud`, `endpoint`, `encryption`,
    /// `adapters`): every backticked name in the first column of the section's tables, each part
    /// of a dotted path (`retry.max_attempts` → `retry`, `max_attempts`; `keys[].id` → `keys`, `id`).
    static func documentedKeys() throws -> [String: Set<String>] {
        let text = try String(contentsOf: Repository.root.appendingPathComponent("docs/configuration.md"), encoding: .utf8)
        var keys: [String: Set<String>] = [:]
        var section = ""
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("### `") {
                section = String(line.dropFirst(5).prefix { $0 != "`" })
                continue
            }
            let cells = line.split(separator: "|", omittingEmptySubsequences: false)
            guard !section.isEmpty, line.hasPrefix("| `"), cells.count > 2 else { continue }
            let names = cells[1].split(separator: "`").enumerated().filter { $0.offset % 2 == 1 }.map(\.element)
            for name in names where name != "key" {
                for part in name.split(separator: ".") {
                    keys[section, default: []].insert(part.replacingOccurrences(of: "[]", with: "").replacingOccurrences(of: "*", with: ""))
                }
            }
        }
        for name in keys.keys { keys[name]?.remove("") }
        return keys
    }

    /// Configs that visit every mapping the decoder knows: each cloud kind, the endpoint, the key
    /// ring, and every adapter kind with its tables and record types, every optional mapping set.
    static func fullConfigs(in directory: TemporaryDirectory) async throws -> [String] {
        _ = FileManager.default.createFile(atPath: directory.path("app.sqlite"), contents: Data())
        try FileManager.default.createDirectory(atPath: directory.path("docs"), withIntermediateDirectories: true)
        let keygen = try await GatewayCLI.run(["keygen", "--id", "k1", "--output", "k1.key"], in: directory.url)
        #expect(keygen.status == 0, "\(keygen)")
        let cloudKeygen = try await GatewayCLI.run(["cloud", "keygen", "ck.pem"], in: directory.url)
        #expect(cloudKeygen.status == 0, "\(cloudKeygen)")
        let gateway = """
            gateway:
              state_dir: state
              compatibility_version: 1
              batch_size: 100
              fetch_limit: 1000
              merge_policy: merge
              merge_prefers: client
              sync_interval: 30s
              debounce: 10ms
              retry: { max_attempts: 3, base_delay: 100ms, max_delay: 5s }
              on_zone_deleted: pause
              control: { listen: "127.0.0.1:0", token: secret }
              device_id: docs-test
              parallelism: 2
              force_data: false
              stall_timeout: 1m
              shutdown_timeout: 5s
            encryption:
              keys: [{ id: k1, file: k1.key }, { id: k2, env: DOCS_TEST_KEY }]
            endpoint:
              host: 127.0.0.1
              port: 0
              container: iCloud.docs
              environment: development
              public_url: "http://127.0.0.1:1"
              max_clock_skew: 5m
              keys: [{ key_id: ck, public_key_file: ck.pem.pub, user: _ck }]
              web_tokens: { api_token_env: DOCS_TEST_TOKEN, users: [{ user: _u, initial_token_env: DOCS_TEST_TOKEN }], state_file: tokens.json }
              webhooks: [{ url: "http://127.0.0.1:1/hook", secret_env: DOCS_TEST_TOKEN }]
            adapters:
              - name: app
                kind: sqlite
                path: app.sqlite
                zone: Docs
                merge_policy: server
                merge_prefers: server
                batch_size: 50
                on_zone_deleted: recreate
                force_data: false
                busy_timeout: 5s
                poll_interval: 50ms
                tables:
                  - { table: note, record_type: Note, record_name: "<pk>", include: [title], columns: { title: text },
                      merge_policy: client, merge_prefers: client, encrypted: [title], force_data: false }
                  - { table: other, exclude: [x], assets: [blob], processors: [{ kind: rename, from: a, to: b }, { kind: file_reference, field: p, folder: f }, { kind: process, processor: stamp }] }
              - name: crm
                kind: postgres
                url: "postgres://gateway@127.0.0.1:1/crm"
                password_env: DOCS_TEST_PASSWORD
                schema: public
                state_schema: gateway
                max_connections: 2
                request_timeout: 5s
                zone: Docs
                tables: [{ table: note, record_type: Note }]
              - name: docs
                kind: json
                directory: docs
                layout: collection
                poll_interval: 1s
                zone: Files
                record_types: [{ record_type: Note, merge_policy: merge, merge_prefers: client, encrypted: [body], force_data: false }, { record_type: File, assets: [data] }]
              - name: plugged
                kind: plugin
                command: /bin/true
                args: [a]
                env: { A: b }
                working_directory: .
                settings: { any: thing }
                start_timeout: 5s
                request_timeout: 5s
                poll_interval: 1s
                max_message_bytes: 1MiB
                max_records_per_message: 100
                zone: Plugged
                processors: [{ kind: process, processor: stamp }]
                record_types: [{ record_type: Note }]
            resolvers:
              longest:
                command: /bin/true
                args: [a]
                env: { A: b }
                working_directory: .
                settings: { any: thing }
                start_timeout: 5s
                request_timeout: 5s
                max_conflicts_per_message: 10
            processors:
              stamp:
                command: /bin/true
                args: [a]
                env: { A: b }
                working_directory: .
                settings: { any: thing }
                start_timeout: 5s
                request_timeout: 5s
                max_records_per_message: 10
            """
        let limits = "limits: { max_operations: 100, max_record_size: 1MB, max_request_size: 2MB, max_asset_size: 10MB }"
        return [
            gateway + "\ncloud: { kind: embedded, path: cloud.sqlite, tombstone_retention: 10d, poll_interval: 1s, \(limits) }\n",
            gateway
                + "\ncloud: { kind: postgres, url: \"postgres://gateway@127.0.0.1:1/cloud\", password_env: DOCS_TEST_PASSWORD, schema: c, max_connections: 2, request_timeout: 5s, requests_in_flight: 2, tombstone_retention: 10d, \(limits) }\n",
            gateway
                + """

                cloud: { kind: cloudkit, container: iCloud.docs, environment: development, database: private, base_url: "http://127.0.0.1:1",
                         auth: server_to_server, key_id: ck, private_key_file: ck.pem, poll_interval: 5s, request_timeout: 5s,
                         asset_record_type: A, asset_field: data, \(limits) }

                """,
            gateway
                + """

                cloud: { kind: cloudkit, container: iCloud.docs, auth: web_token, api_token_env: DOCS_TEST_TOKEN, web_auth_token_file: web.token }

                """,
        ]
    }

    @Test("docs/configuration.md documents exactly the keys the decoder accepts, section by section")
    func documentedKeysAreAccepted() async throws {
        let directory = try TemporaryDirectory(prefix: "config-docs")
        defer { directory.remove() }
        let environment = [
            "DOCS_TEST_KEY": Data(repeating: 7, count: 32).base64EncodedString(), "DOCS_TEST_TOKEN": "token", "DOCS_TEST_PASSWORD": "pw",
        ]
        var accepted: [String: Set<String>] = [:]
        for yaml in try await Self.fullConfigs(in: directory) {
            let keys = try GatewayConfiguration.acceptedKeys(
                yaml: yaml, file: "config.yaml", baseDirectory: directory.url.path, registry: .builtIn, environment: environment)
            // Maps whose keys are the user's own (a plugin's settings and environment, column types).
            // (`resolvers` and `processors` are keyed by the entries' own names.)
            for (path, names) in keys where path != "resolvers" && path != "processors" && !["settings", "env", "columns"].contains(where: { path.hasSuffix("." + $0) }) {
                let section = String(path.prefix { $0 != "." && $0 != "[" })
                if path.isEmpty {
                    accepted["", default: []].formUnion(names)
                } else {
                    accepted[section, default: []].formUnion(names)
                }
            }
        }
        let documented = try Self.documentedKeys()
        #expect(accepted[""] == ["gateway", "cloud", "endpoint", "encryption", "adapters", "resolvers", "processors"], "the top-level sections")
        for section in ["gateway", "cloud", "endpoint", "encryption", "adapters", "resolvers", "processors"] {
            let accepts = accepted[section] ?? []
            let documents = documented[section] ?? []
            #expect(accepts.subtracting(documents).isEmpty, "accepted in \(section) but not documented: \(accepts.subtracting(documents).sorted())")
            #expect(documents.subtracting(accepts).isEmpty, "documented in \(section) but not accepted: \(documents.subtracting(accepts).sorted())")
        }
    }
}
