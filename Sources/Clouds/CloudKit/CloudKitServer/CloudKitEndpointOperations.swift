import CloudKitWeb
import Foundation
import GatewayCore

/// The endpoint's operations as JSON in, JSON out, over any ``CloudDatabase``.
///
/// Whole-request failures throw ``CloudError`` (the endpoint answers them with CloudKit's status
/// and error body); per-record and per-zone failures are error dictionaries inside the answer.
struct CloudKitEndpointOperations: Sendable {
    /// The caller's database: their view of ``store`` (``UserCloudDatabase``).
    let cloud: any CloudDatabase
    /// The whole store behind the endpoint: every user's zones and subscriptions.
    var store: any CloudDatabase
    /// Which database the request names; `nil` for the public one.
    var scope: CloudScope? = .private
    /// `<scheme>://<host>/database/1/<container>/<environment>/<database>`, for asset URLs.
    let databaseURL: String
    /// Answers `records/query`; `nil` when the cloud cannot list its records.
    var pager: RecordQueryPager?
    /// The caller's user record name: in a private database every record is created and
    /// modified by its owner, so records carry it in `created` and `modified`.
    var userRecordName: String?
    /// Told of every change made through the endpoint, for the subscriptions it fires.
    var notifier: CloudKitNotifier?
    /// Signs the download URLs and upload receipts handed to the caller, and checks the assets
    /// a save names.
    var assetSigner: AssetSigner = .random()
    /// The users whose private default zone exists (``ensuringDefaultZone(_:)``).
    var defaultZones = DefaultZoneRegistry()
    /// `<scheme>://<host>/webcourier/1/<container>/<environment>`, the base of courier URLs.
    var courierURL: String = ""

    /// `zone` as the store names it (the caller's zones under their user record name).
    func storedZone(_ zone: ZoneID) -> ZoneID {
        if cloud is PublicCloudDatabase { return PublicCloudDatabase.stored }
        return (cloud as? UserCloudDatabase)?.storedZone(zone) ?? zone
    }

    /// The caller's database when it can scan records for queries.
    var scanner: (any CloudDatabase & RecordScanning)? {
        guard store is any RecordScanning else { return nil }
        return cloud as? any CloudDatabase & RecordScanning
    }

    // MARK: Zones

    func listZones() async throws -> JSONValue {
        var zones: [JSONValue] = []
        for zone in try await cloud.zones() {
            zones.append(try await zoneDictionary(zone))
        }
        return ["zones": .array(zones)]
    }

    func lookupZones(_ body: JSONValue) async throws -> JSONValue {
        var zones: [JSONValue] = []
        for item in body["zones"]?.arrayValue ?? [] {
            let zone = try await ensuringDefaultZone(try CloudKitWireCoding.decodeZoneID(item["zoneID"] ?? item))
            do {
                zones.append(try await zoneDictionary(zone))
            } catch let error as CloudError {
                zones.append(zoneError(error, zone: zone))
            }
        }
        return ["zones": .array(zones)]
    }

    func modifyZones(_ body: JSONValue) async throws -> JSONValue {
        var zones: [JSONValue] = []
        for operation in body["operations"]?.arrayValue ?? [] {
            let zone = try CloudKitWireCoding.decodeZoneID(operation["zone"]?["zoneID"] ?? .null)
            do {
                switch operation["operationType"]?.stringValue {
                case "create":
                    try await cloud.createZone(zone)
                    zones.append(try await zoneDictionary(zone))
                    notifier?.subscriptionsChanged()  // a database subscription covers the new zone
                case "delete" where zone.zoneName == CloudKitWireCoding.defaultZoneName && scope == .private:
                    zones.append(zoneError(CloudError(.invalidArguments, "the default zone cannot be deleted"), zone: zone))
                case "delete":
                    try await cloud.deleteZone(zone)
                    zones.append(["zoneID": CloudKitWireCoding.encode(zone), "deleted": true])
                    await notifier?.zoneChanged(storedZone(zone))
                default:
                    throw CloudError(.invalidArguments, "zones/modify: operationType must be create or delete")
                }
            } catch let error as CloudError where error.code != .invalidArguments {
                zones.append(zoneError(error, zone: zone))
            }
        }
        return ["zones": .array(zones)]
    }

