import NIOCore
import NIOPosix
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A TCP proxy on loopback between clients and one server, which can cut, stall and delay the
/// connections that pass through it: the network failing under a running gateway, for tests and
/// the fault harness.
///
/// Point the client at ``port`` instead of the server. Faults apply to every connection open at
/// the time and to those opened later, until changed again.
public final class FaultProxy: Sendable {
    /// How the proxy forwards bytes.
    public enum Mode: Sendable, Equatable {
        /// Bytes flow as they arrive.
        case pass
        /// Nothing flows in either direction (bytes wait in the kernel's buffers); connections
        /// are accepted but never answered, as when a route or a server hangs.
        case stall
        /// Every chunk is held for this long before it is passed on.
        case delay(Duration)
    }

    /// The port clients connect to.
    public let port: Int
    /// The server behind the proxy.
    public let upstreamHost: String
    public let upstreamPort: Int

    private let server: any Channel
    private let state: Mutex<State>

    struct State {
        var mode: Mode = .pass
        var pairs: [ObjectIdentifier: ConnectionPair] = [:]
        var accepted = 0
        var cuts = 0
    }

    private init(port: Int, upstreamHost: String, upstreamPort: Int, server: any Channel, state: consuming Mutex<State>) {
        self.port = port
        self.upstreamHost = upstreamHost
        self.upstreamPort = upstreamPort
        self.server = server
        self.state = state
    }

    /// Starts a proxy on a free loopback port that forwards to `host:port`.
    public static func start(forwardingTo host: String, port upstreamPort: Int, on group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton)
        async throws -> FaultProxy
    {
        let box = ProxyBox()
        let server = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.autoRead, value: false)
            .childChannelInitializer { inbound in
                // The server is dialled once the client's connection is active: a channel whose
                // reads are switched on before it is active never starts reading.
                inbound.eventLoop.makeCompletedFuture {
                    try inbound.pipeline.syncOperations.addHandler(ActivationHandler { box.proxy?.accepted(inbound) })
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        guard let port = server.localAddress?.port else { throw ProxyError("the proxy could not bind a loopback port") }
        let proxy = FaultProxy(port: port, upstreamHost: host, upstreamPort: upstreamPort, server: server, state: Mutex(State()))
        box.proxy = proxy
        return proxy
    }

    /// The current mode.
    public var mode: Mode { state.withLock { $0.mode } }

    /// How many connections the proxy has accepted so far.
    public var acceptedConnections: Int { state.withLock { $0.accepted } }

    /// How many connections are open through the proxy now.
    public var openConnections: Int { state.withLock { $0.pairs.count } }

    /// Forwards bytes again as they arrive.
    public func pass() { set(.pass) }

    /// Stops every byte in both directions, on open and new connections, until the mode changes.
    public func stall() { set(.stall) }

    /// Holds every chunk for `delay` before passing it on.
    public func delay(_ delay: Duration) { set(.delay(delay)) }

    /// Resets every open connection on both sides (an RST, as a dropped route or a restarted
    /// firewall gives); returns how many were cut. New connections are accepted as before.
    @discardableResult
    public func cut() -> Int {
        let pairs = state.withLock { state in
            defer {
                state.pairs = [:]
                state.cuts += 1
            }
            return Array(state.pairs.values)
        }
        for pair in pairs { pair.reset() }
        return pairs.count
    }

    /// Stops listening and closes every connection.
    public func close() async {
        cut()
        try? await server.close()
    }

    private func set(_ mode: Mode) {
        let pairs = state.withLock { state in
            state.mode = mode
            return Array(state.pairs.values)
        }
        for pair in pairs { pair.apply(mode) }
    }

    fileprivate func accepted(_ inbound: any Channel) {
        let mode = state.withLock { state in
            state.accepted += 1
            return state.mode
        }
        let pair = ConnectionPair(inbound: inbound, mode: mode)
        state.withLock { $0.pairs[ObjectIdentifier(pair)] = pair }
        inbound.closeFuture.whenComplete { [self] _ in
            _ = state.withLock { $0.pairs.removeValue(forKey: ObjectIdentifier(pair)) }
            pair.reset()
        }
        ClientBootstrap(group: inbound.eventLoop)
            .channelOption(.autoRead, value: false)
            .connect(host: upstreamHost, port: upstreamPort)
            .whenComplete { result in
                switch result {
                case .success(let outbound): pair.connected(outbound, mode: self.mode)
                case .failure: pair.reset()
                }
            }
    }
}

/// A client connection and its connection to the server.
final class ConnectionPair: Sendable {
    let inbound: any Channel
    private let outbound = Mutex<(any Channel)?>(nil)

