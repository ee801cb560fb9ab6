import GatewayConfig

extension GatewayRegistry {
    /// The kinds this package ships: adapters `sqlite`, `postgres`, `json` and `plugin`; clouds `embedded`
    /// and `postgres`.
    public static var builtIn: GatewayRegistry {
        var registry = GatewayRegistry()
        registry.register(SQLiteAdapterKind())
        registry.register(PostgresAdapterKind())
        registry.register(JSONFilesAdapterKind())
        registry.register(PluginAdapterKind())
        registry.register(EmbeddedCloudKind())
        registry.register(PostgresCloudKind())
        registry.register(CloudKitCloudKind())
        return registry
    }
}
