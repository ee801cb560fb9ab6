/// Points at the bytes of an asset held by the cloud.
///
/// Asset bytes travel separately from records (``CloudDatabase/uploadAsset(_:)`` and
/// ``CloudDatabase/downloadAsset(_:)``); a record holds only this reference. Assets are
/// content-addressed, so two identical blobs share one reference.
///
/// Two references are equal when checksum and size are: the download URL and upload receipt say
/// how to reach the bytes, not what they are.
public struct AssetReference: Hashable, Sendable, Codable, CustomStringConvertible {
    /// Lower-case hex SHA-256 of the asset's bytes.
    public var checksum: String
    /// The asset's size in bytes.
    public var size: Int64
    /// Where the bytes can be fetched directly, when the cloud offers such a URL.
    public var downloadURL: String?
    /// What a cloud handed back for the upload and needs when a record first references the
    /// asset (CloudKit's `singleFile` receipt, as JSON); `nil` for clouds that need nothing.
    public var uploadReceipt: String?

    /// An asset known by its SHA-256 `checksum` and `size`; clouds add where it can be downloaded,
    /// uploads carry their receipt.
    public init(checksum: String, size: Int64, downloadURL: String? = nil, uploadReceipt: String? = nil) {
        self.checksum = checksum
        self.size = size
        self.downloadURL = downloadURL
        self.uploadReceipt = uploadReceipt
    }

    public static func == (lhs: AssetReference, rhs: AssetReference) -> Bool {
        lhs.checksum == rhs.checksum && lhs.size == rhs.size
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(checksum)
        hasher.combine(size)
    }

    public var description: String { "asset \(checksum.prefix(12))… (\(size) bytes)" }
}
