import Crypto
import Foundation

/// What a share lets a participant do with the shared zone's records (CloudKit's
/// `CKShare.ParticipantPermission`, spelled as Web Services spells it).
public enum SharePermission: String, Sendable, Hashable, Codable, CaseIterable {
    /// No access: for a share's public permission, only invited participants may join.
    case none = "NONE"
    /// Read the zone's records and change feed; every write is refused with
    /// ``CloudError/Code/permissionFailure``.
    case readOnly = "READ_ONLY"
    /// Read and write the zone's records (not the share itself, which only its owner changes).
    case readWrite = "READ_WRITE"
}

/// Where a participant stands with a share (CloudKit's `CKShare.ParticipantAcceptanceStatus`).
public enum ShareAcceptance: String, Sendable, Hashable, Codable, CaseIterable {
    /// Invited by the owner, not accepted yet: the zone is not in the participant's shared database.
    case pending = "PENDING"
    /// Accepted: the zone is in the participant's shared database.
    case accepted = "ACCEPTED"
}

/// How a participant came to a share (CloudKit's `CKShare.ParticipantType`, less the owner, who
/// is ``ZoneShare/owner``).
public enum ShareParticipantRole: String, Sendable, Hashable, Codable, CaseIterable {
    /// Invited by name by the owner.
    case invited = "USER"
    /// Joined on their own under the share's public permission.
    case publicUser = "PUBLIC_USER"
}

/// One participant of a ``ZoneShare`` other than its owner.
public struct ShareParticipant: Sendable, Hashable, Codable {
    /// The participant's user record name.
    public var userRecordName: String
    /// What the participant may do.
    public var permission: SharePermission
    /// Whether the participant has accepted.
    public var acceptance: ShareAcceptance
    /// Invited, or joined under the public permission.
    public var role: ShareParticipantRole

    /// A participant, invited and not accepted yet unless said otherwise.
    public init(userRecordName: String, permission: SharePermission, acceptance: ShareAcceptance = .pending, role: ShareParticipantRole = .invited) {
        self.userRecordName = userRecordName
        self.permission = permission
        self.acceptance = acceptance
        self.role = role
    }
}

/// A zone-wide share, as CloudKit models it: a record of type `cloudkit.share` named
/// `cloudkit.zoneshare` in the zone it shares, with a public permission and participants. A zone
/// has at most one. Accepting it puts the zone in the participant's shared database; removing the
/// participant or deleting the share takes it out. The share record moves in the zone's change
/// feed like any other record, so participants' feeds see every change of it.
public struct ZoneShare: Sendable, Hashable {
    /// The record type of share records.
    public static let recordType = "cloudkit.share"
    /// The record name of a zone-wide share.
    public static let recordName = "cloudkit.zoneshare"

    /// The shared zone's name.
    public var zoneName: String
    /// The user record name of the zone's owner.
    public var owner: String
    /// What any user may do after accepting on their own; ``SharePermission/none`` keeps the
    /// share to invited participants.
    public var publicPermission: SharePermission
    /// The participants other than the owner, in the order they were added.
    public var participants: [ShareParticipant]
    /// The share record's change tag in the cloud; `nil` before it is saved.
    public var changeTag: String?

    /// A share of `zoneName` owned by `owner`, with no participants yet.
    public init(zoneName: String, owner: String, publicPermission: SharePermission = .none, participants: [ShareParticipant] = [], changeTag: String? = nil) {
        self.zoneName = zoneName
        self.owner = owner
        self.publicPermission = publicPermission
        self.participants = participants
        self.changeTag = changeTag
    }

    /// The share's short GUID, what CloudKit puts in a share's URL: how a user who was handed it
    /// accepts the share (`records/accept`). Derived from the owner and the zone, so every
    /// server and client computes the same one.
    public var shortGUID: String { Self.shortGUID(zoneName: zoneName, owner: owner) }

    /// The short GUID of the share of `owner`'s zone `zoneName`.
    public static func shortGUID(zoneName: String, owner: String) -> String {
        let digest = SHA256.hash(data: Data((recordName + "\u{1F}" + owner + "\u{1F}" + zoneName).utf8))
        let text = Data(digest).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        return String(text.prefix(22))
    }

    /// Whether `recordName` names a share record: what the synchronizer never hands to a store.
    public static func isShareRecord(named recordName: String) -> Bool { recordName == Self.recordName }

    /// What `user` may do in the zone: the owner everything, an accepted participant their
    /// permission, anyone else nothing (`nil`).
    public func permission(of user: String) -> SharePermission? {
        if user == owner { return .readWrite }
        guard let participant = participant(user), participant.acceptance == .accepted, participant.permission != .none else { return nil }
        return participant.permission
    }

    /// The participant entry of `user`, if any.
    public func participant(_ user: String) -> ShareParticipant? {
        participants.first { $0.userRecordName == user }
    }

    /// Adds `user` with `permission`, or changes the permission of an existing entry (keeping its
    /// acceptance).
    public mutating func setParticipant(_ user: String, permission: SharePermission) {
        if let index = participants.firstIndex(where: { $0.userRecordName == user }) {
            participants[index].permission = permission
            participants[index].role = .invited
        } else {
            participants.append(ShareParticipant(userRecordName: user, permission: permission))
        }
    }

