import Foundation

// How a query judges and orders records. Like SQL's NULL, a record without the field never
// matches a filter on it, negated comparators included. Values of kinds that cannot be compared
// (a string with a number) are unequal and unordered: of the comparators, only NOT_EQUALS and
// NOT_IN match them.
extension RecordQuery {
    /// Whether `record` is of the query's type and meets every filter.
    public func matches(_ record: Record) -> Bool {
        record.recordType == recordType && filters.allSatisfy { $0.matches(record) }
    }

    /// Whether `a` comes before `b` in the query's order (sort keys, then record name).
    public func orders(_ a: Record, before b: Record) -> Bool {
        for key in sort {
            let order = key.compare(a, b)
            if order != .orderedSame { return order == .orderedAscending }
        }
        // By bytes, as the stores page names: two names that differ only in Unicode
        // normalization are equal to `<` and would fall in either order.
        return a.id.recordName.utf8.lexicographicallyPrecedes(b.id.recordName.utf8)
    }
}

extension QueryField {
    /// The value this field has in `record`, `nil` when absent.
    public func value(in record: Record) -> FieldValue? {
        switch self {
        case .field(let name): record[name]
        case .recordName: .string(record.id.recordName)
        case .modifiedTimestamp: record.modifiedAt.map(FieldValue.timestamp)
        case .createdTimestamp: record.createdAt.map(FieldValue.timestamp)
        }
    }
}

extension QueryFilter {
    /// Whether `record` meets this condition.
    public func matches(_ record: Record) -> Bool {
        guard let found = field.value(in: record) else { return false }
        switch comparator {
        case .equals: return FieldOrder.compare(found, value) == .orderedSame
        case .notEquals: return FieldOrder.compare(found, value).map { $0 != .orderedSame } ?? true
        case .lessThan: return FieldOrder.compare(found, value) == .orderedAscending
        case .lessThanOrEquals: return FieldOrder.compare(found, value).map { $0 != .orderedDescending } ?? false
        case .greaterThan: return FieldOrder.compare(found, value) == .orderedDescending
        case .greaterThanOrEquals: return FieldOrder.compare(found, value).map { $0 != .orderedAscending } ?? false
        case .near:
            guard case .location(let here) = found, case .location(let centre) = value, let distance else { return false }
            return FieldOrder.metres(from: here, to: centre) <= distance
        case .containsAllTokens, .containsAnyTokens:
            guard case .string(let text) = found, case .string(let wanted) = value else { return false }
            let tokens = Self.tokens(text)
            let asked = Self.tokens(wanted)
            return comparator == .containsAllTokens ? asked.isSubset(of: tokens) : !asked.isDisjoint(with: tokens)
        case .in, .notIn:
            let isIn = listed.contains { FieldOrder.compare(found, $0) == .orderedSame }
            return comparator == .in ? isIn : !isIn
        case .beginsWith, .notBeginsWith:
            guard case .string(let text) = found, case .string(let prefix) = value else { return false }
            return text.hasPrefix(prefix) == (comparator == .beginsWith)
        case .listContains, .notListContains:
            guard case .list(let elements) = found else { return false }
            let holds = elements.contains { FieldOrder.compare($0, value) == .orderedSame }
            return holds == (comparator == .listContains)
        case .listContainsAny, .notListContainsAny:
            guard case .list(let elements) = found else { return false }
            let holds = listed.contains { wanted in elements.contains { FieldOrder.compare($0, wanted) == .orderedSame } }
            return holds == (comparator == .listContainsAny)
        case .listContainsAll, .notListContainsAll:
            guard case .list(let elements) = found else { return false }
            let holds = listed.allSatisfy { wanted in elements.contains { FieldOrder.compare($0, wanted) == .orderedSame } }
            return holds == (comparator == .listContainsAll)
        case .listMemberBeginsWith, .notListMemberBeginsWith:
            guard case .list(let elements) = found, case .string(let prefix) = value else { return false }
            let holds = elements.contains { element in
                if case .string(let text) = element { return text.hasPrefix(prefix) }
                return false
            }
            return holds == (comparator == .listMemberBeginsWith)
        }
    }

