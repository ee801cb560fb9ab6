import Crypto
import Foundation
import GatewayCore

/// The `endpoint:` section, read by `gateway cloud serve`: where it listens, which container it
/// answers for and whom it lets in. The cloud it serves is the config's `cloud:` section.
public struct EndpointSettings: Sendable, Decodable {
    /// One registered server-to-server key.
    public struct Key: Sendable, Decodable {
        /// `key_id`: the id clients send in `X-Apple-CloudKit-Request-KeyID`.
        public var keyID: Located<String>
        /// `public_key_file`: the P-256 public key in PEM.
        public var publicKeyFile: Located<String>
        /// The public key in PEM, read from `public_key_file` when the config is loaded.
        public var publicKeyPEM = ""
        /// `user`: the user record name requests signed with this key act as (default
        /// `_defaultUser`, who owns the zones of a cloud made before users existed).
        public var user: String

        enum CodingKeys: String, CodingKey { case keyID = "key_id", publicKeyFile = "public_key_file", user }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            keyID = try container.decode(Located<String>.self, forKey: .keyID)
            guard !keyID.value.isEmpty else { throw keyID.problem(.invalidValue, "must not be empty") }
            publicKeyFile = try container.decode(Located<String>.self, forKey: .publicKeyFile)
            user = try container.decodeIfPresent(String.self, forKey: .user) ?? CloudUsers.defaultUser
        }

