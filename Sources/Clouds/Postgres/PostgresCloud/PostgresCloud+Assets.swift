import Foundation
import GatewayCore
import PostgresNIO

extension PostgresCloud {
    public func uploadAsset(_ data: Data) async throws -> AssetReference {
        guard Int64(data.count) <= limits.maxAssetSize else {
            throw CloudError(
                .limitExceeded, "the asset is \(data.count) bytes, over the asset limit of \(limits.maxAssetSize) bytes")
        }
        let reference = AssetReference(checksum: AssetChecksum.of(data), size: Int64(data.count))
        let now = nowMilliseconds()
        try await run("uploading an asset of \(data.count) bytes") { [tables] connection in
            try await connection.query(
                """
                INSERT INTO \(unescaped: tables.assets) (checksum, size, data, created_at)
                VALUES (\(reference.checksum), \(reference.size), \(data), \(now))
                ON CONFLICT (checksum) DO NOTHING
                """, logger: connection.logger)
        }
        return reference
    }

    public func downloadAsset(_ reference: AssetReference) async throws -> Data {
        let stored = try await run("downloading \(reference)") { [tables] connection -> Data? in
            let rows = try await connection.query(
                "SELECT data FROM \(unescaped: tables.assets) WHERE checksum = \(reference.checksum)", logger: connection.logger)
            for try await (bytes) in rows.decode(ByteBuffer.self) { return Data(buffer: bytes) }
            return nil
        }
        return try AssetChecksum.verified(stored, for: reference, store: "the cloud database")
    }
}
