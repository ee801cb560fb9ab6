import Crypto
import Foundation

/// Content addresses for assets: lower-case hex SHA-256.
public enum AssetChecksum {
    /// The checksum of `data`.
    public static func of(_ data: Data) -> String {
        hex(SHA256.hash(data: data))
    }

    /// Whether `checksum` has the shape of a checksum this module produces (64 lower-case hex digits).
    public static func isWellFormed(_ checksum: String) -> Bool {
        checksum.utf8.count == 64 && checksum.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }

    /// The bytes a cloud stored for `reference`, checked against its size and checksum.
    /// - Throws: ``CloudError/Code/assetNotAvailable`` when nothing is stored or the bytes are damaged.
    package static func verified(_ stored: Data?, for reference: AssetReference, store: String) throws(CloudError) -> Data {
        guard let stored else {
            throw CloudError(.assetNotAvailable, "\(reference) is not stored in the cloud; upload it again")
        }
        guard Int64(stored.count) == reference.size, of(stored) == reference.checksum else {
            throw CloudError(
                .assetNotAvailable,
                "the stored bytes of \(reference) do not match its checksum (\(stored.count) bytes stored); \(store) is damaged, upload the asset again")
        }
        return stored
    }

    static func hex(_ digest: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(64)
        for byte in digest {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