    private func zoneDictionary(_ zone: ZoneID) async throws -> JSONValue {
        let token = try await cloud.currentChangeToken(in: zone)
        return ["zoneID": CloudKitWireCoding.encode(zone), "syncToken": .string(CloudKitWireCoding.encode(token)), "atomic": .bool(Self.isAtomic(zone))]
    }

    /// Whether saves in `zone` are all-or-nothing when a request asks: custom zones are; the
    /// default zone, as in CloudKit, is not.
    static func isAtomic(_ zone: ZoneID) -> Bool { zone.zoneName != CloudKitWireCoding.defaultZoneName }

    private func zoneError(_ error: CloudError, zone: ZoneID) -> JSONValue {
        guard case .object(var object) = CloudKitErrorCoding.encode(error) else { return .null }
        object["zoneID"] = CloudKitWireCoding.encode(zone)
        return .object(object)
    }

    // MARK: Shares

    /// `records/resolve` and `records/accept`: `shortGUIDs: [{value}]`, each answered in order
    /// with `{shortGUID, zoneID, share}` (the zone named with its owner) or an error dictionary
    /// (`NOT_FOUND` for a share the caller may not see). Accepting puts the zone in the caller's
    /// shared database.
    func shares(_ body: JSONValue, accepting: Bool) async throws -> JSONValue {
        guard let asked = body["shortGUIDs"]?.arrayValue else {
            throw CloudError(.invalidArguments, "records/\(accepting ? "accept" : "resolve"): the body needs shortGUIDs, a list of {value}")
        }
        let users = CloudUsers(store: store)
        let caller = userRecordName ?? CloudUsers.defaultUser
        var results: [JSONValue] = []
        for item in asked {
            let guid = item["value"]?.stringValue ?? item.stringValue ?? ""
            do {
                guard var share = try await users.share(withShortGUID: guid),
                    share.owner == caller || share.participant(caller) != nil || share.publicPermission != .none
                else { throw CloudError(.unknownItem, "no share the caller may see has short GUID \(guid)") }
                if accepting, share.owner != caller { share = try await users.accept(share.zoneName, ownedBy: share.owner, as: caller) }
                let zone = CloudUsers.zone(ZoneID(zoneName: share.zoneName, ownerName: CloudUsers.storedOwner(of: share.owner)), asSeenBy: caller)
                var record = share.record(in: zone)
                if let stored = try await store.lookup([RecordID(recordName: ZoneShare.recordName, zoneID: ZoneID(zoneName: share.zoneName, ownerName: CloudUsers.storedOwner(of: share.owner)))])[0] {
                    record.changeTag = stored.changeTag
                    record.modifiedAt = stored.modifiedAt
                    record.createdAt = stored.createdAt
                }
                results.append(["shortGUID": .string(guid), "zoneID": CloudKitWireCoding.encode(zone), "share": try encode(record)])
            } catch let error as CloudError where error.code != .internalError {
                guard case .object(var object) = CloudKitErrorCoding.encode(error) else { continue }
                object["shortGUID"] = .string(guid)
                results.append(.object(object))
            }
        }
        return ["results": .array(results)]
    }

    // MARK: Change feed

