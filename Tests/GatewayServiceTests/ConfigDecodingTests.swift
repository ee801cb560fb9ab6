import Foundation
import GatewayCore
import GatewayKinds
@testable import GatewayConfig
import GatewayTesting
import Testing

@Suite("config decoding")
struct ConfigDecodingTests {
    /// Parses config text in `directory` (where an `app.sqlite` exists) with the built-in kinds.
    static func parse(_ yaml: String, in directory: TemporaryDirectory, environment: [String: String] = [:]) throws
        -> GatewayConfiguration
    {
        try GatewayConfiguration.parse(
            yaml: yaml, file: "config.yaml", baseDirectory: directory.url.path, registry: .builtIn, environment: environment)
    }

    /// ``directoryWithDatabase()`` with an empty `docs` folder for a JSON adapter.
    static func directoryWithDatabaseAndDocs() throws -> TemporaryDirectory {
        let directory = try directoryWithDatabase()
        try FileManager.default.createDirectory(at: directory.url.appendingPathComponent("docs"), withIntermediateDirectories: true)
        return directory
    }

    static func directoryWithDatabase() throws -> TemporaryDirectory {
        let directory = try TemporaryDirectory(prefix: "config-decoding")
        _ = FileManager.default.createFile(atPath: directory.path("app.sqlite"), contents: Data())
        return directory
    }

