import Foundation
import GatewayCore
import Synchronization

/// A ``CloudDatabase`` over CloudKit Web Services: iCloud, or a `gateway cloud serve` endpoint.
///
/// Operations map to CloudKit's endpoints: `zones/list`, `zones/lookup` and `zones/modify` for
/// zones; `changes/zone` for the feed (falling back to `records/changes` on services without
/// it); `records/modify` and `records/lookup` for records; the three-step asset upload
/// (`assets/upload`, the bytes to the returned URL, the receipt in the record) and the asset's
/// `downloadURL`; and `users/caller` as the account check before every sync.
///
/// CloudKit reports a conflict without the server's record, so after a `CONFLICT` the record is
/// looked up and attached to ``CloudError/serverRecord``, as the merge needs. CloudKit has no
/// push channel for servers: ``changeSignals(in:)`` polls `changes/database`, once per interval
/// for all zones.
public final class CloudKitWebDatabase: CloudDatabase {
    public let configuration: CloudKitWebConfiguration
    let transport: CloudKitTransport
    /// Set once the service answered that it has no `changes/zone`.
    private let usesRecordsChanges = Mutex(false)
    /// One `changes/database` poll for every zone's change signals.
    private let databaseChanges: DatabaseChangeWatcher
    /// The push channel every zone's change signals share.
    private let courier: CourierChannel
    /// The signed-in user's record name, once asked (``callerName()``).
    let caller = Mutex<String?>(nil)

    /// - Throws: ``CloudError/Code/invalidArguments`` for a configuration that cannot sync (the
    ///   public database, a server-to-server key against iCloud's private database).
    public init(configuration: CloudKitWebConfiguration) throws(CloudError) {
        try configuration.validate()
        self.configuration = configuration
        let transport = CloudKitTransport(configuration: configuration)
        self.transport = transport
        self.courier = CourierChannel(transport: transport)
        self.databaseChanges = DatabaseChangeWatcher(interval: configuration.signalPollInterval) { token in
            var body: [String: JSONValue] = ["resultsLimit": 200]
            if let token { body["syncToken"] = .string(token) }
            return try await transport.call("changes/database", body: .object(body))
        }
    }

    public var limits: CloudLimits { configuration.limits }

    /// The database that holds `zone`: another user's zone is in the shared database, as in
    /// CloudKit; `nil` for the configured one.
    func database(for zone: ZoneID) -> String? {
        zone.ownerName == ZoneID.defaultOwnerName || !configuration.routesSharedZones ? nil : CloudKitWebConfiguration.Database.shared.rawValue
    }

    // MARK: Account

    public func checkAccount() async throws {
        let answer = try await transport.call("users/caller", get: true, database: "public")
        guard let users = answer["users"]?.arrayValue, users.first?["userRecordName"]?.stringValue != nil else {
            throw CloudError(.notAuthenticated, "users/caller: CloudKit did not name the signed-in user; sign in again")
        }
    }

    // MARK: Zones

    /// The zones of the configured database and, when it is the private one and shared zones
    /// are routed, the zones shared with the user (a service that does not list those lists the
    /// private ones only).
    public func zones() async throws -> [ZoneID] {
        let answer = try await transport.call("zones/list", get: true)
        let own = try (answer["zones"]?.arrayValue ?? []).map { zone throws(CloudError) in
            if CloudKitErrorCoding.isError(zone) { throw CloudKitErrorCoding.decode(zone, context: "zones/list") }
            return try CloudKitWireCoding.decodeZoneID(zone["zoneID"] ?? .null)
        }
        guard configuration.database == .private, configuration.routesSharedZones else { return own }
        do {
            return own + (try await sharedZones())
        } catch let error as CloudError where error.code == .invalidArguments || error.code == .unknownItem || error.code == .permissionFailure {
            return own
        }
    }

    public func createZone(_ zone: ZoneID) async throws {
        do {
            try await modifyZone(zone, operation: "create")
        } catch let error as CloudError where error.code == .serverRecordChanged {
            // CloudKit answers EXISTS for a zone that is already there: creation is idempotent.
        }
    }

    public func deleteZone(_ zone: ZoneID) async throws {
        try await modifyZone(zone, operation: "delete")
    }

    private func modifyZone(_ zone: ZoneID, operation: String) async throws {
        let body: JSONValue = ["operations": [["operationType": .string(operation), "zone": ["zoneID": CloudKitWireCoding.encode(zone)]]]]
        let answer = try await transport.call("zones/modify", body: body, database: database(for: zone))
        if let result = answer["zones"]?.arrayValue?.first, CloudKitErrorCoding.isError(result) {
            throw CloudKitErrorCoding.decode(result, context: "zones/modify (\(operation) zone \(zone))")
        }
    }

