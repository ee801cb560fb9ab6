import GatewayService

extension GatewayRegistry {
    /// The kinds this package ships: adapters `sqlite`; clouds `embedded`.
    public static var builtIn: GatewayRegistry {
        var registry = GatewayRegistry()
        registry.register(SQLiteAdapterKind())
        registry.register(EmbeddedCloudKind())
        return registry
    }
}
