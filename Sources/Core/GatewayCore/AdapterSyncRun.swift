import Foundation

/// One pass of one adapter: make sure the zone exists, download (``DownloadPass``), upload
/// (``UploadPass``), and recover from a deleted zone as `on_zone_deleted` says.
struct AdapterSyncRun {
    let context: SyncContext
    var report: AdapterSyncReport
    var state = ZoneSyncState()

    init(
        cloud: any CloudDatabase, synced: SyncedAdapter, configuration: SyncConfiguration, environment: SyncEnvironment,
        observer: @escaping @Sendable (SyncEvent) -> Void, activity: SyncActivity = SyncActivity()
    ) {
        context = SyncContext(
            cloud: cloud, synced: synced, configuration: configuration, environment: environment, observer: observer, activity: activity)
        report = AdapterSyncReport(adapter: synced.adapter.name)
        report.zone = synced.adapter.zoneID
    }

    private var name: String { context.name }
    private var zone: ZoneID { context.zone }

    mutating func run() async -> AdapterSyncReport {
        do {
            try await syncZone(mayRecoverZone: true)
        } catch {
            let failure = context.syncError(error)
            report.outcome = .failed(code: failure.code, message: failure.message)
            report.error = failure
        }
        report.batchSize = state.effectiveBatchSize(configured: context.options.batchSize)
        report.refusedAtEnd = state.refused.map { $0.value.failedRecord(named: $0.key, in: zone) }
        return report
    }

    private mutating func syncZone(mayRecoverZone: Bool) async throws {
        let (context, zone) = (context, zone)
        state = try ZoneSyncState(decoding: try await context.store("loading the zone state") { try await context.adapter.loadZoneState() })
        if let reason = state.pausedReason {
            report.outcome = .paused(reason: reason)
            return
        }
        do {
            // Another user's zone is theirs to create; it is there while it is shared.
            if state.token == nil, context.ownsZone {
                try await context.retrying("creating the zone") { try await context.cloud.createZone(zone) }
            }
            var download = DownloadPass(context: context, state: state, report: report)
            defer { (state, report) = (download.state, download.report) }
            try await download.run()
            var upload = UploadPass(context: context, state: download.state, report: download.report)
            defer { (download.state, download.report) = (upload.state, upload.report) }
            try await upload.run()
        } catch let error as CloudError where error.code == .zoneNotFound || error.code == .userDeletedZone || error.code == .zoneRecreated {
            guard context.ownsZone else {
                // A shared zone gone means the share went, or the owner deleted the zone: neither
                // is this gateway's to recreate, and the local copy stays as it is.
                throw SyncError(
                    .cloudFailed, "zone \(zone) is no longer shared with this user (\(error.code)); local data is untouched",
                    adapter: name, underlying: error)
            }
            guard mayRecoverZone else {
                throw SyncError(
                    .cloudFailed, "zone \(zone) went missing again right after it was recovered; check who deletes it",
                    adapter: name, underlying: error)
            }
            if error.code == .zoneNotFound, try await context.retrying("listing zones", { try await context.cloud.zones() }).contains(zone) {
                // The zone is there after all: the answer was wrong, not the zone gone. Sync again.
                try await syncZone(mayRecoverZone: false)
                return
            }
            try await refuseGoingBack(after: error)
            try await recoverDeletedZone(error)
        }
    }

    /// Stops when this cloud still holds the zone the store left the last time it recovered a
    /// zone: the store went to another cloud's zone since (two configurations, with different
    /// clouds, point at it), and recovering again would give this zone's versions the ancestors
    /// of the other's, undoing the edits and deletes it sent there. A cloud that refuses the old
    /// token too lost that zone, and the recovery goes on.
    private func refuseGoingBack(after error: CloudError) async throws {
        guard let left = state.leftZoneToken else { return }
        let (context, zone) = (context, zone)
        do {
            _ = try await context.retrying("checking the zone the store left") { try await context.cloud.fetchChanges(in: zone, since: left, limit: 1) }
        } catch is CloudError {
            return
        } catch let failure as SyncError where failure.underlying is CloudError {
            return
        }
        throw SyncError(
            .storeSyncedElsewhere,
            "this store synced zone \(zone) through another cloud since it last synced through this one (\(error.code) here): two configurations with different clouds point at it, and nothing was changed. Sync the store through one cloud only; to move it to this one, run `gateway reset --adapter \(name)`, then `gateway sync --adapter \(name) --store-wins \(name)` to keep its values",
            adapter: name, underlying: error)
    }

    private mutating func recoverDeletedZone(_ error: CloudError) async throws {
        let (context, zone) = (context, zone)
        let leftToken = state.token ?? state.leftZoneToken
        let what = error.code == .zoneRecreated ? "deleted and created again in the cloud since the last sync" : "deleted in the cloud"
        switch context.options.onZoneDeleted {
        case .recreate, .mirror:
            let keepData = context.options.onZoneDeleted == .recreate
            report.zoneRecovery =
                "zone \(zone) was \(what) (\(error.code)); "
                + (keepData
                    ? "the zone is created again and every local record synced to it again, merged with what the new zone holds (on_zone_deleted: recreate)"
                    : "local data is deleted too and the zone followed from empty (on_zone_deleted: mirror)")
            // Under recreate, what each record was when last synced stays its common ancestor:
            // the new zone's copy of it (another store may have uploaded everything first) then
            // merges with this store's edits instead of meeting them without an ancestor, where
            // `join_prefers` could let an unchanged copy beat an edit.
            let ancestors = keepData ? try await syncedAncestors() : [:]
            try await context.store("resetting the sync state") { try await context.adapter.resetSyncState(keepData: keepData) }
            // The zone left behind is remembered, so that a cloud still holding it is told apart
            // from one that lost it (``refuseGoingBack(after:)``).
            let zoneState = ZoneSyncState(leftZoneToken: leftToken).encoded()
            try await context.store("keeping the synced versions as ancestors") {
                try await context.adapter.commit(SyncStateUpdate(metadata: ancestors, zoneState: zoneState))
            }
            state = ZoneSyncState(leftZoneToken: leftToken)
            try await context.retrying("creating the zone") { try await context.cloud.createZone(zone) }
            try await syncZone(mayRecoverZone: false)
        case .pause:
            let reason = "zone \(zone) was \(what) (\(error.code)); local data is untouched. Reset the adapter to upload everything again"
            state.pausedReason = reason
            let zoneState = state.encoded()
            try await context.store("committing the zone state") { try await context.adapter.commit(SyncStateUpdate(zoneState: zoneState)) }
            report.outcome = .paused(reason: reason)
        }
    }

    /// The metadata of every synced record as the ancestor of a record to create again: its
    /// synced values without the change tag (the zone that gave it is gone) or the intents sent
    /// to that zone. Records deleted here have none.
    private func syncedAncestors() async throws -> [RecordID: Data] {
        let context = context
        let ids = try await context.store("listing synced records") { try await context.adapter.syncedRecordIDs() }
        var ancestors: [RecordID: Data] = [:]
        for start in stride(from: 0, to: ids.count, by: 500) {
            let chunk = Array(ids[start..<min(start + 500, ids.count)])
            let states = try await context.store("reading synced versions") { try await context.adapter.localState(for: chunk) }
            for (id, state) in states {
                guard let data = state.metadata, var metadata = try? RecordMetadata(decoding: data), !metadata.deletedHere else { continue }
                metadata.changeTag = nil
                metadata.formerChangeTag = nil
                metadata.sent = []
                guard metadata.hasSyncedVersion else { continue }
                ancestors[id] = metadata.encoded()
            }
        }
        return ancestors
    }
}