    public func currentChangeToken(in zone: ZoneID) async throws -> ChangeToken {
        let answer = try await transport.call("zones/lookup", body: ["zones": [CloudKitWireCoding.encode(zone)]], database: database(for: zone))
        guard let result = answer["zones"]?.arrayValue?.first else {
            throw CloudError(.internalError, "zones/lookup: the answer has no zone")
        }
        if CloudKitErrorCoding.isError(result) { throw CloudKitErrorCoding.decode(result, context: "zones/lookup of zone \(zone)") }
        guard let token = result["syncToken"]?.stringValue else {
            throw CloudError(.internalError, "zones/lookup: zone \(zone) came back without a syncToken")
        }
        return try CloudKitWireCoding.decodeToken(token)
    }

    /// With ``CloudKitWebConfiguration/notifications`` on, signals from the service's web
    /// courier (``CourierChannel``: a zone subscription per zone, one long-poll for every zone);
    /// otherwise, or against a service without subscriptions and tokens, polls `changes/database`
    /// every `signalPollInterval`, one request for all zones of this client, and against a
    /// service without that, the zone's own token (`zones/lookup`).
    public func changeSignals(in zone: ZoneID) -> ChangeSignals {
        let polling = pollingSignals(in: zone)
        guard configuration.notifications else { return polling }
        let courier = courier
        return ChangeSignals { CourierSignalSource(channel: courier, zone: zone, polling: polling.makeAsyncIterator()) }
    }

    private func pollingSignals(in zone: ZoneID) -> ChangeSignals {
        .polling(every: configuration.signalPollInterval) { [self] in
            if let stamp = try await databaseChanges.stamp(for: zone) { return SignalStamp.database(stamp) }
            return SignalStamp.zone(try await currentChangeToken(in: zone))
        }
    }

    /// What a zone's change signals compare between polls.
    private enum SignalStamp: Equatable, Sendable {
        case database(Int)
        case zone(ChangeToken)
    }

    // MARK: Change feed

    public func fetchChanges(in zone: ZoneID, since token: ChangeToken?, limit: Int) async throws -> ZoneChanges {
        let limit = max(1, min(limit, limits.maxResultsPerFetch))
        if !usesRecordsChanges.withLock({ $0 }) {
            do {
                return try await fetchZoneChanges(zone, since: token, limit: limit)
            } catch let error as CloudError where error.code == .unknownItem {
                // A service without changes/zone answers NOT_FOUND for the path; use the older endpoint.
                usesRecordsChanges.withLock { $0 = true }
            }
        }
        var body: [String: JSONValue] = ["zoneID": CloudKitWireCoding.encode(zone), "resultsLimit": .integer(Int64(limit))]
        if let token { body["syncToken"] = .string(CloudKitWireCoding.encode(token)) }
        let page = try await transport.call("records/changes", text: try JSONValue.object(body).serialized(), database: database(for: zone)) { reader in
            try WireRecordPage.read(&reader, zone: zone)
        }
        return try changes(page, zone: zone, context: "records/changes of zone \(zone)")
    }

    private func fetchZoneChanges(_ zone: ZoneID, since token: ChangeToken?, limit: Int) async throws -> ZoneChanges {
        var request: [String: JSONValue] = ["zoneID": CloudKitWireCoding.encode(zone), "resultsLimit": .integer(Int64(limit))]
        if let token { request["syncToken"] = .string(CloudKitWireCoding.encode(token)) }
        let body: JSONValue = ["zones": [.object(request)], "resultsLimit": .integer(Int64(limit))]
        let page = try await transport.call("changes/zone", text: try body.serialized(), database: database(for: zone)) { reader in
            try WireRecordPage.readFirstZone(&reader, zone: zone)
        }
        let context = "changes/zone of zone \(zone)"
        if CloudKitErrorCoding.isError(page.object) { throw CloudKitErrorCoding.decode(page.object, context: context) }
        return try changes(page, zone: zone, context: context)
    }

    /// A page of `records`, `syncToken` and `moreComing`; tombstones are `{recordName, deleted: true}`.
    private func changes(_ page: WireRecordPage, zone: ZoneID, context: String) throws(CloudError) -> ZoneChanges {
        guard let tokenText = page.members["syncToken"]?.stringValue else {
            throw CloudError(.internalError, "\(context): the answer has no syncToken")
        }
        var modified: [Record] = []
        modified.reserveCapacity(page.records.count)
        var deleted: [RecordID] = []
        var layouts: RecordLayout?
        for item in page.records {
            if let failure = item.failure { throw CloudKitErrorCoding.decode(failure, context: context) }
            if item.isDeleted {
                guard let name = item.recordName else { throw CloudError(.internalError, "\(context): a tombstone has no recordName") }
                deleted.append(RecordID(recordName: name, zoneID: zone))
            } else {
                modified.append(try item.record(in: zone, layouts: &layouts))
            }
        }
        return ZoneChanges(
            modified: modified, deleted: deleted, token: try CloudKitWireCoding.decodeToken(tokenText),
            moreComing: page.members["moreComing"]?.boolValue ?? false)
    }

