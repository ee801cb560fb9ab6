import GatewayCore

/// One sync of a config's adapters, as `gateway sync` and `gateway retry` run it: prepare the
/// state folder, take the process lock, open the cloud and the adapters, sync, release.
public enum ManualSync {
    /// Syncs the named adapters (all when `names` is empty).
    /// - Parameters:
    ///   - beforeSync: runs on the opened adapters while the lock is held, before the sync
    ///     (`gateway retry` clears failure marks here).
    /// - Throws: ``GatewayError`` (lock held, store or cloud unavailable, unknown adapter) or
    ///   ``ConfigError`` (a store that does not match the config). Sync failures are in the report.
    public static func run(
        _ configuration: GatewayConfiguration, adapters names: [String] = [],
        beforeSync: @Sendable ([OpenedAdapter]) async throws -> Void = { _ in },
        observer: @escaping @Sendable (SyncEvent) -> Void = { _ in }
    ) async throws -> SyncReport {
        // A store that cannot be reached fails its adapter in the report; the others sync.
        let session = try await SyncSession.open(
            configuration, adapters: try GatewayStores.select(names, in: configuration), tolerateUnavailableStores: true)
        do {
            // Shared zones get their adapters when every adapter syncs.
            let shared = names.isEmpty ? await session.shared?.refresh() : nil
            let adapters = await session.allAdapters()
            try await beforeSync(adapters)
            var report = try await session.synchronizer(configuration, adapters: adapters, observer: observer).sync()
            // A shared zone whose adapter could not be made fails this sync as a store would.
            for (name, error) in shared?.failures ?? [] {
                var failed = AdapterSyncReport(
                    adapter: name, outcome: .failed(code: .adapterFailed, message: "the adapter of a shared zone could not be made: \(error)"))
                failed.error = SyncError(.adapterFailed, "the adapter of a shared zone could not be made: \(error)", adapter: name, underlying: error)
                report.adapters.append(failed)
            }
            // What stays unsynced, whenever it failed: a document that never parsed fails in no
            // sync, yet an operator running one must hear of it.
            for (index, adapter) in report.adapters.enumerated() where adapter.outcome == .synced {
                guard let opened = adapters.first(where: { $0.name == adapter.adapter }),
                    let marked = try? await opened.adapter.failedRecords()
                else { continue }
                let failing = marked + adapter.refusedAtEnd
                // The records no resolver answered in this sync stay pending without a mark: the
                // summary names them apart (``AdapterSyncReport/unresolvedFailures``).
                report.adapters[index].failingRecordCount = failing.count
                report.adapters[index].failingRecords = Array(failing.sorted { $0.recordID.recordName < $1.recordID.recordName }.prefix(3))
            }
            KeyFingerprints.record(configuration, after: report)
            await session.end()
            return report
        } catch {
            await session.end()
            throw error
        }
    }
}
