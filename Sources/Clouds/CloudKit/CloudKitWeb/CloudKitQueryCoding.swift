import GatewayCore

/// CloudKit's query dictionary (`records/query`'s `query`): `recordType`, `filterBy` and `sortBy`.
public enum CloudKitQueryCoding {
    /// The query in `value`, field values read as in `zone`.
    /// - Throws: ``CloudError/Code/invalidArguments`` naming the filter or sort that is malformed.
    public static func decode(_ value: JSONValue, in zone: ZoneID) throws(CloudError) -> RecordQuery {
        guard let recordType = value["recordType"]?.stringValue, !recordType.isEmpty else {
            throw CloudError(.invalidArguments, "records/query: the query needs a recordType")
        }
        let filters = try (value["filterBy"]?.arrayValue ?? []).enumerated().map { index, filter throws(CloudError) in
            try decodeFilter(filter, at: index, zone: zone)
        }
        let sort = try (value["sortBy"]?.arrayValue ?? []).enumerated().map { index, key throws(CloudError) in
            try decodeSort(key, at: index)
        }
        return RecordQuery(recordType: recordType, filters: filters, sort: sort)
    }

    private static func decodeField(_ value: JSONValue, what: String) throws(CloudError) -> QueryField {
        if let name = value["fieldName"]?.stringValue, !name.isEmpty { return .field(name) }
        if let system = value["systemFieldName"]?.stringValue {
            guard let field = QueryField(systemFieldName: system) else {
                throw CloudError(
                    .invalidArguments, "records/query: \(what) names the system field \(system); queries can use recordName, createdTimestamp and modifiedTimestamp")
            }
            return field
        }
        throw CloudError(.invalidArguments, "records/query: \(what) needs a fieldName or a systemFieldName")
    }

    private static func decodeFilter(_ value: JSONValue, at index: Int, zone: ZoneID) throws(CloudError) -> QueryFilter {
        let what = "filterBy[\(index)]"
        let field = try decodeField(value, what: what)
        guard let name = value["comparator"]?.stringValue, let comparator = QueryComparator(rawValue: name) else {
            throw CloudError(
                .invalidArguments,
                "records/query: \(what) needs a comparator, one of \(QueryComparator.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        guard let fieldValue = value["fieldValue"], fieldValue["value"] != nil else {
            throw CloudError(.invalidArguments, "records/query: \(what) needs a fieldValue with a value")
        }
        let decoded = try CloudKitFieldCoding.decode(fieldValue, in: zone, name: "\(what).fieldValue")
        if comparator.takesList, case .list = decoded {} else if comparator.takesList {
            throw CloudError(.invalidArguments, "records/query: \(what) uses \(name), whose fieldValue must be a list")
        }
        var distance: Double?
        if comparator == .near {
            guard case .location = decoded, let metres = value["distance"]?.doubleValue, metres >= 0 else {
                throw CloudError(.invalidArguments, "records/query: \(what) uses NEAR, which needs a LOCATION fieldValue and a distance in metres")
            }
            distance = metres
        }
        return QueryFilter(field: field, comparator: comparator, value: decoded, distance: distance)
    }

    private static func decodeSort(_ value: JSONValue, at index: Int) throws(CloudError) -> QuerySort {
        let what = "sortBy[\(index)]"
        let field = try decodeField(value, what: what)
        var relativeLocation: Location?
        if let location = value["relativeLocation"], location != .null {
            let point = location["value"] ?? location
            guard let latitude = point["latitude"]?.doubleValue, let longitude = point["longitude"]?.doubleValue else {
                throw CloudError(.invalidArguments, "records/query: \(what).relativeLocation needs a latitude and a longitude")
            }
            relativeLocation = Location(latitude: latitude, longitude: longitude)
        }
        if let ascending = value["ascending"], ascending != .null, ascending.boolValue == nil {
            throw CloudError(.invalidArguments, "records/query: \(what).ascending must be true or false")
        }
        return QuerySort(field: field, ascending: value["ascending"]?.boolValue ?? true, relativeLocation: relativeLocation)
    }
}
