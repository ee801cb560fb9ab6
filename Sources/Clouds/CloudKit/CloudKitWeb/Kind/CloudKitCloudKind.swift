import Foundation
import GatewayCore
import GatewayConfig

/// `kind: cloudkit`: CloudKit Web Services, on iCloud or on a `gateway cloud serve` endpoint.
///
/// Keys: `container` (required), `environment` (`development` or `production`; default
/// development), `database` (`private` or `shared`; `public` is refused because it has no zones
/// or change feed), `base_url` (default `https://api.apple-cloudkit.com`), `auth`
/// (`server_to_server` or `web_token`), for server-to-server `key_id` and `private_key_file` (a
/// P-256 key in PEM), for web tokens `api_token_env` (default `CLOUDKIT_API_TOKEN`) and
/// `web_auth_token_file` (default `<state_dir>/cloudkit-web-auth-token`, rewritten after every
/// request), `notifications` (default true: subscribe and long-poll the service's web courier,
/// polling only where it has none), `poll_interval` (default 10s: how often zones are polled
/// without notifications), `fallback_poll_interval` (default 5m: every zone is looked at this
/// often even while notifications arrive), `request_timeout` (default 60s), `asset_record_type`
/// and `asset_field` (default `GatewayAsset` and `data`), `requests_in_flight` (`records/modify`
/// requests an upload keeps in flight per zone, default 2), and `limits` (as for `embedded`).
public struct CloudKitCloudKind: CloudKind {
    public let name = "cloudkit"

    public init() {}

    enum Keys: String, CodingKey {
        case kind, container, environment, database, baseURL = "base_url", auth, keyID = "key_id"
        case privateKeyFile = "private_key_file", apiTokenEnv = "api_token_env", webAuthTokenFile = "web_auth_token_file"
        case pollInterval = "poll_interval", requestTimeout = "request_timeout", assetRecordType = "asset_record_type"
        case notifications, fallbackPollInterval = "fallback_poll_interval"
        case assetField = "asset_field", requestsInFlight = "requests_in_flight", limits
    }

    public func decodePlan(from decoder: any Decoder, context: ConfigContext) throws -> any CloudPlan {
        let container = try decoder.container(keyedBy: Keys.self)
        _ = try container.decodeIfPresent(String.self, forKey: .kind)
        let containerID = try container.decode(Located<String>.self, forKey: .container)
        let environment = try container.decodeIfPresent(Located<String>.self, forKey: .environment) ?? Located("development")
        let databaseName = try container.decodeIfPresent(Located<String>.self, forKey: .database) ?? Located("private")
        guard let database = CloudKitWebConfiguration.Database(rawValue: databaseName.value) else {
            throw databaseName.problem(.invalidValue, "must be private or shared")
        }
        let baseURL = try container.decodeIfPresent(Located<String>.self, forKey: .baseURL)
            ?? Located(CloudKitWebConfiguration.iCloudBaseURL)
        guard let url = URL(string: baseURL.value), ["http", "https"].contains(url.scheme ?? ""), url.host != nil else {
            throw baseURL.problem(.invalidValue, "must be an http:// or https:// URL such as https://api.apple-cloudkit.com")
        }
        let auth = try container.decode(Located<String>.self, forKey: .auth)
        let authentication: Authentication
        switch auth.value {
        case "server_to_server":
            let keyID = try container.decode(Located<String>.self, forKey: .keyID)
            let file = try container.decode(Located<String>.self, forKey: .privateKeyFile)
            let path = context.resolve(file.value)
            guard let data = FileManager.default.contents(atPath: path) else {
                throw file.problem(.invalidValue, "cannot read \(path); create a key with `gateway cloud keygen \(path)`")
            }
            do {
                authentication = .serverToServer(try CloudKitRequestSigner(keyID: keyID.value, pem: String(decoding: data, as: UTF8.self)))
            } catch {
                throw file.problem(
                    .invalidValue, "\(path) is not a P-256 private key in PEM (key \(keyID.value)); create one with `gateway cloud keygen \(path)`")
            }
        case "web_token":
            let variable = try container.decodeIfPresent(String.self, forKey: .apiTokenEnv) ?? "CLOUDKIT_API_TOKEN"
            let file = try container.decodeIfPresent(Located<String>.self, forKey: .webAuthTokenFile).map { context.resolve($0.value) }
                ?? URL(fileURLWithPath: context.stateDirectory).appendingPathComponent("cloudkit-web-auth-token").path
            authentication = .webToken(apiTokenVariable: variable, tokenFile: file)
        default:
            throw auth.problem(.invalidValue, "must be server_to_server or web_token")
        }
        var configuration = Settings(
            baseURL: baseURL.value, container: containerID.value, environment: environment.value, database: database,
            authentication: authentication)
        for (key, keyPath) in [(Keys.pollInterval, \Settings.pollInterval), (.requestTimeout, \.requestTimeout), (.fallbackPollInterval, \.fallbackPollInterval)] {
            if let value = try container.decodeIfPresent(Located<ConfigDuration>.self, forKey: key) {
                guard value.value.duration > .zero else { throw value.problem(.invalidValue, "must be longer than 0s") }
                configuration[keyPath: keyPath] = value.value.duration
            }
        }
        configuration.notifications = try container.decodeIfPresent(Bool.self, forKey: .notifications) ?? true
        configuration.assetRecordType = try container.decodeIfPresent(String.self, forKey: .assetRecordType) ?? "GatewayAsset"
        configuration.assetField = try container.decodeIfPresent(String.self, forKey: .assetField) ?? "data"
        if let limits = try container.decodeIfPresent(CloudLimitSettings.self, forKey: .limits) {
            configuration.limits = limits.applied(to: .cloudKit)
            configuration.limits.maxResultsPerFetch = 200
        }
        configuration.limits.modifyRequestsInFlight = 2
        if let inFlight = try container.decodeIfPresent(Located<Int>.self, forKey: .requestsInFlight) {
            guard (1...8).contains(inFlight.value) else { throw inFlight.problem(.invalidValue, "must be from 1 to 8") }
            configuration.limits.modifyRequestsInFlight = inFlight.value
        }
        // The combinations CloudKit cannot sync are refused here, at the line that chose them.
        do {
            try configuration.webConfiguration().validate()
        } catch {
            let culprit = error.message.contains("public database") ? databaseName : error.message.contains("environment") ? environment : auth
            throw culprit.problem(.invalidValue, error.message)
        }
        return CloudKitCloudPlan(settings: configuration)
    }

