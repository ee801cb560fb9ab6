/// One record: a typed bag of fields identified by a ``RecordID``.
///
/// A missing key in ``fields`` means null. ``changeTag`` and ``modifiedAt`` are set by the cloud;
/// a record that has never been saved has neither.
public struct Record: Hashable, Sendable, Codable {
    /// Where the record lives.
    public var id: RecordID
    /// The record's type, such as a table name.
    public var recordType: String
    /// The cloud's opaque version of this record; changes on every save. `nil` before the first save.
    public var changeTag: String?
    /// The field values by field name.
    public var fields: [String: FieldValue]
    /// When the cloud last saved the record.
    public var modifiedAt: Timestamp?

    public init(
        id: RecordID, recordType: String, changeTag: String? = nil,
        fields: [String: FieldValue] = [:], modifiedAt: Timestamp? = nil
    ) {
        self.id = id
        self.recordType = recordType
        self.changeTag = changeTag
        self.fields = fields
        self.modifiedAt = modifiedAt
    }

    /// Reads or writes one field; assigning `nil` removes it.
    public subscript(field: String) -> FieldValue? {
        get { fields[field] }
        set { fields[field] = newValue }
    }

    /// Every asset this record references (in no particular order).
    public var assetReferences: [AssetReference] {
        var references: [AssetReference] = []
        for value in fields.values { value.appendAssetReferences(to: &references) }
        return references
    }
}