    // MARK: Records

    public func modify(_ operations: [RecordOperation], in zone: ZoneID, atomic: Bool) async throws -> [RecordOperationResult] {
        guard !operations.isEmpty else { return [] }
        guard operations.count <= limits.maxOperationsPerRequest else {
            throw CloudError(
                .limitExceeded,
                "the request has \(operations.count) operations; CloudKit takes at most \(limits.maxOperationsPerRequest) per request")
        }
        // By bytes, as CloudKit tells names apart (see RecordName).
        var names = Set<RecordName>()
        for operation in operations {
            guard operation.recordID.zoneID == zone else {
                throw CloudError(.invalidArguments, "record \(operation.recordID) is not in zone \(zone), the zone of the request")
            }
            guard names.insert(operation.recordID.name).inserted else {
                throw CloudError(.invalidArguments, "record \(operation.recordID) appears twice in one request")
            }
        }
        // The saved records are the records sent with the server's tag and times, so the answer
        // need not repeat their fields (CloudKit's desiredKeys; empty: none).
        var body = JSONWriter(capacity: 512 * operations.count)
        body.beginObject()
        body.key("zoneID")
        try body.value(CloudKitWireCoding.encode(zone))
        body.key("atomic")
        try body.value(.bool(atomic))
        body.key("desiredKeys")
        try body.value([])
        body.key("operations")
        body.beginArray()
        for operation in operations { try Self.write(operation, into: &body) }
        body.endArray()
        body.endObject()
        let items = try await transport.call("records/modify", text: body.data, database: database(for: zone)) { reader in
            try WireRecordPage.read(&reader, zone: zone).records
        }
        guard items.count == operations.count else {
            throw CloudError(.internalError, "records/modify: the answer does not hold one result per operation")
        }
        var results: [RecordOperationResult] = []
        results.reserveCapacity(items.count)
        var conflicts: [Int] = []
        for (index, (operation, item)) in zip(operations, items).enumerated() {
            let id = operation.recordID
            if let failure = item.failure {
                var error = CloudKitErrorCoding.decode(failure, context: "record \(id)")
                error.recordID = id
                if case .forceDelete = operation, error.code == .unknownItem {
                    results.append(.deleted(id))
                    continue
                }
                if error.code == .serverRecordChanged { conflicts.append(index) }
                results.append(.failed(id, error))
            } else if !item.isDeleted, var saved = operation.record {
                (saved.changeTag, saved.modifiedAt, saved.createdAt) = (item.changeTag, item.modifiedAt, item.createdAt)
                results.append(.saved(saved))
            } else {
                results.append(.deleted(id))
            }
        }
        // CloudKit's CONFLICT carries no server record; the merge needs it, so look it up.
        if !conflicts.isEmpty {
            let servers = try await lookup(conflicts.map { operations[$0].recordID })
            for (index, server) in zip(conflicts, servers) {
                guard case .failed(let id, var error) = results[index] else { continue }
                error.serverRecord = server
                results[index] = .failed(id, error)
            }
        }
        return results
    }

    /// Writes the operation dictionary of ``encode(_:)``; saves write their record without a tree.
    static func write(_ operation: RecordOperation, into writer: inout JSONWriter) throws(CloudError) {
        let (type, record, includeTag): (String, Record?, Bool) =
            switch operation {
            case .create(let record): ("create", record, false)
            case .replace(let record): ("replace", record, true)
            case .forceReplace(let record): ("forceReplace", record, false)
            case .update(let record): ("update", record, true)
            case .forceUpdate(let record): ("forceUpdate", record, false)
            case .delete, .forceDelete: ("", nil, false)
            }
        guard let record else { return try writer.value(encode(operation)) }
        writer.beginObject()
        writer.key("operationType")
        writer.string(type)
        writer.key("record")
        // A partial save names the fields it clears with a null value; the others it leaves alone.
        try CloudKitWireCoding.write(record, includeTag: includeTag, writingNulls: ModifyRules.isPartial(operation), into: &writer)
        writer.endObject()
    }

