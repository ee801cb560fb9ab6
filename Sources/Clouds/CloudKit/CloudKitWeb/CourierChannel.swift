import Foundation
import GatewayCore
import Logging
import Synchronization

/// A client's push channel from a CloudKit Web Services service: a zone subscription for each
/// zone whose change signals are asked for, one token (`tokens/create`, `tokens/register`), and
/// one web courier long-poll shared by every zone's signals.
///
/// No task of its own runs it: the zones' signal iterators take turns holding the long-poll.
/// Whoever waits while nobody polls sends the next poll; the notifications it brings count up
/// the zones they name and wake the others. A `met` (database) notification, a new token after a
/// lost one, and every ``CloudKitWebConfiguration/fallbackPollInterval`` count up every zone, so
/// a notification lost in between still leads to a sync. A service that answers subscriptions or
/// tokens with "not found" or "bad request" has no push channel: the signals poll instead.
final class CourierChannel: Sendable {
    private let transport: CloudKitTransport
    private let clock: any SyncClock
    /// The gateway's log: whether push is on, and when the courier is lost and found again.
    private let logger: Logger

    private struct State {
        var counts: [ZoneID: Int] = [:]
        /// Counted for every zone (database notifications, reconnects, the fallback beat).
        var everything = 0
        var subscribed: Set<ZoneID> = []
        var courierURL: String?
        var polling = false
        var unavailable = false
        /// Polls in a row that failed (the service unreachable): the next waits longer.
        var failures = 0
        var lastBeat: ContinuousClock.Instant = .now
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var nextWaiter = 0
    }

    private let state = Mutex(State())

    init(transport: CloudKitTransport, clock: any SyncClock = LiveSyncClock()) {
        self.transport = transport
        self.clock = clock
        var logger = Logger(label: "gateway")
        logger[metadataKey: "cloud"] = "\(transport.configuration.baseURL)"
        self.logger = logger
    }

    /// How long a long-poll may take at least: longer than a service holds one (the gateway's
    /// endpoint, 25 s), so a quiet poll ends with an answer rather than a timeout.
    static let longPollTimeout = Duration.seconds(90)

    /// Whether the service has no push channel (then signals poll).
    var isUnavailable: Bool { state.withLock { $0.unavailable } }

    /// Whether `zone`'s subscription is made.
    func isSubscribed(to zone: ZoneID) -> Bool {
        state.withLock { $0.subscribed.contains(zone) }
    }

    /// How many times `zone` was signalled so far.
    func count(of zone: ZoneID) -> Int {
        state.withLock { ($0.counts[zone] ?? 0) + $0.everything }
    }

    /// The subscription identifier for `zone`: one per zone and user, shared by every gateway of
    /// the user (notifications go to every token the user registered).
    static func subscriptionID(for zone: ZoneID) -> String {
        zone.ownerName == ZoneID.defaultOwnerName ? "sync-gateway.\(zone.zoneName)" : "sync-gateway.\(zone.ownerName).\(zone.zoneName)"
    }

    /// Subscribes to `zone` (once per channel) and makes sure the channel's token is registered.
    /// A service without subscriptions or tokens marks the channel unavailable; other failures
    /// are thrown, to be tried again.
    func subscribe(to zone: ZoneID) async throws {
        guard !state.withLock({ $0.subscribed.contains(zone) || $0.unavailable }) else { return }
        let subscription: JSONValue = [
            "subscriptionID": .string(Self.subscriptionID(for: zone)), "subscriptionType": "zone", "zoneID": CloudKitWireCoding.encode(zone),
            "notificationInfo": ["shouldSendContentAvailable": true],
        ]
        do {
            let answer = try await transport.call("subscriptions/modify", body: ["operations": [["operationType": "create", "subscription": subscription]]])
            if let result = answer["subscriptions"]?.arrayValue?.first, CloudKitErrorCoding.isError(result) {
                let error = CloudKitErrorCoding.decode(result, context: "subscribing to zone \(zone)")
                // A subscription that exists already (another gateway of the user made it) serves.
                guard error.code == .serverRecordChanged else { throw error }
            }
            // The token is registered now, so changes from here on wait for the first poll.
            _ = try await courierURL()
            let first = state.withLock { state in
                defer { state.subscribed.insert(zone) }
                return state.subscribed.isEmpty
            }
            if first { logger.info("cloud notifications on: subscribed, long-polling the web courier", metadata: ["zone": "\(zone.zoneName)"]) }
        } catch let error as CloudError where Self.meansNoPush(error) {
            state.withLock { $0.unavailable = true }
            logger.notice(
                "the cloud offers no subscriptions or web courier; polling for changes",
                metadata: ["poll_interval": "\(transport.configuration.signalPollInterval)", "answer": "\(error.message)"])
        }
    }

    /// Waits until `zone`'s count passes `seen`, sending the long-poll meanwhile when nobody
    /// else does. Returns at once when the channel is unavailable or the task is cancelled.
    func wait(for zone: ZoneID, after seen: Int) async {
        while !Task.isCancelled, count(of: zone) == seen, !isUnavailable {
            let polls = state.withLock { state -> Bool in
                guard !state.polling else { return false }
                state.polling = true
                return true
            }
            if polls {
                await pollOnce()
                let woken = state.withLock { state in
                    state.polling = false
                    defer { state.waiters = [:] }
                    return Array(state.waiters.values)
                }
                for waiter in woken { waiter.resume() }
            } else {
                await parkUntilWoken(zone: zone, seen: seen)
            }
        }
    }

