import Foundation
import GatewayCore
import NIOCore
import PostgresNIO
import PostgresSupport

extension PostgresCloud: SubscriptionStoring {
    public func subscriptions(of owner: String?) async throws -> [CloudSubscription] {
        try await run("listing subscriptions") { [tables] connection in
            let rows =
                if let owner {
                    try await connection.query(
                        """
                        SELECT owner, subscription_id, zone_owner, zone_name, definition FROM \(unescaped: tables.subscriptions)
                        WHERE owner = \(owner) ORDER BY subscription_id
                        """, logger: connection.logger)
                } else {
                    try await connection.query(
                        """
                        SELECT owner, subscription_id, zone_owner, zone_name, definition FROM \(unescaped: tables.subscriptions)
                        ORDER BY owner, subscription_id
                        """, logger: connection.logger)
                }
            var found: [CloudSubscription] = []
            for try await (owner, id, zoneOwner, zoneName, definition) in rows.decode((String, String, String, String, ByteBuffer).self) {
                found.append(
                    CloudSubscription(
                        id: id, owner: owner, scope: zoneName.isEmpty ? .database : .zone(ZoneID(zoneName: zoneName, ownerName: zoneOwner)),
                        definition: Data(buffer: definition)))
            }
            return found
        }
    }

    public func saveSubscription(_ subscription: CloudSubscription) async throws {
        let zone: (owner: String, name: String) =
            switch subscription.scope {
            case .database: ("", "")
            case .zone(let zone): (zone.ownerName, zone.zoneName)
            }
        let definition = ByteBuffer(data: subscription.definition)
        try await run("saving a subscription") { [tables] connection in
            try await connection.query(
                """
                INSERT INTO \(unescaped: tables.subscriptions) (owner, subscription_id, zone_owner, zone_name, definition)
                VALUES (\(subscription.owner), \(subscription.id), \(zone.owner), \(zone.name), \(definition))
                ON CONFLICT (owner, subscription_id) DO UPDATE SET
                    zone_owner = excluded.zone_owner, zone_name = excluded.zone_name, definition = excluded.definition
                """, logger: connection.logger)
        }
    }

    public func deleteSubscription(_ id: String, of owner: String) async throws -> Bool {
        try await run("deleting a subscription") { [tables] connection in
            let rows = try await connection.query(
                "DELETE FROM \(unescaped: tables.subscriptions) WHERE owner = \(owner) AND subscription_id = \(id) RETURNING 1",
                logger: connection.logger)
            var deleted = false
            for try await _ in rows.decode(Int32.self) { deleted = true }
            return deleted
        }
    }
}
