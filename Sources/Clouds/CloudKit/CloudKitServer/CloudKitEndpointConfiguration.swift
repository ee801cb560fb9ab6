import CloudKitWeb
import Foundation
import GatewayCore

/// What `gateway cloud serve` serves and whom it lets in.
public struct CloudKitEndpointConfiguration: Sendable {
    /// The container id clients name in their paths.
    public var container: String
    /// `development` or `production`, as clients name it in their paths.
    public var environment: String
    /// Registered server-to-server keys; a request signed by one of them is let in.
    public var keys: [CloudKitSignatureVerifier.Key]
    /// API tokens and rotating web auth tokens, for clients configured like iCloud's private
    /// database; `nil` when only signed requests are let in.
    public var webTokens: CloudKitWebTokenRegistry?
    /// How far a signed request's date may be from this server's clock (CloudKit: 10 minutes).
    public var maximumClockSkew: Duration
    /// The scheme and host clients reach this server at, for upload and download URLs; `nil`
    /// to use `http://` and the request's `Host`.
    public var publicURL: String?
    /// Whether `changes/zone` is served. Turning it off makes the endpoint look like a service
    /// with only `records/changes`, as older CloudKit deployments were.
    public var servesZoneChanges: Bool
    /// Largest request body accepted, beyond which the request fails with `BAD_REQUEST`.
    public var maximumBodySize: Int
    /// How long a web courier long-poll is held open when no notification is waiting.
    public var courierHold: Duration
    /// Called with the operation of every request answered (`records/modify`, `web courier`,
    /// …), for counting what clients cost the endpoint.
    public var onRequest: (@Sendable (String) -> Void)?
    /// The users who may write the public database; `nil` for every user.
    public var publicWriters: Set<String>?
    /// Signs download URLs and upload receipts, so only users handed an asset may download it or
    /// attach it to a record (``AssetSigner``); a random key unless one is given.
    public var assetSigner: AssetSigner = .random()

    public init(
        container: String, environment: String = "development", keys: [CloudKitSignatureVerifier.Key],
        webTokens: CloudKitWebTokenRegistry? = nil, maximumClockSkew: Duration = .seconds(600), publicURL: String? = nil,
        servesZoneChanges: Bool = true, maximumBodySize: Int = 64_000_000, courierHold: Duration = .seconds(25)
    ) {
        self.container = container
        self.environment = environment
        self.keys = keys
        self.webTokens = webTokens
        self.maximumClockSkew = maximumClockSkew
        self.publicURL = publicURL
        self.servesZoneChanges = servesZoneChanges
        self.maximumBodySize = maximumBodySize
        self.courierHold = courierHold
    }
}
