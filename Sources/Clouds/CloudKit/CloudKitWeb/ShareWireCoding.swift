import Foundation
import GatewayCore

/// A share record (`cloudkit.share`) on the wire as CloudKit Web Services writes it: besides its
/// fields, top-level `publicPermission`, `participants` (each with `userIdentity.userRecordName`,
/// `type` `OWNER`/`USER`/`PUBLIC_USER`, `acceptanceStatus` and `permission`), `owner`,
/// `currentUserParticipant` and `shortGUID`.
public enum ShareWireCoding {
    /// The top-level members of `share`'s record dictionary, for the user `caller`.
    public static func members(of share: ZoneShare, caller: String?) -> [String: JSONValue] {
        func participant(_ user: String, type: String, status: String, permission: String) -> JSONValue {
            [
                "participantId": .string(user), "userIdentity": ["userRecordName": .string(user)], "type": .string(type),
                "acceptanceStatus": .string(status), "permission": .string(permission),
            ]
        }
        let owner = participant(share.owner, type: "OWNER", status: "ACCEPTED", permission: "READ_WRITE")
        var participants = [owner]
        var current: JSONValue? = caller == share.owner ? owner : nil
        for entry in share.participants {
            let wire = participant(
                entry.userRecordName, type: entry.role.rawValue, status: entry.acceptance.rawValue, permission: entry.permission.rawValue)
            participants.append(wire)
            if entry.userRecordName == caller { current = wire }
        }
        var members: [String: JSONValue] = [
            "publicPermission": .string(share.publicPermission.rawValue), "participants": .array(participants), "owner": owner,
            "shortGUID": .string(share.shortGUID),
        ]
        if let current { members["currentUserParticipant"] = current }
        return members
    }

    /// The share a client's record dictionary describes through its top-level `publicPermission`
    /// and `participants` (the owner's entry is left out), as the record to store; `nil` when it
    /// names neither (its fields say it all).
    /// - Throws: ``CloudError/Code/invalidArguments`` naming what is wrong.
    public static func record(
        _ record: Record, members: [String: JSONValue], zoneName: String, owner: String
    ) throws(CloudError) -> Record? {
        guard members["publicPermission"] != nil || members["participants"] != nil else { return nil }
        var share = ZoneShare(zoneName: zoneName, owner: owner)
        if let permission = members["publicPermission"] {
            guard let text = permission.stringValue, let value = SharePermission(rawValue: text) else {
                throw CloudError(.invalidArguments, "the share's publicPermission must be NONE, READ_ONLY or READ_WRITE", recordID: record.id)
            }
            share.publicPermission = value
        }
        for item in members["participants"]?.arrayValue ?? [] {
            let user = item["userIdentity"]?["userRecordName"]?.stringValue ?? item["participantId"]?.stringValue
            guard let user, !user.isEmpty else {
                throw CloudError(.invalidArguments, "each participant of a share needs userIdentity.userRecordName", recordID: record.id)
            }
            if item["type"]?.stringValue == "OWNER" || user == owner { continue }
            guard let permission = SharePermission(rawValue: item["permission"]?.stringValue ?? "READ_ONLY") else {
                throw CloudError(.invalidArguments, "participant \(user): permission must be NONE, READ_ONLY or READ_WRITE", recordID: record.id)
            }
            let acceptance = ShareAcceptance(rawValue: item["acceptanceStatus"]?.stringValue ?? "PENDING") ?? .pending
            let role = ShareParticipantRole(rawValue: item["type"]?.stringValue ?? "USER") ?? .invited
            share.participants.removeAll { $0.userRecordName == user }
            share.participants.append(ShareParticipant(userRecordName: user, permission: permission, acceptance: acceptance, role: role))
        }
        var stored = share.record(in: record.id.zoneID)
        stored.id = record.id
        stored.recordType = record.recordType
        stored.changeTag = record.changeTag
        return stored
    }
}
