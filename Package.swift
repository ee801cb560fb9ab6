// swift-tools-version: 6.2
import PackageDescription

/// Settings every target of ours shares: Swift 6 mode comes from the tools version; warnings fail the build.
let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .treatAllWarnings(as: .error),
]

let package = Package(
    name: "sync-gateway",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "GatewayCore", targets: ["GatewayCore"]),
        .library(name: "EmbeddedCloud", targets: ["EmbeddedCloud"]),
        .library(name: "AdapterConformance", targets: ["AdapterConformance"]),
        .library(name: "GatewayTesting", targets: ["GatewayTesting"]),
        .library(name: "SQLiteAdapter", targets: ["SQLiteAdapter"]),
        .library(name: "PostgresCloud", targets: ["PostgresCloud"]),
        .library(name: "PostgresAdapter", targets: ["PostgresAdapter"]),
        .library(name: "PostgresTesting", targets: ["PostgresTesting"]),
        .library(name: "FaultProxy", targets: ["FaultProxy"]),
        .library(name: "JSONFilesAdapter", targets: ["JSONFilesAdapter"]),
        .library(name: "AdapterKit", targets: ["AdapterKit"]),
        .library(name: "PluginAdapter", targets: ["PluginAdapter"]),
        .library(name: "CloudKitWeb", targets: ["CloudKitWeb"]),
        .library(name: "CloudKitServer", targets: ["CloudKitServer"]),
        .library(name: "GatewayConfig", targets: ["GatewayConfig"]),
        .library(name: "GatewayService", targets: ["GatewayService"]),
        .library(name: "GatewayKinds", targets: ["GatewayKinds"]),
        .library(name: "GatewayCLI", targets: ["GatewayCLI"]),
        .executable(name: "gateway", targets: ["gateway"]),
        .executable(name: "gateway-bench", targets: ["GatewayBench"]),
        .executable(name: "gateway-harness", targets: ["GatewayHarness"]),
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        // Exact: `PreparedAESGCMKey` imports swift-crypto's bundled BoringSSL module, which is not
        // a product and may change in any release (sealing a short field costs a third as much
        // with the AEAD context prepared once per key). A new version is taken on purpose, after
        // `PreparedAESGCMKeyTests` pass with it (they fail if the module is gone).
        .package(url: "https://github.com/apple/swift-crypto", exact: "4.5.2"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        // `swift package generate-documentation`: the API reference `.ci/run` builds.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        .target(
            name: "GatewayCore",
            dependencies: [.product(name: "Crypto", package: "swift-crypto")],
            path: "Sources/Core/GatewayCore",
            swiftSettings: strictSettings
        ),
        .target(
            name: "EmbeddedCloud",
            dependencies: ["GatewayCore", "GatewayConfig", "SQLiteSupport", .product(name: "GRDB", package: "GRDB.swift")],
            path: "Sources/Clouds/Embedded/EmbeddedCloud",
            swiftSettings: strictSettings
        ),
        // The adapter conformance suite: what `gateway check-adapter` runs against a store of any
        // kind. Shipped in the gateway, so it holds no test double, process driver or browser.
        .target(
            name: "AdapterConformance",
            dependencies: ["GatewayCore"],
            path: "Sources/Core/AdapterConformance",
            swiftSettings: strictSettings
        ),
        // The gateway's own test kit: the cloud conformance suite, a fault-injecting cloud, an
        // in-memory adapter, child processes, temporary folders, a headless browser. Never linked
        // by the shipped gateway.
        .target(
            name: "GatewayTesting",
            dependencies: ["GatewayCore", "AdapterConformance"],
            path: "Sources/TestKit/GatewayTesting",
            swiftSettings: strictSettings
        ),
        // SQLite's process-wide options (`sqlite3_config` is variadic: Swift cannot call it).
        .target(
            name: "CSQLiteProcess",
            dependencies: [.product(name: "GRDBSQLite", package: "GRDB.swift")],
            path: "Sources/Core/CSQLiteProcess"
        ),
        // What the SQLite-backed cloud, the SQLite adapter and the kit's sidecar databases share:
        // statements bound through SQLite's C API.
        .target(
            name: "SQLiteSupport",
            dependencies: [
                "CSQLiteProcess", .product(name: "GRDB", package: "GRDB.swift"), .product(name: "GRDBSQLite", package: "GRDB.swift"),
            ],
            path: "Sources/Core/SQLiteSupport",
            swiftSettings: strictSettings
        ),
        // Connection settings and their configuration keys, a small connection pool and error
        // mapping shared by the PostgreSQL cloud and adapter.
        .target(
            name: "PostgresSupport",
            dependencies: [
                "GatewayCore", "GatewayConfig", .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/Core/PostgresSupport",
            swiftSettings: strictSettings
        ),
        .target(
            name: "PostgresCloud",
            dependencies: ["GatewayCore", "GatewayConfig", "PostgresSupport", .product(name: "PostgresNIO", package: "postgres-nio")],
            path: "Sources/Clouds/Postgres/PostgresCloud",
            swiftSettings: strictSettings
        ),
        // Each built-in adapter is one folder under `adapters/`: its module, with its kind in `Kind/`.
        .target(
            name: "PostgresAdapter",
            dependencies: ["GatewayCore", "GatewayConfig", "PostgresSupport", .product(name: "PostgresNIO", package: "postgres-nio")],
            path: "adapters/postgres",
            swiftSettings: strictSettings
        ),
        // A loopback TCP proxy that cuts, stalls and delays connections: network faults for
        // tests and the fault harness.
        .target(
            name: "FaultProxy",
            dependencies: [.product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio")],
            path: "Sources/TestKit/FaultProxy",
            swiftSettings: strictSettings
        ),
        // The `.heavy` trait: tests that start processes or servers run a few at a time.
        .target(
            name: "TestScheduling",
            path: "Sources/TestKit/TestScheduling",
            swiftSettings: strictSettings
        ),
        // Starts a private PostgreSQL server for tests (or uses GATEWAY_TEST_POSTGRES_URL).
        .target(
            name: "PostgresTesting",
            dependencies: ["GatewayCore", "GatewayTesting", "PostgresSupport", .product(name: "PostgresNIO", package: "postgres-nio")],
            path: "Sources/TestKit/PostgresTesting",
            swiftSettings: strictSettings
        ),
        // A CloudDatabase over CloudKit Web Services: wire encoding, request signing, web auth
        // tokens and the HTTP client.
        .target(
            name: "CloudKitWeb",
            dependencies: [
                "GatewayCore", "GatewayConfig", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"), .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/Clouds/CloudKit/CloudKitWeb",
            swiftSettings: strictSettings
        ),
        // `gateway cloud serve`: CloudKit Web Services' paths and JSON in front of any CloudDatabase.
        .target(
            name: "CloudKitServer",
            dependencies: [
                "GatewayCore", "CloudKitWeb", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"), .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ],
            path: "Sources/Clouds/CloudKit/CloudKitServer",
            swiftSettings: strictSettings
        ),
        .target(
            name: "SQLiteAdapter",
            dependencies: ["GatewayCore", "GatewayConfig", "SQLiteSupport", .product(name: "GRDB", package: "GRDB.swift")],
            path: "adapters/sqlite",
            swiftSettings: strictSettings
        ),
        .target(
            name: "JSONFilesAdapter",
            dependencies: [
                "GatewayCore", "GatewayConfig", "SQLiteSupport", "AdapterKit", .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "adapters/json-files",
            swiftSettings: strictSettings
        ),
        // The adapter kit: sync state in a sidecar database for stores without transactions.
        .target(
            name: "AdapterKit",
            dependencies: [
                "GatewayCore", "SQLiteSupport", .product(name: "GRDB", package: "GRDB.swift"), .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "adapters/kit",
            swiftSettings: strictSettings
        ),
        // Process plugins: adapters in any language, spoken to over stdin/stdout, on the kit.
        .target(
            name: "PluginAdapter",
            dependencies: [
                "GatewayCore", "GatewayConfig", "AdapterKit", "CloudKitWeb", .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
            ],
            path: "adapters/plugin",
            swiftSettings: strictSettings
        ),
        // Configuration: YAML decoding, the kinds registry and its checks, and what opens a
        // configured gateway and syncs it once (stores, session, manual sync, status). A program
        // that embeds the gateway's sync depends on this, never on the server below.
        .target(
            name: "GatewayConfig",
            dependencies: [
                "GatewayCore", .product(name: "Yams", package: "Yams"), .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/Service/GatewayConfig",
            swiftSettings: strictSettings
        ),
        // The long-running service: scheduler, control server and status page, metrics, logging.
        .target(
            name: "GatewayService",
            dependencies: [
                "GatewayCore", "GatewayConfig",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            path: "Sources/Service/GatewayService",
            swiftSettings: strictSettings
        ),
        // The adapter and cloud kinds this build ships, registered by name. Each kind's source
        // is part of its adapter's or cloud's module (that folder's `Kind/`).
        .target(
            name: "GatewayKinds",
            dependencies: [
                "GatewayConfig", "EmbeddedCloud", "SQLiteAdapter", "JSONFilesAdapter", "PostgresCloud", "PostgresAdapter", "CloudKitWeb",
                "PluginAdapter",
            ],
            path: "Sources/Service/GatewayKinds",
            swiftSettings: strictSettings
        ),
        // The command line's commands, as a library so custom builds can add kinds.
        .target(
            name: "GatewayCLI",
            dependencies: [
                "GatewayCore", "GatewayConfig", "GatewayService", "GatewayKinds", "CloudKitServer", "CloudKitWeb", "AdapterConformance",
                "SQLiteSupport", "AdapterKit",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Sources/CLI/GatewayCLI",
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "gateway",
            dependencies: ["GatewayCLI"],
            path: "Sources/CLI/gateway",
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "GatewayBench",
            dependencies: [
                "GatewayCore", "EmbeddedCloud", "SQLiteAdapter", "JSONFilesAdapter", "AdapterKit", .product(name: "GRDB", package: "GRDB.swift"),
                "PostgresAdapter", "PostgresSupport", "PostgresTesting", "GatewayTesting", "CloudKitWeb", "CloudKitServer", "SQLiteSupport",
                .product(name: "PostgresNIO", package: "postgres-nio"), .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"), .product(name: "Logging", package: "swift-log"),
            ],
            path: "Benchmarks/GatewayBench",
            swiftSettings: strictSettings
        ),
        // The reliability harness: kills syncs at random moments; runs gateways under faults.
        .executableTarget(
            name: "GatewayHarness",
            dependencies: [
                "GatewayCore", "GatewayConfig", "GatewayService", "GatewayKinds", "GatewayCLI", "GatewayTesting", "EmbeddedCloud", "PostgresCloud",
                "PostgresSupport", "PostgresTesting", "FaultProxy", "SQLiteSupport", "SQLiteAdapter", "JSONFilesAdapter", "AdapterKit",
                "PostgresAdapter", "PluginAdapter", .product(name: "Logging", package: "swift-log"),
                .product(name: "GRDB", package: "GRDB.swift"), .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Benchmarks/GatewayHarness",
            swiftSettings: strictSettings
        ),
        // A second process for the multi-process tests of the embedded cloud.
        .executableTarget(
            name: "EmbeddedCloudWriter",
            dependencies: ["GatewayCore", "EmbeddedCloud"],
            path: "Tests/EmbeddedCloudWriter",
            swiftSettings: strictSettings
        ),
        // A program that writes to PostgreSQL while the gateway syncs it.
        .executableTarget(
            name: "PostgresWriter",
            dependencies: ["PostgresSupport", .product(name: "PostgresNIO", package: "postgres-nio")],
            path: "Tests/PostgresWriter",
            swiftSettings: strictSettings
        ),
        // A program that writes to a SQLite database while the gateway syncs it.
        .executableTarget(
            name: "SQLiteWriter",
            dependencies: ["SQLiteSupport", .product(name: "GRDB", package: "GRDB.swift"), .product(name: "GRDBSQLite", package: "GRDB.swift")],
            path: "Tests/SQLiteWriter",
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "SQLiteAdapterTests",
            dependencies: [
                "TestScheduling", "GatewayCore", "SQLiteAdapter", "SQLiteSupport", "EmbeddedCloud", "GatewayTesting", "SQLiteWriter",
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "GatewayServiceTests",
            dependencies: [
                "TestScheduling", "GatewayCore", "GatewayConfig", "GatewayService", "GatewayKinds", "GatewayCLI", "GatewayTesting", "EmbeddedCloud", "SQLiteAdapter", "gateway",
                "PostgresTesting", "SQLiteWriter", "PostgresWriter", "PostgresSupport",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "PluginAdapterTests",
            dependencies: [
                "TestScheduling", "GatewayCore", "AdapterKit", "PluginAdapter", "GatewayTesting", "GatewayKinds", "GatewayConfig", "CloudKitWeb",
                "SQLiteAdapter", "EmbeddedCloud", .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "JSONFilesAdapterTests",
            dependencies: ["TestScheduling", "GatewayCore", "JSONFilesAdapter", "AdapterKit", "EmbeddedCloud", "GatewayTesting", "SQLiteAdapter", .product(name: "GRDB", package: "GRDB.swift")],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "ReliabilityTests",
            dependencies: ["TestScheduling", "GatewayTesting", "GatewayHarness", "gateway"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "GatewayCoreTests",
            dependencies: ["TestScheduling", "GatewayCore", "GatewayTesting", "EmbeddedCloud", .product(name: "GRDB", package: "GRDB.swift")],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "PostgresAdapterTests",
            dependencies: ["TestScheduling", "GatewayCore", "PostgresAdapter", "PostgresSupport", "PostgresTesting", "GatewayTesting", "EmbeddedCloud"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "PostgresSupportTests",
            dependencies: ["TestScheduling", "PostgresSupport", "PostgresTesting", "FaultProxy", .product(name: "PostgresNIO", package: "postgres-nio")],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "PostgresCloudTests",
            dependencies: ["TestScheduling", "GatewayCore", "PostgresCloud", "PostgresSupport", "PostgresTesting", "GatewayTesting"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "CloudKitWebTests",
            dependencies: [
                "TestScheduling", "GatewayCore", "CloudKitWeb", "CloudKitServer", "EmbeddedCloud", "PostgresCloud", "PostgresTesting", "GatewayTesting",
                "GatewayConfig", "GatewayService", "GatewayKinds", "SQLiteAdapter", "gateway", .product(name: "GRDB", package: "GRDB.swift"), .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"), .product(name: "Logging", package: "swift-log"),
                .product(name: "Hummingbird", package: "hummingbird"), .product(name: "HTTPTypes", package: "swift-http-types"),
            ],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "EmbeddedCloudTests",
            dependencies: [
                "TestScheduling", "GatewayCore", "EmbeddedCloud", "GatewayTesting", "EmbeddedCloudWriter", "SQLiteSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            swiftSettings: strictSettings
        ),
    ]
)
