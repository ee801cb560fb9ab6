import NIOCore

/// Splits a plugin's output into lines (without the newline) and hands each to `onLine`; a line
/// longer than the limit, and the end of the output, go to `onFailure`/`onEnd` instead.
final class PluginLineHandler: ChannelInboundHandler, @unchecked Sendable {
    // @unchecked: NIO calls a handler only on its channel's event loop.
    typealias InboundIn = ByteBuffer

    private let maxLineBytes: Int
    private let onLine: @Sendable ([UInt8]) -> Void
    private let onOversized: @Sendable (Int) -> Void
    private let onEnd: @Sendable () -> Void
    private var pending: [UInt8] = []
    private var broken = false

    init(
        maxLineBytes: Int, onLine: @escaping @Sendable ([UInt8]) -> Void, onOversized: @escaping @Sendable (Int) -> Void,
        onEnd: @escaping @Sendable () -> Void
    ) {
        self.maxLineBytes = maxLineBytes
        self.onLine = onLine
        self.onOversized = onOversized
        self.onEnd = onEnd
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !broken else { return }
        let buffer = unwrapInboundIn(data)
        buffer.withUnsafeReadableBytes { bytes in
            var start = 0
            while let newline = bytes[start...].firstIndex(of: UInt8(ascii: "\n")) {
                let count = pending.count + newline - start
                guard count <= maxLineBytes else {
                    broken = true
                    onOversized(count)
                    return
                }
                if pending.isEmpty {
                    onLine(Array(bytes[start..<newline]))
                } else {
                    pending.append(contentsOf: bytes[start..<newline])
                    onLine(pending)
                    pending.removeAll(keepingCapacity: true)
                }
                start = newline + 1
            }
            pending.append(contentsOf: bytes[start...])
            if pending.count > maxLineBytes {
                broken = true
                onOversized(pending.count)
            }
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !broken && !pending.isEmpty { onLine(pending) }
        pending = []
        onEnd()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
