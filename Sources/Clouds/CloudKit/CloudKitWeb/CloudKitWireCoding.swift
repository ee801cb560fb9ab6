import Foundation
import GatewayCore

/// Records, zone ids and change tokens in CloudKit Web Services' JSON, shared by the client
/// (``CloudKitWebDatabase``) and the `gateway cloud serve` endpoint.
public enum CloudKitWireCoding {
    /// CloudKit's name of the default zone.
    public static let defaultZoneName = "_defaultZone"

    /// `{zoneName, ownerRecordName?}`; the owner is left out for the caller's own zones.
    public static func encode(_ zone: ZoneID) -> JSONValue {
        var object: [String: JSONValue] = ["zoneName": .string(zone.zoneName)]
        if zone.ownerName != ZoneID.defaultOwnerName { object["ownerRecordName"] = .string(zone.ownerName) }
        return .object(object)
    }

    /// Reads a zone id; MistKit's `ownerName` spelling is accepted too.
    public static func decodeZoneID(_ value: JSONValue) throws(CloudError) -> ZoneID {
        guard let name = value["zoneName"]?.stringValue else {
            throw CloudError(.invalidArguments, "a zoneID has no zoneName")
        }
        let owner = value["ownerRecordName"]?.stringValue ?? value["ownerName"]?.stringValue ?? ZoneID.defaultOwnerName
        return ZoneID(zoneName: name, ownerName: owner)
    }

    /// A record dictionary: `recordName`, `recordType`, `recordChangeTag` (when the record has
    /// one and `includeTag`), `fields`, and `created` and `modified` (`timestamp`, and
    /// `userRecordName` when given) for records coming from a cloud. With `writingNulls`, a field
    /// of the layout without a value is written as `{"value": null}` (what a partial save,
    /// `update`, sends to clear a field); otherwise it is left out.
    public static func encode(
        _ record: Record, includeTag: Bool = true, userRecordName: String? = nil, writingNulls: Bool = false
    ) throws(CloudError) -> JSONValue {
        var fields: [String: JSONValue] = [:]
        fields.reserveCapacity(record.fieldCount)
        let names = record.layout.fieldNames
        for position in names.indices {
            guard let value = record[position: position] else {
                if writingNulls { fields[names[position]] = ["value": .null] }
                continue
            }
            fields[names[position]] = try CloudKitFieldCoding.encode(value, in: record.id.zoneID)
        }
        var object: [String: JSONValue] = [
            "recordName": .string(record.id.recordName), "recordType": .string(record.recordType), "fields": .object(fields),
        ]
        if includeTag, let tag = record.changeTag { object["recordChangeTag"] = .string(tag) }
        func stamp(_ time: Timestamp) -> JSONValue {
            var stamp: [String: JSONValue] = ["timestamp": .integer(time.millisecondsSince1970)]
            if let userRecordName { stamp["userRecordName"] = .string(userRecordName) }
            return .object(stamp)
        }
        if let modified = record.modifiedAt { object["modified"] = stamp(modified) }
        if let created = record.createdAt { object["created"] = stamp(created) }
        return .object(object)
    }

    /// Writes the record dictionary of ``encode(_:includeTag:userRecordName:writingNulls:)``, with `zoneID`
    /// when `includeZone`, without building it as a tree first.
    public static func write(
        _ record: Record, includeTag: Bool = true, userRecordName: String? = nil, includeZone: Bool = false, writingNulls: Bool = false,
        into writer: inout JSONWriter
    ) throws(CloudError) {
        writer.beginObject()
        writer.key("recordName")
        writer.string(record.id.recordName)
        writer.key("recordType")
        writer.string(record.recordType)
        if includeTag, let tag = record.changeTag {
            writer.key("recordChangeTag")
            writer.string(tag)
        }
        writer.key("fields")
        writer.beginObject()
        let names = record.layout.fieldNames
        for position in names.indices {
            guard let value = record[position: position] else {
                if writingNulls {
                    writer.key(names[position])
                    try writer.value(["value": .null])
                }
                continue
            }
            writer.key(names[position])
            try CloudKitFieldCoding.write(value, in: record.id.zoneID, into: &writer)
        }
        writer.endObject()
        func writeStamp(_ key: String, _ time: Timestamp?) throws(CloudError) {
            guard let time else { return }
            writer.key(key)
            writer.beginObject()
            writer.key("timestamp")
            try writer.value(.integer(time.millisecondsSince1970))
            if let userRecordName {
                writer.key("userRecordName")
                writer.string(userRecordName)
            }
            writer.endObject()
        }
        try writeStamp("modified", record.modifiedAt)
        try writeStamp("created", record.createdAt)
        if includeZone {
            writer.key("zoneID")
            try writer.value(encode(record.id.zoneID))
        }
        writer.endObject()
    }

    /// Reads a record dictionary of `zone`.
    public static func decodeRecord(_ value: JSONValue, in zone: ZoneID) throws(CloudError) -> Record {
        var dictionary = WireRecordDictionary()
        if case .object(let members) = value {
            for (key, member) in members { dictionary.take(key, member, zone: zone) }
        }
        var layouts: RecordLayout?
        return try dictionary.record(in: zone, layouts: &layouts)
    }

    /// A change token as CloudKit's `syncToken` string (URL-safe base64 of the opaque bytes).
    public static func encode(_ token: ChangeToken) -> String {
        token.data.base64URLText
    }

    /// The change token of a `syncToken` string.
    public static func decodeToken(_ text: String) throws(CloudError) -> ChangeToken {
        guard let data = Data(base64URLText: text) else {
            throw CloudError(.invalidArguments, "the syncToken is not a token this cloud issued; reset the adapter's sync state")
        }
        return ChangeToken(data: data)
    }
}
