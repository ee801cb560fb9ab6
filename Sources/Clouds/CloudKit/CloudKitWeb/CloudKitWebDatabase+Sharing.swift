import Foundation
import GatewayCore

/// Shares through CloudKit Web Services: the owner writes the share record of a zone with
/// `records/modify`, a participant accepts it by its short GUID with `records/accept` and finds it
/// in the shared database (`zones/list`), and leaves it by deleting the zone there.
extension CloudKitWebDatabase: ShareManaging, SharedZoneListing {
    /// The signed-in user's record name (`users/caller`), asked once.
    func callerName() async throws -> String {
        if let known = caller.withLock({ $0 }) { return known }
        let answer = try await transport.call("users/caller", get: true, database: "public")
        guard let name = answer["users"]?.arrayValue?.first?["userRecordName"]?.stringValue else {
            throw CloudError(.notAuthenticated, "users/caller: CloudKit did not name the signed-in user; sign in again")
        }
        caller.withLock { $0 = name }
        return name
    }

    public func shareUserRecordName() async throws -> String { try await callerName() }

    public func sharedZones() async throws -> [ZoneID] {
        let answer = try await transport.call("zones/list", get: true, database: CloudKitWebConfiguration.Database.shared.rawValue)
        return try (answer["zones"]?.arrayValue ?? []).map { zone throws(CloudError) in
            if CloudKitErrorCoding.isError(zone) { throw CloudKitErrorCoding.decode(zone, context: "zones/list of the shared database") }
            return try CloudKitWireCoding.decodeZoneID(zone["zoneID"] ?? .null)
        }
    }

    public func share(of zoneName: String) async throws -> ZoneShare? {
        try await shareRecord(in: ZoneID(zoneName: zoneName), owner: try await callerName())
    }

    /// The share record of `zone` (as this client names it), read as `owner`'s.
    private func shareRecord(in zone: ZoneID, owner: String) async throws -> ZoneShare? {
        let body: JSONValue = ["zoneID": CloudKitWireCoding.encode(zone), "records": [["recordName": .string(ZoneShare.recordName)]]]
        let answer = try await transport.call("records/lookup", body: body, database: database(for: zone))
        guard let item = answer["records"]?.arrayValue?.first else { return nil }
        if CloudKitErrorCoding.isError(item) {
            let error = CloudKitErrorCoding.decode(item, context: "records/lookup of the share of zone \(zone)")
            if error.code == .unknownItem { return nil }
            throw error
        }
        return try Self.share(from: item, zone: zone, owner: owner)
    }

    /// A share record dictionary as a ``ZoneShare``: from its top-level `participants` and
    /// `publicPermission` as CloudKit writes them, or from its fields.
    static func share(from item: JSONValue, zone: ZoneID, owner: String) throws -> ZoneShare {
        let record = try CloudKitWireCoding.decodeRecord(item, in: zone)
        guard case .object(let members) = item,
            let fromMembers = try ShareWireCoding.record(record, members: members, zoneName: zone.zoneName, owner: owner)
        else { return try ZoneShare(record: record, zoneName: zone.zoneName, owner: owner) }
        var share = try ZoneShare(record: fromMembers, zoneName: zone.zoneName, owner: owner)
        share.changeTag = record.changeTag
        return share
    }

    @discardableResult
    public func updateShare(of zoneName: String, _ change: @Sendable (inout ZoneShare) throws -> Void) async throws -> ZoneShare {
        let owner = try await callerName()
        let zone = ZoneID(zoneName: zoneName)
        return try await ZoneShare.update(
            zoneName: zoneName, owner: owner, in: zone, read: { try await shareRecord(in: zone, owner: owner) },
            save: { try await modify([$0], in: zone, atomic: true)[0] }, change)
    }

    @discardableResult
    public func deleteShare(of zoneName: String) async throws -> Bool {
        let zone = ZoneID(zoneName: zoneName)
        guard try await share(of: zoneName) != nil else { return false }
        if let error = try await modify([.forceDelete(RecordID(recordName: ZoneShare.recordName, zoneID: zone))], in: zone, atomic: true)[0].error {
            throw error
        }
        return true
    }

    @discardableResult
    public func acceptShare(of zoneName: String, ownedBy owner: String) async throws -> ZoneShare {
        let guid = ZoneShare.shortGUID(zoneName: zoneName, owner: owner)
        let answer = try await transport.call(
            "records/accept", body: ["shortGUIDs": [["value": .string(guid)]]], database: CloudKitWebConfiguration.Database.shared.rawValue)
        guard let result = answer["results"]?.arrayValue?.first else { throw CloudError(.internalError, "records/accept: the answer has no result") }
        if CloudKitErrorCoding.isError(result) { throw CloudKitErrorCoding.decode(result, context: "accepting the share of zone \(zoneName) of \(owner)") }
        let zone = try CloudKitWireCoding.decodeZoneID(result["zoneID"] ?? .null)
        return try Self.share(from: result["share"] ?? .null, zone: zone, owner: owner)
    }

    @discardableResult
    public func leaveShare(of zoneName: String, ownedBy owner: String) async throws -> Bool {
        do {
            try await deleteZone(ZoneID(zoneName: zoneName, ownerName: owner))
            return true
        } catch let error as CloudError where error.code == .zoneNotFound {
            return false
        }
    }

    public func ownedShares() async throws -> [ZoneShare] {
        let owner = try await callerName()
        var shares: [ZoneShare] = []
        for zone in try await zones() where zone.ownerName == ZoneID.defaultOwnerName {
            if let share = try await shareRecord(in: zone, owner: owner) { shares.append(share) }
        }
        return shares
    }

    public func joinedShares() async throws -> [ZoneShare] {
        var shares: [ZoneShare] = []
        for zone in try await sharedZones() {
            if let share = try await shareRecord(in: zone, owner: zone.ownerName) { shares.append(share) }
        }
        return shares
    }
}
