import Foundation
import GatewayCore

/// An object of CloudKit's JSON holding a `records` array (a change page, a `records/modify`
/// answer), read from the text with each record going straight to a
/// ``WireRecordDictionary`` and the other members kept as trees.
package struct WireRecordPage: Sendable {
    /// The `records` items, in order.
    package var records: [WireRecordDictionary] = []
    /// Every other member: `syncToken`, `moreComing`, `zoneID`, an error's `serverErrorCode`.
    package var members: [String: JSONValue] = [:]

    /// Reads the object that comes next in `reader`; its records belong to `zone`.
    package static func read(_ reader: inout JSONReader, zone: ZoneID) throws(JSONParseError) -> WireRecordPage {
        var page = WireRecordPage()
        try reader.beginObject()
        while let key = try reader.nextMember() {
            guard key == "records", reader.peek() == .array else {
                page.members[key] = try reader.value()
                continue
            }
            try reader.beginArray()
            while try reader.nextElement() { page.records.append(try WireRecordDictionary.read(&reader, zone: zone)) }
        }
        return page
    }

    /// `changes/zone`'s answer, `{"zones": [page, …]}`: the first zone's page (the client asks for one zone).
    package static func readFirstZone(_ reader: inout JSONReader, zone: ZoneID) throws -> WireRecordPage {
        var first: WireRecordPage?
        try reader.beginObject()
        while let key = try reader.nextMember() {
            guard key == "zones", reader.peek() == .array else {
                try reader.skipValue()
                continue
            }
            try reader.beginArray()
            while try reader.nextElement() {
                if first == nil { first = try read(&reader, zone: zone) } else { try reader.skipValue() }
            }
        }
        guard let first else { throw CloudError(.internalError, "changes/zone: the answer has no zone") }
        return first
    }

    /// The members as an object, for error decoding.
    package var object: JSONValue { .object(members) }
}
