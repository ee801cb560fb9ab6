import Foundation
import GatewayCore
import Synchronization

/// The endpoint's push channel: the tokens `tokens/create` hands out, each with its web courier
/// URL, and the notifications waiting for the client that long-polls it.
///
/// A token registered with `tokens/register` receives the notifications of its user's
/// subscriptions. Notifications wait for the next poll, coalesced by subscription and zone (a
/// zone that changed twice before the client asked is one notification), so a client that
/// reconnects after a dropped poll misses nothing. A token nobody has polled for
/// ``idleLifetime`` is forgotten; its client gets `NOT_FOUND` and creates a new one.
public final class CourierHub: Sendable {
    /// One waiting notification: the subscription that fired and, for zone subscriptions, the zone.
    struct Pending: Hashable, Sendable {
        let subscriptionID: String
        let zone: ZoneID?
    }

    private struct Token {
        let owner: String
        var registered = false
        var pending: [Pending] = []
        var waiter: (id: Int, continuation: CheckedContinuation<[Pending]?, Never>)?
        var lastSeen: ContinuousClock.Instant
    }

    private struct State {
        var tokens: [String: Token] = [:]
        var nextWaiter = 0
        var closed = false
    }

    /// How long a token lives without a poll.
    public let idleLifetime: Duration
    private let state = Mutex(State())
    /// Told whenever a poll starts or ends waiting (``waitUntilHeld(_:)``).
    private let polls = StateChanges()

    /// A hub whose tokens live `idleLifetime` without a poll.
    public init(idleLifetime: Duration = .seconds(600)) {
        self.idleLifetime = idleLifetime
    }

    /// A new token for `owner`: unguessable, since its courier URL needs no other credential.
    func create(for owner: String) -> String {
        var bytes = [UInt8](repeating: 0, count: 24)
        var generator = SystemRandomNumberGenerator()
        for index in bytes.indices { bytes[index] = generator.next() }
        let token = bytes.map { String(format: "%02x", $0) }.joined()
        state.withLock { state in
            forgetIdle(&state)
            state.tokens[token] = Token(owner: owner, lastSeen: .now)
        }
        return token
    }

    /// Registers `token` for its owner's notifications. Throws `NOT_FOUND` for a token this hub
    /// did not hand out (or forgot), and for another user's token.
    func register(_ token: String, by owner: String) throws(CloudError) {
        let known = state.withLock { state -> Bool in
            guard var entry = state.tokens[token], entry.owner == owner else { return false }
            entry.registered = true
            entry.lastSeen = .now
            state.tokens[token] = entry
            return true
        }
        guard known else { throw CloudError(.unknownItem, "tokens/register: the APNs token is unknown here; create one with tokens/create") }
    }

    /// Queues a notification for every registered token of `owner`.
    func notify(_ notifications: [Pending], of owner: String) {
        guard !notifications.isEmpty else { return }
        let woken = state.withLock { state -> [(CheckedContinuation<[Pending]?, Never>, [Pending])] in
            var woken: [(CheckedContinuation<[Pending]?, Never>, [Pending])] = []
            for (key, var token) in state.tokens where token.registered && token.owner == owner {
                for notification in notifications where !token.pending.contains(notification) { token.pending.append(notification) }
                if let waiter = token.waiter {
                    woken.append((waiter.continuation, token.pending))
                    token.pending = []
                    token.waiter = nil
                }
                state.tokens[key] = token
            }
            return woken
        }
        for (continuation, pending) in woken { continuation.resume(returning: pending) }
    }

    /// The notifications waiting for `token`, waiting up to `hold` for one; empty when none came.
    /// A second poll of the same token ends the first one (empty). Throws `NOT_FOUND` for an
    /// unknown token.
    func poll(_ token: String, hold: Duration) async throws(CloudError) -> [Pending] {
        let result = await withTaskGroup(of: [Pending]??.self) { group in
            group.addTask { await self.wait(token) }
            group.addTask {
                try? await Task.sleep(for: hold)
                return .none
            }
            // The first to finish ends the other; the wait's answer is the one kept (a
            // notification may have reached it as the hold ran out).
            var answer: [Pending]?? = .none
            while let next = await group.next() {
                group.cancelAll()
                if case .some(let waited) = next { answer = .some(waited) }
            }
            return answer
        }
        guard case .some(let waited) = result, let pending = waited else {
            throw CloudError(.unknownItem, "the web courier token is unknown here (expired or never created); create one with tokens/create")
        }
        return pending
    }

    /// Waits for `token`'s notifications until some arrive or the task is cancelled (empty);
    /// `nil` for an unknown token.
    private func wait(_ token: String) async -> [Pending]?? {
        let id = state.withLock { state -> Int in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        let result: [Pending]? = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<[Pending]?, Never>) in
                enum Now { case unknown, ready([Pending]), wait(replaced: CheckedContinuation<[Pending]?, Never>?) }
                let now = state.withLock { state -> Now in
                    guard var entry = state.tokens[token] else { return .unknown }
                    entry.lastSeen = .now
                    if !entry.pending.isEmpty || Task.isCancelled || state.closed {
                        let pending = entry.pending
                        entry.pending = []
                        state.tokens[token] = entry
                        return .ready(pending)
                    }
                    let replaced = entry.waiter?.continuation
                    entry.waiter = (id, continuation)
                    state.tokens[token] = entry
                    return .wait(replaced: replaced)
                }
                switch now {
                case .unknown: continuation.resume(returning: nil)
                case .ready(let pending): continuation.resume(returning: pending)
                case .wait(let replaced): replaced?.resume(returning: [])
                }
                polls.changed()
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<[Pending]?, Never>? in
                guard var entry = state.tokens[token], let waiter = entry.waiter, waiter.id == id else { return nil }
                entry.waiter = nil
                state.tokens[token] = entry
                return waiter.continuation
            }
            waiter?.resume(returning: [])
        }
        polls.changed()
        return .some(result)
    }

    /// Ends every held poll (with what is waiting) and answers later polls at once: the
    /// endpoint is stopping.
    public func close() {
        let waiters = state.withLock { state -> [CheckedContinuation<[Pending]?, Never>] in
            state.closed = true
            var waiters: [CheckedContinuation<[Pending]?, Never>] = []
            for key in state.tokens.keys {
                if let waiter = state.tokens[key]?.waiter {
                    waiters.append(waiter.continuation)
                    state.tokens[key]?.waiter = nil
                }
            }
            return waiters
        }
        for waiter in waiters { waiter.resume(returning: []) }
    }

    /// Forgets every token and ends their polls, as a restart of the endpoint does: their
    /// clients get `NOT_FOUND` and create new ones.
    public func forgetAllTokens() {
        let waiters = state.withLock { state -> [CheckedContinuation<[Pending]?, Never>] in
            defer { state.tokens = [:] }
            return state.tokens.values.compactMap { $0.waiter?.continuation }
        }
        for waiter in waiters { waiter.resume(returning: nil) }
    }

    /// Returns once at least `count` polls are held (clients are waiting for notifications).
    public func waitUntilHeld(_ count: Int = 1) async {
        await polls.wait { self.heldPolls >= count }
    }

    /// How many tokens are polled right now (what idle clients cost the endpoint).
    public var heldPolls: Int { state.withLock { $0.tokens.values.count { $0.waiter != nil } } }

    private func forgetIdle(_ state: inout State) {
        let horizon = ContinuousClock.now - idleLifetime
        state.tokens = state.tokens.filter { $0.value.waiter != nil || $0.value.lastSeen > horizon }
    }
}
