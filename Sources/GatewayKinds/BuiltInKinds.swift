import GatewayService

extension GatewayRegistry {
    /// The kinds this package ships: adapters `sqlite` and `json`; clouds `embedded`.
    public static var builtIn: GatewayRegistry {
        var registry = GatewayRegistry()
        registry.register(SQLiteAdapterKind())
        registry.register(JSONFilesAdapterKind())
        registry.register(EmbeddedCloudKind())
        return registry
    }
}
