import Foundation
import GatewayCore

/// Field values in CloudKit Web Services' wire encoding: `{"value": …, "type": "…"}`.
///
/// | FieldValue | type | value |
/// |---|---|---|
/// | string | `STRING` | string |
/// | int64 | `INT64` | number (a numeric string is accepted, for `numbersAsStrings`) |
/// | double | `DOUBLE` | number |
/// | timestamp | `TIMESTAMP` | milliseconds since 1970 |
/// | bytes | `BYTES` | base64 |
/// | encrypted | `ENCRYPTED_BYTES` | base64 of the gateway's ciphertext |
/// | reference | `REFERENCE` | `{recordName, zoneID?, action}` |
/// | asset | `ASSETID` (`ASSET` accepted) | asset dictionary: `fileChecksum`, `size`, `downloadURL`, upload receipt keys |
/// | location | `LOCATION` | `{latitude, longitude, …, timestamp}` |
/// | list of one scalar kind | `<TYPE>_LIST` | array of that kind's values |
/// | any other list | `UNKNOWN_LIST` | array of typed `{value, type}` fields (a gateway extension; iCloud refuses it) |
///
/// Encoding never loses a value: doubles that JSON cannot hold (NaN, infinities) are refused.
public enum CloudKitFieldCoding {
    /// The encoded field.
    public static func encode(_ value: FieldValue, in zone: ZoneID) throws(CloudError) -> JSONValue {
        if case .list(let elements) = value {
            if let type = homogeneousType(elements) {
                return ["type": .string(type + "_LIST"), "value": .array(try elements.map { value throws(CloudError) in try encodeValue(value, zone: zone) })]
            }
            return [
                "type": "UNKNOWN_LIST",
                "value": .array(try elements.map { element throws(CloudError) in try encode(element, in: zone) }),
            ]
        }
        return ["type": .string(typeName(value)), "value": try encodeValue(value, zone: zone)]
    }

    /// Writes the encoded field, the same JSON as ``encode(_:in:)``; scalar values skip the tree.
    public static func write(_ value: FieldValue, in zone: ZoneID, into writer: inout JSONWriter) throws(CloudError) {
        switch value {
        case .string, .int64, .double, .timestamp, .bytes, .encrypted:
            writer.beginObject()
            writer.key("type")
            writer.string(typeName(value))
            writer.key("value")
            try writer.value(try encodeValue(value, zone: zone))
            writer.endObject()
        case .reference, .asset, .location, .list:
            try writer.value(try encode(value, in: zone))
        }
    }

    /// The `type` ``encode(_:in:)`` gives the field: a list's is `<element type>_LIST` when its
    /// elements share one scalar type, `UNKNOWN_LIST` otherwise.
    public static func wireType(of value: FieldValue) -> String {
        if case .list(let elements) = value { return (homogeneousType(elements) ?? "UNKNOWN") + "_LIST" }
        return typeName(value)
    }

    /// Writes the `value` member of the encoded field alone, the same JSON ``encode(_:in:)`` gives it.
    public static func writeValue(_ value: FieldValue, in zone: ZoneID, into writer: inout JSONWriter) throws(CloudError) {
        switch value {
        case .string(let text): writer.string(text)
        case .list(let elements):
            // A list of one scalar type holds bare values; any other, typed fields.
            let bare = homogeneousType(elements) != nil
            writer.beginArray()
            for element in elements {
                if bare { try writer.value(try encodeValue(element, zone: zone)) } else { try write(element, in: zone, into: &writer) }
            }
            writer.endArray()
        default: try writer.value(try encodeValue(value, zone: zone))
        }
    }

    /// The field value of an encoded field. A missing `type` is inferred from the value's shape.
    /// - Parameter zone: the zone of the record holding the field, for references without a `zoneID`.
    public static func decode(_ field: JSONValue, in zone: ZoneID, name: String) throws(CloudError) -> FieldValue {
        guard case .object = field else { throw malformed(name, "is not a {value, type} dictionary") }
        return try decode(value: field["value"], type: field["type"], in: zone, name: name)
    }

