import CloudKitWeb
import Foundation
import GatewayCore

/// A `records/modify` request body, read straight from its text: each operation's record goes
/// to a `WireRecordDictionary` without a tree of the whole body.
struct ModifyRequest {
    /// One entry of `operations`.
    struct Operation {
        var type: String?
        var record: WireRecordDictionary?
    }

    var zone = ZoneID(zoneName: CloudKitWireCoding.defaultZoneName)
    var atomic = true
    var desiredKeys: JSONValue?
    /// `nil` when the body has no `operations` array.
    var operations: [Operation]?

    /// Reads a body.
    /// - Throws: `CloudError` `invalidArguments` for a body that is not JSON or has a bad `zoneID`.
    static func read(_ body: Data) throws(CloudError) -> ModifyRequest {
        let request = try read(body, assumingZone: nil)
        // Records are read in the request's zone (a reference without a zoneID points into it); a
        // body that names its zone only after the operations is read again, now knowing it.
        if request.zoneCameLate, request.zone != ZoneID(zoneName: CloudKitWireCoding.defaultZoneName) {
            return try read(body, assumingZone: request.zone)
        }
        return request
    }

    /// Whether `operations` came before `zoneID`, so its records were read in the default zone.
    private var zoneCameLate = false

    private static func read(_ body: Data, assumingZone assumed: ZoneID?) throws(CloudError) -> ModifyRequest {
        do {
            return try JSONReader.read(body.isEmpty ? Data("{}".utf8) : body, numbers: .wholeDoublesAsIntegers) { reader in
                var request = ModifyRequest()
                if let assumed { request.zone = assumed }
                var zoneRead = assumed != nil
                try reader.beginObject()
                while let key = try reader.nextMember() {
                    switch key {
                    case "zoneID":
                        let zone = try CloudKitWireCoding.decodeZoneID(try reader.value())
                        if assumed == nil { request.zone = zone }
                        zoneRead = true
                    case "atomic": request.atomic = try reader.value().boolValue ?? true
                    case "desiredKeys": request.desiredKeys = try reader.value()
                    case "operations" where reader.peek() == .array:
                        request.zoneCameLate = !zoneRead
                        var operations: [Operation] = []
                        try reader.beginArray()
                        while try reader.nextElement() { operations.append(try readOperation(&reader, zone: request.zone)) }
                        request.operations = operations
                    default: try reader.skipValue()
                    }
                }
                return request
            }
        } catch let error as JSONParseError {
            throw CloudError(.invalidArguments, "the body is not valid JSON: \(error.reason) at byte \(error.offset)", underlying: error)
        } catch let error as CloudError {
            throw error
        } catch {
            throw CloudError(.invalidArguments, "records/modify: the body could not be read", underlying: error)
        }
    }

    private static func readOperation(_ reader: inout JSONReader, zone: ZoneID) throws(JSONParseError) -> Operation {
        var operation = Operation()
        guard reader.peek() == .object else {
            try reader.skipValue()
            return operation
        }
        try reader.beginObject()
        while let key = try reader.nextMember() {
            switch key {
            case "operationType": operation.type = try reader.value().stringValue
            case "record" where reader.peek() == .object: operation.record = try WireRecordDictionary.read(&reader, zone: zone)
            default: try reader.skipValue()
            }
        }
        return operation
    }
}
