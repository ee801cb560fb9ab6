import Foundation

/// A standing request to be told when a database or a zone changes: CloudKit's database and zone
/// subscriptions (`CKDatabaseSubscription`, `CKRecordZoneSubscription`), kept by the cloud per
/// user, so that every client of that user learns of changes without polling.
public struct CloudSubscription: Sendable, Equatable {
    /// What a subscription watches.
    public enum Scope: Sendable, Equatable, Hashable {
        /// Every zone of the user's database, including zones created later.
        case database
        /// One zone.
        case zone(ZoneID)

        /// Whether a change in `zone` fires this subscription.
        public func covers(_ zone: ZoneID) -> Bool {
            switch self {
            case .database: true
            case .zone(let watched): watched == zone
            }
        }
    }

    /// The subscription's identifier, unique per user; a save with an existing one replaces it.
    public var id: String
    /// The user whose subscription it is (a user record name, such as `_defaultOwner`).
    public var owner: String
    /// What it watches: the owner's whole database or one zone.
    public var scope: Scope
    /// The subscription as its client sent it (CloudKit's subscription dictionary, JSON), given
    /// back unchanged by lists and lookups.
    public var definition: Data

    /// A subscription of `owner`'s, described by `definition` (the client's JSON).
    public init(id: String, owner: String, scope: Scope, definition: Data) {
        self.id = id
        self.owner = owner
        self.scope = scope
        self.definition = definition
    }
}

/// A cloud that keeps subscriptions (the embedded and PostgreSQL clouds), for the CloudKit Web
/// Services endpoint to serve and notify. Subscriptions live with the data, so every endpoint in
/// front of one cloud, and a restarted one, sees the same.
public protocol SubscriptionStoring: Sendable {
    /// The subscriptions of `owner`, or of every user when `nil`, ordered by owner and identifier.
    func subscriptions(of owner: String?) async throws -> [CloudSubscription]

    /// Creates the subscription, or replaces the owner's subscription with the same identifier.
    func saveSubscription(_ subscription: CloudSubscription) async throws

    /// Deletes the owner's subscription `id`; returns whether there was one.
    func deleteSubscription(_ id: String, of owner: String) async throws -> Bool
}