    /// The field value of an encoded field's `value` and `type` members, as read (`nil`: absent).
    static func decode(value: JSONValue?, type: JSONValue?, in zone: ZoneID, name: String) throws(CloudError) -> FieldValue {
        guard let value else { throw malformed(name, "has no value") }
        guard let type = type?.stringValue else { return try inferred(value, zone: zone, name: name) }
        if type.hasSuffix("_LIST") {
            guard let elements = value.arrayValue else { throw malformed(name, "is a \(type) whose value is not an array") }
            let elementType = String(type.dropLast(5))
            if elementType == "UNKNOWN" {
                return .list(
                    try elements.map { element throws(CloudError) in
                        element["value"] != nil ? try decode(element, in: zone, name: name) : try inferred(element, zone: zone, name: name)
                    })
            }
            return .list(try elements.map { element throws(CloudError) in try decodeValue(element, type: elementType, zone: zone, name: name) })
        }
        return try decodeValue(value, type: type, zone: zone, name: name)
    }

    static func typeName(_ value: FieldValue) -> String {
        switch value {
        case .string: "STRING"
        case .int64: "INT64"
        case .double: "DOUBLE"
        case .timestamp: "TIMESTAMP"
        case .bytes: "BYTES"
        case .encrypted: "ENCRYPTED_BYTES"
        case .reference: "REFERENCE"
        case .asset: "ASSETID"
        case .location: "LOCATION"
        case .list: "UNKNOWN_LIST"
        }
    }

    /// The element type of a list whose elements are all of one scalar kind; an empty list is a
    /// `STRING_LIST` (any `_LIST` with no elements decodes to an empty list).
    private static func homogeneousType(_ elements: [FieldValue]) -> String? {
        guard let first = elements.first else { return "STRING" }
        if case .list = first { return nil }
        let type = typeName(first)
        return elements.allSatisfy { typeName($0) == type } ? type : nil
    }

    private static func encodeValue(_ value: FieldValue, zone: ZoneID) throws(CloudError) -> JSONValue {
        switch value {
        case .string(let text): return .string(text)
        case .int64(let number): return .integer(number)
        case .double(let number):
            guard number.isFinite else {
                throw CloudError(.invalidArguments, "CloudKit's JSON cannot hold the double value NaN or infinity")
            }
            return .double(number)
        case .timestamp(let time): return .integer(time.millisecondsSince1970)
        case .bytes(let data), .encrypted(let data): return .string(data.base64EncodedString())
        case .reference(let reference):
            var object: [String: JSONValue] = [
                "recordName": .string(reference.recordID.recordName), "action": .string(reference.action.rawValue),
            ]
            if reference.recordID.zoneID != zone { object["zoneID"] = CloudKitWireCoding.encode(reference.recordID.zoneID) }
            return .object(object)
        case .asset(let asset): return CloudKitAssetCoding.encode(asset)
        case .location(let location):
            var object: [String: JSONValue] = ["latitude": .double(location.latitude), "longitude": .double(location.longitude)]
            for (key, number) in [
                ("horizontalAccuracy", location.horizontalAccuracy), ("verticalAccuracy", location.verticalAccuracy),
                ("altitude", location.altitude), ("speed", location.speed), ("course", location.course),
            ] {
                if let number { object[key] = .double(number) }
            }
            if let time = location.timestamp { object["timestamp"] = .integer(time.millisecondsSince1970) }
            return .object(object)
        case .list: return try encode(value, in: zone)
        }
    }

