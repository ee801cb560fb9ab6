import GatewayTesting
import Testing

@Suite("CloudKit Web Services conformance: client → HTTP → endpoint → embedded cloud")
struct CloudKitWebConformanceTests {
    @Test(arguments: CloudConformanceSuite.cases)
    func conformance(_ check: CloudConformanceCase) async throws {
        try await run(check, servesZoneChanges: true)
    }

    /// The whole suite again against an endpoint without `changes/zone`: the client falls back
    /// to `records/changes`.
    @Test(arguments: CloudConformanceSuite.cases)
    func conformanceWithRecordsChanges(_ check: CloudConformanceCase) async throws {
        try await run(check, servesZoneChanges: false)
    }

    private func run(_ check: CloudConformanceCase, servesZoneChanges: Bool) async throws {
        let directory = try TemporaryDirectory(prefix: "cloudkit-web")
        defer { directory.remove() }
        let harness = CloudKitWebHarness(directory: directory, servesZoneChanges: servesZoneChanges)
        do {
            try await check.run(with: harness)
        } catch {
            await harness.stop()
            throw error
        }
        await harness.stop()
    }
}
