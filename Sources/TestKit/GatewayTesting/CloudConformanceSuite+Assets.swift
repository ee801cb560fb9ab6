import Foundation
import GatewayCore

extension CloudConformanceSuite {
    static let assetCases: [CloudConformanceCase] = [
        CloudConformanceCase("assets round-trip, are stored once, and are checked on download") { harness in
            let cloud = try await freshCloud(harness)
            let bytes = Data((0..<10_000).map { UInt8($0 % 251) })
            let first = try await cloud.uploadAsset(bytes)
            try expectEqual(first.checksum, AssetChecksum.of(bytes), "the asset checksum is the SHA-256 of its bytes")
            try expectEqual(first.size, 10_000, "the asset size")
            let second = try await cloud.uploadAsset(bytes)
            try expectEqual(second.checksum, first.checksum, "identical bytes give the same reference")
            try expectEqual(try await harness.storedAssetCount(in: cloud), 1, "identical assets are stored once")
            let other = try await cloud.uploadAsset(Data("other".utf8))
            try expectEqual(try await harness.storedAssetCount(in: cloud), 2, "distinct assets are stored apart")
            try expectEqual(try await cloud.downloadAsset(first), bytes, "downloaded bytes")
            try await harness.corruptAsset(first, in: cloud)
            try await expectCloudError(.assetNotAvailable, "a damaged asset") { try await cloud.downloadAsset(first) }
            try expectEqual(try await cloud.downloadAsset(other), Data("other".utf8), "an undamaged asset")
            let unknown = AssetReference(checksum: AssetChecksum.of(Data("never".utf8)), size: 5)
            try await expectCloudError(.assetNotAvailable, "an asset never uploaded") { try await cloud.downloadAsset(unknown) }
        },
        CloudConformanceCase("a record referencing an asset that was never uploaded fails alone") { harness in
            let cloud = try await freshCloud(harness)
            let ghost = AssetReference(checksum: AssetChecksum.of(Data("ghost".utf8)), size: 5)
            let results = try await cloud.modify(
                [.create(note("a", title: "a", extra: ["file": .asset(ghost)])), .create(note("b", title: "b"))],
                in: zone, atomic: false)
            try expectEqual(try failure(results[0]).code, .invalidArguments, "a record with a missing asset")
            _ = try saved(results[1])
        },
    ]
}
