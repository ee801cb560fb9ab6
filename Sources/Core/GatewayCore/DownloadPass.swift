import Foundation

/// The download of one adapter's pass: pages of the zone's change feed since the token, each
/// merged with the store's pending edits and applied with its token in one transaction.
///
/// While the store applies page N, page N+1's records are opened (decrypted, assets fetched)
/// and, when the two pages share no record, its local state read and merged; and page N+2 is
/// already being fetched (``FeedAhead``). A token
/// the cloud calls expired starts a full refetch, which ends by reconciling: synced records the
/// refetch did not return were deleted remotely.
struct DownloadPass {
    let context: SyncContext
    var state: ZoneSyncState
    var report: AdapterSyncReport

    /// How many records one reconciliation apply handles.
    static let reconciliationChunk = 500

    private var name: String { context.name }

    /// A page as the cloud returned it, fetched ahead by a child task.
    typealias RawPage = Result<ZoneChanges, any Error>

    mutating func run() async throws {
        // The fetch of the page after the next one runs in this group, one ahead.
        try await withThrowingTaskGroup(of: RawPage.self) { fetches in
            try await run(fetchingAheadIn: &fetches)
        }
    }

    /// Whether this download runs from the start (``DownloadPage/joining``).
    var joining = true

    private mutating func run(fetchingAheadIn fetches: inout ThrowingTaskGroup<RawPage, any Error>) async throws {
        var progress = DownloadProgress(from: state)
        joining = progress.cursor == nil
        // The next page, fetched and opened while the previous one was being applied.
        var prefetched: Result<DownloadPage, any Error>?
        var feed = FeedAhead()
        while true {
            try context.stopIfCancelled()
            var page: DownloadPage
            do {
                if let prefetched {
                    page = try prefetched.get()
                } else {
                    page = try await open(try await feed.next(since: progress.cursor, context: context, in: &fetches), applying: nil, after: progress.state)
                }
                prefetched = nil
            } catch let error as CloudError where error.code == .changeTokenExpired || (error.code == .zoneRecreated && !context.ownsZone) {
                // A zone another user recreated is theirs: its copy follows the new zone. Its
                // owner's zone recreated is a deletion this gateway missed (`on_zone_deleted`).
                // The expired fetch was the only one in flight: a page is fetched ahead only after
                // the page before it arrived.
                prefetched = nil
                try progress.tokenExpired(in: context.zone, adapter: name, underlying: error)
                state = progress.state
                joining = true
                continue
            }
            // A record that could not be opened is still in the cloud: a refetch saw it.
            let next = progress.received(
                records: page.incoming.lazy.filter { $0.record != nil }.map(\.id) + page.unopened.map(\.id), token: page.token)
            if !page.isMerged { try context.merge(&page, local: try await context.localState(of: page.ids), zoneState: next) }
            await context.resolvingDeferred(&page)
            var taken = context.takeChanges(of: &page, into: &report)
            taken.moreComing = page.moreComing
            // The page brings its records' newer versions: a refusal of one of them is over once
            // the store takes the page, and starts again if it refuses this version too.
            var committed = next
            if !next.refused.isEmpty || !page.unopened.isEmpty {
                for id in page.ids { committed.refused[id.recordName] = nil }
                try context.refuse(page.unopened, in: &committed, earlier: next.refused, report: &report)
                taken.state.zoneState = committed.encoded()
            }
            let changes = taken
            context.observer(.willApply(adapter: name, records: changes.writes.count + changes.deletes.count))
            // The store writes this page while the next one is opened, looked up and merged, and
            // the one after it is fetched.
            let context = context
            async let applying: Void = context.store("applying a downloaded page") { try await context.adapter.apply(changes) }
            if page.moreComing {
                let (token, applyingIDs) = (progress.cursor, Set(page.ids))
                do {
                    let page = try await feed.next(since: token, context: context, in: &fetches)
                    prefetched = .success(try await open(page, applying: applyingIDs, after: next))
                } catch {
                    // Surfaces after this page is committed, as a fetch of the next one would.
                    prefetched = .failure(error)
                }
            }
            var applied = changes
            do {
                try await applying
            } catch {
                (committed, applied) = try await context.applyLeavingOutRefused(
                    changes, after: error, committing: committed, earlier: next.refused, report: &report)
            }
            report.downloaded += applied.writes.count
            report.deletedLocally += applied.deletes.count
            progress.applied(committed)
            state = committed
            context.observer(.didFetch(adapter: name, written: applied.writes.count, deleted: applied.deletes.count))
            if !page.moreComing { break }
        }
        if progress.isRefetching {
            try await reconcile(seen: progress.seen)
            guard let finished = progress.finishRefetch() else { return }
            state = finished
            let zoneState = state.encoded()
            try await context.store("committing the zone state") {
                try await context.adapter.commit(SyncStateUpdate(zoneState: zoneState))
            }
        }
        try await retryRefused()
    }

