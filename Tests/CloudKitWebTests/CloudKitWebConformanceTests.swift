import GatewayTesting
import TestScheduling
import Testing

@Suite("CloudKit Web Services conformance: client → HTTP → endpoint → embedded or PostgreSQL cloud", .heavy)
struct CloudKitWebConformanceTests {
    @Test(arguments: CloudConformanceSuite.cases + CloudConformanceSuite.sharingCases)
    func conformance(_ check: CloudConformanceCase) async throws {
        try await run(check, servesZoneChanges: true)
    }

    /// The whole suite through the endpoint in front of the PostgreSQL cloud.
    @Test(arguments: CloudConformanceSuite.cases + CloudConformanceSuite.sharingCases)
    func conformanceOverPostgres(_ check: CloudConformanceCase) async throws {
        try await run(check, backing: .postgres, servesZoneChanges: true)
    }

    /// The whole suite again against an endpoint without `changes/zone`: the client falls back
    /// to `records/changes`.
    @Test(arguments: CloudConformanceSuite.cases)
    func conformanceWithRecordsChanges(_ check: CloudConformanceCase) async throws {
        try await run(check, servesZoneChanges: false)
    }

    private func run(_ check: CloudConformanceCase, backing: CloudKitWebHarness.Backing = .embedded, servesZoneChanges: Bool) async throws {
        let directory = try TemporaryDirectory(prefix: "cloudkit-web")
        defer { directory.remove() }
        let harness = CloudKitWebHarness(directory: directory, backing: backing, servesZoneChanges: servesZoneChanges)
        do {
            try await check.run(with: harness)
        } catch {
            await harness.stop()
            throw error
        }
        await harness.stop()
    }
}
