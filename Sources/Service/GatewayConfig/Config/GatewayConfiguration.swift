import Foundation
import GatewayCore
import Yams

/// A loaded and checked `config.yaml`: everything the gateway needs before it touches a store.
///
/// Loading reads the file and checks it, and writes nothing: a broken config leaves no trace.
public struct GatewayConfiguration: Sendable {
    /// The config file as the user named it (messages use this form).
    public var file: String
    /// The `gateway:` section.
    public var settings: GatewaySettings
    /// Paths for kinds: the config's folder and the resolved `state_dir`.
    public var context: ConfigContext
    /// The `cloud:` section.
    public var cloud: CloudConfiguration
    /// The `encryption:` section.
    public var encryption: EncryptionSettings
    /// The `adapters:` list, in order, less the templates.
    public var adapters: [AdapterConfiguration]
    /// The entries of `adapters:` with `database: shared`, in order.
    public var sharedTemplates: [SharedAdapterTemplate] = []
    /// Merge resolvers by name, from the registry.
    public var resolvers: [String: any ConflictResolver]
    /// The `resolvers:` section: resolver processes by name.
    public var resolverProcesses: [String: ProcessSettings] = [:]
    /// The `processors:` section: processor processes by name, and what starts them.
    public var processorProcesses = ProcessorProcesses()
    /// What starts ``resolverProcesses``, from the registry.
    public var resolverStarter: (any ResolverProcessStarter)?
    /// The keys of `encryption.keys`, read from their files or variables; `nil` without keys.
    public var keyRing: KeyRing?
    /// The `endpoint:` section, for `gateway cloud serve`; `nil` when the config has none.
    public var endpoint: EndpointSettings?