    /// Looks up the records the store refused before and applies their current versions, merged
    /// with what the store holds, without moving the token. Those it refuses again stay refused
    /// (with the date of their first refusal); those the cloud no longer holds are dropped, since
    /// the feed brings their deletion.
    private mutating func retryRefused() async throws {
        guard !state.refused.isEmpty, !state.refetching else { return }
        let context = context
        let earlier = state.refused
        let ids = earlier.keys.sorted().map { RecordID(recordName: $0, zoneID: context.zone) }
        let found = try await context.retrying("looking up the records the store refused") { try await context.cloud.lookup(ids) }
        let current = found.compactMap { $0 }
        var reserved = ReservedPositions(context.configuration)
        try context.checkCompatibility(current, reserved: &reserved)
        var incoming: [IncomingRecord] = []
        var unopened: [(id: RecordID, refusal: RefusedDownload)] = []
        for record in current { try await context.open(record, reserved: &reserved, into: &incoming, unopened: &unopened) }
        var next = state
        next.refused = [:]
        try context.refuse(unopened, in: &next, earlier: earlier, report: &report)
        var page = DownloadPage(incoming: incoming)
        try context.merge(&page, local: try await context.localState(of: page.ids), zoneState: next)
        await context.resolvingDeferred(&page)
        let changes = context.takeChanges(of: &page, into: &report)
        context.observer(.willApply(adapter: name, records: changes.writes.count + changes.deletes.count))
        let (committed, applied) = try await context.applyLeavingOutRefused(changes, committing: next, earlier: earlier, report: &report)
        report.downloaded += applied.writes.count
        report.deletedLocally += applied.deletes.count
        state = committed
        context.observer(.didFetch(adapter: name, written: applied.writes.count, deleted: applied.deletes.count))
    }

    /// The zone's feed, fetched one page ahead: as soon as a page arrives with more to come, the
    /// fetch of the page after it starts, so the cloud works on it while this one is opened,
    /// merged and applied.
    private struct FeedAhead {
        /// The token whose page is being fetched ahead, if one is.
        private var inFlight: ChangeToken?

        /// The page after `token`: the one fetched ahead when it is that page, else fetched now.
        mutating func next(
            since token: ChangeToken?, context: SyncContext, in fetches: inout ThrowingTaskGroup<RawPage, any Error>
        ) async throws -> ZoneChanges {
            var ahead: RawPage?
            if let aheadToken = inFlight {
                inFlight = nil
                let raw = try await fetches.next()
                // The caller asks for the page after the last one it got, which is the one fetched ahead.
                if aheadToken == token { ahead = raw }
            }
            let page: ZoneChanges
            if let ahead {
                page = try ahead.get()
            } else {
                page = try await Self.fetch(since: token, context: context)
            }
            if page.moreComing {
                let nextToken = page.token
                fetches.addTask {
                    do {
                        return .success(try await Self.fetch(since: nextToken, context: context))
                    } catch {
                        return .failure(error)
                    }
                }
                inFlight = nextToken
            }
            return page
        }

        private static func fetch(since token: ChangeToken?, context: SyncContext) async throws -> ZoneChanges {
            let (zone, limit) = (context.zone, context.options.fetchLimit ?? context.configuration.fetchLimit)
            context.observer(.willFetch(adapter: context.name))
            var page = try await context.retrying("fetching changes") {
                try await context.cloud.fetchChanges(in: zone, since: token, limit: limit)
            }
            // A zone's share record moves in its feed as CloudKit's does; it is the cloud's, not a store's.
            page.modified.removeAll { ZoneShare.isShareRecord(named: $0.id.recordName) }
            page.deleted.removeAll { ZoneShare.isShareRecord(named: $0.recordName) }
            return page
        }
    }

    /// Opens the records of a fetched page. While another page is being applied (`applying`, its
    /// records), it also reads the local state of these records and merges them, with
    /// `previous` as the zone state that page commits, unless a record is in both pages: then
    /// that waits until the page is committed.
    private func open(_ page: consuming ZoneChanges, applying: Set<RecordID>?, after previous: ZoneSyncState) async throws -> DownloadPage {
        let context = context
        var reserved = ReservedPositions(context.configuration)
        try context.checkCompatibility(page.modified, reserved: &reserved)
        // Each record is moved out of the page, so that opening it changes its one copy of the values.
        var modified: [Record] = []
        swap(&modified, &page.modified)
        var incoming: [IncomingRecord] = []
        incoming.reserveCapacity(modified.count + page.deleted.count)
        var unopened: [(id: RecordID, refusal: RefusedDownload)] = []
        while let record = modified.popLast() { try await context.open(record, reserved: &reserved, into: &incoming, unopened: &unopened) }
        // Reversed through the buffer, which moves the elements; the array's own `reverse()`
        // copied and released each record (about 1% of a download's CPU).
        incoming.withUnsafeMutableBufferPointer { $0.reverse() }
        incoming += page.deleted.map { IncomingRecord(id: $0, record: nil) }
        var opened = DownloadPage(incoming: incoming, token: page.token, moreComing: page.moreComing)
        opened.unopened = unopened
        opened.joining = joining
        if let applying, !opened.sharesRecords(with: applying) {
            // Disjoint from the page being applied, so that write cannot change what is read here;
            // edits made meanwhile are caught by the expected pending versions.
            let local = try await context.localState(of: opened.ids)
            try context.merge(&opened, local: local, zoneState: DownloadProgress.committing(page.token, after: previous))
        }
        return opened
    }

    /// After a full refetch, local records that were synced but not returned were deleted remotely.
    private mutating func reconcile(seen: Set<RecordID>) async throws {
        let context = context
        let synced = try await context.store("listing synced records") { try await context.adapter.syncedRecordIDs() }
        let missing = synced.filter { !seen.contains($0) }
        for start in stride(from: 0, to: missing.count, by: Self.reconciliationChunk) {
            let chunk = missing[start..<min(start + Self.reconciliationChunk, missing.count)]
            try await context.integrate(chunk.map { IncomingRecord(id: $0, record: nil, absentFromCloud: true) }, zoneState: state, report: &report)
        }
    }
}
