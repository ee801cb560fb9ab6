import Foundation

/// A new, uniquely named folder under the system's temporary folder, for one test's files.
public struct TemporaryDirectory: Sendable {
    /// The folder.
    public let url: URL

    /// Creates the folder; `prefix` makes leftovers recognisable.
    public init(prefix: String = "gateway-test") throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    /// A path inside the folder.
    public func path(_ name: String) -> String {
        url.appendingPathComponent(name).path
    }

    /// Deletes the folder and everything in it.
    public func remove() {
        try? FileManager.default.removeItem(at: url)
    }

    /// Copies a file or folder as `cp -a` does, keeping its times and dotfiles: what an operator's
    /// backup or restore of a store looks like.
    public static func copyPreservingTimes(from source: URL, to target: URL) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/cp")
        process.arguments = ["-a", source.path, target.path]
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: target.path])
        }
    }
}