    /// Reads, decodes and checks a config file.
    /// - Parameters:
    ///   - file: the path as given; relative paths inside the file are resolved against its folder.
    ///   - environment: the variables `${VAR}` expands from.
    /// - Throws: ``ConfigError`` naming the file, line and column.
    public static func load(
        file: String, registry: GatewayRegistry, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws -> GatewayConfiguration {
        let url = URL(fileURLWithPath: file)
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            var isDirectory: ObjCBool = false
            let exists = FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory)
            let reason = !exists ? "it does not exist" : isDirectory.boolValue ? "it is a folder, not a file" : "it cannot be read (check its permissions)"
            throw ConfigError(
                .unreadableFile, "\(file): cannot read the configuration: \(reason); pass --config PATH or run `gateway init`",
                underlying: error)
        }
        guard let text = String(data: data, encoding: .utf8) else {
            throw ConfigError(.invalidYAML, "\(file): the configuration is not UTF-8 text")
        }
        return try parse(
            yaml: text, file: file, baseDirectory: url.deletingLastPathComponent().path, registry: registry,
            environment: environment)
    }

    /// Decodes and checks config text.
    public static func parse(
        yaml text: String, file: String, baseDirectory: String, registry: GatewayRegistry, environment: [String: String]
    ) throws -> GatewayConfiguration {
        let (configuration, session) = try decode(
            yaml: text, file: file, baseDirectory: baseDirectory, registry: registry, environment: environment)
        if let unknown = session.firstUnknownKey() { throw unknown }
        try ConfigurationChecks(configuration: configuration, registry: registry).run()
        return configuration
    }

    /// The keys the decoder accepts at each mapping of the config text, by path (such as
    /// `adapters[0].tables[0]`): every key the types there asked for, present or not. What the
    /// documentation of the keys is checked against.
    static func acceptedKeys(
        yaml text: String, file: String, baseDirectory: String, registry: GatewayRegistry, environment: [String: String]
    ) throws -> [String: Set<String>] {
        try decode(yaml: text, file: file, baseDirectory: baseDirectory, registry: registry, environment: environment).1.queriedKeys
    }

    private static func decode(
        yaml text: String, file: String, baseDirectory: String, registry: GatewayRegistry, environment: [String: String]
    ) throws -> (GatewayConfiguration, ConfigDecodingSession) {
        let root: Node
        do {
            guard let node = try Yams.compose(yaml: text) else {
                throw ConfigError(.invalidYAML, "\(file): the configuration is empty; run `gateway init` for a starter")
            }
            root = node
        } catch let error as YamlError {
            throw Self.yamlError(error, file: file)
        }
        let session = ConfigDecodingSession(file: file, environment: environment)
        let decoder = ConfigNodeDecoder(node: root, codingPath: [], session: session, fallbackMark: root.mark)
        do {
            let configuration = try ConfigurationReader(
                file: file, baseDirectory: baseDirectory, registry: registry, environment: environment
            ).read(decoder)
            return (configuration, session)
        } catch let error as ConfigError {
            // A misspelt key often surfaces first as a missing or wrongly typed neighbour; the
            // unknown key is the better report when it looks like a typo and comes earlier. Other
            // unknown keys may simply not have been asked for yet when decoding stopped.
            if let unknown = session.firstUnknownKey(withSuggestionOnly: true), Self.comesBefore(unknown, error) {
                throw unknown
            }
            throw error
        }
    }

    private static func comesBefore(_ a: ConfigError, _ b: ConfigError) -> Bool {
        guard let left = a.location else { return false }
        guard let right = b.location else { return true }
        return (left.line, left.column) <= (right.line, right.column)
    }

    static func yamlError(_ error: YamlError, file: String) -> ConfigError {
        func at(_ mark: Mark) -> ConfigLocation { ConfigLocation(file: file, line: mark.line, column: mark.column) }
        switch error {
        case .scanner(let context, let problem, let mark, _), .parser(let context, let problem, let mark, _),
            .composer(let context, let problem, let mark, _):
            let detail = context.map { "\(problem) \($0.text)" } ?? problem
            return ConfigError(.invalidYAML, "invalid YAML: \(detail)", at: at(mark), underlying: error)
        case .duplicatedKeysInMapping(let duplicates, let context):
            let keys = duplicates.sorted().map { "'\($0)'" }.joined(separator: ", ")
            return ConfigError(.invalidYAML, "key \(keys) appears twice in one mapping", at: at(context.mark), underlying: error)
        case .reader(let problem, _, _, _):
            return ConfigError(.invalidYAML, "\(file): invalid YAML: \(problem)", underlying: error)
        default:
            return ConfigError(.invalidYAML, "\(file): invalid YAML", underlying: error)
        }
    }

    /// The ``SyncConfiguration`` for a synchronizer of this config, with the resolver processes
    /// of ``startResolverProcesses()``.
    public func syncConfiguration(deviceID: String, batchResolvers: [String: any BatchConflictResolver] = [:]) -> SyncConfiguration {
        var configuration = SyncConfiguration(
            compatibilityVersion: settings.compatibilityVersion, deviceID: deviceID, fetchLimit: settings.fetchLimit.value,
            retry: settings.retry.policy,
            resolvers: resolvers, batchResolvers: batchResolvers, parallelism: settings.parallelism(adapterCount: adapters.count),
            stallTimeout: settings.stallTimeout.duration > .zero ? settings.stallTimeout.duration : nil,
            stopTimeout: settings.shutdownTimeout.duration)
        configuration.refusedEditsDirectory = settings.refusedEdits == .restore ? refusedEditsDirectory : nil
        return configuration
    }

    /// Where the local edits a read-only share refused are kept (`<state_dir>/refused`), one
    /// JSON-lines file per adapter.
    public var refusedEditsDirectory: String {
        URL(fileURLWithPath: context.stateDirectory).appendingPathComponent("refused").path
    }

    /// A resolver for each entry of `resolvers:`; each starts its process when first asked, and
    /// stops it when closed.
    public func startResolverProcesses() -> [String: any BatchConflictResolver] {
        guard let resolverStarter else { return [:] }
        return resolverProcesses.mapValues { resolverStarter.resolver(for: $0) }
    }

    /// The upload batch size when `batch_size` is not set: as many operations as the cloud takes
    /// in one request. Fewer, larger rounds cost less per record (measured with the embedded
    /// cloud, SQLite to SQLite, 100,000 rows: 400 instead of 200 took 9–13% less wall time).
    public var defaultBatchSize: Int { cloud.plan.limits.maxOperationsPerRequest }

    /// The sync options of one adapter: its overrides on top of the gateway's settings.
    public func syncOptions(for adapter: AdapterConfiguration) -> AdapterSyncOptions {
        let base = settings.merge.applied(to: MergeSettings())
        let merge = adapter.settings.merge.applied(to: base)
        var byType: [String: MergeSettings] = [:]
        for recordType in adapter.plan.recordTypes where !recordType.merge.isEmpty {
            byType[recordType.recordType] = recordType.merge.applied(to: merge)
        }
        // Keys are given to every adapter: a field another store encrypts is decrypted here too.
        // A field any store of the zone encrypts is encrypted by each of them: a store whose
        // entry left it out would otherwise upload it in clear.
        let zoneStores = [adapter] + adapters.filter { $0.settings.zoneID == adapter.settings.zoneID && $0.name != adapter.name }
        let encryption = keyRing.map { ring in
            FieldEncryption(
                keyRing: ring,
                fields: Dictionary(
                    zoneStores.flatMap(\.plan.recordTypes).map { ($0.recordType, Set($0.encrypted.map(\.value))) }, uniquingKeysWith: { $0.union($1) }))
        }
        var assets = AssetSettings(forceData: adapter.settings.forceData ?? settings.forceData)
        for recordType in adapter.plan.recordTypes {
            if let forceData = recordType.forceData { assets.forceDataByRecordType[recordType.recordType] = forceData }
            if !recordType.assets.isEmpty {
                assets.assetFields[recordType.recordType, default: []].formUnion(recordType.assets.map(\.value))
            }
            // A file's contents travel as an asset, whatever `force_data` says.
            for case .fileReference(let field, _) in recordType.processors {
                assets.assetFields[recordType.recordType, default: []].insert(field.value)
            }
        }
        return AdapterSyncOptions(
            batchSize: adapter.settings.batchSize?.value ?? settings.batchSize?.value ?? defaultBatchSize, merge: merge, mergeByRecordType: byType,
            onZoneDeleted: adapter.settings.onZoneDeleted ?? settings.onZoneDeleted, encryption: encryption, assets: assets,
            joinPrefers: adapter.settings.joinPrefers ?? settings.joinPrefers,
            fetchLimit: adapter.settings.fetchLimit?.value ?? adapter.plan.largestDownloadPage.map { min($0, settings.fetchLimit.value) })
    }

    /// The adapter named `name`.
    public func adapter(named name: String) -> AdapterConfiguration? {
        adapters.first { $0.name == name }
    }
}

