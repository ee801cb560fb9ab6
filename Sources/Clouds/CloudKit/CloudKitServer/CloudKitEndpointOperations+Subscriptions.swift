import CloudKitWeb
import Foundation
import GatewayCore

/// `subscriptions/list`, `subscriptions/lookup`, `subscriptions/modify`, `tokens/create` and
/// `tokens/register`, in CloudKit Web Services' shapes, for the caller's own subscriptions.
extension CloudKitEndpointOperations {
    private var owner: String { userRecordName ?? ZoneID.defaultOwnerName }

    private func store(_ operation: String) throws(CloudError) -> any SubscriptionStoring {
        guard let store = self.store as? any SubscriptionStoring else {
            throw CloudError(.invalidArguments, "\(operation): this cloud keeps no subscriptions")
        }
        return store
    }

    /// `{"subscriptions": [subscription dictionary]}`: the caller's subscriptions by identifier.
    func listSubscriptions() async throws -> JSONValue {
        let found = try await store("subscriptions/list").subscriptions(of: owner)
        return ["subscriptions": .array(try found.map(Self.dictionary))]
    }

    /// Each asked `{subscriptionID}` as its dictionary, or an error dictionary (`NOT_FOUND`).
    func lookupSubscriptions(_ body: JSONValue) async throws -> JSONValue {
        guard let asked = body["subscriptions"]?.arrayValue else {
            throw CloudError(.invalidArguments, "subscriptions/lookup: the body needs subscriptions, a list of {subscriptionID}")
        }
        let found = Dictionary(
            try await store("subscriptions/lookup").subscriptions(of: owner).map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        return [
            "subscriptions": .array(
                try asked.map { item in
                    guard let id = item["subscriptionID"]?.stringValue else {
                        throw CloudError(.invalidArguments, "subscriptions/lookup: every entry needs a subscriptionID")
                    }
                    guard let subscription = found[id] else {
                        return Self.error(CloudError(.unknownItem, "subscription \(id) does not exist"), subscriptionID: id)
                    }
                    return try Self.dictionary(subscription)
                })
        ]
    }

    /// `operations: [{operationType: create | update | delete, subscription}]`: each answered
    /// in order by the subscription saved, `{subscriptionID, deleted: true}`, or an error
    /// dictionary. Database and zone subscriptions are kept; a query subscription is refused.
    func modifySubscriptions(_ body: JSONValue) async throws -> JSONValue {
        guard let operations = body["operations"]?.arrayValue else {
            throw CloudError(.invalidArguments, "subscriptions/modify: the body needs operations")
        }
        let store = try store("subscriptions/modify")
        var answers: [JSONValue] = []
        for operation in operations {
            let given = operation["subscription"] ?? .null
            let id = given["subscriptionID"]?.stringValue
            do {
                switch operation["operationType"]?.stringValue {
                case "create", "update":
                    let subscription = try Self.subscription(from: given, owner: owner, scope: scope, storedZone: storedZone)
                    // Another user's zone only while it is shared with the caller.
                    if case .zone(let stored) = subscription.scope, stored.ownerName != CloudUsers.storedOwner(of: owner) {
                        _ = try await cloud.currentChangeToken(in: CloudUsers.zone(stored, asSeenBy: owner))
                    }
                    try await store.saveSubscription(subscription)
                    answers.append(try Self.dictionary(subscription))
                case "delete":
                    guard let id else { throw CloudError(.invalidArguments, "subscriptions/modify: a delete names its subscriptionID") }
                    guard try await store.deleteSubscription(id, of: owner) else {
                        throw CloudError(.unknownItem, "subscription \(id) does not exist")
                    }
                    answers.append(["subscriptionID": .string(id), "deleted": true])
                default:
                    throw CloudError(.invalidArguments, "subscriptions/modify: operationType must be create, update or delete")
                }
            } catch let error as CloudError where error.code == .invalidArguments || error.code == .unknownItem || error.code == .zoneNotFound {
                answers.append(Self.error(error, subscriptionID: id))
            }
        }
        notifier?.subscriptionsChanged()
        return ["subscriptions": .array(answers)]
    }

    /// `{apnsEnvironment, apnsToken, webcourierURL}`: a token whose courier URL the caller
    /// long-polls once it has registered the token.
    func createToken(_ body: JSONValue) throws -> JSONValue {
        guard let notifier else { throw CloudError(.invalidArguments, "tokens/create: this endpoint delivers no notifications") }
        let environment = body["apnsEnvironment"]?.stringValue ?? "production"
        guard environment == "production" || environment == "development" else {
            throw CloudError(.invalidArguments, "tokens/create: apnsEnvironment must be production or development")
        }
        let token = notifier.hub.create(for: owner)
        return ["apnsEnvironment": .string(environment), "apnsToken": .string(token), "webcourierURL": .string("\(courierURL)/\(token)")]
    }

    /// Registers a token from `tokens/create` for the caller's notifications.
    func registerToken(_ body: JSONValue) throws -> JSONValue {
        guard let notifier else { throw CloudError(.invalidArguments, "tokens/register: this endpoint delivers no notifications") }
        guard let token = body["apnsToken"]?.stringValue else { throw CloudError(.invalidArguments, "tokens/register: the body needs apnsToken") }
        try notifier.hub.register(token, by: owner)
        return ["apnsEnvironment": body["apnsEnvironment"] ?? "production", "apnsToken": .string(token)]
    }

    /// The subscription a client's dictionary describes: `subscriptionType` `zone` (with its
    /// `zoneID`) or `database`; a missing `subscriptionID` is made up, as CloudKit does.
    /// - Parameters:
    ///   - scope: the database the request names; database subscriptions are served in the private one.
    ///   - storedZone: how the store names the caller's zones.
    static func subscription(
        from given: JSONValue, owner: String, scope: CloudScope? = .private, storedZone: (ZoneID) -> ZoneID = { $0 }
    ) throws -> CloudSubscription {
        guard case .object(var dictionary) = given else {
            throw CloudError(.invalidArguments, "subscriptions/modify: subscription must be a dictionary")
        }
        let id = dictionary["subscriptionID"]?.stringValue ?? UUID().uuidString
        guard !id.isEmpty, id.utf8.count <= 255 else {
            throw CloudError(.invalidArguments, "subscriptions/modify: a subscriptionID has 1 to 255 bytes")
        }
        dictionary["subscriptionID"] = .string(id)
        guard scope != nil else {
            throw CloudError(.invalidArguments, "subscription \(id): the public database's subscriptions are query subscriptions in CloudKit, which are not served here")
        }
        let subscriptionScope: CloudSubscription.Scope
        switch dictionary["subscriptionType"]?.stringValue {
        case "zone":
            let zone = try CloudKitWireCoding.decodeZoneID(dictionary["zoneID"] ?? .null)
            dictionary["zoneID"] = CloudKitWireCoding.encode(zone)
            subscriptionScope = .zone(storedZone(zone))
        case "database":
            guard scope == .private else {
                throw CloudError(
                    .invalidArguments, "subscription \(id): database subscriptions are served in the private database; subscribe to each shared zone")
            }
            subscriptionScope = .database
        case "query":
            throw CloudError(.invalidArguments, "subscription \(id): query subscriptions are not served here; subscribe to the zone or the database")
        default:
            throw CloudError(.invalidArguments, "subscription \(id): subscriptionType must be zone or database")
        }
        return CloudSubscription(id: id, owner: owner, scope: subscriptionScope, definition: try JSONValue.object(dictionary).serialized())
    }

    static func dictionary(_ subscription: CloudSubscription) throws -> JSONValue {
        try JSONValue.parse(subscription.definition)
    }

    static func error(_ error: CloudError, subscriptionID: String?) -> JSONValue {
        guard case .object(var object) = CloudKitErrorCoding.encode(error) else { return .null }
        if let subscriptionID { object["subscriptionID"] = .string(subscriptionID) }
        return .object(object)
    }
}
