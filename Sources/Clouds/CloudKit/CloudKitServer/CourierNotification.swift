import Foundation
import GatewayCore

/// A notification as the web courier delivers it: the `ck` dictionary of CloudKit's push
/// payload. `cid` is the container, `ce` the environment (1 development, 2 production), `nid`
/// a new identifier per notification; a zone subscription's notification is `fet` (`sid` the
/// subscription, `zid`/`zoid` the zone's name and owner, `dbs` the database scope: 2, private),
/// a database subscription's is `met` (`sid`, `dbs`), after which the client asks
/// `changes/database` which zones changed.
enum CourierNotification {
    /// CloudKit's database scope number of the private database (`CKDatabase.Scope.private`).
    static let privateScope: Int64 = 2
    /// CloudKit's database scope number of the shared database (`CKDatabase.Scope.shared`).
    static let sharedScope: Int64 = 3

    static func encode(_ pending: CourierHub.Pending, container: String, environment: String) -> JSONValue {
        var ck: [String: JSONValue] = [
            "cid": .string(container), "ce": .integer(environment == "production" ? 2 : 1), "nid": .string(UUID().uuidString.lowercased()),
        ]
        if let zone = pending.zone {
            ck["fet"] = [
                "sid": .string(pending.subscriptionID), "zid": .string(zone.zoneName), "zoid": .string(zone.ownerName),
                "dbs": .integer(zone.ownerName == ZoneID.defaultOwnerName ? privateScope : sharedScope),
            ]
        } else {
            ck["met"] = ["sid": .string(pending.subscriptionID), "dbs": .integer(privateScope)]
        }
        return ["ck": .object(ck)]
    }
}