/// The `cloud:` section: which kind, and the kind's decoded plan.
public struct CloudConfiguration: Sendable {
    /// `kind`: which registered ``CloudKind`` handles the section.
    public var kind: String
    /// The kind's decoded keys.
    public var plan: any CloudPlan
    /// `user`: the user record name the gateway acts as, for kinds that keep users
    /// (``CloudPlan/keepsUsers``); `nil` for ``CloudUsers/defaultUser``.
    public var user: Located<String>?

    /// The user the gateway acts as.
    public var actingUser: String { user?.value ?? CloudUsers.defaultUser }
}

/// One entry of `adapters:`.
public struct AdapterConfiguration: Sendable {
    public var settings: AdapterSettings
    public var plan: any AdapterPlan
    /// The paths its settings are relative to.
    public var context: ConfigContext
    /// The config's processor processes, for `processors` entries of `kind: process`.
    public var processorProcesses: ProcessorProcesses
    public var name: String { settings.name.value }

    /// An entry of `adapters:`.
    public init(settings: AdapterSettings, plan: any AdapterPlan, context: ConfigContext, processorProcesses: ProcessorProcesses = ProcessorProcesses()) {
        self.settings = settings
        self.plan = plan
        self.context = context
        self.processorProcesses = processorProcesses
    }

    /// Opens the store (``AdapterPlan/open()``), behind its record types' and its own
    /// `processors` when it has any (``ProcessingAdapter``). Each opening runs processes of its
    /// own, stopped when the adapter closes.
    public func openStore() async throws -> any ModelAdapter {
        let adapter = try await plan.open()
        var processors: [String: [any RecordProcessor]] = [:]
        for recordType in plan.recordTypes where !recordType.processors.isEmpty {
            processors[recordType.recordType, default: []] += recordType.processors.map {
                $0.processor(context: context, processes: processorProcesses)
            }
        }
        let everyType = settings.processors.map { $0.processor(context: context, processes: processorProcesses) }
        return processors.isEmpty && everyType.isEmpty ? adapter : ProcessingAdapter(adapter, processors: processors, everyType: everyType)
    }
}

/// Walks the root mapping in dependency order: `gateway` first (its `state_dir` is needed to
/// resolve the others), then `cloud`, `encryption` and `adapters`.
struct ConfigurationReader {
    let file: String
    let baseDirectory: String
    let registry: GatewayRegistry
    let environment: [String: String]

    enum RootKeys: String, CodingKey { case gateway, cloud, encryption, adapters, endpoint, resolvers, processors }
    enum KindKey: String, CodingKey { case kind, user }

