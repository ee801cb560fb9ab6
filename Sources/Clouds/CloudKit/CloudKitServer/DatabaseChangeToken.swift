import CloudKitWeb
import Foundation
import GatewayCore

/// The position of a database's change feed (`changes/database`' `syncToken`, `zones/changes`'
/// `metaSyncToken`): each zone's own sync token when the client last heard of it.
///
/// A ``CloudDatabase`` keeps no feed of zone changes, so the endpoint compares: a zone whose
/// current token differs from the one in the client's token (or that the token does not know)
/// has changed; a zone the token knows and the cloud no longer lists was deleted. Opaque to
/// clients: base64url of the sorted entries, versioned by a prefix.
struct DatabaseChangeToken: Equatable, Sendable {
    /// Zone sync tokens by zone, keyed by ``key(_:)``.
    var zones: [String: String]

    static let prefix = "gwdb1."

    static func key(_ zone: ZoneID) -> String { zone.ownerName + "\u{1F}" + zone.zoneName }

    static func zone(fromKey key: String) -> ZoneID {
        let parts = key.split(separator: "\u{1F}", maxSplits: 1, omittingEmptySubsequences: false)
        return parts.count == 2 ? ZoneID(zoneName: String(parts[1]), ownerName: String(parts[0])) : ZoneID(zoneName: key)
    }

    var text: String {
        let entries = zones.keys.sorted().map { JSONValue.array([.string($0), .string(zones[$0]!)]) }
        let data = (try? JSONValue.array(entries).serialized()) ?? Data("[]".utf8)
        return Self.prefix + data.base64URLText
    }

    init(zones: [String: String] = [:]) { self.zones = zones }

    /// - Throws: `invalidArguments` for a text this endpoint did not issue.
    init(text: String, operation: String) throws(CloudError) {
        let refused = CloudError(.invalidArguments, "\(operation): the token is not one this endpoint issued")
        guard text.hasPrefix(Self.prefix) else { throw refused }
        guard let data = Data(base64URLText: text.dropFirst(Self.prefix.count)), let entries = (try? JSONValue.parse(data))?.arrayValue else { throw refused }
        var zones: [String: String] = [:]
        for entry in entries {
            guard let pair = entry.arrayValue, pair.count == 2, let key = pair[0].stringValue, let token = pair[1].stringValue else { throw refused }
            zones[key] = token
        }
        self.zones = zones
    }
}
