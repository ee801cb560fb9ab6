import Foundation
import Testing

@testable import GatewayCore

/// The download's bookkeeping alone: tokens, refetches, what each page commits.
@Suite("download progress")
struct DownloadProgressTests {
    static let zone = ZoneID(zoneName: "Z")
    static func token(_ text: String) -> ChangeToken { ChangeToken(data: Data(text.utf8)) }
    static func ids(_ names: String...) -> [RecordID] { names.map { RecordID(recordName: $0, zoneID: zone) } }
    static let expired = CloudError(.changeTokenExpired, "expired")

    @Test("pages move the cursor and commit their token; nothing is collected outside a refetch")
    func incremental() throws {
        var progress = DownloadProgress(from: ZoneSyncState(token: Self.token("t0")))
        #expect(progress.cursor == Self.token("t0"))
        let first = progress.received(records: Self.ids("a", "b"), token: Self.token("t1"))
        #expect(first.token == Self.token("t1") && !first.refetching)
        #expect(progress.cursor == Self.token("t1"))
        #expect(progress.state.token == Self.token("t0"), "committed only once applied")
        progress.applied(first)
        #expect(progress.state.token == Self.token("t1"))
        #expect(progress.seen.isEmpty)
        #expect(progress.finishRefetch() == nil)
    }

    @Test("an expired token refetches from the start, commits no token until the end, then the last one")
    func refetch() throws {
        var progress = DownloadProgress(from: ZoneSyncState(token: Self.token("old"), batchSize: 50))
        _ = progress.received(records: Self.ids("x"), token: Self.token("t1"))
        try progress.tokenExpired(in: Self.zone, adapter: "a", underlying: Self.expired)
        #expect(progress.cursor == nil && progress.isRefetching)
        #expect(progress.state.token == nil && progress.state.batchSize == 50, "the rest of the state is kept")
        let page1 = progress.received(records: Self.ids("a", "b"), token: Self.token("r1"))
        #expect(page1.token == nil && page1.refetching, "a refetch's pages commit no token: an interruption starts it again")
        #expect(progress.cursor == Self.token("r1"))
        progress.applied(page1)
        let page2 = progress.received(records: Self.ids("c"), token: Self.token("r2"))
        progress.applied(page2)
        #expect(progress.seen == Set(Self.ids("a", "b", "c")), "records seen before the expiry do not count")
        let ended = progress.finishRefetch()
        let finished = try #require(ended)
        #expect(finished.token == Self.token("r2") && !finished.refetching && finished.batchSize == 50)
        #expect(progress.state == finished)
    }

    @Test("an interrupted refetch resumes from the start")
    func resumedRefetch() {
        let progress = DownloadProgress(from: ZoneSyncState(token: nil, refetching: true))
        #expect(progress.cursor == nil && progress.isRefetching)
    }

    @Test("more expiries than the limit fail the pass naming the zone; the limit itself is accepted")
    func expiryLimit() throws {
        var progress = DownloadProgress(from: ZoneSyncState(token: Self.token("t")))
        for _ in 0..<DownloadProgress.maximumExpiries {
            try progress.tokenExpired(in: Self.zone, adapter: "a", underlying: Self.expired)
        }
        let error = #expect(throws: SyncError.self) { try progress.tokenExpired(in: Self.zone, adapter: "a", underlying: Self.expired) }
        #expect(error?.code == .cloudFailed)
        #expect(error?.message.contains("zone \(Self.zone)") == true)
    }
}
