import ServiceLifecycle

/// Keeps something opened before the group started (a cloud, a store) for the group's other
/// services, and closes it when the group stops, gracefully or by cancellation. Put it first in
/// the group: services stop in reverse order, so the ones that use it have stopped by then.
public struct ResourceService: Service {
    /// What is held, for the group's log lines.
    public let name: String
    private let close: @Sendable () async -> Void

    /// - Parameter close: closes the resource; called once, when the group stops.
    public init(_ name: String, close: @escaping @Sendable () async -> Void) {
        self.name = name
        self.close = close
    }

    /// Waits for the group to stop, then closes the resource.
    public func run() async throws {
        // A cancelled wait throws; the resource is closed either way.
        try? await gracefulShutdown()
        await close()
    }
}
