import Foundation
import GatewayCore

/// What one record dictionary of CloudKit's JSON says: a record, a tombstone
/// (`{recordName, deleted: true}`), a save's answer (name, tag and times) or a per-record error
/// (`serverErrorCode`, `reason`).
///
/// Read member by member, from a tree (``take(_:_:zone:)``) or straight from the text
/// (``read(_:zone:)``), so pages of records and `records/modify` bodies become records without a
/// ``JSONValue`` tree per record; both ways end in the same checks (``record(in:layouts:)``).
package struct WireRecordDictionary: Sendable {
    package var recordName: String?
    package var recordType: String?
    package var changeTag: String?
    package var modifiedAt: Timestamp?
    package var createdAt: Timestamp?
    /// `deleted: true`: a tombstone.
    package var isDeleted = false
    /// Field names and values in the order they came.
    private var names: [String] = []
    private var values: [FieldValue?] = []
    /// Members a record does not have, kept as trees: an error's `serverErrorCode`, `reason`,
    /// `retryAfter`; a `zoneID`.
    package var others: [String: JSONValue] = [:]
    /// The first field that could not be read; thrown, with the record's name, by ``record(in:layouts:)``.
    private var fieldError: CloudError?

    package init() {}

    /// Takes one member of the dictionary given as a tree.
    package mutating func take(_ key: String, _ value: JSONValue, zone: ZoneID) {
        switch key {
        case "recordName": recordName = value.stringValue
        case "recordType": recordType = value.stringValue
        case "recordChangeTag": changeTag = value.stringValue
        case "modified": modifiedAt = Self.stamp(value)
        case "created": createdAt = Self.stamp(value)
        case "deleted": isDeleted = value.boolValue == true
        case "fields":
            guard case .object(let fields) = value else { return }
            names.reserveCapacity(fields.count)
            values.reserveCapacity(fields.count)
            for (name, field) in fields {
                add(name) { () throws(CloudError) in
                    // `{"value": null}`: the field is named without a value (a partial save clearing it).
                    if case .object(let members) = field, members["value"] == .null { return nil }
                    return try CloudKitFieldCoding.decode(field, in: zone, name: name)
                }
            }
        default: others[key] = value
        }
    }

    /// Reads the dictionary that comes next in `reader`; fields go straight to field values.
    /// - Throws: `JSONParseError` for text that is not JSON; a field that is not a valid
    ///   CloudKit field is reported by ``record(in:layouts:)``.
    package static func read(_ reader: inout JSONReader, zone: ZoneID) throws(JSONParseError) -> WireRecordDictionary {
        var dictionary = WireRecordDictionary()
        try reader.beginObject()
        while let key = try reader.nextMember() {
            guard key == "fields", reader.peek() == .object else {
                dictionary.take(key, try reader.value(), zone: zone)
                continue
            }
            try reader.beginObject()
            while let name = try reader.nextMember() {
                let members = try readField(&reader)
                dictionary.add(name) { () throws(CloudError) in
                    guard let members else { throw CloudKitFieldCoding.malformed(name, "is not a {value, type} dictionary") }
                    if members.value == .null { return nil }
                    return try CloudKitFieldCoding.decode(value: members.value, type: members.type, in: zone, name: name)
                }
            }
        }
        return dictionary
    }

    /// The `value` and `type` members of the field that comes next, each `nil` when absent;
    /// `nil` when the field is not a dictionary.
    private static func readField(_ reader: inout JSONReader) throws(JSONParseError) -> (value: JSONValue?, type: JSONValue?)? {
        guard reader.peek() == .object else {
            try reader.skipValue()
            return nil
        }
        try reader.beginObject()
        var value: JSONValue?
        var type: JSONValue?
        while let key = try reader.nextMember() {
            switch key {
            case "value": value = try reader.value()
            case "type": type = try reader.value()
            default: try reader.skipValue()
            }
        }
        return (value, type)
    }

    private mutating func add(_ name: String, _ decode: () throws(CloudError) -> FieldValue?) {
        guard fieldError == nil else { return }
        do {
            let value = try decode()
            names.append(name)
            values.append(value)
        } catch {
            fieldError = error
        }
    }

    /// The per-record error this dictionary is, if it is one.
    package var failure: JSONValue? {
        guard others["serverErrorCode"] != nil else { return nil }
        var object = others
        if let recordName { object["recordName"] = .string(recordName) }
        return .object(object)
    }

    /// The record of `zone` the dictionary describes.
    /// - Parameter layouts: the layout of the previous record read; reused when this record has
    ///   the same fields, and replaced when it has others.
    /// - Throws: `invalidArguments` for a dictionary without `recordName` or with a field that is
    ///   not a valid CloudKit field.
    package func record(in zone: ZoneID, layouts: inout RecordLayout?) throws(CloudError) -> Record {
        guard let recordName else { throw CloudError(.invalidArguments, "a record in zone \(zone) has no recordName") }
        let id = RecordID(recordName: recordName, zoneID: zone)
        if let fieldError { throw CloudError(fieldError.code, "record \(id): \(fieldError.message)") }
        var names = self.names
        var values = self.values
        if !Self.isStrictlyAscending(names) { Self.sortKeepingLast(&names, &values) }
        let layout: RecordLayout
        if let last = layouts, last.fieldNames == names {
            layout = last
        } else {
            layout = names.isEmpty ? .empty : RecordLayout.shared(sortedNames: names)
            layouts = layout
        }
        return Record(
            id: id, recordType: recordType ?? "", changeTag: changeTag, layout: layout, values: values, modifiedAt: modifiedAt,
            createdAt: createdAt)
    }

    private static func isStrictlyAscending(_ names: [String]) -> Bool {
        names.indices.dropFirst().allSatisfy { names[$0 - 1] < names[$0] }
    }

    /// Sorts the fields by name; of a name given twice the last value wins, as in a JSON object.
    private static func sortKeepingLast(_ names: inout [String], _ values: inout [FieldValue?]) {
        var latest: [String: Int] = [:]
        for (position, name) in names.enumerated() { latest[name] = position }
        let order = latest.keys.sorted()
        values = order.map { values[latest[$0]!] }
        names = order
    }

    private static func stamp(_ value: JSONValue) -> Timestamp? {
        value["timestamp"]?.int64Value.map(Timestamp.init(millisecondsSince1970:))
    }
}