    @Test("an empty mapping gives every default")
    func defaults() throws {
        let directory = try Self.directoryWithDatabase()
        defer { directory.remove() }
        let configuration = try Self.parse("{}", in: directory)
        let settings = configuration.settings
        #expect(settings.compatibilityVersion == 1)
        #expect(settings.batchSize == nil && configuration.defaultBatchSize == 400, "the embedded cloud's max_operations")
        #expect(settings.fetchLimit.value == 5_000 && configuration.syncConfiguration(deviceID: "d").fetchLimit == 5_000)
        #expect(settings.merge.applied(to: MergeSettings()) == MergeSettings(policy: .merge, prefers: .server))
        #expect(settings.syncInterval.duration == .seconds(60))
        #expect(settings.retry.policy == RetryPolicy(maxAttempts: 5, baseDelay: .milliseconds(500), maxDelay: .seconds(60)))
        #expect(settings.onZoneDeleted == .recreate)
        #expect(settings.control.host == "127.0.0.1" && settings.control.port == 8787 && settings.control.token.isEmpty)
        #expect(settings.deviceID == nil)
        #expect(settings.parallelism == nil)
        #expect(
            configuration.syncConfiguration(deviceID: "d").parallelism == max(1, min(configuration.adapters.count, ProcessInfo.processInfo.activeProcessorCount)),
            "every adapter at once by default, up to the cores")
        #expect(settings.parallelism(adapterCount: 1000) == ProcessInfo.processInfo.activeProcessorCount)
        #expect(settings.parallelism(adapterCount: 0) == 1)
        #expect(configuration.context.stateDirectory == directory.url.appendingPathComponent(".gateway").standardizedFileURL.path)
        #expect(configuration.cloud.kind == "embedded")
        #expect(configuration.cloud.plan.limits == .selfHosted && CloudLimits.selfHosted.maxOperationsPerRequest == 400)
        var cloudKitLimits = CloudLimits.selfHosted
        cloudKitLimits.maxOperationsPerRequest = 200
        cloudKitLimits.maxResultsPerFetch = 2_000
        #expect(
            cloudKitLimits == .cloudKit && CloudLimits.selfHosted.maxResultsPerFetch == 5_000,
            "a self-hosted cloud takes more operations per request and returns larger pages, and is CloudKit otherwise")
        #expect(configuration.adapters.isEmpty)
    }

    @Test("a field one store of a zone encrypts is encrypted by every store of that zone, never uploaded in clear by one whose entry left it out")
    func encryptedFieldsPerZone() throws {
        let directory = try Self.directoryWithDatabase()
        defer { directory.remove() }
        for file in ["replica.sqlite", "other.sqlite"] { _ = FileManager.default.createFile(atPath: directory.path(file), contents: Data()) }
        let configuration = try Self.parse(
            """
            encryption: { keys: [{ id: k1, env: NOTES_KEY }] }
            adapters:
              - { name: app, kind: sqlite, path: app.sqlite, zone: AppZone, tables: [{ table: notes, encrypted: [title] }] }
              - { name: replica, kind: sqlite, path: replica.sqlite, zone: AppZone, tables: [{ table: notes }] }
              - { name: other, kind: sqlite, path: other.sqlite, zone: OtherZone, tables: [{ table: notes }] }
            """, in: directory, environment: ["NOTES_KEY": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="])
        let fields = configuration.adapters.map { configuration.syncOptions(for: $0).encryption?.fields["notes"] ?? [] }
        #expect(fields == [["title"], ["title"], []])
    }

    @Test("a download page is the gateway's fetch_limit, at most 2,000 for a plugin adapter, and an adapter's own fetch_limit wins")
    func downloadPageSize() throws {
        let directory = try Self.directoryWithDatabaseAndDocs()
        defer { directory.remove() }
        let adapters = """
            adapters:
              - { name: app, kind: sqlite, path: app.sqlite, zone: AppZone, tables: [{ table: notes }] }
              - { name: docs, kind: json, directory: docs, zone: DocsZone, fetch_limit: 300 }
              - { name: csv, kind: plugin, command: python3, zone: CSVZone }
              - { name: big, kind: plugin, command: python3, zone: BigZone, fetch_limit: 4000 }
            """
        let defaults = try Self.parse(adapters, in: directory)
        #expect(defaults.syncConfiguration(deviceID: "d").fetchLimit == 5_000)
        #expect(defaults.adapters.map { defaults.syncOptions(for: $0).fetchLimit } == [nil, 300, 2_000, 4_000])
        let small = try Self.parse("gateway: { fetch_limit: 500 }\n" + adapters, in: directory)
        #expect(small.adapters.map { small.syncOptions(for: $0).fetchLimit } == [nil, 300, 500, 4_000])
        #expect(throws: ConfigError.self) {
            try Self.parse("adapters:\n  - { name: csv, kind: plugin, command: python3, zone: CSVZone, fetch_limit: 0 }", in: directory)
        }
    }

    @Test("without batch_size an upload batch is as large as the cloud's max_operations; limits not given keep the kind's")
    func batchSizeFollowsTheCloud() throws {
        let directory = try Self.directoryWithDatabaseAndDocs()
        defer { directory.remove() }
        let adapters = """
            adapters:
              - { name: app, kind: sqlite, path: app.sqlite, zone: AppZone, tables: [{ table: notes }] }
              - { name: small, kind: json, directory: docs, zone: SmallZone, batch_size: 20 }
            """
        let selfHosted = try Self.parse("cloud: { kind: embedded, limits: { max_record_size: 512KB } }\n" + adapters, in: directory)
        #expect(selfHosted.cloud.plan.limits.maxOperationsPerRequest == 400 && selfHosted.cloud.plan.limits.maxRecordSize == 512_000)
        #expect(selfHosted.adapters.map { selfHosted.syncOptions(for: $0).batchSize } == [400, 20])
        let smaller = try Self.parse("cloud: { kind: embedded, limits: { max_operations: 150 } }\n" + adapters, in: directory)
        #expect(smaller.adapters.map { smaller.syncOptions(for: $0).batchSize } == [150, 20])
        let postgres = try Self.parse("cloud: { kind: postgres, url: \"postgres://gateway@127.0.0.1:5432/cloud\" }\n" + adapters, in: directory)
        #expect(postgres.cloud.plan.limits == .postgresCloud && CloudLimits.postgresCloud.maxOperationsPerRequest == 1_000)
        #expect(postgres.adapters.map { postgres.syncOptions(for: $0).batchSize } == [1_000, 20])
        let overlapping = try Self.parse(
            "cloud: { kind: postgres, url: \"postgres://gateway@127.0.0.1:5432/cloud\", requests_in_flight: 3 }\n" + adapters, in: directory)
        #expect(overlapping.cloud.plan.limits.modifyRequestsInFlight == 3)
        #expect(overlapping.cloud.plan.limits.maxOperationsPerRequest == 1_000)
        #expect(throws: ConfigError.self) {
            try Self.parse("cloud: { kind: postgres, url: \"postgres://gateway@127.0.0.1:5432/cloud\", requests_in_flight: 9 }\n" + adapters, in: directory)
        }
        let set = try Self.parse("gateway: { batch_size: 60 }\n" + adapters, in: directory)
        #expect(set.adapters.map { set.syncOptions(for: $0).batchSize } == [60, 20])
    }

    @Test("every key of every section is read")
    func everyKey() throws {
        let directory = try Self.directoryWithDatabase()
        defer { directory.remove() }
        let yaml = """
            gateway:
              state_dir: /var/lib/gateway
              compatibility_version: 3
              batch_size: 90
              fetch_limit: 750
              merge_policy: client
              merge_prefers: client
              sync_interval: 1h30m
              debounce: 2s
              retry: { max_attempts: 9, base_delay: 250ms, max_delay: 2m }
              on_zone_deleted: pause
              control: { listen: "0.0.0.0:9000", token: "${TOKEN}" }
              device_id: edge-7
              force_data: true
              parallelism: 3
            cloud:
              kind: embedded
              path: cloud/main.sqlite
              limits: { max_operations: 100, max_record_size: 512KB, max_request_size: 1MiB, max_asset_size: 10MB }
              tombstone_retention: 7d
              poll_interval: 250ms
            encryption:
              keys:
                - { id: k2, file: keys/k2.key }
                - { id: k1, env: OLD_KEY }
            adapters:
              - name: app
                kind: sqlite
                path: app.sqlite
                zone: AppZone
                batch_size: 50
                on_zone_deleted: mirror
                merge_policy: merge
                force_data: false
                busy_timeout: 5s
                poll_interval: 1s
                tables:
                  - table: notes
                    record_type: Note
                    record_name: "<Type>.<pk>"
                    include: [title, body]
                    columns: { created: unix_ms }
                    merge_prefers: server
                    force_data: true
                    assets: [body]
                  - table: tags
                    exclude: [secret]
                    merge_policy: server
            """
        try FileManager.default.createDirectory(at: directory.url.appendingPathComponent("keys"), withIntermediateDirectories: true)
        try Data((Data(repeating: 2, count: 32).base64EncodedString() + "\n").utf8).write(to: directory.url.appendingPathComponent("keys/k2.key"))
        let configuration = try Self.parse(
            yaml, in: directory, environment: ["TOKEN": "s3cret", "OLD_KEY": Data(repeating: 1, count: 32).base64EncodedString()])
        #expect(configuration.keyRing?.keys.map(\.id) == ["k2", "k1"])
        let settings = configuration.settings
        #expect(configuration.context.stateDirectory == "/var/lib/gateway")
        #expect(settings.compatibilityVersion == 3)
        #expect(configuration.syncConfiguration(deviceID: "d").fetchLimit == 750)
        #expect(settings.syncInterval.duration == .seconds(5_400))
        #expect(settings.debounce.duration == .seconds(2))
        #expect(settings.retry.policy == RetryPolicy(maxAttempts: 9, baseDelay: .milliseconds(250), maxDelay: .seconds(120)))
        #expect(settings.onZoneDeleted == .pause)
        #expect(settings.control.host == "0.0.0.0" && settings.control.port == 9000 && settings.control.token == "s3cret")
        #expect(!settings.control.isLoopback)
        #expect(settings.deviceID?.value == "edge-7")
        #expect(
            configuration.cloud.plan.limits
                == CloudLimits(
                    maxOperationsPerRequest: 100, maxRecordSize: 512_000, maxRequestSize: 1_048_576, maxAssetSize: 10_000_000,
                    maxResultsPerFetch: 5_000))
        #expect(configuration.encryption.keys.map(\.id.value) == ["k2", "k1"])
        #expect(configuration.encryption.keys.map(\.origin) == [.file("keys/k2.key"), .environment("OLD_KEY")])

        let adapter = try #require(configuration.adapter(named: "app"))
        #expect(adapter.settings.zoneID == ZoneID(zoneName: "AppZone"))
        #expect(adapter.plan.recordTypes.map(\.recordType) == ["Note", "tags"])
        #expect(adapter.plan.recordTypes[0].forceData == true)
        let options = configuration.syncOptions(for: adapter)
        #expect(options.batchSize == 50)
        #expect(options.onZoneDeleted == .mirror)
        #expect(options.assets == AssetSettings(forceData: false, forceDataByRecordType: ["Note": true], assetFields: ["Note": ["body"]]))
        #expect(settings.forceData)
        #expect(options.merge == MergeSettings(policy: .merge, prefers: .client), "the adapter's policy, the gateway's preference")
        #expect(options.mergeSettings(for: "Note") == MergeSettings(policy: .merge, prefers: .server))
        #expect(options.mergeSettings(for: "tags") == MergeSettings(policy: .server, prefers: .client))
        #expect(options.mergeSettings(for: "Other") == options.merge)
        #expect(configuration.syncConfiguration(deviceID: "edge-7").compatibilityVersion == 3)
        #expect(configuration.syncConfiguration(deviceID: "edge-7").parallelism == 3)
    }

    @Test("a registered resolver can be named by merge_resolver")
    func customResolver() throws {
        struct KeepLocal: ConflictResolver {
            func resolve(_ conflict: ConflictContext) -> ConflictResolution { .local }
        }
        let directory = try Self.directoryWithDatabase()
        defer { directory.remove() }
        var registry = GatewayRegistry.builtIn
        registry.register(resolver: KeepLocal(), named: "keep-local")
        let configuration = try GatewayConfiguration.parse(
            yaml: "gateway: { merge_policy: custom, merge_resolver: keep-local }", file: "config.yaml",
            baseDirectory: directory.url.path, registry: registry, environment: [:])
        #expect(configuration.settings.merge.applied(to: MergeSettings()).resolverName == "keep-local")
        #expect(configuration.resolvers["keep-local"] != nil)
    }

    @Test("a kind registered by a custom build is decoded from its own keys")
    func customKind() throws {
        struct MemoryKind: AdapterKind {
            let name = "memory"
            struct Plan: AdapterPlan {
                let types: [String]
                var recordTypes: [RecordTypeSettings] { types.map { RecordTypeSettings(recordType: $0) } }
                func check() async throws {}
                func open() async throws -> any ModelAdapter { InMemoryAdapter(name: "memory", zoneID: ZoneID(zoneName: "Z")) }
            }
            enum Keys: String, CodingKey { case types }
            func decodePlan(settings: AdapterSettings, from decoder: any Decoder, context: ConfigContext) throws -> any AdapterPlan {
                Plan(types: try decoder.container(keyedBy: Keys.self).decode([String].self, forKey: .types))
            }
        }
        let directory = try Self.directoryWithDatabase()
        defer { directory.remove() }
        var registry = GatewayRegistry.builtIn
        registry.register(MemoryKind())
        let yaml = "adapters:\n  - { name: mem, kind: memory, zone: Z, types: [A, B] }"
        let configuration = try GatewayConfiguration.parse(
            yaml: yaml, file: "config.yaml", baseDirectory: directory.url.path, registry: registry, environment: [:])
        #expect(configuration.adapters.first?.plan.recordTypes.map(\.recordType) == ["A", "B"])

        let misspelt = "adapters:\n  - { name: mem, kind: memory, zone: Z, types: [A], tpyes: [B] }"
        #expect {
            try GatewayConfiguration.parse(
                yaml: misspelt, file: "config.yaml", baseDirectory: directory.url.path, registry: registry, environment: [:])
        } throws: { error in
            (error as? ConfigError)?.description
                == "config.yaml:2:53: unknown key 'tpyes' in 'adapters[0]'; did you mean 'types'?"
        }
    }

    @Test(
        "${VAR} expansion",
        arguments: [
            ("plain", "plain"), ("${A}", "alpha"), ("x-${A}-y", "x-alpha-y"), ("${MISSING:-fallback}", "fallback"),
            ("${EMPTY:-fallback}", "fallback"), ("${EMPTY}", ""), ("${MISSING:-}", ""), ("$$HOME", "$HOME"), ("cost $5", "cost $5"),
            ("${A}${A}", "alphaalpha"),
        ])
    func expansion(_ text: String, _ expected: String) throws {
        #expect(try VariableExpansion.expand(text, environment: ["A": "alpha", "EMPTY": ""]) == expected)
    }

    @Test("malformed and undefined variables are errors", arguments: ["${MISSING}", "${A", "${1A}", "${}"])
    func expansionErrors(_ text: String) {
        #expect(throws: (any Error).self) { try VariableExpansion.expand(text, environment: ["A": "alpha"]) }
    }

    @Test(
        "durations",
        arguments: [
            ("500ms", Duration.milliseconds(500)), ("30s", .seconds(30)), ("5m", .seconds(300)), ("1h30m", .seconds(5_400)),
            ("2d", .seconds(172_800)), ("1m30s", .seconds(90)),
        ])
    func durations(_ text: String, _ expected: Duration) {
        #expect(ConfigDuration.parse(text) == expected)
    }

    @Test("not durations", arguments: ["", "60", "5 minutes", "1.5h", "s", "-1s", "10x", "99999999999999999d"])
    func notDurations(_ text: String) {
        #expect(ConfigDuration.parse(text) == nil)
    }

    @Test(
        "sizes",
        arguments: [
            ("1024", Int64(1_024)), ("1MB", 1_000_000), ("512KB", 512_000), ("2MiB", 2_097_152), ("1 GB", 1_000_000_000),
            ("10B", 10), ("1_000", 1_000),
        ])
    func sizes(_ text: String, _ expected: Int64) {
        #expect(ByteSize.parse(text) == expected)
    }

    @Test("not sizes", arguments: ["", "MB", "1 megabyte", "1.5MB", "-1MB", "1TB"])
    func notSizes(_ text: String) {
        #expect(ByteSize.parse(text) == nil)
    }

    @Test("zone names CloudKit would reject", arguments: ["", "_defaultZone", "_private", "My Zone", "Zöne", String(repeating: "z", count: 256)])
    func badZoneNames(_ name: String) {
        #expect(ZoneNameRules.problem(with: name) != nil)
    }

    @Test("zone names that sync", arguments: ["NotesZone", "notes-2026", "a.b_c", String(repeating: "z", count: 255)])
    func goodZoneNames(_ name: String) {
        #expect(ZoneNameRules.problem(with: name) == nil)
    }
}