    /// `changes/database` (token key `syncToken`) and `zones/changes` (`metaSyncToken`): the zones
    /// that changed since the token, each as a zone dictionary with its current `syncToken`, and
    /// the zones deleted since as `{zoneID, deleted: true}`, in zone order, at most `resultsLimit`
    /// of them (default 200); `moreComing` while more remain. Without a token, every zone.
    func databaseChanges(_ body: JSONValue, tokenKey: String, operation: String) async throws -> JSONValue {
        let previous = try body[tokenKey]?.stringValue.map { text throws(CloudError) in try DatabaseChangeToken(text: text, operation: operation) }
            ?? DatabaseChangeToken()
        let requested = body["resultsLimit"]?.int64Value ?? 200
        guard requested >= 1 else { throw CloudError(.invalidArguments, "\(operation): resultsLimit must be at least 1") }
        let limit = Int(clamping: requested)
        var current: [String: (zone: ZoneID, token: String)] = [:]
        for zone in try await cloud.zones() {
            current[DatabaseChangeToken.key(zone)] = (zone, CloudKitWireCoding.encode(try await cloud.currentChangeToken(in: zone)))
        }
        let changed = current.filter { previous.zones[$0.key] != $0.value.token }.map(\.key)
        let deleted = previous.zones.keys.filter { current[$0] == nil }
        let due = (changed + deleted).sorted()
        var next = previous
        var zones: [JSONValue] = []
        for key in due.prefix(limit) {
            if let (zone, token) = current[key] {
                zones.append(["zoneID": CloudKitWireCoding.encode(zone), "syncToken": .string(token), "atomic": .bool(Self.isAtomic(zone))])
                next.zones[key] = token
            } else {
                zones.append(["zoneID": CloudKitWireCoding.encode(DatabaseChangeToken.zone(fromKey: key)), "deleted": true])
                next.zones[key] = nil
            }
        }
        return .object(["zones": .array(zones), tokenKey: .string(next.text), "moreComing": .bool(due.count > limit)])
    }

    func zoneChanges(_ body: JSONValue) async throws -> EndpointAnswer {
        let defaultLimit = body["resultsLimit"]?.int64Value
        var writer = JSONWriter(capacity: 64 * 1024)
        writer.beginObject()
        writer.key("zones")
        writer.beginArray()
        for request in body["zones"]?.arrayValue ?? [] {
            let zone = try await ensuringDefaultZone(try CloudKitWireCoding.decodeZoneID(request["zoneID"] ?? .null))
            do {
                let page = try await changes(in: zone, token: request["syncToken"], limit: request["resultsLimit"]?.int64Value ?? defaultLimit)
                // Written apart first, so a zone that fails halfway leaves no partial answer.
                var zoneAnswer = JSONWriter(capacity: 64 * 1024)
                try write(
                    page, zone: zone, desiredKeys: try Self.desiredKeys(request["desiredKeys"] ?? body["desiredKeys"], operation: "changes/zone"),
                    into: &zoneAnswer)
                writer.value(zoneAnswer)
            } catch let error as CloudError {
                try writer.value(zoneError(error, zone: zone))
            }
        }
        writer.endArray()
        writer.endObject()
        return .jsonText(writer.data)
    }

    func recordChanges(_ body: JSONValue) async throws -> EndpointAnswer {
        let zone = try await ensuringDefaultZone(try CloudKitWireCoding.decodeZoneID(body["zoneID"] ?? .null))
        let desiredKeys = try Self.desiredKeys(body["desiredKeys"], operation: "records/changes")
        let page = try await changes(in: zone, token: body["syncToken"], limit: body["resultsLimit"]?.int64Value)
        var writer = JSONWriter(capacity: 64 * 1024)
        try write(page, zone: nil, desiredKeys: desiredKeys, into: &writer)
        return .jsonText(writer.data)
    }

    private func changes(in zone: ZoneID, token: JSONValue?, limit: Int64?) async throws -> ZoneChanges {
        let since = try token?.stringValue.map { text throws(CloudError) in try CloudKitWireCoding.decodeToken(text) }
        let requested = Int(clamping: limit ?? Int64(cloud.limits.maxResultsPerFetch))
        return try await cloud.fetchChanges(in: zone, since: since, limit: max(1, requested))
    }

