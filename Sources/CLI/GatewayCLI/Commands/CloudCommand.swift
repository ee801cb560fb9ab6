import ArgumentParser
import CloudKitServer
import CloudKitWeb
import Crypto
import Foundation
import GatewayCore
import GatewayConfig
import GatewayService
import Logging
import ServiceLifecycle

/// `gateway cloud …`: serving the configured cloud to other gateways over CloudKit Web Services.
struct CloudCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cloud", abstract: "Serve the configured cloud over CloudKit Web Services, and make keys for it.",
        subcommands: [CloudServeCommand.self, CloudKeygenCommand.self])
}

struct CloudServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve the config's cloud: section over CloudKit Web Services, as the endpoint: section says.",
        discussion: """
            Gateways elsewhere reach it with `cloud: kind: cloudkit`, `base_url` pointing here and a key listed under \
            endpoint.keys. SIGTERM or SIGINT stops it after the requests in flight.
            """)

    @OptionGroup var options: ConfigOptions

    func run() async throws {
        let configuration = try options.load()
        guard let settings = configuration.endpoint else {
            throw ConfigError(.inconsistent, "\(configuration.file): add an endpoint: section (container and keys) to serve the cloud")
        }
        guard configuration.cloud.kind != "cloudkit" else {
            throw ConfigError(.inconsistent, "\(configuration.file): the served cloud must be embedded or postgres, not another CloudKit service")
        }
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = .info
            return handler
        }
        let logger = Logger(label: "gateway-cloud")
        try GatewayStores.prepareStateDirectory(configuration)
        let cloud = try await GatewayStores.openCloudStore(configuration)
        var endpoint = try CloudKitEndpointConfiguration(settings: settings)
        endpoint.assetSigner = try Self.assetSigner(stateDirectory: configuration.context.stateDirectory)
        let notifier = CloudKitNotifier(
            cloud: cloud, logger: logger, webhooks: settings.webhooks.map { WebhookTarget(url: $0.url.value, secret: $0.secret) },
            container: settings.container, environment: settings.environment)
        let application = CloudKitEndpoint.application(
            cloud: cloud, configuration: endpoint, host: settings.host, port: settings.port, logger: logger, notifier: notifier,
            onServerRunning: { port in
                logger.info(
                    "serving the cloud over CloudKit Web Services",
                    metadata: [
                        "address": "\(settings.host):\(port)", "container": "\(settings.container)", "environment": "\(settings.environment)",
                        "cloud": "\(configuration.cloud.kind)",
                    ])
            })
        // Services stop in reverse order: the notifier ends the held long-polls, the server stops
        // answering, then the cloud closes.
        let group = ServiceGroup(
            services: [ResourceService("cloud") { await cloud.close() }, application, notifier], gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger)
        try await group.run()
    }
}

extension CloudServeCommand {
    /// The signer of asset URLs and receipts, with the key in `<state_dir>/endpoint-asset-key`
    /// (created on first use, mode 0600), so URLs and receipts handed out survive a restart.
    static func assetSigner(stateDirectory: String) throws -> AssetSigner {
        let path = URL(fileURLWithPath: stateDirectory).appendingPathComponent("endpoint-asset-key").path
        if !FileManager.default.fileExists(atPath: path) {
            do {
                try KeyFile.create(at: path)
            } catch let error as GatewayError where error.code == .fileExists {
                // Another endpoint created it meanwhile: it is read below.
            }
        }
        guard let key = KeyFile.key(at: path) else {
            throw GatewayError(
                .stateUnavailable, "\(path) cannot be read as the endpoint's asset key (the base64 of 32 bytes); remove it to have a new one made (asset URLs handed out stop working)")
        }
        return AssetSigner(key: key)
    }
}

extension CloudKitEndpointConfiguration {
    init(settings: EndpointSettings) throws {
        let keys = try settings.keys.map { key in
            try CloudKitSignatureVerifier.Key(keyID: key.keyID.value, publicKeyPEM: key.publicKeyPEM, userRecordName: key.user)
        }
        let registry = try settings.webTokens.map { tokens in
            try CloudKitWebTokenRegistry(
                apiTokens: [tokens.apiToken], seeds: tokens.initialTokens.map { .init(userRecordName: $0.user, initialToken: $0.token) },
                stateFile: tokens.stateFile)
        }
        self.init(
            container: settings.container, environment: settings.environment, keys: keys, webTokens: registry,
            maximumClockSkew: settings.maximumClockSkew, publicURL: settings.publicURL)
        publicWriters = settings.publicWriters.map(Set.init)
    }
}

struct CloudKeygenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keygen",
        abstract: "Write a new P-256 server-to-server key: PATH (private, mode 0600) and PATH.pub (public).",
        discussion: """
            The gateway signs with PATH (`private_key_file` of a cloudkit cloud); the endpoint lists PATH.pub under \
            endpoint.keys, or you paste it into CloudKit's dashboard. Existing files are never replaced.
            """)

    @Argument(help: "The private key file to write, such as .gateway/keys/cloudkit.pem.")
    var path: String

    func run() async throws {
        let key = P256.Signing.PrivateKey()
        let publicPath = path + ".pub"
        guard !FileManager.default.fileExists(atPath: publicPath) else {
            throw GatewayError(.fileExists, "\(publicPath) already exists; a key file is never replaced")
        }
        try KeyFile.createSecret(at: path, text: key.pemRepresentation + "\n")
        guard FileManager.default.createFile(atPath: publicPath, contents: Data((key.publicKey.pemRepresentation + "\n").utf8)) else {
            throw GatewayError(.stateUnavailable, "cannot write \(publicPath)")
        }
        Console.out(
            """
            wrote the private key \(path) (mode 0600) and the public key \(publicPath).
            On the gateway:   cloud: { kind: cloudkit, auth: server_to_server, key_id: <id>, private_key_file: \(path), ... }
            On the endpoint:  endpoint: { keys: [ { key_id: <id>, public_key_file: \(publicPath) } ], ... }

            """)
    }
}
