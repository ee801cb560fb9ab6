import GatewayConfig
import GatewayCore
import Logging

/// Starts the config's `resolvers:` as ``PluginConflictResolver``s: processes speaking the
/// plugin protocol's framing with the `resolve` method.
public struct PluginResolverStarter: ResolverProcessStarter {
    public init() {}

    public func check(_ settings: ProcessSettings) async throws {
        let resolver = make(settings)
        do {
            try await resolver.checkStarts()
        } catch {
            await resolver.close()
            throw error
        }
        await resolver.close()
    }

    public func resolver(for settings: ProcessSettings) -> any BatchConflictResolver {
        make(settings)
    }

    private func make(_ settings: ProcessSettings) -> PluginConflictResolver {
        PluginConflictResolver(
            name: settings.name, configuration: PluginConfiguration(helper: settings, described: "resolver"), logger: Logger(label: "gateway.resolver"))
    }
}