    /// A page of the feed: `records` (saved ones whole, deleted ones as `{recordName, deleted}`),
    /// `syncToken`, `moreComing`, and `zoneID` when answering per zone; written straight out, as a
    /// page of records is the endpoint's largest answer.
    private func write(_ page: ZoneChanges, zone: ZoneID?, desiredKeys: Set<String>?, into writer: inout JSONWriter) throws(CloudError) {
        writer.beginObject()
        writer.key("records")
        writer.beginArray()
        for record in page.modified {
            try writeRecord(record, desiredKeys: desiredKeys, into: &writer)
        }
        for id in page.deleted { try writer.value(Self.deletion(id)) }
        writer.endArray()
        writer.key("syncToken")
        writer.string(CloudKitWireCoding.encode(page.token))
        writer.key("moreComing")
        try writer.value(.bool(page.moreComing))
        if let zone {
            writer.key("zoneID")
            try writer.value(CloudKitWireCoding.encode(zone))
        }
        writer.endObject()
    }

    /// `records/modify`, read from the body's text (see ``ModifyRequest``).
    func modifyRecords(_ body: Data) async throws -> EndpointAnswer {
        let request = try ModifyRequest.read(body)
        try await ensuringDefaultZone(request.zone)
        guard let items = request.operations else {
            throw CloudError(.invalidArguments, "records/modify: the request has no operations")
        }
        let desired = try Self.desiredKeys(request.desiredKeys, operation: "records/modify")
        var operations: [RecordOperation] = []
        operations.reserveCapacity(items.count)
        var layouts: RecordLayout?
        for item in items { operations.append(try await operation(item, zone: request.zone, layouts: &layouts)) }
        let results = try await cloud.modify(operations, in: request.zone, atomic: request.atomic && Self.isAtomic(request.zone))
        if results.contains(where: { $0.error == nil }) { await notifier?.zoneChanged(storedZone(request.zone)) }
        var writer = JSONWriter(capacity: 192 * results.count)
        writer.beginObject()
        writer.key("records")
        writer.beginArray()
        for result in results {
            switch result {
            case .saved(let record):
                try writeRecord(record, desiredKeys: desired, into: &writer)
            case .deleted(let id): try writer.value(Self.deletion(id))
            case .failed(let id, let error): try writer.value(CloudKitErrorCoding.encode(error, recordName: id.recordName))
            }
        }
        writer.endArray()
        writer.endObject()
        return .jsonText(writer.data)
    }

    /// One `operations` entry; `update` and `forceUpdate` are partial saves, which the cloud
    /// completes with the stored record's other fields (``RecordOperation/update(_:)``).
    private func operation(_ item: ModifyRequest.Operation, zone: ZoneID, layouts: inout RecordLayout?) async throws -> RecordOperation {
        guard let type = item.type, var wire = item.record else {
            throw CloudError(.invalidArguments, "records/modify: each operation needs operationType and record")
        }
        // A record without a name gets one, as CloudKit does.
        if wire.recordName == nil { wire.recordName = UUID().uuidString }
        var record = try wire.record(in: zone, layouts: &layouts)
        // A share written as CloudKit writes one: its participants at the top of the dictionary.
        if record.recordType == ZoneShare.recordType,
            let share = try ShareWireCoding.record(record, members: wire.others, zoneName: zone.zoneName, owner: userRecordName ?? CloudUsers.defaultUser)
        {
            record = share
        }
        if !record.assetReferences.isEmpty {
            // An asset the caller was not handed goes to the cloud as one that was never
            // uploaded: the record fails alone, with the same answer whether or not some user
            // holds that content (``AssetSigner``).
            let unproven = Set(try await unprovenAssets(of: record).map(\.checksum))
            // In place, so a field named without a value (a partial save clearing it) stays named.
            for position in record.values.indices {
                record[position: position] = record.values[position].map { Self.storable($0, refusing: unproven) }
            }
        }
        record.modifiedAt = nil
        record.createdAt = nil
        switch type {
        case "create": return .create(record)
        case "replace": return .replace(record)
        case "forceReplace": return .forceReplace(record)
        case "delete": return .delete(record.id, changeTag: record.changeTag)
        case "forceDelete": return .forceDelete(record.id)
        case "update", "forceUpdate":
            // The cloud keeps the stored fields the update does not name; a record type left out
            // is the stored record's.
            if record.recordType.isEmpty, let stored = try await cloud.lookup([record.id])[0] { record.recordType = stored.recordType }
            return type == "update" ? .update(record) : .forceUpdate(record)
        default:
            throw CloudError(.invalidArguments, "records/modify: unknown operationType \(type)")
        }
    }

