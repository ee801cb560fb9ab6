import Foundation
import GatewayCore

extension CloudConformanceSuite {
    /// The behaviours of a cloud that keeps subscriptions (`SubscriptionStoring`): run them
    /// against harnesses whose clouds conform.
    public static var subscriptionCases: [CloudConformanceCase] {
        [
            CloudConformanceCase("subscriptions are saved, listed, replaced and deleted per owner, and another client sees them") { harness in
                let cloud = try await harness.makeCloud(limits: .cloudKit)
                let store = try subscriptionStore(cloud)
                let database = CloudSubscription(id: "all", owner: "_alice", scope: .database, definition: Data(#"{"subscriptionID":"all"}"#.utf8))
                let notes = CloudSubscription(id: "notes", owner: "_alice", scope: .zone(zone), definition: Data(#"{"v":1}"#.utf8))
                let bobs = CloudSubscription(id: "notes", owner: "_bob", scope: .zone(ZoneID(zoneName: "Other")), definition: Data("{}".utf8))
                for subscription in [notes, database, bobs] { try await store.saveSubscription(subscription) }
                let alice = try await store.subscriptions(of: "_alice")
                guard alice == [database, notes] else { throw ConformanceFailure("_alice's subscriptions, by identifier: \(alice)") }
                guard try await store.subscriptions(of: nil) == [database, notes, bobs] else {
                    throw ConformanceFailure("every owner's subscriptions, by owner and identifier")
                }
                var replaced = notes
                replaced.scope = .zone(ZoneID(zoneName: "Moved"))
                replaced.definition = Data(#"{"v":2}"#.utf8)
                try await store.saveSubscription(replaced)
                let second = try subscriptionStore(try await harness.makeSecondClient(of: cloud))
                guard try await second.subscriptions(of: "_alice") == [database, replaced] else {
                    throw ConformanceFailure("a save with an existing identifier replaces it, for every client of the store")
                }
                guard try await second.deleteSubscription("notes", of: "_alice"), try await !store.deleteSubscription("notes", of: "_alice") else {
                    throw ConformanceFailure("deleting says whether there was a subscription")
                }
                guard try await store.subscriptions(of: "_bob") == [bobs] else { throw ConformanceFailure("a delete touches one owner's only") }
            },
            CloudConformanceCase("a subscription's scope says which zones fire it") { _ in
                let other = ZoneID(zoneName: "Other")
                guard CloudSubscription.Scope.database.covers(other), CloudSubscription.Scope.zone(zone).covers(zone),
                    !CloudSubscription.Scope.zone(zone).covers(other)
                else { throw ConformanceFailure("database subscriptions cover every zone, zone subscriptions their own") }
            },
        ]
    }

    static func subscriptionStore(_ cloud: any CloudDatabase) throws -> any SubscriptionStoring {
        guard let store = cloud as? any SubscriptionStoring else {
            throw ConformanceFailure("\(type(of: cloud)) keeps no subscriptions (it is not SubscriptionStoring)")
        }
        return store
    }
}
