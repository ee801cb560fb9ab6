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
