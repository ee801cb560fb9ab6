// swift-tools-version: 6.2
// A gateway build of your own with one more adapter kind, compiled in: `records-file`, a store
// kept as one JSON file of records, written on the adapter kit. It depends on Sync Gateway by
// path; from elsewhere use `.package(url: "<the repository>", branch: "main")`.
import PackageDescription

let package = Package(
    name: "my-gateway",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "sync-gateway", path: "../..")],
    targets: [
        .executableTarget(
            name: "my-gateway",
            dependencies: [
                .product(name: "GatewayCLI", package: "sync-gateway"),
                .product(name: "GatewayConfig", package: "sync-gateway"),
                .product(name: "GatewayKinds", package: "sync-gateway"),
                .product(name: "GatewayCore", package: "sync-gateway"),
                .product(name: "AdapterKit", package: "sync-gateway"),
            ],
            swiftSettings: [.treatAllWarnings(as: .error)]
        )
    ]
)