    /// The filter's values as a list (a single value stands for a list of one).
    private var listed: [FieldValue] {
        if case .list(let values) = value { return values }
        return [value]
    }

    private static func tokens(_ text: String) -> Set<String> {
        Set(text.lowercased().split { $0.isWhitespace || $0.isPunctuation }.map(String.init))
    }
}

extension QuerySort {
    /// How `a` and `b` compare on this key; records without the value sort after those with it
    /// (before, descending), as SQL's NULLS LAST.
    func compare(_ a: Record, _ b: Record) -> ComparisonResult {
        let order: ComparisonResult
        switch (field.value(in: a), field.value(in: b)) {
        case (nil, nil): return .orderedSame
        case (nil, _): order = .orderedDescending
        case (_, nil): order = .orderedAscending
        case (let left?, let right?):
            if let relativeLocation, case .location(let l) = left, case .location(let r) = right {
                let (dl, dr) = (FieldOrder.metres(from: l, to: relativeLocation), FieldOrder.metres(from: r, to: relativeLocation))
                order = dl < dr ? .orderedAscending : dl > dr ? .orderedDescending : .orderedSame
            } else {
                order = FieldOrder.compare(left, right) ?? FieldOrder.compareKinds(left, right)
            }
        }
        guard !ascending else { return order }
        switch order {
        case .orderedAscending: return .orderedDescending
        case .orderedDescending: return .orderedAscending
        case .orderedSame: return .orderedSame
        }
    }
}

/// The order of field values that queries use.
enum FieldOrder {
    /// How two values compare, `nil` when their kinds cannot be compared. Integers and doubles
    /// compare as numbers; references by record name; bytes byte by byte.
    static func compare(_ a: FieldValue, _ b: FieldValue) -> ComparisonResult? {
        switch (a, b) {
        case (.string(let x), .string(let y)): return order(x, y)
        case (.int64(let x), .int64(let y)): return order(x, y)
        case (.double(let x), .double(let y)): return order(x, y)
        case (.int64(let x), .double(let y)): return order(Double(x), y)
        case (.double(let x), .int64(let y)): return order(x, Double(y))
        case (.timestamp(let x), .timestamp(let y)): return order(x, y)
        case (.reference(let x), .reference(let y)): return order(x.recordID.recordName, y.recordID.recordName)
        case (.reference(let x), .string(let y)): return order(x.recordID.recordName, y)
        case (.string(let x), .reference(let y)): return order(x, y.recordID.recordName)
        case (.bytes(let x), .bytes(let y)): return x == y ? .orderedSame : x.lexicographicallyPrecedes(y) ? .orderedAscending : .orderedDescending
        case (.location(let x), .location(let y)): return x.latitude == y.latitude && x.longitude == y.longitude ? .orderedSame : nil
        case (.asset(let x), .asset(let y)): return x.checksum == y.checksum ? .orderedSame : nil
        case (.list(let x), .list(let y)): return x == y ? .orderedSame : nil
        default: return nil
        }
    }

    /// A fixed order between kinds, so a sort over mixed kinds is still a total order.
    static func compareKinds(_ a: FieldValue, _ b: FieldValue) -> ComparisonResult {
        order(rank(a), rank(b))
    }

    private static func rank(_ value: FieldValue) -> Int {
        switch value {
        case .int64, .double: 0
        case .timestamp: 1
        case .string: 2
        case .reference: 3
        case .bytes: 4
        case .location: 5
        case .asset: 6
        case .list: 7
        case .encrypted: 8
        }
    }

    private static func order<T: Comparable>(_ x: T, _ y: T) -> ComparisonResult {
        x < y ? .orderedAscending : x > y ? .orderedDescending : .orderedSame
    }

    /// The great-circle distance in metres (haversine, mean Earth radius).
    static func metres(from a: Location, to b: Location) -> Double {
        let radians = Double.pi / 180
        let dLat = (b.latitude - a.latitude) * radians
        let dLon = (b.longitude - a.longitude) * radians
        let h = sin(dLat / 2) * sin(dLat / 2) + cos(a.latitude * radians) * cos(b.latitude * radians) * sin(dLon / 2) * sin(dLon / 2)
        return 2 * 6_371_008.8 * asin(min(1, sqrt(h)))
    }
}
