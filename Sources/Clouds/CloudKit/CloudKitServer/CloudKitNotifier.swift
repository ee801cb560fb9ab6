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
/// server, after it in the group: it stops first and ends the held long-polls, which the
/// server would otherwise wait for. Subscriptions saved through another endpoint are seen
/// within ``refreshInterval``.
public final class CloudKitNotifier: Service, Sendable {
    let cloud: any CloudDatabase
    /// Where the notifications wait for their clients.
    public let hub: CourierHub
    let logger: Logger
    /// How often the subscriptions and the zone list are read again.
    public let refreshInterval: Duration
    /// Where notifications are POSTed besides the courier.
    let webhooks: [WebhookSender]

    private struct State {
        var subscriptions: [CloudSubscription]?
        /// Zones with a watcher, started or starting.
        var watched: Set<ZoneID> = []
        /// Zones whose watcher has taken its baseline: every later change is noticed.
        var ready: Set<ZoneID> = []
        var refreshed = false
        /// Each zone's change token when it last notified: the watch of a zone notifies only
        /// when the zone moved past it, so a write through the endpoint notifies once.
        var notifiedAt: [ZoneID: ChangeToken] = [:]
    }

    private let state = Mutex(State())
    /// Told whenever a zone's watch is ready (``waitUntilWatching(_:)``).
    private let watches = StateChanges()
    private let refreshes: AsyncStream<Void>
    private let refresh: AsyncStream<Void>.Continuation

