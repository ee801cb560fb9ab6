import GatewayTesting
import TestScheduling
import Testing

@Suite("PostgreSQL adapter conformance", .heavy)
struct PostgresAdapterConformanceTests {
    @Test(arguments: AdapterConformanceSuite.cases)
    func conformance(_ check: AdapterConformanceCase) async throws {
        let harness = try await PostgresAdapterHarness(label: "adapter")
        do {
            try await check.run(with: harness)
        } catch {
            await harness.closeAll()
            throw error
        }
        await harness.closeAll()
    }
}
