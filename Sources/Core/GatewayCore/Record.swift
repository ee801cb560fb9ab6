/// One record: values by position in a shared ``RecordLayout``, identified by a ``RecordID``.
///
/// A `nil` value, like a field the layout does not list, means null (CloudKit has no null).
/// ``changeTag``, ``modifiedAt`` and ``createdAt`` are set by the cloud; a record that has never
/// been saved has none of them. The sync path reads and writes ``values`` by position; ``fields`` is a dictionary
/// view for custom resolvers, simple adapters and tests, built on demand.
public struct Record: Hashable, Sendable, Codable {
    /// Where the record lives.
    public var id: RecordID
    /// The record's type, such as a table name.
    public var recordType: String
    /// The cloud's opaque version of this record; changes on every save. `nil` before the first save.
    public var changeTag: String?
    /// When the cloud last saved the record.
    public var modifiedAt: Timestamp?
    /// When the cloud first saved the record (CloudKit's `created.timestamp`); a record deleted and
    /// saved again is created anew.
    public var createdAt: Timestamp?
    /// The field names the values are in.
    public private(set) var layout: RecordLayout
    /// The values, one per field of ``layout`` (`nil`: null).
    public private(set) var values: [FieldValue?]

    /// A record whose values are given by position in `layout` (`values.count == layout.count`).
    public init(
        id: RecordID, recordType: String, changeTag: String? = nil, layout: RecordLayout, values: [FieldValue?], modifiedAt: Timestamp? = nil,
        createdAt: Timestamp? = nil
    ) {
        precondition(values.count == layout.count, "a record needs one value per field of its layout")
        self.id = id
        self.recordType = recordType
        self.changeTag = changeTag
        self.modifiedAt = modifiedAt
        self.createdAt = createdAt
        self.layout = layout
        self.values = values
    }

    /// A record with the given fields (names sorted into a shared layout).
    public init(
        id: RecordID, recordType: String, changeTag: String? = nil, fields: [String: FieldValue] = [:], modifiedAt: Timestamp? = nil,
        createdAt: Timestamp? = nil
    ) {
        self.id = id
        self.recordType = recordType
        self.changeTag = changeTag
        self.modifiedAt = modifiedAt
        self.createdAt = createdAt
        (layout, values) = Self.positional(fields)
    }

    /// A record with the given fields, where a field given as `nil` is named without a value:
    /// null, which a save clears in the cloud. A field not given at all is unknown to the writer
    /// and left as the cloud holds it (``RecordOperation/update(_:)``). Stores whose schema is
    /// known (a JSON document with `"key": null`, a plugin that declares its fields) build their
    /// records this way.
    public init(id: RecordID, recordType: String, changeTag: String? = nil, namedFields: [String: FieldValue?]) {
        let names = namedFields.keys.sorted()
        self.init(
            id: id, recordType: recordType, changeTag: changeTag,
            layout: names.isEmpty ? .empty : RecordLayout.shared(sortedNames: names), values: names.map { namedFields[$0] ?? nil })
    }

    /// This record with the fields of `other` that its layout does not name, or `nil` when it
    /// names all of them: what a partial save of this record leaves the cloud holding.
    public func completed(withFieldsOf other: Record) -> Record? {
        let own = layout
        var kept: [(name: String, value: FieldValue)] = []
        other.forEachField { name, value in
            if own.position(of: name) == nil { kept.append((name, value)) }
        }
        guard !kept.isEmpty else { return nil }
        var completed = self
        let grown = own.adding(kept.map(\.name))
        completed.grow(to: grown)
        for (name, value) in kept { completed[position: grown.position(of: name)!] = value }
        return completed
    }

    private static func positional(_ fields: [String: FieldValue]) -> (RecordLayout, [FieldValue?]) {
        guard !fields.isEmpty else { return (.empty, []) }
        let names = fields.keys.sorted()
        return (RecordLayout.shared(sortedNames: names), names.map { fields[$0] })
    }

    /// The non-null fields by name: a view built on each read. Setting it replaces every field.
    public var fields: [String: FieldValue] {
        get {
            var fields = [String: FieldValue](minimumCapacity: values.count)
            for (position, value) in values.enumerated() {
                if let value { fields[layout.fieldNames[position]] = value }
            }
            return fields
        }
        set { (layout, values) = Self.positional(newValue) }
    }