        mutating func load(context: ConfigContext) throws {
            let path = context.resolve(publicKeyFile.value)
            guard let data = FileManager.default.contents(atPath: path) else {
                throw publicKeyFile.problem(.invalidValue, "cannot read \(path); `gateway cloud keygen` writes a key pair")
            }
            publicKeyPEM = String(decoding: data, as: UTF8.self)
            guard (try? P256.Signing.PublicKey(pemRepresentation: publicKeyPEM)) != nil else {
                throw publicKeyFile.problem(
                    .invalidValue, "\(path) is not a P-256 public key in PEM (the .pub file `gateway cloud keygen` writes)")
            }
        }
    }

    /// `web_tokens:`: API tokens and per-user web auth tokens, for clients with `auth: web_token`.
    public struct WebTokens: Sendable, Decodable {
        /// `api_token_env`: the variable holding the API token.
        public var apiTokenVariable: Located<String>
        /// `users: [{user, initial_token_env}]`: each user and the variable holding their first web auth token.
        public var users: [(user: String, variable: Located<String>)]
        /// `state_file`: where rotated tokens are kept (default `<state_dir>/endpoint-web-tokens.json`).
        public var stateFile: String?
        /// Read from the variables when the config is loaded.
        public var apiToken = ""
        public var initialTokens: [(user: String, token: String)] = []

        enum CodingKeys: String, CodingKey { case apiTokenEnv = "api_token_env", users, stateFile = "state_file" }
        enum UserKeys: String, CodingKey { case user, initialTokenEnv = "initial_token_env" }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            apiTokenVariable = try container.decode(Located<String>.self, forKey: .apiTokenEnv)
            var list = try container.nestedUnkeyedContainer(forKey: .users)
            users = []
            while !list.isAtEnd {
                let entry = try list.nestedContainer(keyedBy: UserKeys.self)
                users.append((try entry.decode(String.self, forKey: .user), try entry.decode(Located<String>.self, forKey: .initialTokenEnv)))
            }
            stateFile = try container.decodeIfPresent(String.self, forKey: .stateFile)
        }

        mutating func load(context: ConfigContext, environment: [String: String]) throws {
            guard let token = environment[apiTokenVariable.value], !token.isEmpty else {
                throw apiTokenVariable.problem(.invalidValue, "the variable \(apiTokenVariable.value) is not set; export the API token there")
            }
            apiToken = token
            initialTokens = try users.map { user, variable in
                guard let initial = environment[variable.value], !initial.isEmpty else {
                    throw variable.problem(.invalidValue, "the variable \(variable.value) is not set; export \(user)'s first web auth token there")
                }
                return (user, initial)
            }
            stateFile = stateFile.map(context.resolve)
                ?? URL(fileURLWithPath: context.stateDirectory).appendingPathComponent("endpoint-web-tokens.json").path
        }
    }

    /// One `webhooks:` entry: where notifications are also POSTed, signed with a secret.
    public struct Webhook: Sendable, Decodable {
        /// `url`: an http:// or https:// URL.
        public var url: Located<String>
        /// `secret_env`: the variable holding the signing secret.
        public var secretVariable: Located<String>
        /// Read from the variable when the config is loaded.
        public var secret = Data()

        enum CodingKeys: String, CodingKey { case url, secretEnv = "secret_env" }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            url = try container.decode(Located<String>.self, forKey: .url)
            guard let parsed = URL(string: url.value), ["http", "https"].contains(parsed.scheme ?? ""), parsed.host != nil else {
                throw url.problem(.invalidValue, "must be an http:// or https:// URL")
            }
            secretVariable = try container.decode(Located<String>.self, forKey: .secretEnv)
        }

        mutating func load(environment: [String: String]) throws {
            guard let value = environment[secretVariable.value], !value.isEmpty else {
                throw secretVariable.problem(.invalidValue, "the variable \(secretVariable.value) is not set; export the webhook's signing secret there")
            }
            secret = Data(value.utf8)
        }
    }

    /// `host` (default 127.0.0.1) and `port` (default 8765).
    public var host: String
    public var port: Int
    /// `container` (required) and `environment` (default development): the path segments served.
    public var container: String
    public var environment: String
    /// `public_url`: the scheme and host clients reach the endpoint at, for asset URLs (default
    /// `http://` and the request's Host).
    public var publicURL: String?
    /// `max_clock_skew`: how far a signed request's date may be off (default 10m).
    public var maximumClockSkew: Duration
    /// `keys`: the registered server-to-server public keys.
    public var keys: [Key]
    public var webTokens: WebTokens?
    /// `webhooks`: targets that also receive every notification.
    public var webhooks: [Webhook]
    /// `public_writers`: the users who may write the public database; `nil` (absent) for every user.
    public var publicWriters: [String]?

    enum CodingKeys: String, CodingKey {
        case host, port, container, environment, publicURL = "public_url", maximumClockSkew = "max_clock_skew", keys
        case webTokens = "web_tokens", webhooks, publicWriters = "public_writers"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        host = try container.decodeIfPresent(String.self, forKey: .host) ?? "127.0.0.1"
        let port = try container.decodeIfPresent(Located<Int>.self, forKey: .port) ?? Located(8765)
        guard (0...65_535).contains(port.value) else { throw port.problem(.invalidValue, "must be a port number (0 to 65535)") }
        self.port = port.value
        let containerID = try container.decode(Located<String>.self, forKey: .container)
        guard !containerID.value.isEmpty, !containerID.value.contains("/") else {
            throw containerID.problem(.invalidValue, "must be a container id such as iCloud.com.example.App")
        }
        self.container = containerID.value
        let environment = try container.decodeIfPresent(Located<String>.self, forKey: .environment) ?? Located("development")
        guard ["development", "production"].contains(environment.value) else {
            throw environment.problem(.invalidValue, "must be development or production")
        }
        self.environment = environment.value
        publicURL = try container.decodeIfPresent(String.self, forKey: .publicURL).map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 }
        let skew = try container.decodeIfPresent(Located<ConfigDuration>.self, forKey: .maximumClockSkew)
        maximumClockSkew = skew?.value.duration ?? .seconds(600)
        if let skew, skew.value.duration <= .zero { throw skew.problem(.invalidValue, "must be longer than 0s") }
        keys = try container.decodeIfPresent([Key].self, forKey: .keys) ?? []
        webTokens = try container.decodeIfPresent(WebTokens.self, forKey: .webTokens)
        webhooks = try container.decodeIfPresent([Webhook].self, forKey: .webhooks) ?? []
        publicWriters = try container.decodeIfPresent([String].self, forKey: .publicWriters)
        var seen = Set<String>()
        for key in keys where !seen.insert(key.keyID.value).inserted {
            throw key.keyID.problem(.duplicateName, "two keys have the id '\(key.keyID.value)'")
        }
        if keys.isEmpty && webTokens == nil {
            throw decoder.configProblem(.inconsistent, "list at least one key under 'keys' (or configure 'web_tokens'); the endpoint lets nobody in otherwise")
        }
    }

    /// Reads the key files and token variables, relative to the config's folder.
    mutating func load(context: ConfigContext, environment: [String: String]) throws {
        for index in keys.indices { try keys[index].load(context: context) }
        try webTokens?.load(context: context, environment: environment)
        for index in webhooks.indices { try webhooks[index].load(environment: environment) }
    }
}
