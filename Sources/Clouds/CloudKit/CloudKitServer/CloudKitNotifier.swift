import Foundation
import GatewayCore
import Logging
import ServiceLifecycle
import Synchronization

/// Turns changes in the served cloud into notifications for the subscriptions that cover them,
/// delivered through the ``CourierHub``.
///
/// Writes made through this endpoint notify at once (the operations call ``zoneChanged(_:)``).
/// Writes that reach the cloud another way (a gateway using the same PostgreSQL cloud, or
/// another endpoint) are noticed by watching the cloud's change signals of every zone a
/// subscription covers; ``run()`` does that, so run the notifier as a service next to the
/// server. Subscriptions saved through another endpoint are seen within ``refreshInterval``.
public final class CloudKitNotifier: Service, Sendable {
    let cloud: any CloudDatabase
    /// Where the notifications wait for their clients.
    public let hub: CourierHub
    let logger: Logger
    /// How often the subscriptions and the zone list are read again.
    public let refreshInterval: Duration

    private struct State {
        var subscriptions: [CloudSubscription]?
        var watched: Set<ZoneID> = []
    }

    private let state = Mutex(State())
    private let refreshes: AsyncStream<Void>
    private let refresh: AsyncStream<Void>.Continuation

    public init(cloud: any CloudDatabase, hub: CourierHub = CourierHub(), logger: Logger, refreshInterval: Duration = .seconds(30)) {
        self.cloud = cloud
        self.hub = hub
        self.logger = logger
        self.refreshInterval = refreshInterval
        (refreshes, refresh) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    var store: (any SubscriptionStoring)? { cloud as? any SubscriptionStoring }

    /// Whether the cloud's change signals of `zone` are watched (a subscription covers it).
    public func isWatching(_ zone: ZoneID) -> Bool {
        state.withLock { $0.watched.contains(zone) }
    }

    /// The subscriptions, read from the cloud when not cached.
    func subscriptions() async throws -> [CloudSubscription] {
        if let cached = state.withLock({ $0.subscriptions }) { return cached }
        guard let store else { return [] }
        let read = try await store.subscriptions(of: nil)
        state.withLock { $0.subscriptions = read }
        return read
    }

    /// Subscriptions or zones changed through this endpoint: read them again, and watch any new
    /// zone they cover.
    func subscriptionsChanged() {
        state.withLock { $0.subscriptions = nil }
        refresh.yield()
    }

    /// `zone` changed: every subscription covering it notifies its owner's registered tokens.
    public func zoneChanged(_ zone: ZoneID) async {
        let covering: [CloudSubscription]
        do {
            covering = try await subscriptions().filter { $0.scope.covers(zone) }
        } catch {
            logger.warning("cannot read the subscriptions; no notification for this change", metadata: ["zone": "\(zone)", "error": "\(error)"])
            return
        }
        for (owner, subscriptions) in Dictionary(grouping: covering, by: \.owner) {
            hub.notify(
                subscriptions.map { subscription in
                    switch subscription.scope {
                    case .database: CourierHub.Pending(subscriptionID: subscription.id, zone: nil)
                    case .zone: CourierHub.Pending(subscriptionID: subscription.id, zone: zone)
                    }
                }, of: owner)
        }
    }

    /// Watches the change signals of every zone a subscription covers (every zone, for a
    /// database subscription), until the group shuts down.
    public func run() async throws {
        guard store != nil else { return }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { [refresh, refreshInterval] in
                // Zones created and subscriptions saved elsewhere are picked up on this beat.
                while (try? await Task.sleep(for: refreshInterval)) != nil {
                    refresh.yield()
                }
            }
            refresh.yield()
            for await _ in refreshes.cancelOnGracefulShutdown() {
                for zone in await zonesToWatch() {
                    group.addTask { [cloud] in
                        for await _ in cloud.changeSignals(in: zone) { await self.zoneChanged(zone) }
                    }
                }
            }
            group.cancelAll()
        }
    }

    /// The zones covered by a subscription and not watched yet, now marked watched.
    private func zonesToWatch() async -> [ZoneID] {
        do {
            state.withLock { $0.subscriptions = nil }
            let subscriptions = try await self.subscriptions()
            var covered = Set(subscriptions.compactMap { if case .zone(let zone) = $0.scope { zone } else { nil } })
            if subscriptions.contains(where: { $0.scope == .database }) { covered.formUnion(try await cloud.zones()) }
            return state.withLock { state in
                let new = covered.subtracting(state.watched)
                state.watched.formUnion(new)
                return new.sorted { ($0.ownerName, $0.zoneName) < ($1.ownerName, $1.zoneName) }
            }
        } catch {
            logger.warning("cannot read the subscriptions or zones to watch; trying again", metadata: ["error": "\(error)"])
            return []
        }
    }
}
