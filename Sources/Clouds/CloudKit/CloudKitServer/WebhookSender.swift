import AsyncHTTPClient
import Crypto
import Foundation
import GatewayCore
import Logging
import NIOCore
import NIOFoundationCompat
import Synchronization

/// Where the endpoint also POSTs its notifications, for operators who prefer a push to their own
/// service over a long-poll.
public struct WebhookTarget: Sendable {
    /// The URL the notifications are POSTed to.
    public var url: String
    /// The key of the `X-Gateway-Signature` header: `sha256=` and the hex HMAC-SHA256 of the body.
    public var secret: Data

    /// A target at `url`, signed with `secret`.
    public init(url: String, secret: Data) {
        self.url = url
        self.secret = secret
    }
}

/// Delivers notifications to one ``WebhookTarget``: `{"notifications": [{"user", "ck"}]}`, signed,
/// with an `X-Gateway-Delivery` id, retried unchanged (same body, same id) with back-off until
/// the target takes them. Notifications wait in a queue of their
/// own, coalesced per user, subscription and zone, and bounded: a target that fails never holds
/// up the courier or a sync, and one that stays down loses only the oldest of what it missed.
final class WebhookSender: Sendable {
    struct Item: Hashable, Sendable {
        let owner: String
        let pending: CourierHub.Pending
    }

    let target: WebhookTarget
    let container: String
    let environment: String
    let logger: Logger
    /// The first wait after a failed delivery; it doubles up to ``maximumDelay``.
    let firstDelay: Duration
    let maximumDelay: Duration
    /// The most notifications kept waiting.
    static let capacity = 10_000

    private let queue = Mutex<[Item]>([])
    private let wakeUps: AsyncStream<Void>
    private let wake: AsyncStream<Void>.Continuation

    init(
        target: WebhookTarget, container: String, environment: String, logger: Logger, firstDelay: Duration = .seconds(1),
        maximumDelay: Duration = .seconds(300)
    ) {
        self.target = target
        self.container = container
        self.environment = environment
        self.logger = logger
        self.firstDelay = firstDelay
        self.maximumDelay = maximumDelay
        (wakeUps, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Queues notifications; returns at once.
    func enqueue(_ items: [Item]) {
        let dropped = queue.withLock { queue -> Int in
            for item in items where !queue.contains(item) { queue.append(item) }
            let excess = max(0, queue.count - Self.capacity)
            queue.removeFirst(excess)
            return excess
        }
        if dropped > 0 { logger.warning("webhook queue full; dropped the oldest notifications", metadata: ["url": "\(target.url)", "dropped": "\(dropped)"]) }
        wake.yield()
    }

    /// Delivers what is queued whenever something is, until the task is cancelled.
    func run() async {
        var delay = firstDelay
        // A delivery is retried as it was first sent, with the same body and delivery id, so
        // the target can tell a retry from a new delivery.
        var delivery: (items: [Item], body: Data, id: String)?
        for await _ in wakeUps {
            while !Task.isCancelled {
                if delivery == nil {
                    // Taken out of the queue: a change meanwhile queues its notification again.
                    let batch = queue.withLock { queue -> [Item] in
                        let batch = Array(queue.prefix(500))
                        queue.removeFirst(batch.count)
                        return batch
                    }
                    if batch.isEmpty { break }
                    guard let body = try? body(of: batch) else { break }
                    delivery = (batch, body, UUID().uuidString.lowercased())
                }
                guard let current = delivery else { break }
                do {
                    try await deliver(current.body, id: current.id)
                    delivery = nil
                    delay = firstDelay
                } catch {
                    logger.warning(
                        "webhook delivery failed; trying again", metadata: ["url": "\(target.url)", "error": "\(error)", "retry_in": "\(delay)"])
                    guard (try? await Task.sleep(for: delay)) != nil else { return }
                    delay = min(delay * 2, maximumDelay)
                }
            }
        }
    }

    private func body(of batch: [Item]) throws -> Data {
        let notifications = batch.map { item -> JSONValue in
            guard case .object(var object) = CourierNotification.encode(item.pending, container: container, environment: environment) else { return .null }
            object["user"] = .string(item.owner)
            return .object(object)
        }
        return try JSONValue.object(["notifications": .array(notifications)]).serialized()
    }

    private func deliver(_ body: Data, id: String) async throws {
        let signature = HMAC<SHA256>.authenticationCode(for: body, using: SymmetricKey(data: target.secret))
        var request = HTTPClientRequest(url: target.url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json; charset=utf-8")
        request.headers.add(name: "X-Gateway-Signature", value: "sha256=" + signature.map { String(format: "%02x", $0) }.joined())
        request.headers.add(name: "X-Gateway-Delivery", value: id)
        request.body = .bytes(ByteBuffer(data: body))
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(30))
        _ = try await response.body.collect(upTo: 1_000_000)
        guard (200..<300).contains(Int(response.status.code)) else {
            throw CloudError(.serviceUnavailable, "the webhook answered \(response.status.code)")
        }
    }
}