    init(inbound: any Channel, mode: FaultProxy.Mode) {
        self.inbound = inbound
    }

    func connected(_ outbound: any Channel, mode: FaultProxy.Mode) {
        self.outbound.withLock { $0 = outbound }
        let forward = ForwardingHandler(partner: outbound, delay: Self.delay(of: mode))
        let backward = ForwardingHandler(partner: inbound, delay: Self.delay(of: mode))
        do {
            try inbound.pipeline.syncOperations.addHandler(forward)
        } catch {
            reset()
            return
        }
        outbound.pipeline.addHandler(backward).whenComplete { [self] result in
            guard case .success = result else { return reset() }
            outbound.closeFuture.whenComplete { [self] _ in reset() }
            apply(mode)
        }
    }

    /// Sets how bytes flow on both connections.
    func apply(_ mode: FaultProxy.Mode) {
        let channels = [inbound] + (outbound.withLock { $0 }.map { [$0] } ?? [])
        for channel in channels {
            channel.eventLoop.execute {
                if let handler = try? channel.pipeline.syncOperations.handler(type: ForwardingHandler.self) {
                    handler.delay = Self.delay(of: mode)
                }
                _ = channel.setOption(.autoRead, value: mode != .stall)
                if mode != .stall { channel.read() }
            }
        }
    }

    /// Closes both connections with an RST.
    func reset() {
        for channel in [inbound] + (outbound.withLock { $0 }.map { [$0] } ?? []) {
            // A zero linger time makes the close an RST instead of an orderly FIN.
            guard let options = channel as? any SocketOptionProvider else {
                channel.close(promise: nil)
                continue
            }
            options.setSoLinger(linger(l_onoff: 1, l_linger: 0)).whenComplete { _ in channel.close(promise: nil) }
        }
    }

    static func delay(of mode: FaultProxy.Mode) -> TimeAmount {
        guard case .delay(let duration) = mode else { return .zero }
        let (seconds, attoseconds) = duration.components
        return .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}

/// Writes what one side reads to the other, after the proxy's delay, in order.
final class ForwardingHandler: ChannelInboundHandler, @unchecked Sendable {
    // Used on the channel's event loop only; `@unchecked` because handlers cross to it once.
    typealias InboundIn = ByteBuffer

    let partner: any Channel
    var delay: TimeAmount

    init(partner: any Channel, delay: TimeAmount) {
        self.partner = partner
        self.delay = delay
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        let partner = partner
        if delay == .zero {
            partner.writeAndFlush(buffer, promise: nil)
        } else {
            // Same delay on one event loop: chunks keep their order.
            context.eventLoop.scheduleTask(in: delay) { partner.writeAndFlush(buffer, promise: nil) }
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        partner.close(promise: nil)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}

/// Calls back once when the client's connection becomes active.
final class ActivationHandler: ChannelInboundHandler, RemovableChannelHandler, @unchecked Sendable {
    // Used on the channel's event loop only.
    typealias InboundIn = ByteBuffer
    private var activated: (() -> Void)?

    init(_ activated: @escaping () -> Void) {
        self.activated = activated
    }

    func channelActive(context: ChannelHandlerContext) {
        activated?()
        activated = nil
        context.fireChannelActive()
    }
}

/// Hands the proxy to the accept handler, which is built before the proxy knows its port.
private final class ProxyBox: Sendable {
    private let stored = Mutex<FaultProxy?>(nil)
    var proxy: FaultProxy? {
        get { stored.withLock { $0 } }
        set { stored.withLock { $0 = newValue } }
    }
}

/// The proxy could not start.
public struct ProxyError: Error, CustomStringConvertible {
    /// The only failure: no loopback port could be bound (`cannotBind`).
    public let code = "cannotBind"
    public var description: String
    init(_ description: String) { self.description = description }
}
