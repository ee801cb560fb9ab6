import Foundation
import GatewayCore

/// The endpoint's API tokens and web auth tokens, rotated on every request as CloudKit does.
///
/// Each user's session starts from a token given in the config. A request naming the session's
/// current token is let in and answered with the next token; the used token stops working. The
/// current tokens are kept in `stateFile` (mode 0600), so a restarted endpoint accepts the token
/// each client last received.
public actor CloudKitWebTokenRegistry {
    /// One user's starting token.
    public struct Seed: Sendable {
        public var userRecordName: String
        public var initialToken: String

        public init(userRecordName: String, initialToken: String) {
            self.userRecordName = userRecordName
            self.initialToken = initialToken
        }
    }

    private let apiTokens: Set<String>
    private let stateFile: String?
    /// The current token of each user.
    private var current: [String: String]

    /// - Parameter stateFile: where the rotated tokens are kept; `nil` keeps them in memory.
    public init(apiTokens: [String], seeds: [Seed], stateFile: String?) throws(CloudError) {
        self.apiTokens = Set(apiTokens)
        self.stateFile = stateFile
        var current = Dictionary(seeds.map { ($0.userRecordName, $0.initialToken) }, uniquingKeysWith: { first, _ in first })
        if let stateFile, let data = FileManager.default.contents(atPath: stateFile) {
            guard let saved = try? JSONDecoder().decode([String: String].self, from: data) else {
                throw CloudError(.invalidArguments, "the web token state \(stateFile) is not a JSON object of user names to tokens")
            }
            for (user, token) in saved where current[user] != nil { current[user] = token }
        }
        self.current = current
    }

    /// The user a request's tokens belong to and the token that replaces the one used, or `nil`
    /// when the API token is unknown or the web auth token is not a user's current one.
    public func authenticate(apiToken: String, webAuthToken: String) throws(CloudError) -> (userRecordName: String, nextToken: String)? {
        guard apiTokens.contains(apiToken), let user = current.first(where: { $0.value == webAuthToken })?.key else { return nil }
        var bytes = [UInt8](repeating: 0, count: 32)
        var generator = SystemRandomNumberGenerator()
        for index in bytes.indices { bytes[index] = UInt8.random(in: .min ... .max, using: &generator) }
        let next = Data(bytes).base64EncodedString()
        current[user] = next
        try persist()
        return (user, next)
    }

    private func persist() throws(CloudError) {
        guard let stateFile else { return }
        let temporary = stateFile + ".\(UUID().uuidString)"
        do {
            let data = try JSONEncoder().encode(current)
            guard FileManager.default.createFile(atPath: temporary, contents: data, attributes: [.posixPermissions: 0o600]),
                rename(temporary, stateFile) == 0
            else { throw CocoaError(.fileWriteUnknown) }
        } catch {
            try? FileManager.default.removeItem(atPath: temporary)
            throw CloudError(.internalError, "the endpoint could not save the rotated web auth tokens to \(stateFile)", underlying: error)
        }
    }
}
