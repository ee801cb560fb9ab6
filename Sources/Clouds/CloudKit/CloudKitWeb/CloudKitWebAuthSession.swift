import Foundation
import GatewayCore

/// A user's CloudKit web auth token, which every answer replaces.
///
/// CloudKit accepts a web auth token for one round trip: each response carries its successor in
/// `X-Apple-CloudKit-Web-Auth-Token` and the old one stops working. So the session runs one
/// request at a time, and writes every new token to its file (atomically, mode 0600) before the
/// next request may start. A token lost with an unanswered request cannot be recovered: the user
/// must sign in again and store the new token in the file.
public actor CloudKitWebAuthSession {
    /// The file holding the current token, or `nil` to keep it in memory only (tests).
    public nonisolated let file: String?
    private var token: String
    private var busy = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    /// Reads the token from `file`.
    /// - Throws: ``CloudError/Code/notAuthenticated`` when the file is missing or empty.
    public init(file: String) throws(CloudError) {
        guard let data = FileManager.default.contents(atPath: file),
            case let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines), !text.isEmpty
        else {
            throw CloudError(
                .notAuthenticated, "the web auth token file \(file) is missing or empty; sign in to iCloud and write the ckWebAuthToken there")
        }
        self.file = file
        self.token = text
    }

    /// A session holding `token` in memory.
    public init(token: String) {
        self.file = nil
        self.token = token
    }

    /// Runs `request` with the current token; the token it returns (the response header) replaces
    /// the current one and is persisted before the next request runs.
    public func perform<Result: Sendable>(
        _ request: @Sendable (_ token: String) async throws -> (result: Result, nextToken: String?)
    ) async throws -> Result {
        while busy {
            await withCheckedContinuation { waiters.append($0) }
        }
        busy = true
        defer {
            busy = false
            if !waiters.isEmpty { waiters.removeFirst().resume() }
        }
        let (result, next) = try await request(token)
        if let next, !next.isEmpty, next != token {
            try persist(next)
            token = next
        }
        return result
    }

    /// The token the next request will use.
    public var currentToken: String { token }

    private func persist(_ next: String) throws(CloudError) {
        guard let file else { return }
        let url = URL(fileURLWithPath: file)
        let temporary = url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).\(UUID().uuidString)")
        do {
            guard FileManager.default.createFile(atPath: temporary.path, contents: Data((next + "\n").utf8), attributes: [.posixPermissions: 0o600])
            else { throw CocoaError(.fileWriteUnknown) }
            // rename(2) replaces the file atomically: a crash leaves the old token or the new one.
            guard rename(temporary.path, url.path) == 0 else { throw CocoaError(.fileWriteUnknown) }
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            throw CloudError(
                .notAuthenticated, "the rotated web auth token could not be written to \(file); the old one no longer works, so sign in again",
                underlying: error)
        }
    }
}