    private static func decodeValue(_ value: JSONValue, type: String, zone: ZoneID, name: String) throws(CloudError) -> FieldValue {
        switch type {
        case "STRING":
            guard let text = value.stringValue else { throw malformed(name, "is a STRING whose value is not a string") }
            return .string(text)
        case "INT64":
            guard let number = value.int64Value else { throw malformed(name, "is an INT64 whose value is not a 64-bit integer") }
            return .int64(number)
        case "DOUBLE":
            guard let number = value.doubleValue else { throw malformed(name, "is a DOUBLE whose value is not a number") }
            return .double(number)
        case "TIMESTAMP":
            guard let milliseconds = value.int64Value ?? value.doubleValue.map({ Int64($0.rounded(.down)) }) else {
                throw malformed(name, "is a TIMESTAMP whose value is not milliseconds")
            }
            return .timestamp(Timestamp(millisecondsSince1970: milliseconds))
        case "BYTES", "ENCRYPTED_BYTES":
            guard let text = value.stringValue, let data = Data(base64Encoded: text) else {
                throw malformed(name, "is \(type) whose value is not base64")
            }
            return type == "BYTES" ? .bytes(data) : .encrypted(data)
        case "REFERENCE":
            guard let recordName = value["recordName"]?.stringValue else { throw malformed(name, "is a REFERENCE without a recordName") }
            let target = try value["zoneID"].map { zoneID throws(CloudError) in try CloudKitWireCoding.decodeZoneID(zoneID) } ?? zone
            let action = value["action"]?.stringValue.flatMap(Reference.Action.init(rawValue:)) ?? .none
            return .reference(Reference(recordID: RecordID(recordName: recordName, zoneID: target), action: action))
        case "ASSETID", "ASSET":
            return .asset(try CloudKitAssetCoding.decode(value, field: name))
        case "LOCATION":
            guard let latitude = value["latitude"]?.doubleValue, let longitude = value["longitude"]?.doubleValue else {
                throw malformed(name, "is a LOCATION without latitude and longitude")
            }
            return .location(
                Location(
                    latitude: latitude, longitude: longitude, horizontalAccuracy: value["horizontalAccuracy"]?.doubleValue,
                    verticalAccuracy: value["verticalAccuracy"]?.doubleValue, altitude: value["altitude"]?.doubleValue,
                    speed: value["speed"]?.doubleValue, course: value["course"]?.doubleValue,
                    timestamp: value["timestamp"]?.int64Value.map(Timestamp.init(millisecondsSince1970:))))
        default:
            throw malformed(name, "has the type \(type), which the gateway does not know")
        }
    }

    /// A value saved without `type`: its kind follows from its JSON shape, as CloudKit infers it.
    private static func inferred(_ value: JSONValue, zone: ZoneID, name: String) throws(CloudError) -> FieldValue {
        switch value {
        case .string(let text): return .string(text)
        case .integer(let number): return .int64(number)
        case .bool(let flag): return .int64(flag ? 1 : 0)
        case .double(let number): return .double(number)
        case .array(let elements): return .list(try elements.map { element throws(CloudError) in try inferred(element, zone: zone, name: name) })
        case .object(let members):
            if members["fileChecksum"] != nil || members["receipt"] != nil { return try decodeValue(value, type: "ASSETID", zone: zone, name: name) }
            if members["recordName"] != nil { return try decodeValue(value, type: "REFERENCE", zone: zone, name: name) }
            if members["latitude"] != nil { return try decodeValue(value, type: "LOCATION", zone: zone, name: name) }
            throw malformed(name, "has an object value of no known kind and no type")
        case .null: throw malformed(name, "is null; leave the field out instead")
        }
    }

    static func malformed(_ field: String, _ problem: String) -> CloudError {
        CloudError(.invalidArguments, "the field \(field) \(problem)")
    }
}

/// CloudKit's asset dictionary, and where the gateway keeps the keys it must send back.
///
/// The gateway's ``AssetReference/checksum`` is the lower-case hex SHA-256 of the bytes. iCloud's
/// `fileChecksum` has its own format, so an asset uploaded to iCloud keeps iCloud's whole
/// `singleFile` answer (receipt, wrapping key, checksums) in ``AssetReference/uploadReceipt``,
/// and that dictionary is what a record save sends.
public enum CloudKitAssetCoding {
    public static func encode(_ asset: AssetReference) -> JSONValue {
        if let receipt = asset.uploadReceipt, let data = receipt.data(using: .utf8), case .object(let uploaded)? = try? JSONValue.parse(data) {
            return .object(uploaded)
        }
        var object: [String: JSONValue] = ["fileChecksum": .string(asset.checksum), "size": .integer(asset.size)]
        if let url = asset.downloadURL { object["downloadURL"] = .string(url) }
        return .object(object)
    }

    public static func decode(_ value: JSONValue, field: String) throws(CloudError) -> AssetReference {
        guard let checksum = value["fileChecksum"]?.stringValue, let size = value["size"]?.int64Value, size >= 0 else {
            throw CloudKitFieldCoding.malformed(field, "is an asset without fileChecksum and size")
        }
        var asset = AssetReference(checksum: checksum, size: size, downloadURL: value["downloadURL"]?.stringValue)
        if value["receipt"] != nil, let text = try? value.serialized() { asset.uploadReceipt = String(decoding: text, as: UTF8.self) }
        return asset
    }
}
