import Foundation
import GRDB
import GatewayCore

extension EmbeddedCloud {
    public func uploadAsset(_ data: Data) async throws -> AssetReference {
        guard Int64(data.count) <= limits.maxAssetSize else {
            throw CloudError(
                .limitExceeded,
                "the asset is \(data.count) bytes, over the asset limit of \(limits.maxAssetSize) bytes")
        }
        let reference = AssetReference(checksum: AssetChecksum.of(data), size: Int64(data.count))
        let now = nowMilliseconds()
        try await write { db in
            try db.execute(
                sql: """
                    INSERT INTO assets (checksum, size, data, created_at) VALUES (?, ?, ?, ?)
                    ON CONFLICT (checksum) DO NOTHING
                    """,
                arguments: [reference.checksum, reference.size, data, now])
        }
        return reference
    }

    public func downloadAsset(_ reference: AssetReference) async throws -> Data {
        let stored = try await read { db in
            try Data.fetchOne(db, sql: "SELECT data FROM assets WHERE checksum = ?", arguments: [reference.checksum])
        }
        return try AssetChecksum.verified(stored, for: reference, store: "the cloud file")
    }
}
