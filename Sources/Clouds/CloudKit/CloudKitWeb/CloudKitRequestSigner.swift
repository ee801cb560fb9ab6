import Crypto
import Foundation
import GatewayCore

/// Signs requests with a CloudKit server-to-server key.
///
/// The signed message is `<date>:<base64(SHA-256(body))>:<subpath>`: the ISO 8601 date of the
/// `X-Apple-CloudKit-Request-ISO8601Date` header (UTC, whole seconds), the standard base64 of the
/// SHA-256 of exactly the body bytes sent (of no bytes for a request without a body), and the URL
/// path from `/database/…` without the query. The signature is ECDSA P-256 with SHA-256, DER
/// encoded, in base64.
public struct CloudKitRequestSigner: Sendable {
    /// The key id CloudKit's dashboard issued for the public key.
    public let keyID: String
    let privateKey: P256.Signing.PrivateKey

    /// - Parameter pem: the private key in PEM (`openssl ecparam -name prime256v1 -genkey`
    ///   writes SEC1 `EC PRIVATE KEY`; PKCS#8 `PRIVATE KEY` works too).
    /// - Throws: ``CloudError/Code/invalidArguments`` when the text is not a P-256 private key.
    public init(keyID: String, pem: String) throws(CloudError) {
        self.keyID = keyID
        do {
            privateKey = try P256.Signing.PrivateKey(pemRepresentation: pem)
        } catch {
            throw CloudError(
                .invalidArguments, "the server-to-server key \(keyID) is not a P-256 private key in PEM (create one with `openssl ecparam -name prime256v1 -genkey -noout`)",
                underlying: error)
        }
    }

    public init(keyID: String, privateKey: P256.Signing.PrivateKey) {
        self.keyID = keyID
        self.privateKey = privateKey
    }

    /// The public half, in PEM, to register with CloudKit (or list in `gateway cloud serve`'s config).
    public var publicKeyPEM: String { privateKey.publicKey.pemRepresentation }

    /// The three `X-Apple-CloudKit-Request-*` headers for a request.
    public func headers(body: Data, subpath: String, date: Date = Date()) throws(CloudError) -> [(name: String, value: String)] {
        let dateText = Self.dateText(date)
        let message = Self.message(date: dateText, body: body, subpath: subpath)
        let signature: P256.Signing.ECDSASignature
        do {
            signature = try privateKey.signature(for: Data(message.utf8))
        } catch {
            throw CloudError(.internalError, "signing a request with key \(keyID) failed", underlying: error)
        }
        return [
            (CloudKitHeaders.keyID, keyID), (CloudKitHeaders.date, dateText),
            (CloudKitHeaders.signature, signature.derRepresentation.base64EncodedString()),
        ]
    }

    /// The message a request's signature covers.
    public static func message(date: String, body: Data, subpath: String) -> String {
        "\(date):\(Data(SHA256.hash(data: body)).base64EncodedString()):\(subpath)"
    }

    /// A date as the date header writes it: `2016-01-25T22:15:43Z`.
    public static func dateText(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: false, timeZone: TimeZone(identifier: "UTC")!))
    }
}

/// Header names of CloudKit Web Services.
public enum CloudKitHeaders {
    public static let keyID = "X-Apple-CloudKit-Request-KeyID"
    public static let date = "X-Apple-CloudKit-Request-ISO8601Date"
    public static let signature = "X-Apple-CloudKit-Request-SignatureV1"
    /// The rotated web auth token in each answer to a request made with one.
    public static let webAuthToken = "X-Apple-CloudKit-Web-Auth-Token"
}

/// Checks server-to-server signatures against registered public keys, as CloudKit does.
public struct CloudKitSignatureVerifier: Sendable {
    /// A registered key: its id, public key and the user its requests act as.
    public struct Key: Sendable {
        public var keyID: String
        public var publicKey: P256.Signing.PublicKey
        /// The user record name requests signed with this key act as (`users/caller`).
        public var userRecordName: String

        /// - Throws: ``CloudError/Code/invalidArguments`` when `pem` is not a P-256 public key.
        public init(keyID: String, publicKeyPEM pem: String, userRecordName: String) throws(CloudError) {
            self.keyID = keyID
            self.userRecordName = userRecordName
            do {
                publicKey = try P256.Signing.PublicKey(pemRepresentation: pem)
            } catch {
                throw CloudError(.invalidArguments, "the public key of \(keyID) is not a P-256 public key in PEM", underlying: error)
            }
        }
    }

    /// Why a request was refused.
    public struct Refusal: Error, Sendable, Equatable {
        public var reason: String
    }

    public let keys: [String: Key]
    /// How far the date header may be from the server's clock.
    public var maximumClockSkew: Duration

    public init(keys: [Key], maximumClockSkew: Duration = .seconds(600)) {
        self.keys = Dictionary(keys.map { ($0.keyID, $0) }, uniquingKeysWith: { first, _ in first })
        self.maximumClockSkew = maximumClockSkew
    }

    /// The key that signed a request, or why the request is refused. Signatures are accepted in
    /// DER (what CloudKit's clients send) and in raw 64-byte `r‖s` form.
    public func verify(
        keyID: String?, date: String?, signature: String?, body: Data, subpath: String, now: Date = Date()
    ) -> Result<Key, Refusal> {
        guard let keyID, let date, let signature else {
            return .failure(Refusal(reason: "the request is not signed: it needs the three X-Apple-CloudKit-Request-* headers"))
        }
        guard let key = keys[keyID] else { return .failure(Refusal(reason: "the key id \(keyID) is not registered")) }
        guard let sent = try? Date(date, strategy: .iso8601) else {
            return .failure(Refusal(reason: "the date header is not an ISO 8601 date"))
        }
        let skew = abs(sent.timeIntervalSince(now))
        let allowed = Double(maximumClockSkew.components.seconds)
        guard skew <= allowed else {
            return .failure(Refusal(reason: "the request date is \(Int(skew)) s away from the server's clock (at most \(Int(allowed)) s); set both machines' clocks right (NTP)"))
        }
        guard let bytes = Data(base64Encoded: signature) else {
            return .failure(Refusal(reason: "the signature is not base64"))
        }
        let parsed = (try? P256.Signing.ECDSASignature(derRepresentation: bytes)) ?? (try? P256.Signing.ECDSASignature(rawRepresentation: bytes))
        guard let parsed else { return .failure(Refusal(reason: "the signature is not an ECDSA signature")) }
        let message = CloudKitRequestSigner.message(date: date, body: body, subpath: subpath)
        guard key.publicKey.isValidSignature(parsed, for: Data(message.utf8)) else {
            return .failure(Refusal(reason: "the signature does not match the request for key \(keyID)"))
        }
        return .success(key)
    }
}
