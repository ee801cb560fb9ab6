import Foundation

extension Data {
    /// URL-safe base64 without padding (RFC 4648 §5): how sync tokens, database tokens and query
    /// markers travel in JSON and URLs.
    public var base64URLText: String {
        base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// The bytes of a ``base64URLText`` string (padding optional), `nil` when it is not one.
    public init?(base64URLText text: some StringProtocol) {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        self.init(base64Encoded: base64)
    }
}
