import GatewayTesting
import TestScheduling
import Testing

@Suite("PostgreSQL cloud conformance", .heavy)
struct PostgresCloudConformanceTests {
    @Test(arguments: CloudConformanceSuite.cases + CloudConformanceSuite.subscriptionCases + CloudConformanceSuite.sharingCases)
    func conformance(_ check: CloudConformanceCase) async throws {
        let harness = try await PostgresCloudHarness(label: "conformance")
        do {
            try await check.run(with: harness)
        } catch {
            await harness.closeAll()
            throw error
        }
        await harness.closeAll()
    }
}
