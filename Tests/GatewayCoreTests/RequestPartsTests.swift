import Foundation
import GatewayTesting
import Testing

@testable import GatewayCore

/// An upload batch cut into requests by the cloud's operation and size limits before it is sent
/// (``UploadPass/requestParts(sizes:limits:)``), and what a sync of wide records does with them.
@Suite("Upload requests cut by size")
struct RequestPartsTests {
    typealias F = SyncFixture

    /// Checks what every cut must be: consecutive ranges covering the batch in order, each within
    /// the limits unless it holds one operation that alone passes the size limit.
    static func checkCut(_ parts: [Range<Int>], sizes: [Int], limits: CloudLimits) {
        #expect(parts.first?.lowerBound == 0)
        #expect(parts.last?.upperBound == sizes.count)
        #expect(zip(parts, parts.dropFirst()).allSatisfy { $0.upperBound == $1.lowerBound }, "consecutive, in order")
        for part in parts {
            #expect(!part.isEmpty)
            #expect(part.count <= limits.maxOperationsPerRequest)
            let bytes = sizes[part].reduce(0, +)
            #expect(bytes <= limits.maxRequestSize || part.count == 1, "\(part) carries \(bytes) bytes")
        }
    }

    @Test("random batches: every part within the limits, no more parts than needed plus the oversized ones", arguments: 0..<400)
    func randomBatches(seed: UInt64) {
        var random = SeededGenerator(seed: seed)
        let limits = CloudLimits(
            maxOperationsPerRequest: Int.random(in: 1...400, using: &random), maxRecordSize: 1_000,
            maxRequestSize: Int.random(in: 1_000...50_000, using: &random), modifyRequestsInFlight: Int.random(in: 1...4, using: &random))
        let wide = Bool.random(using: &random)
        let sizes = (0..<Int.random(in: 1...600, using: &random)).map { _ in
            Int.random(in: 0...(wide ? 3_000 : 300), using: &random) + (Int.random(in: 0..<200, using: &random) == 0 ? 80_000 : 0)
        }
        let parts = UploadPass.requestParts(sizes: sizes, limits: limits)
        Self.checkCut(parts, sizes: sizes, limits: limits)
        // A lower bound no cut can beat: by count, by bytes (oversized operations go alone).
        let fitting = sizes.filter { $0 <= limits.maxRequestSize }
        let oversized = sizes.count - fitting.count
        let leastParts = max(
            (sizes.count + limits.maxOperationsPerRequest - 1) / limits.maxOperationsPerRequest,
            oversized + (fitting.reduce(0, +) + limits.maxRequestSize - 1) / limits.maxRequestSize)
        #expect(parts.count <= 2 * leastParts + 2 * oversized + limits.modifyRequestsInFlight, "\(parts.count) parts where \(leastParts) could do")
    }

    @Test("a batch within the limits goes whole, or in as many even parts as requests in flight")
    func withinTheLimits() {
        let small = Array(repeating: 100, count: 150)
        #expect(UploadPass.requestParts(sizes: small, limits: CloudLimits()) == [0..<150])
        #expect(UploadPass.requestParts(sizes: small, limits: CloudLimits(modifyRequestsInFlight: 2)) == [0..<75, 75..<150])
        #expect(UploadPass.requestParts(sizes: Array(small.prefix(40)), limits: CloudLimits(modifyRequestsInFlight: 2)) == [0..<40])
    }

    @Test("wide records: even parts under the size limit rather than full ones and a remainder")
    func evenParts() {
        // 1,000 records of 4,100 bytes against 2 MB: three parts of about 1.37 MB, not 487 + 487 + 26.
        let parts = UploadPass.requestParts(sizes: Array(repeating: 4_100, count: 1_000), limits: CloudLimits(maxOperationsPerRequest: 1_000))
        #expect(parts.map(\.count) == [334, 334, 332])
    }

