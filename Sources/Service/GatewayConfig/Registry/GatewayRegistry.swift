import GatewayCore

/// The adapter kinds, cloud kinds and merge resolvers a gateway build knows, by name.
///
/// `GatewayRegistry.builtIn` (module `GatewayKinds`) has what this package ships; a custom build registers more before
/// loading the config:
/// ```swift
/// var registry = GatewayRegistry.builtIn
/// registry.register(MyAdapterKind())
/// registry.register(resolver: NewestWins(), named: "newest-wins")
/// ```
public struct GatewayRegistry: Sendable {
    public private(set) var adapterKinds: [String: any AdapterKind] = [:]
    public private(set) var cloudKinds: [String: any CloudKind] = [:]
    /// Resolvers for `merge_policy: custom`, named by `merge_resolver`.
    public private(set) var resolvers: [String: any ConflictResolver] = [:]
    /// What starts the config's `resolvers:` (resolver processes); `nil` refuses them.
    public private(set) var resolverStarter: (any ResolverProcessStarter)?
    /// What starts the config's `processors:` (processor processes); `nil` refuses them.
    public private(set) var processorStarter: (any ProcessorProcessStarter)?

    public init() {}

    /// Adds an adapter kind; a later registration of the same name replaces the earlier.
    public mutating func register(_ kind: any AdapterKind) { adapterKinds[kind.name] = kind }

    /// Adds a cloud kind; a later registration of the same name replaces the earlier.
    public mutating func register(_ kind: any CloudKind) { cloudKinds[kind.name] = kind }

    /// Adds a merge resolver under `name`.
    public mutating func register(resolver: any ConflictResolver, named name: String) { resolvers[name] = resolver }

    /// Sets what starts the config's resolver processes.
    public mutating func register(resolverStarter: any ResolverProcessStarter) { self.resolverStarter = resolverStarter }

    /// Sets what starts the config's processor processes.
    public mutating func register(processorStarter: any ProcessorProcessStarter) { self.processorStarter = processorStarter }
}