    func read(_ decoder: ConfigNodeDecoder) throws -> GatewayConfiguration {
        let root = try decoder.container(keyedBy: RootKeys.self)
        let settings = try root.decodeIfPresent(GatewaySettings.self, forKey: .gateway) ?? GatewaySettings()
        let context = ConfigContext(baseDirectory: baseDirectory, stateDirectory: settings.stateDirectory.value)

        let cloudDecoder = try root.superDecoder(forKey: .cloud)
        let cloudKind = try cloudDecoder.container(keyedBy: KindKey.self).decodeIfPresent(Located<String>.self, forKey: .kind)
        let kindName = cloudKind?.value ?? "embedded"
        guard let kind = registry.cloudKinds[kindName] else {
            let known = registry.cloudKinds.keys.sorted()
            throw (cloudKind ?? Located(kindName)).problem(
                .unknownKind,
                "unknown cloud kind '\(kindName)'; this build has \(known.joined(separator: ", "))\(KeySuggestion.hint(for: kindName, in: known))")
        }
        let user = try cloudDecoder.container(keyedBy: KindKey.self).decodeIfPresent(Located<String>.self, forKey: .user)
        let plan = try kind.decodePlan(from: cloudDecoder, context: context)
        if let user {
            guard plan.keepsUsers else {
                throw user.problem(
                    .unsupported, "a \(kindName) cloud acts as the user its credentials belong to; remove 'user' (it names a user of an embedded or postgres cloud)")
            }
            guard CloudUsers.isValidUserName(user.value) else {
                throw user.problem(.invalidValue, "a user record name is 1 to 255 bytes and not \(ZoneID.defaultOwnerName)")
            }
        }
        let cloud = CloudConfiguration(kind: kindName, plan: plan, user: user)

        let encryption = try root.decodeIfPresent(EncryptionSettings.self, forKey: .encryption) ?? EncryptionSettings()
        let keyRing = try encryption.keys.isEmpty ? nil : KeyRing(encryption.keys.map { try $0.load(context: context, environment: environment) })

        let processorSettings =
            try root.decodeNil(forKey: .processors)
            ? [:] : try ProcessSettingsReader(context: context, batchKey: .maxRecordsPerMessage).read(root.superDecoder(forKey: .processors))
        let processorProcesses = ProcessorProcesses(settings: processorSettings, starter: registry.processorStarter)
        var adapters: [AdapterConfiguration] = []
        var templates: [SharedAdapterTemplate] = []
        if try !root.decodeNil(forKey: .adapters) {
            var list = try root.nestedUnkeyedContainer(forKey: .adapters)
            while !list.isAtEnd {
                let entry = try list.superDecoder()
                let settings = try AdapterSettings(from: entry)
                guard let kind = registry.adapterKinds[settings.kind.value] else {
                    let known = registry.adapterKinds.keys.sorted()
                    throw settings.kind.problem(
                        .unknownKind,
                        "unknown adapter kind '\(settings.kind.value)'; this build has \(known.joined(separator: ", "))"
                            + KeySuggestion.hint(for: settings.kind.value, in: known))
                }
                if settings.database == .shared {
                    templates.append(
                        try SharedAdapterTemplate.read(
                            entry: entry, settings: settings, kind: kind, context: context, file: file, environment: environment,
                            processorProcesses: processorProcesses))
                    continue
                }
                let plan = try kind.decodePlan(settings: settings, from: entry, context: context)
                adapters.append(AdapterConfiguration(settings: settings, plan: plan, context: context, processorProcesses: processorProcesses))
            }
        }
        var endpoint = try root.decodeIfPresent(EndpointSettings.self, forKey: .endpoint)
        try endpoint?.load(context: context, environment: environment)
        let resolverProcesses =
            try root.decodeNil(forKey: .resolvers)
            ? [:] : try ProcessSettingsReader(context: context, batchKey: .maxConflictsPerMessage).read(root.superDecoder(forKey: .resolvers))
        var configuration = GatewayConfiguration(
            file: file, settings: settings, context: context, cloud: cloud, encryption: encryption, adapters: adapters,
            resolvers: registry.resolvers, keyRing: keyRing, endpoint: endpoint)
        configuration.resolverProcesses = resolverProcesses
        configuration.sharedTemplates = templates
        configuration.resolverStarter = registry.resolverStarter
        configuration.processorProcesses = processorProcesses
        return configuration
    }
}