    @Test("a record larger than a request goes alone; the records around it keep sharing requests")
    func oversizedGoesAlone() {
        var sizes = Array(repeating: 100, count: 300)
        sizes[120] = 5_000_000
        let parts = UploadPass.requestParts(sizes: sizes, limits: CloudLimits(maxOperationsPerRequest: 400))
        Self.checkCut(parts, sizes: sizes, limits: CloudLimits(maxOperationsPerRequest: 400))
        #expect(parts.contains(120..<121))
        #expect(parts.count <= 5)
    }

    static func wideNotes(_ count: Int, in adapter: InMemoryAdapter, width: Int = 2_000) async {
        for index in 0..<count {
            await adapter.save(F.note("n\(index)", ["body": .string(String(repeating: "x", count: width) + "\(index)"), "rank": .int64(Int64(index))]))
        }
    }

    @Test("a sync of wide records sends each batch as several requests and never shrinks the batch")
    func wideRecordsKeepTheBatchSize() async throws {
        // 60 records of about 2 KB against 20 KB per request: at least 7 requests for one batch.
        let fixture = try SyncFixture(limits: CloudLimits(maxRecordSize: 5_000, maxRequestSize: 20_000))
        let adapter = fixture.adapter("a")
        await Self.wideNotes(60, in: adapter)
        let shrank = LockedValue(false)
        let report = try await fixture.synchronizer([adapter]) { event in
            if case .batchSizeChanged = event { shrank.set(true) }
        }.sync().adapters[0]
        #expect(report.error == nil)
        #expect(report.uploaded == 60)
        #expect(!shrank.get(), "no request was refused as too large")
        #expect(report.batchSize == 200)
        let cloud = try await fixture.cloudRecords()
        #expect(cloud.count == 60)
        #expect(cloud["n59"]?["rank"] == .int64(59))
        #expect(try await !adapter.hasChanges())
        let changes = try await fixture.embedded.fetchChanges(in: SyncFixture.zone, since: nil, limit: 2_000)
        #expect(changes.modified.count == 60, "every record saved once")
    }

    @Test("a record too large for any request fails alone; the rest of its batch uploads at full size")
    func oversizedRecordFailsAlone() async throws {
        let fixture = try SyncFixture(limits: CloudLimits(maxRecordSize: 5_000, maxRequestSize: 20_000))
        // Binary fields inline, as with force_data: true, so the record really is that large.
        let inline = AdapterSyncOptions(assets: AssetSettings(forceData: true))
        let adapter = fixture.adapter("a")
        await Self.wideNotes(30, in: adapter)
        await adapter.save(F.note("huge", ["blob": .bytes(Data(count: 30_000))]))
        let shrank = LockedValue(false)
        let report = try await fixture.synchronizer([adapter], options: inline) { event in
            if case .batchSizeChanged = event { shrank.set(true) }
        }.sync().adapters[0]
        #expect(report.uploaded == 30)
        #expect(report.failedRecords == 1)
        #expect(!shrank.get(), "the batch kept its size")
        let failed = try await adapter.failedRecords()
        #expect(failed.map(\.recordID.recordName) == ["huge"])
        #expect(failed.first?.failure.code == "limitExceeded")
        let message = failed.first?.failure.message ?? ""
        #expect(message.contains("bytes, more than a request may carry (20000 bytes)"), "\(message)")
        #expect(failed.first?.failure.message.contains("its largest field is blob") == true)
        #expect(try await fixture.cloudRecords().count == 30)
    }

    @Test("a cloud whose real limit is below the one it reports still gets everything, by halving")
    func hiddenSizeLimit() async throws {
        // The cloud reports 20 KB per request and refuses over 7 operations: cut by size, the parts
        // still pass 7 records, and the batch halves as it always did.
        let fixture = try SyncFixture(plan: FaultInjectingCloud.Plan(operationLimit: 7), limits: CloudLimits(maxRecordSize: 5_000, maxRequestSize: 20_000))
        let adapter = fixture.adapter("a")
        await Self.wideNotes(40, in: adapter, width: 500)
        let report = try await fixture.sync(adapter)
        #expect(report.error == nil)
        #expect(report.uploaded == 40)
        #expect(try await fixture.cloudRecords().count == 40)
        #expect(try await !adapter.hasChanges())
    }
}