    /// - Parameters:
    ///   - webhooks: targets that also receive every notification, with the `container` and
    ///     `environment` they name; a failed delivery is tried again after `webhookRetryDelay`,
    ///     doubling up to 5 minutes.
    public init(
        cloud: any CloudDatabase, hub: CourierHub = CourierHub(), logger: Logger, refreshInterval: Duration = .seconds(30),
        webhooks: [WebhookTarget] = [], container: String = "", environment: String = "development", webhookRetryDelay: Duration = .seconds(1)
    ) {
        self.cloud = cloud
        self.hub = hub
        self.logger = logger
        self.refreshInterval = refreshInterval
        self.webhooks = webhooks.map {
            WebhookSender(target: $0, container: container, environment: environment, logger: logger, firstDelay: webhookRetryDelay)
        }
        (refreshes, refresh) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    var store: (any SubscriptionStoring)? { cloud as? any SubscriptionStoring }

    /// Whether the cloud's change signals of `zone` are watched (a subscription covers it).
    public func isWatching(_ zone: ZoneID) -> Bool {
        state.withLock { $0.ready.contains(zone) }
    }

    /// Returns once changes of `zone` are watched (``isWatching(_:)``).
    public func waitUntilWatching(_ zone: ZoneID) async {
        await watches.wait { self.isWatching(zone) }
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
        await notify(zone, unlessNotifiedAt: false)
    }

    /// Notifies for `zone`; when `unlessNotifiedAt`, only if it moved since it last notified (the
    /// watch's signal for a write the endpoint already notified about).
    private func notify(_ zone: ZoneID, unlessNotifiedAt: Bool) async {
        var covering: [CloudSubscription]
        do {
            // A database subscription covers its owner's own zones (the private database).
            covering = try await subscriptions().filter {
                $0.scope == .database ? zone.ownerName == CloudUsers.storedOwner(of: $0.owner) : $0.scope.covers(zone)
            }
        } catch {
            logger.warning("cannot read the subscriptions; no notification for this change", metadata: ["zone": "\(zone)", "error": "\(error)"])
            return
        }
        // A write into a zone nobody subscribed to costs no read of its token.
        guard !covering.isEmpty else { return }
        // Another user's zone notifies only those it is shared with now: a subscription made
        // while shared says nothing once the share is gone.
        let owner = CloudUsers.user(ofStoredOwner: zone.ownerName)
        if covering.contains(where: { CloudUsers.storedOwner(of: $0.owner) != zone.ownerName }) {
            let share = try? await CloudUsers(store: cloud).share(of: zone.zoneName, ownedBy: owner)
            covering = covering.filter { subscription in
                CloudUsers.storedOwner(of: subscription.owner) == zone.ownerName || share?.permission(of: subscription.owner) != nil
            }
            guard !covering.isEmpty else { return }
        }
        // A zone that cannot be read (deleted, or the cloud unreachable) notifies all the same.
        let token = try? await cloud.currentChangeToken(in: zone)
        let repeated = state.withLock { state -> Bool in
            guard let token else { return false }
            if unlessNotifiedAt, state.notifiedAt[zone] == token { return true }
            state.notifiedAt[zone] = token
            return false
        }
        if repeated { return }
        for (owner, subscriptions) in Dictionary(grouping: covering, by: \.owner) {
            let pending = subscriptions.map { subscription in
                switch subscription.scope {
                case .database: CourierHub.Pending(subscriptionID: subscription.id, zone: nil)
                case .zone: CourierHub.Pending(subscriptionID: subscription.id, zone: CloudUsers.zone(zone, asSeenBy: owner))
                }
            }
            hub.notify(pending, of: owner)
            for webhook in webhooks { webhook.enqueue(pending.map { WebhookSender.Item(owner: owner, pending: $0) }) }
        }
    }

    /// Watches the change signals of every zone a subscription covers (every zone, for a
    /// database subscription), until the group shuts down.
    public func run() async throws {
        guard store != nil else {
            // Nothing to watch; returning would end the group.
            try? await gracefulShutdown()
            hub.close()
            return
        }
        await withTaskGroup(of: Void.self) { group in
            for webhook in webhooks { group.addTask { await webhook.run() } }
            group.addTask { [refresh, refreshInterval] in
                // Zones created and subscriptions saved elsewhere are picked up on this beat.
                while (try? await Task.sleep(for: refreshInterval)) != nil {
                    refresh.yield()
                }
            }
            refresh.yield()
            for await _ in refreshes.cancelOnGracefulShutdown() {
                for (zone, discovered) in await zonesToWatch() {
                    group.addTask { [cloud] in
                        var signals = cloud.changeSignals(in: zone).makeAsyncIterator()
                        await signals.start()
                        self.markReady(zone)
                        // A zone created since the last look (covered by a database
                        // subscription) may have been written before its watch began: its
                        // subscribers look once.
                        if discovered { await self.zoneChanged(zone) }
                        while await signals.next() != nil { await self.notify(zone, unlessNotifiedAt: true) }
                    }
                }
            }
            group.cancelAll()
        }
        // Held polls end now rather than when their hold runs out, so the server stops at once.
        hub.close()
    }

    private func markReady(_ zone: ZoneID) {
        state.withLock { _ = $0.ready.insert(zone) }
        watches.changed()
    }

    /// The zones covered by a subscription and not watched yet, now marked watched, each with
    /// whether it is a zone created since the first look that only a database subscription covers.
    private func zonesToWatch() async -> [(zone: ZoneID, discovered: Bool)] {
        do {
            state.withLock { $0.subscriptions = nil }
            let subscriptions = try await self.subscriptions()
            let named = Set(subscriptions.compactMap { if case .zone(let zone) = $0.scope { zone } else { nil } })
            var covered = named
            if subscriptions.contains(where: { $0.scope == .database }) { covered.formUnion(try await cloud.zones()) }
            return state.withLock { state in
                let new = covered.subtracting(state.watched)
                state.watched.formUnion(new)
                defer { state.refreshed = true }
                return new.sorted { ($0.ownerName, $0.zoneName) < ($1.ownerName, $1.zoneName) }.map { ($0, state.refreshed && !named.contains($0)) }
            }
        } catch {
            logger.warning("cannot read the subscriptions or zones to watch; trying again", metadata: ["error": "\(error)"])
            return []
        }
    }
}
