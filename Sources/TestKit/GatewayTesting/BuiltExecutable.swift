import Foundation

/// Finds executables of this package built next to the running test binary, so tests can run
/// them as real subprocesses.
public enum BuiltExecutable {
    /// The path of the executable product `name`.
    /// - Throws: `ConformanceFailure` naming the folders searched when it was not built.
    public static func path(_ name: String) throws -> String {
        let binary = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        var candidates = [binary.deletingLastPathComponent()]
        // Bundled test binaries (macOS) sit a few folders below the build folder.
        candidates.append(binary.deletingLastPathComponent().deletingLastPathComponent())
        candidates.append(binary.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent())
        candidates.append(URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent(".build/debug"))
        for folder in candidates {
            let path = folder.appendingPathComponent(name).path
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        throw ConformanceFailure(
            "executable \(name) was not found in \(candidates.map(\.path)); run `swift build` first")
    }
}
