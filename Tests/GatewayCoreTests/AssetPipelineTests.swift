import EmbeddedCloud
import Foundation
import GRDB
import GatewayCore
import GatewayTesting
import Testing

private typealias F = SyncFixture

@Suite("asset pipeline")
struct AssetPipelineTests {
    static func assetRows(_ fixture: SyncFixture) throws -> Int {
        try DatabaseQueue(path: fixture.directory.path("cloud.sqlite")).read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM assets") ?? 0
        }
    }

    static func blob(_ size: Int, seed: UInt8) -> Data {
        Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) })
    }

    @Test("binary fields travel as assets by default: identical blobs are stored once, and the other store gets the bytes")
    func assetsByDefault() async throws {
        let fixture = try SyncFixture()
        let a = fixture.adapter("a")
        let shared = Self.blob(300_000, seed: 1)
        await a.save(F.note("n1", ["photo": .bytes(shared), "title": .string("one")]))
        await a.save(F.note("n2", ["photo": .bytes(shared), "title": .string("two")]))
        await a.save(F.note("n3", ["photo": .bytes(Self.blob(10, seed: 2))]))
        #expect(try await fixture.sync(a).uploaded == 3)

        let stored = try await fixture.cloudRecords()
        guard case .asset(let first)? = stored["n1"]?["photo"], case .asset(let second)? = stored["n2"]?["photo"] else {
            Issue.record("the cloud holds no asset references: \(stored)")
            return
        }
        #expect(first == second)
        #expect(first.checksum == AssetChecksum.of(shared))
        #expect(try Self.assetRows(fixture) == 2, "two distinct blobs, stored once each")

        let b = fixture.adapter("b")
        #expect(try await fixture.sync(b).downloaded == 3)
        #expect(await b.values == a.values)
        #expect(try await fixture.sync(a).downloaded == 0, "own records coming back are not applied again")
    }

    @Test("force_data sends bytes inline, per record type or for all")
    func forceData() async throws {
        let fixture = try SyncFixture()
        let a = fixture.adapter("a")
        await a.save(F.note("n1", ["photo": .bytes(Self.blob(1_000, seed: 3)), "icon": .bytes(Self.blob(20, seed: 4))]))
        let options = AdapterSyncOptions(assets: AssetSettings(forceDataByRecordType: ["Note": true], assetFields: ["Note": ["photo"]]))
        #expect(try await fixture.sync(a, options: options).uploaded == 1)
        let stored = try await fixture.cloudRecords()["n1"]!
        #expect(stored["icon"] == .bytes(Self.blob(20, seed: 4)), "forced inline")
        guard case .asset? = stored["photo"] else {
            Issue.record("a field listed in assets stays an asset under force_data")
            return
        }
        let b = fixture.adapter("b")
        #expect(try await fixture.sync(b, options: AdapterSyncOptions(assets: AssetSettings(forceData: true))).downloaded == 1)
        #expect(await b.values == a.values)
    }

    /// The largest inline blob that keeps a note named `name` within `limit`, as the cloud counts.
    static func largestInlineBlob(name: String, limit: Int) -> Int {
        func size(_ length: Int) -> Int {
            let fields: [String: FieldValue] = [
                "blob": .bytes(Data(count: length)), "QSCloudKitModelCompatibilityVersionKey": .int64(1),
                // The writer stamp with the version of the change uploaded (the first two saves'
                // versions have one digit).
                "QSCloudKitDeviceUUIDKey": .string("test:a@1"),
            ]
            return FieldCoding.encode(fields).count + name.utf8.count + "Note".utf8.count
        }
        var low = 0
        var high = limit
        while low < high {
            let middle = (low + high + 1) / 2
            if size(middle) <= limit { low = middle } else { high = middle - 1 }
        }
        return low
    }

    @Test("the 1 MB record limit: inline bytes up to the limit pass, one byte more fails with a hint; as an asset it passes")
    func recordLimitBoundary() async throws {
        let fixture = try SyncFixture()
        let a = fixture.adapter("a")
        let fits = Self.largestInlineBlob(name: "edge", limit: CloudLimits().maxRecordSize)
        #expect(fits > 999_000)
        await a.save(F.note("edge", ["blob": .bytes(Data(count: fits))]))
        await a.save(F.note("over", ["blob": .bytes(Data(count: fits + 1))]))
        let inline = AdapterSyncOptions(assets: AssetSettings(forceData: true))
        let report = try await fixture.sync(a, options: inline)
        #expect(report.uploaded == 1)
        #expect(report.failedRecords == 1)
        let failure = try #require(try await a.failedRecords().first)
        #expect(failure.recordID.recordName == "over")
        #expect(failure.failure.code == "limitExceeded")
        #expect(failure.failure.message.contains("its largest field is blob"))

        try await a.retryFailedRecords()
        let asAsset = try await fixture.sync(a)
        #expect(asAsset.uploaded == 1, "the same record syncs once its blob is an asset")
        #expect(try await a.failedRecords().isEmpty)
    }

    @Test("an asset over the cloud's asset limit fails its record alone with a clear message")
    func assetLimit() async throws {
        let fixture = try SyncFixture(limits: CloudLimits(maxAssetSize: 50_000))
        let a = fixture.adapter("a")
        await a.save(F.note("big", ["blob": .bytes(Data(count: 60_000))]))
        await a.save(F.note("ok", ["blob": .bytes(Data(count: 40_000))]))
        let report = try await fixture.sync(a)
        #expect(report.outcome == .synced)
        #expect(report.uploaded == 1)
        let failure = try #require(try await a.failedRecords().first)
        #expect(failure.recordID.recordName == "big")
        #expect(failure.failure.message.contains("too large for an asset"))
        #expect(failure.failure.message.contains("over the asset limit of 50000 bytes"))
    }

    @Test("an asset whose stored bytes were damaged is detected and reported; nothing of the page is applied")
    func checksumMismatch() async throws {
        let fixture = try SyncFixture()
        let a = fixture.adapter("a")
        await a.save(F.note("n1", ["blob": .bytes(Self.blob(5_000, seed: 9)), "title": .string("t")]))
        #expect(try await fixture.sync(a).uploaded == 1)
        try await DatabaseQueue(path: fixture.directory.path("cloud.sqlite")).write { db in
            try db.execute(sql: "UPDATE assets SET data = zeroblob(5000)")
        }
        let b = fixture.adapter("b")
        let report = try await fixture.sync(b)
        guard case .failed(_, let message) = report.outcome else {
            Issue.record("a damaged asset was accepted: \(report.outcome)")
            return
        }
        #expect(message.contains("checksum"))
        #expect(await b.values.isEmpty)
        #expect(await b.loadZoneState() == nil)
    }
}
