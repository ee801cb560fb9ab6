/// Points at the bytes of an asset held by the cloud.
///
/// Asset bytes travel separately from records (``CloudDatabase/uploadAsset(_:)`` and
/// ``CloudDatabase/downloadAsset(_:)``); a record holds only this reference. Assets are
/// content-addressed, so two identical blobs share one reference.
public struct AssetReference: Hashable, Sendable, Codable, CustomStringConvertible {
    /// Lower-case hex SHA-256 of the asset's bytes.
    public var checksum: String
    /// The asset's size in bytes.
    public var size: Int64
    /// Where the bytes can be fetched directly, when the cloud offers such a URL.
    public var downloadURL: String?

    public init(checksum: String, size: Int64, downloadURL: String? = nil) {
        self.checksum = checksum
        self.size = size
        self.downloadURL = downloadURL
    }

    public var description: String { "asset \(checksum.prefix(12))… (\(size) bytes)" }
}