    static func encode(_ operation: RecordOperation) throws(CloudError) -> JSONValue {
        switch operation {
        case .create(let record):
            return ["operationType": "create", "record": try CloudKitWireCoding.encode(record, includeTag: false)]
        case .replace(let record):
            return ["operationType": "replace", "record": try CloudKitWireCoding.encode(record)]
        case .forceReplace(let record):
            return ["operationType": "forceReplace", "record": try CloudKitWireCoding.encode(record, includeTag: false)]
        case .update(let record):
            return ["operationType": "update", "record": try CloudKitWireCoding.encode(record, writingNulls: true)]
        case .forceUpdate(let record):
            return ["operationType": "forceUpdate", "record": try CloudKitWireCoding.encode(record, includeTag: false, writingNulls: true)]
        case .delete(let id, let tag):
            var record: [String: JSONValue] = ["recordName": .string(id.recordName)]
            if let tag { record["recordChangeTag"] = .string(tag) }
            return ["operationType": "delete", "record": .object(record)]
        case .forceDelete(let id):
            return ["operationType": "forceDelete", "record": ["recordName": .string(id.recordName)]]
        }
    }

    public func lookup(_ recordIDs: [RecordID]) async throws -> [Record?] {
        var found: [RecordID: Record] = [:]
        for (zone, ids) in Dictionary(grouping: recordIDs, by: \.zoneID) {
            let unique = Array(Set(ids.map { $0.name })).map(\.text)
            for start in stride(from: 0, to: unique.count, by: limits.maxOperationsPerRequest) {
                let names = unique[start..<min(start + limits.maxOperationsPerRequest, unique.count)]
                let body: JSONValue = [
                    "zoneID": CloudKitWireCoding.encode(zone), "records": .array(names.map { ["recordName": .string($0)] }),
                ]
                let answer = try await transport.call("records/lookup", body: body, database: database(for: zone))
                for item in answer["records"]?.arrayValue ?? [] {
                    if CloudKitErrorCoding.isError(item) {
                        let error = CloudKitErrorCoding.decode(item, context: "records/lookup in zone \(zone)")
                        guard error.code == .unknownItem else { throw error }
                        continue
                    }
                    guard item["deleted"]?.boolValue != true else { continue }
                    let record = try CloudKitWireCoding.decodeRecord(item, in: zone)
                    found[record.id] = record
                }
            }
        }
        return recordIDs.map { found[$0] }
    }

    // MARK: Assets

    public func uploadAsset(_ data: Data) async throws -> AssetReference {
        guard Int64(data.count) <= limits.maxAssetSize else {
            throw CloudError(.limitExceeded, "the asset has \(data.count) bytes; the cloud takes at most \(limits.maxAssetSize)")
        }
        let request: JSONValue = [
            "tokens": [["recordType": .string(configuration.assetRecordType), "fieldName": .string(configuration.assetFieldName)]],
        ]
        let answer = try await transport.call("assets/upload", body: request)
        guard let url = answer["tokens"]?.arrayValue?.first?["url"]?.stringValue else {
            throw CloudError(.internalError, "assets/upload: the answer has no upload URL")
        }
        let uploaded = try CloudKitTransport.json(
            try await transport.send(url: url, method: .post, body: data, contentType: "application/octet-stream", context: "asset upload"),
            context: "asset upload")
        guard let singleFile = uploaded["singleFile"], singleFile["receipt"] != nil || singleFile["fileChecksum"] != nil else {
            throw CloudError(.internalError, "asset upload: the answer has no singleFile receipt")
        }
        return AssetReference(
            checksum: AssetChecksum.of(data), size: Int64(data.count), downloadURL: singleFile["downloadURL"]?.stringValue,
            uploadReceipt: String(decoding: try singleFile.serialized(), as: UTF8.self))
    }

    public func downloadAsset(_ reference: AssetReference) async throws -> Data {
        guard let url = reference.downloadURL else {
            throw CloudError(.assetNotAvailable, "\(reference) has no download URL; fetch the record that holds it again")
        }
        let answer = try await transport.send(url: url, method: .get, body: Data(), contentType: nil, context: "asset download")
        guard (200..<300).contains(answer.status) else {
            var error = CloudKitTransport.statusError(answer, context: "download of \(reference)")
            if let parsed = try? JSONValue.parse(answer.body), CloudKitErrorCoding.isError(parsed) {
                error = CloudKitErrorCoding.decode(parsed, context: "download of \(reference)")
            }
            if error.code == .unknownItem { error.code = .assetNotAvailable }
            throw error
        }
        guard Int64(answer.body.count) == reference.size else {
            throw CloudError(.assetNotAvailable, "the download of \(reference) has \(answer.body.count) bytes; fetch the record again")
        }
        // iCloud's fileChecksum has its own format; the gateway's own SHA-256 references are checked.
        if AssetChecksum.isWellFormed(reference.checksum), AssetChecksum.of(answer.body) != reference.checksum {
            throw CloudError(.assetNotAvailable, "the downloaded bytes of \(reference) do not match its checksum")
        }
        return answer.body
    }
}