    func lookupRecords(_ body: JSONValue) async throws -> JSONValue {
        let zone = try body["zoneID"].map { zone throws(CloudError) in try CloudKitWireCoding.decodeZoneID(zone) }
            ?? ZoneID(zoneName: CloudKitWireCoding.defaultZoneName)
        let names = try (body["records"]?.arrayValue ?? []).map { item throws(CloudError) in
            guard let name = item["recordName"]?.stringValue else {
                throw CloudError(.invalidArguments, "records/lookup: each record needs a recordName")
            }
            return name
        }
        let desired = try Self.desiredKeys(body["desiredKeys"], operation: "records/lookup")
        try await ensuringDefaultZone(zone)
        let found = try await cloud.lookup(names.map { RecordID(recordName: $0, zoneID: zone) })
        return [
            "records": .array(
                try zip(names, found).map { name, record throws(CloudError) -> JSONValue in
                    guard let record else {
                        return CloudKitErrorCoding.encode(CloudError(.unknownItem, "record \(name) does not exist"), recordName: name)
                    }
                    return try encode(record, desiredKeys: desired)
                })
        ]
    }

    /// `records/query`: one page of the query's matches in `zoneID` (the default zone when
    /// absent) or, with `zoneWide`, in every zone; at most `resultsLimit` (default and maximum
    /// 200), and a `continuationMarker` while more may follow.
    func queryRecords(_ body: JSONValue) async throws -> EndpointAnswer {
        guard let pager, let scanner else {
            throw CloudError(.invalidArguments, "records/query: the cloud behind this endpoint cannot list its records")
        }
        let zone = try body["zoneID"].map { zone throws(CloudError) in try CloudKitWireCoding.decodeZoneID(zone) }
            ?? ZoneID(zoneName: CloudKitWireCoding.defaultZoneName)
        try await ensuringDefaultZone(zone)
        guard let queryBody = body["query"] else { throw CloudError(.invalidArguments, "records/query: the body needs a query") }
        let query = try CloudKitQueryCoding.decode(queryBody, in: zone)
        let requested = body["resultsLimit"]?.int64Value ?? Int64(Self.maximumQueryResults)
        guard requested >= 1 else { throw CloudError(.invalidArguments, "records/query: resultsLimit must be at least 1") }
        let desired = try Self.desiredKeys(body["desiredKeys"], operation: "records/query")
        let zones =
            body["zoneWide"]?.boolValue == true
            ? try await cloud.zones().sorted { DatabaseChangeToken.key($0) < DatabaseChangeToken.key($1) } : [zone]
        let continuation = try body["continuationMarker"].flatMap { marker throws(CloudError) -> String? in
            guard marker != .null else { return nil }
            guard let text = marker.stringValue else { throw CloudError(.invalidArguments, "records/query: continuationMarker must be a string") }
            return text
        }
        let page = try await pager.page(query, zones: zones, limit: min(Int(clamping: requested), Self.maximumQueryResults), continuation: continuation, in: scanner)
        var writer = JSONWriter(capacity: 64 * 1024)
        writer.beginObject()
        writer.key("records")
        writer.beginArray()
        for record in page.records {
            try writeRecord(record, desiredKeys: desired, includeZone: true, into: &writer)
        }
        writer.endArray()
        if let next = page.next {
            writer.key("continuationMarker")
            writer.string(next)
        }
        writer.endObject()
        return .jsonText(writer.data)
    }