    /// Takes `user` out of the share; returns whether they were in it.
    @discardableResult
    public mutating func removeParticipant(_ user: String) -> Bool {
        let before = participants.count
        participants.removeAll { $0.userRecordName == user }
        return participants.count != before
    }

    /// Reads the share of `owner`'s `zoneName` (`read`), applies `change` and saves it (`save`,
    /// one operation on the record in `zone`, as the caller's cloud names it), again from the read
    /// whenever another writer saved or deleted it in between, up to eight times.
    /// - Throws: what `change` throws; the save's error; ``CloudError/Code/zoneBusy`` when the
    ///   share kept changing.
    public static func update(
        zoneName: String, owner: String, in zone: ZoneID, read: () async throws -> ZoneShare?,
        save: (RecordOperation) async throws -> RecordOperationResult, _ change: (inout ZoneShare) throws -> Void
    ) async throws -> ZoneShare {
        for _ in 0..<8 {
            let existing = try await read()
            var share = existing ?? ZoneShare(zoneName: zoneName, owner: owner)
            try change(&share)
            let record = share.record(in: zone)
            switch try await save(existing == nil ? .create(record) : .replace(record)) {
            case .saved(let saved):
                share.changeTag = saved.changeTag
                return share
            case .failed(_, let error) where error.code == .serverRecordChanged || error.code == .unknownItem:
                continue  // someone else saved or deleted it meanwhile: apply the change to theirs
            case .failed(_, let error):
                throw error
            case .deleted:
                throw CloudError(.internalError, "saving the share of \(zoneName) deleted it")
            }
        }
        throw CloudError(.zoneBusy, "the share of \(zoneName) kept changing while it was saved; try again")
    }

    // MARK: - The share record

    /// The field that holds ``publicPermission``.
    static let publicPermissionField = "publicPermission"
    /// The field that holds the participants: four strings each (user, permission, acceptance, role).
    static let participantsField = "participants"

    /// The share as the record stored in its zone (`zone` in the form the caller's cloud uses).
    public func record(in zone: ZoneID) -> Record {
        var entries: [FieldValue] = []
        for participant in participants {
            entries += [
                .string(participant.userRecordName), .string(participant.permission.rawValue), .string(participant.acceptance.rawValue),
                .string(participant.role.rawValue),
            ]
        }
        return Record(
            id: RecordID(recordName: Self.recordName, zoneID: zone), recordType: Self.recordType, changeTag: changeTag,
            fields: [Self.publicPermissionField: .string(publicPermission.rawValue), Self.participantsField: .list(entries)])
    }

    /// Reads a share record of the zone `zoneName` owned by `owner`.
    /// - Throws: ``CloudError/Code/invalidArguments`` naming what is wrong with the record.
    public init(record: Record, zoneName: String, owner: String) throws {
        guard record.recordType == Self.recordType, record.id.recordName == Self.recordName else {
            throw CloudError(
                .invalidArguments,
                "a share is a record of type \(Self.recordType) named \(Self.recordName) (a zone-wide share); record-hierarchy shares are not served",
                recordID: record.id)
        }
        let fields = record.fields
        var publicPermission = SharePermission.none
        if let value = fields[Self.publicPermissionField] {
            guard case .string(let text) = value, let permission = SharePermission(rawValue: text) else {
                throw CloudError(.invalidArguments, "the share's publicPermission must be NONE, READ_ONLY or READ_WRITE", recordID: record.id)
            }
            publicPermission = permission
        }
        var participants: [ShareParticipant] = []
        if let value = fields[Self.participantsField] {
            guard case .list(let entries) = value, entries.count % 4 == 0 else {
                throw CloudError(.invalidArguments, "the share's participants field is not a list of participants", recordID: record.id)
            }
            var seen: Set<String> = []
            for start in stride(from: 0, to: entries.count, by: 4) {
                guard case .string(let user) = entries[start], !user.isEmpty,
                    case .string(let permissionText) = entries[start + 1], let permission = SharePermission(rawValue: permissionText),
                    case .string(let acceptanceText) = entries[start + 2], let acceptance = ShareAcceptance(rawValue: acceptanceText),
                    case .string(let roleText) = entries[start + 3], let role = ShareParticipantRole(rawValue: roleText)
                else {
                    throw CloudError(.invalidArguments, "participant \(start / 4 + 1) of the share is not a user, a permission, a status and a type", recordID: record.id)
                }
                guard user != owner else {
                    throw CloudError(.invalidArguments, "the zone's owner is not a participant of its own share", recordID: record.id)
                }
                guard seen.insert(user).inserted else {
                    throw CloudError(.invalidArguments, "user \(user) appears twice among the share's participants", recordID: record.id)
                }
                participants.append(ShareParticipant(userRecordName: user, permission: permission, acceptance: acceptance, role: role))
            }
        }
        self.init(zoneName: zoneName, owner: owner, publicPermission: publicPermission, participants: participants, changeTag: record.changeTag)
    }
}
