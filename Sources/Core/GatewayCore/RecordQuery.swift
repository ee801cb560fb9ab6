/// A query on records of one type: CloudKit's `query` dictionary (`records/query`).
///
/// A record matches when every filter matches (CloudKit ANDs its `filterBy` list). Results come
/// in `sort` order, ties broken by record name; without `sort`, in record-name order.
public struct RecordQuery: Hashable, Sendable {
    /// The record type asked for; records of other types never match.
    public var recordType: String
    /// The conditions a record must meet, all of them.
    public var filters: [QueryFilter]
    /// The order of the results, most significant first.
    public var sort: [QuerySort]

    /// A query for records of `recordType` matching every filter, in the order of `sort` (none:
    /// record-name order).
    public init(recordType: String, filters: [QueryFilter] = [], sort: [QuerySort] = []) {
        self.recordType = recordType
        self.filters = filters
        self.sort = sort
    }
}

/// What a filter or a sort looks at: a field of the record, or one of CloudKit's system fields.
public enum QueryField: Hashable, Sendable, CustomStringConvertible {
    /// A field by name (`fieldName`).
    case field(String)
    /// The record's name (`systemFieldName: recordName`), compared as a string.
    case recordName
    /// When the record was last modified (`systemFieldName: modifiedTimestamp`), as a timestamp.
    case modifiedTimestamp
    /// When the record was created (`systemFieldName: createdTimestamp`), as a timestamp.
    case createdTimestamp

    /// The system field for CloudKit's `systemFieldName`, `nil` for names this store does not keep.
    public init?(systemFieldName: String) {
        switch systemFieldName {
        case "recordName", "___recordID": self = .recordName
        case "modifiedTimestamp", "___modTime": self = .modifiedTimestamp
        case "createdTimestamp", "___createTime": self = .createdTimestamp
        default: return nil
        }
    }

    public var description: String {
        switch self {
        case .field(let name): name
        case .recordName: "recordName"
        case .modifiedTimestamp: "modifiedTimestamp"
        case .createdTimestamp: "createdTimestamp"
        }
    }
}

/// One condition of a query: CloudKit's filter dictionary.
public struct QueryFilter: Hashable, Sendable {
    /// What the filter looks at.
    public var field: QueryField
    /// How the field is compared with ``value``.
    public var comparator: QueryComparator
    /// The value compared with; a list for `IN`, `NOT_IN` and the `*_ANY`/`*_ALL` list comparators,
    /// a location for `NEAR`.
    public var value: FieldValue
    /// For `NEAR`: the radius in metres.
    public var distance: Double?

    /// A filter comparing `field` with `value`; `distance` (meters) is for
    /// ``QueryComparator/near``.
    public init(field: QueryField, comparator: QueryComparator, value: FieldValue, distance: Double? = nil) {
        self.field = field
        self.comparator = comparator
        self.value = value
        self.distance = distance
    }
}

/// CloudKit's filter comparators, by their wire names.
public enum QueryComparator: String, CaseIterable, Hashable, Sendable {
    /// The field equals the value (integers and doubles compare as numbers).
    case equals = "EQUALS"
    /// The field differs from the value.
    case notEquals = "NOT_EQUALS"
    /// The field orders before the value.
    case lessThan = "LESS_THAN"
    /// The field orders before the value or equals it.
    case lessThanOrEquals = "LESS_THAN_OR_EQUALS"
    /// The field orders after the value.
    case greaterThan = "GREATER_THAN"
    /// The field orders after the value or equals it.
    case greaterThanOrEquals = "GREATER_THAN_OR_EQUALS"
    /// Within `distance` metres of a location.
    case near = "NEAR"
    /// A string field containing every whitespace-separated token of the value, ignoring case.
    case containsAllTokens = "CONTAINS_ALL_TOKENS"
    /// A string field containing at least one token of the value, ignoring case.
    case containsAnyTokens = "CONTAINS_ANY_TOKENS"
    /// The field equals one of the listed values.
    case `in` = "IN"
    /// The field equals none of the listed values.
    case notIn = "NOT_IN"
    /// A string field starting with the value.
    case beginsWith = "BEGINS_WITH"
    /// A string field not starting with the value.
    case notBeginsWith = "NOT_BEGINS_WITH"
    /// A list field holding the value.
    case listContains = "LIST_CONTAINS"
    /// A list field without the value.
    case notListContains = "NOT_LIST_CONTAINS"
    /// A list field holding at least one of the values.
    case listContainsAny = "LIST_CONTAINS_ANY"
    /// A list field holding none of the values.
    case notListContainsAny = "NOT_LIST_CONTAINS_ANY"
    /// A list field holding every one of the values.
    case listContainsAll = "LIST_CONTAINS_ALL"
    /// A list field missing at least one of the values.
    case notListContainsAll = "NOT_LIST_CONTAINS_ALL"
    /// A list field with a string element starting with the value.
    case listMemberBeginsWith = "LIST_MEMBER_BEGINS_WITH"
    /// A list field with no string element starting with the value.
    case notListMemberBeginsWith = "NOT_LIST_MEMBER_BEGINS_WITH"

    /// Whether the comparator takes a list of values.
    public var takesList: Bool {
        switch self {
        case .in, .notIn, .listContainsAny, .notListContainsAny, .listContainsAll, .notListContainsAll: true
        default: false
        }
    }
}

/// One key of a query's order: CloudKit's sort descriptor.
public struct QuerySort: Hashable, Sendable {
    /// What the records are ordered by.
    public var field: QueryField
    /// Smallest first (the default), or largest first.
    public var ascending: Bool
    /// For a location field: order by distance from this point instead.
    public var relativeLocation: Location?

    /// A sort key; `relativeLocation` sorts locations by distance from it.
    public init(field: QueryField, ascending: Bool = true, relativeLocation: Location? = nil) {
        self.field = field
        self.ascending = ascending
        self.relativeLocation = relativeLocation
    }
}

/// A cloud that lists a zone's live records of one type in record-name order, walking its
/// (zone, record name) key: what queries page through.
public protocol RecordScanning: Sendable {
    /// At most `limit` live records of `recordType` in `zone` whose names sort after `recordName`
    /// (from the first when `nil`), in the store's record-name order.
    /// - Throws: ``CloudError/Code/zoneNotFound``.
    func scanRecords(in zone: ZoneID, ofType recordType: String, after recordName: String?, limit: Int) async throws -> [Record]
}