    /// Records per query page: CloudKit's default `resultsLimit`, to which larger requests are clamped.
    static let maximumQueryResults = 200

    // MARK: Assets

    func uploadTokens(_ body: JSONValue) throws -> JSONValue {
        let tokens = body["tokens"]?.arrayValue ?? []
        guard !tokens.isEmpty, tokens.count <= 200 else {
            throw CloudError(.invalidArguments, "assets/upload: ask for 1 to 200 tokens")
        }
        return [
            "tokens": .array(
                tokens.map { token in
                    [
                        "recordName": token["recordName"] ?? .string(UUID().uuidString), "fieldName": token["fieldName"] ?? "",
                        "url": .string(uploadURL),
                    ]
                })
        ]
    }

    /// Where the caller posts an asset's bytes: signed for them and good for an hour, so the post
    /// needs no credentials of its own.
    private var uploadURL: String {
        var components = URLComponents(string: databaseURL + "/assets/data")
        components?.queryItems = assetSigner.uploadQuery(user: caller, expires: Int64(Date().timeIntervalSince1970) + 3600)
        return components?.string ?? databaseURL + "/assets/data"
    }

    func storeAsset(_ data: Data) async throws -> JSONValue {
        let reference = try await cloud.uploadAsset(data)
        let receipt = assetSigner.receipt(user: caller, checksum: reference.checksum, size: reference.size)
        return [
            "singleFile": [
                "fileChecksum": .string(reference.checksum), "referenceChecksum": .string(reference.checksum),
                "receipt": .string(receipt), "wrappingKey": "", "size": .integer(reference.size),
                "downloadURL": .string(downloadURL(reference)),
            ]
        ]
    }

    /// `zone`, created first when it is the private database's default zone, which CloudKit's
    /// private database always has: a client saves to `_defaultZone` without creating it.
    @discardableResult
    func ensuringDefaultZone(_ zone: ZoneID) async throws -> ZoneID {
        guard scope == .private, zone.zoneName == CloudKitWireCoding.defaultZoneName, defaultZones.isUnknown(caller) else { return zone }
        try await cloud.createZone(zone)
        defaultZones.insert(caller)
        return zone
    }

    /// The user the request acts as.
    private var caller: String { userRecordName ?? CloudUsers.defaultUser }

    /// The assets `record` names that the caller was not handed (no receipt of their upload, no
    /// download URL the endpoint signed) and that the stored record does not hold already.
    private func unprovenAssets(of record: Record) async throws -> [AssetReference] {
        let unproven = record.assetReferences.filter { !assetSigner.proves($0, user: caller) }
        guard !unproven.isEmpty else { return [] }
        // A record fetched earlier and saved back names its assets by checksum alone.
        let held = Set((try await cloud.lookup([record.id])[0]?.assetReferences ?? []).map(\.checksum))
        return unproven.filter { !held.contains($0.checksum) }
    }

    // MARK: Encoding

    /// A deleted record in an answer: `{recordName, deleted: true}`.
    private static func deletion(_ id: RecordID) -> JSONValue {
        ["recordName": .string(id.recordName), "deleted": true]
    }

    /// The record's wire dictionary; with `desiredKeys`, only those fields (CloudKit's way of
    /// asking for less).
    private func encode(_ record: Record, desiredKeys: Set<String>? = nil, includeZone: Bool = false) throws(CloudError) -> JSONValue {
        var encoded = try CloudKitWireCoding.encode(forAnswer(record, desiredKeys: desiredKeys), userRecordName: stampUser(of: record))
        guard case .object(var object) = encoded else { return encoded }
        if includeZone { object["zoneID"] = CloudKitWireCoding.encode(record.id.zoneID) }
        if let share = share(in: record) {
            for (key, value) in ShareWireCoding.members(of: share, caller: userRecordName) { object[key] = value }
        }
        encoded = .object(object)
        return encoded
    }