    /// Reads or writes one field by name; assigning `nil` makes it null. A name the layout lacks
    /// is added to it (the record then has a layout of its own).
    public subscript(field: String) -> FieldValue? {
        get { layout.position(of: field).flatMap { values[$0] } }
        set {
            if let position = layout.position(of: field) {
                values[position] = newValue
            } else if let newValue {
                layout = layout.adding([field])
                values.append(newValue)
            }
        }
    }

    /// Reads or writes the value at a position of ``layout``.
    public subscript(position position: Int) -> FieldValue? {
        get { values[position] }
        set { values[position] = newValue }
    }

    /// How many fields are not null.
    public var fieldCount: Int {
        // Matched in place: comparing each value with nil copied it.
        var count = 0
        for index in values.indices { if case .some = values[index] { count += 1 } }
        return count
    }

    /// Calls `body` with each non-null field, in layout order.
    public func forEachField(_ body: (String, FieldValue) throws -> Void) rethrows {
        for (position, value) in values.enumerated() {
            if let value { try body(layout.fieldNames[position], value) }
        }
    }

    /// Moves the values into `target`'s positions; fields `target` lacks must be null or are lost,
    /// so callers pass a layout that covers the record's fields (``RecordLayout/adding(_:)``).
    public mutating func conform(to target: RecordLayout) {
        guard target !== layout else { return }
        values = LayoutMapping(from: layout, to: target).values(of: self)
        layout = target
    }

    /// Extends the record to `layout`, which must list the record's fields first, in the same
    /// order, and more after them (``RecordLayout/adding(_:)``): the added fields are null.
    public mutating func grow(to layout: RecordLayout) {
        guard layout !== self.layout else { return }
        precondition(layout.count >= self.layout.count, "a record can only grow to a layout that extends its own")
        values.append(contentsOf: repeatElement(nil, count: layout.count - self.layout.count))
        self.layout = layout
    }

    /// This record (identity, change tag, dates) holding `named` instead of its fields: what a
    /// processor answers for it.
    public func withFields(_ named: [String: FieldValue?]) -> Record {
        var record = Record(id: id, recordType: recordType, changeTag: changeTag, namedFields: named)
        record.modifiedAt = modifiedAt
        record.createdAt = createdAt
        return record
    }

    /// Whether the two records hold the same non-null fields, whatever their layouts.
    public func hasSameFields(as other: Record) -> Bool {
        if layout === other.layout { return values == other.values }
        var count = 0
        for (position, value) in values.enumerated() {
            guard let value else { continue }
            count += 1
            guard other[layout.fieldNames[position]] == value else { return false }
        }
        return count == other.fieldCount
    }

    /// Every asset this record references (in no particular order).
    public var assetReferences: [AssetReference] {
        var references: [AssetReference] = []
        for value in values { value?.appendAssetReferences(to: &references) }
        return references
    }

    // MARK: Equatable, Hashable, Codable

    /// Records are equal when their identity, cloud versions and non-null fields are; layouts
    /// do not matter.
    public static func == (lhs: Record, rhs: Record) -> Bool {
        lhs.id == rhs.id && lhs.recordType == rhs.recordType && lhs.changeTag == rhs.changeTag && lhs.modifiedAt == rhs.modifiedAt
            && lhs.createdAt == rhs.createdAt && lhs.hasSameFields(as: rhs)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(id)
        hasher.combine(recordType)
        hasher.combine(changeTag)
    }

    enum CodingKeys: String, CodingKey {
        case id, recordType, changeTag, fields, modifiedAt, createdAt
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            id: try container.decode(RecordID.self, forKey: .id), recordType: try container.decode(String.self, forKey: .recordType),
            changeTag: try container.decodeIfPresent(String.self, forKey: .changeTag),
            fields: try container.decode([String: FieldValue].self, forKey: .fields),
            modifiedAt: try container.decodeIfPresent(Timestamp.self, forKey: .modifiedAt),
            createdAt: try container.decodeIfPresent(Timestamp.self, forKey: .createdAt))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(recordType, forKey: .recordType)
        try container.encodeIfPresent(changeTag, forKey: .changeTag)
        try container.encode(fields, forKey: .fields)
        try container.encodeIfPresent(modifiedAt, forKey: .modifiedAt)
        try container.encodeIfPresent(createdAt, forKey: .createdAt)
    }
}