    enum Authentication: Sendable {
        case serverToServer(CloudKitRequestSigner)
        case webToken(apiTokenVariable: String, tokenFile: String)
    }

    struct Settings: Sendable {
        var baseURL: String
        var container: String
        var environment: String
        var database: CloudKitWebConfiguration.Database
        var authentication: Authentication
        var pollInterval: Duration = .seconds(10)
        var notifications = true
        var fallbackPollInterval: Duration = .seconds(300)
        var requestTimeout: Duration = .seconds(60)
        var assetRecordType = "GatewayAsset"
        var assetField = "data"
        var limits = CloudLimits(maxResultsPerFetch: 200, modifyRequestsInFlight: 2)

        /// - Parameters: apiToken, session: the web token credentials, for `auth: web_token`.
        func webConfiguration(apiToken: String = "", session: CloudKitWebAuthSession? = nil) -> CloudKitWebConfiguration {
            let auth: CloudKitWebConfiguration.Authentication =
                switch authentication {
                case .serverToServer(let signer): .serverToServer(signer)
                case .webToken: .webAuthToken(apiToken: apiToken, session: session ?? CloudKitWebAuthSession(token: ""))
                }
            return CloudKitWebConfiguration(
                baseURL: baseURL, container: container, environment: environment, database: database, authentication: auth, limits: limits,
                requestTimeout: requestTimeout, signalPollInterval: pollInterval, notifications: notifications,
                fallbackPollInterval: fallbackPollInterval, assetRecordType: assetRecordType, assetFieldName: assetField)
        }
    }
}

struct CloudKitCloudPlan: CloudPlan {
    let settings: CloudKitCloudKind.Settings

    var limits: CloudLimits { settings.limits }

    func check() async throws {
        do {
            try await database().checkAccount()
        } catch let error as CloudError {
            throw GatewayError(.cloudUnavailable, "CloudKit at \(settings.baseURL): \(error.message)", underlying: error)
        }
    }

    func open() async throws -> any CloudDatabase {
        try database()
    }

    private func database() throws(CloudError) -> CloudKitWebDatabase {
        guard case .webToken(let variable, let file) = settings.authentication else {
            return try CloudKitWebDatabase(configuration: settings.webConfiguration())
        }
        guard let apiToken = ProcessInfo.processInfo.environment[variable], !apiToken.isEmpty else {
            throw CloudError(.notAuthenticated, "the API token variable \(variable) is not set; export the container's API token there")
        }
        return try CloudKitWebDatabase(
            configuration: settings.webConfiguration(apiToken: apiToken, session: try CloudKitWebAuthSession(file: file)))
    }
}
