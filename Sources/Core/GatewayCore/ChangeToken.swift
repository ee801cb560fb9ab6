import Foundation

/// A position in one zone's change feed, issued by the cloud.
///
/// The bytes are opaque: only the cloud that issued a token interprets it. The core stores tokens
/// in adapter zone state and hands them back unchanged.
public struct ChangeToken: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The token's opaque bytes.
    public var data: Data

    /// A token holding the cloud's opaque bytes.
    public init(data: Data) {
        self.data = data
    }

    public var description: String { "ChangeToken(\(data.count) bytes)" }
}
