import GatewayConfig
import GatewayCore
import Logging

/// Starts the config's `resolvers:` as ``PluginConflictResolver``s: processes speaking the
/// plugin protocol's framing with the `resolve` method.
public struct PluginResolverStarter: ResolverProcessStarter {
    public init() {}

    public func check(_ settings: ResolverProcessSettings) async throws {
        let resolver = make(settings)
        do {
            try await resolver.checkStarts()
        } catch {
            await resolver.close()
            throw error
        }
        await resolver.close()
    }

    public func resolver(for settings: ResolverProcessSettings) -> any BatchConflictResolver {
        make(settings)
    }

    private func make(_ settings: ResolverProcessSettings) -> PluginConflictResolver {
        PluginConflictResolver(
            name: settings.name,
            configuration: PluginConfiguration(
                adapterName: "resolver \(settings.name)", zoneID: ZoneID(zoneName: "resolver"), command: settings.command, arguments: settings.arguments,
                environment: settings.environment, workingDirectory: settings.workingDirectory, settings: settings.settings,
                startTimeout: settings.startTimeout, requestTimeout: settings.requestTimeout, maxRecordsPerMessage: settings.maxConflictsPerMessage),
            logger: Logger(label: "gateway.resolver"))
    }
}
