import Foundation
import GatewayCore

/// Where and how ``CloudKitWebDatabase`` reaches CloudKit Web Services.
public struct CloudKitWebConfiguration: Sendable {
    /// CloudKit's databases. The gateway syncs `private` (and `shared`) only: the public database
    /// has no custom zones and no change feed, so ``CloudKitWebDatabase`` refuses it.
    public enum Database: String, Sendable, CaseIterable {
        case `private`, shared, `public`
    }

    /// How requests prove who makes them.
    public enum Authentication: Sendable {
        /// A server-to-server key. iCloud accepts these for the public database only; a
        /// `gateway cloud serve` endpoint accepts them for its private database.
        case serverToServer(CloudKitRequestSigner)
        /// An API token plus a user's web auth token, rotated on every answer.
        case webAuthToken(apiToken: String, session: CloudKitWebAuthSession)
    }

    /// iCloud's host.
    public static let iCloudBaseURL = "https://api.apple-cloudkit.com"

    /// The service's scheme and host (and port), without a trailing slash.
    public var baseURL: String
    /// The container id, such as `iCloud.com.example.App`.
    public var container: String
    /// `development` or `production`.
    public var environment: String
    /// The database asked for the user's own zones.
    public var database: Database
    /// Whether another user's zone (one whose owner is named) is asked for in the shared
    /// database and listed with the user's own, as CloudKit's clients do. Off, every request goes
    /// to ``database``.
    public var routesSharedZones = true
    public var authentication: Authentication
    /// The limits to report and enforce before sending. CloudKit Web Services' by default, with
    /// pages of at most 200 records.
    public var limits: CloudLimits
    /// How long one HTTP request may take.
    public var requestTimeout: Duration
    /// How often ``CloudKitWebDatabase/changeSignals(in:)`` asks `changes/database` which zones
    /// changed, when the service delivers no notifications (or ``notifications`` is off).
    public var signalPollInterval: Duration
    /// Whether change signals come from subscriptions and the service's web courier (a zone
    /// subscription per zone and one long-poll for all of them), falling back to polling when
    /// the service offers neither.
    public var notifications: Bool
    /// While notifications arrive, how often every zone is signalled anyway, in case one was lost.
    public var fallbackPollInterval: Duration
    /// The record type and asset field named when asking for upload URLs; iCloud requires the
    /// container's schema to have this record type with this asset field.
    public var assetRecordType: String
    public var assetFieldName: String

    public init(
        baseURL: String = Self.iCloudBaseURL, container: String, environment: String = "development", database: Database = .private,
        authentication: Authentication, limits: CloudLimits = CloudLimits(maxResultsPerFetch: 200, modifyRequestsInFlight: 2),
        requestTimeout: Duration = .seconds(60), signalPollInterval: Duration = .seconds(10), notifications: Bool = true,
        fallbackPollInterval: Duration = .seconds(300), assetRecordType: String = "GatewayAsset", assetFieldName: String = "data"
    ) {
        self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        self.container = container
        self.environment = environment
        self.database = database
        self.authentication = authentication
        self.limits = limits
        self.requestTimeout = requestTimeout
        self.signalPollInterval = signalPollInterval
        self.notifications = notifications
        self.fallbackPollInterval = fallbackPollInterval
        self.assetRecordType = assetRecordType
        self.assetFieldName = assetFieldName
    }

    /// Whether the base URL is Apple's.
    public var isICloud: Bool {
        URL(string: baseURL)?.host?.hasSuffix("apple-cloudkit.com") ?? false
    }

    /// Refuses combinations that cannot sync, with what to do instead.
    public func validate() throws(CloudError) {
        guard database != .public else {
            throw CloudError(
                .invalidArguments,
                "CloudKit's public database has no custom zones and no change tokens, so the gateway cannot sync it without losing deletions; use the private database")
        }
        if case .serverToServer = authentication, isICloud {
            throw CloudError(
                .invalidArguments,
                "iCloud accepts server-to-server keys for the public database only; use web token authentication (api_token and web_auth_token_file) for the \(database.rawValue) database")
        }
        guard ["development", "production"].contains(environment) else {
            throw CloudError(.invalidArguments, "the environment must be development or production, not \(environment)")
        }
        guard !container.isEmpty, !container.contains("/") else {
            throw CloudError(.invalidArguments, "the container id must be non-empty and contain no '/'")
        }
    }

    /// The path of a database operation: `/database/1/<container>/<environment>/<database>/<operation>`.
    public func path(_ operation: String, database: String? = nil) -> String {
        "/database/1/\(container)/\(environment)/\(database ?? self.database.rawValue)/\(operation)"
    }

    /// The path of an operation CloudKit serves under `/device/1/` without a database segment
    /// (`tokens/create`, `tokens/register`), as CloudKit JS sends them.
    public func devicePath(_ operation: String) -> String {
        "/device/1/\(container)/\(environment)/\(operation)"
    }
}
