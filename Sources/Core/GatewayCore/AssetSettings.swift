/// Which binary fields travel as assets and which inline (DESIGN §8).
///
/// By default every `bytes` field is uploaded as an asset (content-addressed by SHA-256, so
/// identical blobs are stored once) and the record holds only the reference; downloads fetch the
/// bytes, check them against the checksum, and hand the adapter `bytes` again. `forceData` sends
/// them inline instead (SyncKit's `forceDataTypeInsteadOfAsset`), subject to the record size
/// limit. Encrypted fields are sealed first and always travel inline as ciphertext.
public struct AssetSettings: Sendable, Equatable {
    /// Send binary fields inline, for every record type without its own setting.
    public var forceData: Bool
    /// `forceData` per record type.
    public var forceDataByRecordType: [String: Bool]
    /// Fields sent as assets even when `forceData` is on, per record type.
    public var assetFields: [String: Set<String>]

    /// Settings: binary fields become assets unless `forceData` (for all types, or per type);
    /// `assetFields` names fields that are always assets.
    public init(forceData: Bool = false, forceDataByRecordType: [String: Bool] = [:], assetFields: [String: Set<String>] = [:]) {
        self.forceData = forceData
        self.forceDataByRecordType = forceDataByRecordType
        self.assetFields = assetFields
    }

    /// Whether `field` of a record of `recordType` is uploaded as an asset when it holds bytes.
    public func sendsAsAsset(_ field: String, recordType: String) -> Bool {
        if assetFields[recordType]?.contains(field) == true { return true }
        return !(forceDataByRecordType[recordType] ?? forceData)
    }
}
