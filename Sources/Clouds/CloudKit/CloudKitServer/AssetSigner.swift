import Crypto
import Foundation
import GatewayCore

/// Proofs that an asset was handed to a client, so the endpoint's content-addressed asset store
/// answers only those who may have its bytes.
///
/// Assets are stored once by checksum for every user. Without proofs, anyone who knew (or
/// guessed) a checksum could download another user's asset, or attach it to a record of their
/// own, and a made-up checksum told whether some user held that content. Now a download URL
/// carries a signature of the asset (given only in answers to users who may read the record, and
/// for their own uploads), an upload's receipt a signature bound to the user who uploaded it, and
/// a save may name an asset only with one of them, or one its record already holds.
public struct AssetSigner: Sendable {
    private let key: SymmetricKey

    /// A signer with `key` (32 bytes): keep it across restarts, or URLs and receipts handed out
    /// before stop working (clients fetch the record again, or upload again).
    public init(key: Data) {
        self.key = SymmetricKey(data: key)
    }

    /// A signer with a random key, for an endpoint whose URLs need not outlive it.
    public static func random() -> AssetSigner {
        AssetSigner(key: SymmetricKey(size: .bits256).withUnsafeBytes { Data($0) })
    }

    /// The signature a download URL of the asset carries (`?sig=`).
    func downloadSignature(checksum: String, size: Int64) -> String {
        mac("download\n\(checksum)\n\(size)")
    }

    /// Whether `signature` is the asset's download signature.
    func isDownloadSignature(_ signature: String, checksum: String, size: Int64) -> Bool {
        isMac(signature, of: "download\n\(checksum)\n\(size)")
    }

    /// The query of an upload URL for `user`, good until `expires` (seconds since 1970): the
    /// bytes may be posted to it without signing the request, as to CloudKit's upload URLs.
    func uploadQuery(user: String, expires: Int64) -> [URLQueryItem] {
        [
            URLQueryItem(name: "user", value: user), URLQueryItem(name: "expires", value: String(expires)),
            URLQueryItem(name: "sig", value: mac("upload\n\(user)\n\(expires)")),
        ]
    }

    /// The user an upload URL's query was made for, when its signature holds and it has not
    /// expired at `now` (seconds since 1970).
    func uploader(user: String?, expires: String?, signature: String?, now: Int64) -> String? {
        guard let user, let expires, let deadline = Int64(expires), let signature, now <= deadline,
            isMac(signature, of: "upload\n\(user)\n\(deadline)")
        else { return nil }
        return user
    }

    /// The receipt an upload by `user` answers: the checksum, the size and their signature.
    func receipt(user: String, checksum: String, size: Int64) -> String {
        "\(checksum):\(size):" + mac(Self.receiptText(user: user, checksum: checksum, size: size))
    }

    /// Whether `asset` (as a save names it) was handed to `user`: a receipt of their upload, or
    /// a download URL the endpoint signed.
    func proves(_ asset: AssetReference, user: String) -> Bool {
        if let dictionary = asset.uploadReceipt.flatMap({ try? JSONValue.parse(Data($0.utf8), numbers: .exact) }),
            let receipt = dictionary["receipt"]?.stringValue,
            receipt.hasPrefix("\(asset.checksum):\(asset.size):"),
            isMac(String(receipt.dropFirst("\(asset.checksum):\(asset.size):".count)),
                of: Self.receiptText(user: user, checksum: asset.checksum, size: asset.size))
        {
            return true
        }
        if let url = asset.downloadURL, let components = URLComponents(string: url),
            let signature = components.queryItems?.first(where: { $0.name == "sig" })?.value,
            components.path.hasSuffix("/assets/download/\(asset.checksum)/\(asset.size)")
        {
            return isDownloadSignature(signature, checksum: asset.checksum, size: asset.size)
        }
        return false
    }

    private static func receiptText(user: String, checksum: String, size: Int64) -> String {
        "receipt\n\(user)\n\(checksum)\n\(size)"
    }

    /// HMAC-SHA256 of `text`, in base64url without padding (it goes in URLs).
    private func mac(_ text: String) -> String {
        let code = HMAC<SHA256>.authenticationCode(for: Data(text.utf8), using: key)
        return Data(code).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Whether `signature` (as ``mac(_:)`` writes it) authenticates `text`, compared in constant time.
    private func isMac(_ signature: String, of text: String) -> Bool {
        var base64 = signature.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard let code = Data(base64Encoded: base64) else { return false }
        return HMAC<SHA256>.isValidAuthenticationCode(code, authenticating: Data(text.utf8), using: key)
    }
}
