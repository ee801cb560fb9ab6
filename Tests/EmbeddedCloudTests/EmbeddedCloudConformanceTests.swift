import GatewayTesting
import TestScheduling
import Testing

@Suite("Embedded cloud conformance", .heavy)
struct EmbeddedCloudConformanceTests {
    @Test(arguments: CloudConformanceSuite.cases)
    func conformance(_ check: CloudConformanceCase) async throws {
        let directory = try TemporaryDirectory(prefix: "embedded-cloud")
        defer { directory.remove() }
        try await check.run(with: EmbeddedCloudHarness(directory: directory))
    }

    @Test(arguments: CloudConformanceSuite.subscriptionCases + CloudConformanceSuite.sharingCases)
    func subscriptions(_ check: CloudConformanceCase) async throws {
        let directory = try TemporaryDirectory(prefix: "embedded-cloud")
        defer { directory.remove() }
        try await check.run(with: EmbeddedCloudHarness(directory: directory))
    }
}