    /// Parks until the poller brings notifications or stops polling.
    private func parkUntilWoken(zone: ZoneID, seen: Int) async {
        let id = state.withLock { state -> Int in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state -> Bool in
                    // Checked under the lock the poller wakes under, so no wake-up is missed.
                    if !state.polling || Task.isCancelled || (state.counts[zone] ?? 0) + state.everything != seen || state.unavailable {
                        return true
                    }
                    state.waiters[id] = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
        }
    }

    /// One long-poll, with the token made first when there is none. A failed poll waits before
    /// the next turn (1 s, doubling up to a minute), and the first answer after failures counts
    /// up every zone, as does a lost token, which is made anew at once: notifications queued for
    /// it, or carried by an answer that never arrived, are gone.
    private func pollOnce() async {
        do {
            let url = try await courierURL()
            let answer = try await transport.send(url: url, method: .get, body: Data(), contentType: nil, context: "the web courier", anonymous: true,
                timeout: max(transport.configuration.requestTimeout, Self.longPollTimeout))
            guard (200..<300).contains(answer.status) else { throw CloudKitTransport.failure(answer, context: "the web courier") }
            let notifications = try JSONValue.parse(answer.body.isEmpty ? Data("{}".utf8) : answer.body)["notifications"]?.arrayValue ?? []
            let recovered = state.withLock { state -> Bool in
                guard state.failures > 0 else { return false }
                // Back after failed polls: an answer lost in a failure took its notifications.
                state.failures = 0
                state.everything += 1
                return true
            }
            if recovered { logger.info("the web courier answers again; looking at every zone once") }
            state.withLock { state in
                for notification in notifications {
                    let ck = notification["ck"]
                    if let fetch = ck?["fet"], let name = fetch["zid"]?.stringValue {
                        let zone = ZoneID(zoneName: name, ownerName: fetch["zoid"]?.stringValue ?? ZoneID.defaultOwnerName)
                        state.counts[zone, default: 0] += 1
                    } else {
                        state.everything += 1
                    }
                }
            }
        } catch let error as CloudError where Self.meansNoPush(error) && !state.withLock({ $0.courierURL != nil }) {
            state.withLock { $0.unavailable = true }
        } catch let error as CloudError where error.code == .unknownItem {
            // The token was forgotten (the service restarted, or it sat idle too long): a new
            // one is registered at once, so changes from now on wait for the next poll; those
            // in between are covered by signalling every zone.
            state.withLock { $0.courierURL = nil }
            _ = try? await courierURL()
            state.withLock { state in
                state.failures = 0
                state.everything += 1
            }
        } catch {
            if Task.isCancelled { return }
            // The service is unreachable or failed: wait 1 s, doubling up to a minute, and look at
            // every zone once it answers again.
            let failures = state.withLock { state -> Int in
                state.failures += 1
                return state.failures
            }
            if failures == 1 { logger.warning("the web courier cannot be reached; trying again", metadata: ["error": "\(error)"]) }
            try? await clock.sleep(for: .seconds(1 << min(failures - 1, 6)))
        }
        let beat = transport.configuration.fallbackPollInterval
        state.withLock { state in
            if ContinuousClock.now - state.lastBeat >= beat {
                state.lastBeat = .now
                state.everything += 1
            }
        }
    }

    /// The courier URL of this channel's token, creating and registering the token when needed.
    private func courierURL() async throws -> String {
        if let url = state.withLock({ $0.courierURL }) { return url }
        let environment = transport.configuration.environment == "production" ? "production" : "development"
        let created = try await transport.call(
            "tokens/create", body: ["apnsEnvironment": .string(environment)], path: transport.configuration.devicePath("tokens/create"))
        guard let token = created["apnsToken"]?.stringValue, let url = created["webcourierURL"]?.stringValue else {
            throw CloudError(.internalError, "tokens/create answered without apnsToken and webcourierURL")
        }
        _ = try await transport.call(
            "tokens/register", body: ["apnsEnvironment": .string(environment), "apnsToken": .string(token)],
            path: transport.configuration.devicePath("tokens/register"))
        state.withLock { $0.courierURL = url }
        return url
    }

    /// Whether a failure says the service has no such operation, rather than that it failed now.
    static func meansNoPush(_ error: CloudError) -> Bool {
        error.code == .unknownItem || error.code == .invalidArguments || error.code == .permissionFailure
    }
}

/// One zone's change signals from a ``CourierChannel``, or from `polling` once the channel
/// turns out to be unavailable (or its subscription cannot be made yet).
struct CourierSignalSource: ChangeSignalSource {
    let channel: CourierChannel
    let zone: ZoneID
    var polling: ChangeSignals.AsyncIterator
    private var seen: Int?

    init(channel: CourierChannel, zone: ZoneID, polling: ChangeSignals.AsyncIterator) {
        self.channel = channel
        self.zone = zone
        self.polling = polling
    }

    mutating func start() async {
        guard seen == nil else { return }
        seen = channel.count(of: zone)
        // Without a subscription (none served, or not made yet) the zone is polled from now
        // on, so nothing is missed meanwhile.
        try? await channel.subscribe(to: zone)
        if channel.isUnavailable || !channel.isSubscribed(to: zone) { await polling.start() }
    }

    mutating func waitForChange() async -> Bool {
        await start()
        while !Task.isCancelled {
            if channel.isUnavailable { return await polling.next() != nil }
            if !channel.isSubscribed(to: zone) {
                // The subscription failed before (the service was unreachable): try again, and
                // poll meanwhile. Once it is made, one signal covers what happened before it.
                try? await channel.subscribe(to: zone)
                guard channel.isSubscribed(to: zone) else { return await polling.next() != nil }
                seen = channel.count(of: zone)
                return true
            }
            let last = seen ?? 0
            let now = channel.count(of: zone)
            if now != last {
                seen = now
                return true
            }
            await channel.wait(for: zone, after: last)
        }
        return false
    }
}
