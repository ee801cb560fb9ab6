import GatewayCore

/// Turn-taking for tests of gateways that share a cloud.
extension Synchronizer {
    /// Syncs each of `gateways` in turn, `rounds` times over, as gateways sharing a cloud take
    /// turns; two rounds carry a change made behind any of them to all the others.
    /// - Throws: `ConformanceFailure` when a sync fails or leaves an adapter with changes it
    ///   could send.
    public static func syncInTurns(_ gateways: [Synchronizer], rounds: Int = 2, fileID: String = #fileID, line: Int = #line) async throws {
        for _ in 0..<rounds {
            for gateway in gateways {
                let report = try await gateway.sync()
                guard report.succeeded else { throw ConformanceFailure("a sync failed: \(report)", fileID: fileID, line: line) }
                for synced in await gateway.adapters {
                    let pending = try await synced.adapter.pendingChangeCount()
                    guard pending == 0 else {
                        throw ConformanceFailure("adapter \(synced.adapter.name) still has \(pending) changes after its sync", fileID: fileID, line: line)
                    }
                }
            }
        }
    }
}
