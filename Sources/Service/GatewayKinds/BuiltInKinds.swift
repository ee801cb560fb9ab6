import CloudKitWeb
import EmbeddedCloud
import GatewayConfig
import JSONFilesAdapter
import PluginAdapter
import PostgresAdapter
import PostgresCloud
import SQLiteAdapter

extension GatewayRegistry {
    /// The kinds this package ships: adapters `sqlite`, `postgres`, `json` and `plugin`; clouds
    /// `embedded`, `postgres` and `cloudkit`; resolver and processor processes speaking the plugin
    /// protocol's framing.
    public static var builtIn: GatewayRegistry {
        var registry = GatewayRegistry()
        registry.register(SQLiteAdapterKind())
        registry.register(PostgresAdapterKind())
        registry.register(JSONFilesAdapterKind())
        registry.register(PluginAdapterKind())
        registry.register(EmbeddedCloudKind())
        registry.register(PostgresCloudKind())
        registry.register(CloudKitCloudKind())
        registry.register(resolverStarter: PluginResolverStarter())
        registry.register(processorStarter: PluginProcessorStarter())
        return registry
    }
}
