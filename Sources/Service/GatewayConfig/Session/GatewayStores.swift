import Foundation
import GatewayCore

/// An adapter opened from its config entry.
public struct OpenedAdapter: Sendable {
    public var configuration: AdapterConfiguration
    public var adapter: any ModelAdapter
    public var name: String { configuration.name }
}

/// Opens what a config describes: its state folder, its cloud and its adapters.
public enum GatewayStores {
    /// Creates `state_dir` when it does not exist yet.
    public static func prepareStateDirectory(_ configuration: GatewayConfiguration) throws {
        let path = configuration.context.stateDirectory
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else {
                throw GatewayError(.stateUnavailable, "state_dir \(path) is a file; point gateway.state_dir at a folder")
            }
            return
        }
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        } catch {
            throw GatewayError(.stateUnavailable, "cannot create state_dir \(path): \(error.localizedDescription)", underlying: error)
        }
    }

    /// The configured adapters, or those named, in config order.
    /// - Throws: ``GatewayError/Code/unknownAdapter`` for a name the config does not have.
    public static func select(_ names: [String], in configuration: GatewayConfiguration) throws -> [AdapterConfiguration] {
        guard !names.isEmpty else { return configuration.adapters }
        let known = configuration.adapters.map(\.name)
        for name in names where !known.contains(name) {
            throw GatewayError(
                .unknownAdapter,
                "\(configuration.file) has no adapter named '\(name)'; its adapters are \(known.joined(separator: ", "))"
                    + KeySuggestion.hint(for: name, in: known))
        }
        return configuration.adapters.filter { names.contains($0.name) }
    }

    /// Checks the cloud and the adapters without changing anything, so a store that does not
    /// match the config is reported before the gateway writes a byte (its state folder included).
    /// - Parameter beforeOpening: whether the adapters are opened next
    ///   (``AdapterPlan/checkBeforeOpening()``: a plugin checked is kept running for its open).
    /// - Throws: ``ConfigError`` for a mismatch; ``GatewayError`` for a store or cloud that
    ///   cannot be reached.
    public static func check(
        _ configuration: GatewayConfiguration, adapters: [AdapterConfiguration], cloud: Bool, beforeOpening: Bool = false
    ) async throws {
        if cloud {
            try await passingThrough(.cloudUnavailable, { "the \(configuration.cloud.kind) cloud: \($0)" }) {
                try await configuration.cloud.plan.check()
            }
        }
        for adapter in adapters {
            try await passingThrough(.storeUnavailable, { "adapter \(adapter.name): \(detail(of: $0, adapter: adapter.name))" }) {
                try await beforeOpening ? adapter.plan.checkBeforeOpening() : adapter.plan.check()
            }
        }
    }

    /// Starts and greets each resolver and processor process of the config, then stops it.
    /// - Throws: ``GatewayError`` with ``GatewayError/Code/storeUnavailable`` naming the resolver.
    public static func checkResolvers(_ configuration: GatewayConfiguration) async throws {
        // Each failure names the entry's place in the config, where its command is.
        func place(_ settings: ProcessSettings) -> String { settings.location.map { "\($0): " } ?? "" }
        if let starter = configuration.resolverStarter {
            for settings in configuration.resolverProcesses.values.sorted(by: { $0.name < $1.name }) {
                try await passingThrough(.storeUnavailable, { "\(place(settings))\($0)" }) { try await starter.check(settings) }
            }
        }
        if let starter = configuration.processorProcesses.starter {
            for settings in configuration.processorProcesses.settings.values.sorted(by: { $0.name < $1.name }) {
                try await passingThrough(.storeUnavailable, { "\(place(settings))\($0)" }) { try await starter.check(settings) }
            }
        }
    }

    /// Opens adapters in order.
    /// - Throws: ``ConfigError`` when a store does not match the config; ``GatewayError`` with
    ///   ``GatewayError/Code/storeUnavailable`` when it cannot be opened.
    public static func open(_ adapters: [AdapterConfiguration]) async throws -> [OpenedAdapter] {
        var opened: [OpenedAdapter] = []
        for configuration in adapters {
            do {
                opened.append(OpenedAdapter(configuration: configuration, adapter: try await configuration.openStore()))
            } catch let error as ConfigError {
                throw error
            } catch {
                throw GatewayError(
                    .storeUnavailable, "adapter \(configuration.name): cannot open its store: \(detail(of: error, adapter: configuration.name))",
                    underlying: error)
            }
        }
        return opened
    }

    /// Reads what `gateway status` shows of one adapter's store (``AdapterPlan/readStatus()``).
    /// - Throws: ``ConfigError`` when the store does not match the config; ``GatewayError``
    ///   with ``GatewayError/Code/storeUnavailable`` when it cannot be read.
    public static func readStatus(_ adapter: AdapterConfiguration, in configuration: GatewayConfiguration) async throws -> AdapterStatus {
        try await passingThrough(.storeUnavailable, { "adapter \(adapter.name): cannot read its status: \(detail(of: $0, adapter: adapter.name))" }) {
            try AdapterStatus(adapter, snapshot: try await adapter.plan.readStatus(), configuration: configuration)
        }
    }

    /// Runs `body` for every adapter at once, and returns each outcome in the adapters' order.
    static func forEach<T: Sendable>(
        _ adapters: [AdapterConfiguration], _ body: @escaping @Sendable (AdapterConfiguration) async throws -> T
    ) async -> [Result<T, any Error>] {
        await withTaskGroup(of: (Int, Result<T, any Error>).self) { group in
            for (index, adapter) in adapters.enumerated() {
                group.addTask {
                    do {
                        return (index, .success(try await body(adapter)))
                    } catch {
                        return (index, .failure(error))
                    }
                }
            }
            var outcomes = [Result<T, any Error>?](repeating: nil, count: adapters.count)
            for await (index, outcome) in group { outcomes[index] = outcome }
            return outcomes.map { $0! }
        }
    }

    /// Opens the cloud.
    public static func openCloud(_ configuration: GatewayConfiguration) async throws -> any CloudDatabase {
        let store = try await openCloudStore(configuration)
        guard configuration.cloud.plan.keepsUsers else { return store }
        return CloudUsers(store: store).database(for: configuration.cloud.actingUser, scope: nil)
    }

    /// The cloud as its plan opens it: for a cloud that keeps users, every user's zones
    /// (what `gateway cloud serve` and `gateway share` work on).
    public static func openCloudStore(_ configuration: GatewayConfiguration) async throws -> any CloudDatabase {
        // A cloud error's message says what happened; its code and cause stay in `underlying`.
        try await passingThrough(.cloudUnavailable, { "cannot open the \(configuration.cloud.kind) cloud: \(($0 as? CloudError)?.message ?? "\($0)")" }) {
            try await configuration.cloud.plan.open()
        }
    }

    /// Takes the cloud's lock on this gateway's state, when the cloud has one.
    public static func lockGatewayState(_ configuration: GatewayConfiguration, deviceID: String) async throws -> (any GatewayStateLock)? {
        try await passingThrough(.cloudUnavailable, { "cannot lock the gateway's state in the \(configuration.cloud.kind) cloud: \($0)" }) {
            try await configuration.cloud.plan.lockGatewayState(deviceID: deviceID)
        }
    }

    /// Runs `body`, letting ``ConfigError`` and ``GatewayError`` through as they are (they say
    /// what happened already) and wrapping any other error in a ``GatewayError`` with `code` and
    /// the message `describe` makes of it.
    /// An adapter's error as text, without the `adapter NAME: ` its store's message may start
    /// with already (the caller names the adapter).
    static func detail(of error: any Error, adapter name: String) -> String {
        let described = "\(error)"
        let prefix = "adapter \(name): "
        return described.hasPrefix(prefix) ? String(described.dropFirst(prefix.count)) : described
    }

    private static func passingThrough<T>(
        _ code: GatewayErrorCode, _ describe: (any Error) -> String, _ body: () async throws -> T
    ) async throws -> T {
        do {
            return try await body()
        } catch let error as ConfigError {
            throw error
        } catch let error as GatewayError {
            throw error
        } catch {
            throw GatewayError(code, describe(error), underlying: error)
        }
    }
}
