import Foundation
import GRDB
import GatewayCore

extension EmbeddedCloud: SubscriptionStoring {
    public func subscriptions(of owner: String?) async throws -> [CloudSubscription] {
        try await read { db in
            let rows =
                if let owner {
                    try Row.fetchAll(
                        db, sql: "SELECT owner, subscription_id, zone_owner, zone_name, definition FROM subscriptions WHERE owner = ? ORDER BY subscription_id",
                        arguments: [owner])
                } else {
                    try Row.fetchAll(
                        db, sql: "SELECT owner, subscription_id, zone_owner, zone_name, definition FROM subscriptions ORDER BY owner, subscription_id")
                }
            return rows.map { row in
                let (zoneOwner, zoneName): (String, String) = (row[2], row[3])
                return CloudSubscription(
                    id: row[1], owner: row[0], scope: zoneName.isEmpty ? .database : .zone(ZoneID(zoneName: zoneName, ownerName: zoneOwner)),
                    definition: row[4])
            }
        }
    }

    public func saveSubscription(_ subscription: CloudSubscription) async throws {
        let zone: (owner: String, name: String) =
            switch subscription.scope {
            case .database: ("", "")
            case .zone(let zone): (zone.ownerName, zone.zoneName)
            }
        try await write { db in
            try db.execute(
                sql: """
                    INSERT INTO subscriptions (owner, subscription_id, zone_owner, zone_name, definition) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT (owner, subscription_id) DO UPDATE SET
                        zone_owner = excluded.zone_owner, zone_name = excluded.zone_name, definition = excluded.definition
                    """,
                arguments: [subscription.owner, subscription.id, zone.owner, zone.name, subscription.definition])
        }
    }

    public func deleteSubscription(_ id: String, of owner: String) async throws -> Bool {
        try await write { db in
            try db.execute(sql: "DELETE FROM subscriptions WHERE owner = ? AND subscription_id = ?", arguments: [owner, id])
            return db.changesCount > 0
        }
    }
}