    /// Writes a record of an answer; a share record with its participants, as CloudKit does.
    private func writeRecord(_ record: Record, desiredKeys: Set<String>?, includeZone: Bool = false, into writer: inout JSONWriter) throws(CloudError) {
        if record.recordType == ZoneShare.recordType {
            try writer.value(encode(record, desiredKeys: desiredKeys, includeZone: includeZone))
        } else {
            try CloudKitWireCoding.write(
                forAnswer(record, desiredKeys: desiredKeys), userRecordName: stampUser(of: record), includeZone: includeZone, into: &writer)
        }
    }

    /// The user `created` and `modified` name: the store keeps no writer per record, so a record
    /// is shown as its zone owner's (the caller, in their private database).
    private func stampUser(of record: Record) -> String? {
        let owner = record.id.zoneID.ownerName
        return owner == ZoneID.defaultOwnerName ? userRecordName : owner
    }

    /// The zone-wide share a record holds, read as its owner wrote it.
    private func share(in record: Record) -> ZoneShare? {
        guard record.recordType == ZoneShare.recordType else { return nil }
        let zone = record.id.zoneID
        let owner = zone.ownerName == ZoneID.defaultOwnerName ? (userRecordName ?? CloudUsers.defaultUser) : zone.ownerName
        return try? ZoneShare(record: record, zoneName: zone.zoneName, owner: owner)
    }

    /// The record as answers show it: only the desired fields, assets with their download URLs.
    private func forAnswer(_ record: Record, desiredKeys: Set<String>?) -> Record {
        var record = record
        if let desiredKeys { record.fields = desiredKeys.isEmpty ? [:] : record.fields.filter { desiredKeys.contains($0.key) } }
        if !record.assetReferences.isEmpty { record.fields = record.fields.mapValues(withDownloadURLs) }
        return record
    }

    /// A request's `desiredKeys`: `nil` when absent (every field), else the names asked for.
    private static func desiredKeys(_ value: JSONValue?, operation: String) throws(CloudError) -> Set<String>? {
        guard let value, value != .null else { return nil }
        guard let names = value.arrayValue?.compactMap(\.stringValue), names.count == value.arrayValue?.count else {
            throw CloudError(.invalidArguments, "\(operation): desiredKeys must be a list of field names")
        }
        return Set(names)
    }

    private func withDownloadURLs(_ value: FieldValue) -> FieldValue {
        switch value {
        case .asset(var reference):
            reference.downloadURL = downloadURL(reference)
            return .asset(reference)
        case .list(let values): return .list(values.map(withDownloadURLs))
        default: return value
        }
    }

    private func downloadURL(_ reference: AssetReference) -> String {
        "\(databaseURL)/assets/download/\(reference.checksum)/\(reference.size)?sig="
            + assetSigner.downloadSignature(checksum: reference.checksum, size: reference.size)
    }

    /// An asset reference as the backing cloud stores it: where the bytes are is this endpoint's
    /// business, not the record's. A checksum in `refusing` becomes one no upload has, of the
    /// same form.
    static func storable(_ value: FieldValue, refusing: Set<String> = []) -> FieldValue {
        switch value {
        case .asset(let reference) where refusing.contains(reference.checksum):
            .asset(AssetReference(checksum: unheldChecksum(for: reference.checksum), size: reference.size))
        case .asset(let reference): .asset(AssetReference(checksum: reference.checksum, size: reference.size))
        case .list(let values): .list(values.map { storable($0, refusing: refusing) })
        default: value
        }
    }

    /// A checksum no upload has, which reads as `checksum` in messages (they show its start).
    static func unheldChecksum(for checksum: String) -> String { checksum + "#not-handed-to-the-caller" }
}
