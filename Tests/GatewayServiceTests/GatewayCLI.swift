import Foundation
import GatewayTesting
import Testing

/// What one run of the `gateway` executable printed and returned.
struct CLIResult: Sendable, CustomStringConvertible {
    var status: Int32
    var stdout: String
    var stderr: String

    var description: String { "exit \(status)\n--- stdout\n\(stdout)--- stderr\n\(stderr)" }
}

/// Runs the real `gateway` executable as a subprocess, the way a user or a monitor does.
enum GatewayCLI {
    /// - Parameter unprivileged: run as `nobody` when the tests run as root (whom file modes do
    ///   not stop), so a folder made read-only is read-only to the command too.
    static func run(
        _ arguments: [String], in directory: URL, environment: [String: String] = [:], timeout: Duration = .seconds(120),
        unprivileged: Bool = false
    ) async throws -> CLIResult {
        var executable = try BuiltExecutable.path("gateway")
        var arguments = arguments
        if unprivileged, getuid() == 0 {
            arguments = ["--reuid=65534", "--regid=65534", "--clear-groups", executable] + arguments
            executable = "/usr/bin/setpriv"
        }
        let outputs = FileManager.default.temporaryDirectory.appendingPathComponent("gateway-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: outputs, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: outputs) }
        let stdoutURL = outputs.appendingPathComponent("stdout")
        let stderrURL = outputs.appendingPathComponent("stderr")
        var variables = ProcessInfo.processInfo.environment
        variables["TERM"] = "dumb"
        variables.merge(environment) { _, new in new }
        let child = try ChildProcess(
            executable, arguments: arguments, directory: directory.path, environment: variables, standardOutput: stdoutURL.path,
            standardError: stderrURL.path)
        let status = try await child.wait(timeout: timeout)
        return CLIResult(
            status: status, stdout: try String(contentsOf: stdoutURL, encoding: .utf8),
            stderr: try String(contentsOf: stderrURL, encoding: .utf8))
    }
}

/// The repository's root, for the default config and the examples.
enum Repository {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// Copies the default config and the example data into `directory`, as a fresh clone has them.
    static func copyDefaultSetup(to directory: URL) throws {
        try FileManager.default.copyItem(at: root.appendingPathComponent("config.yaml"), to: directory.appendingPathComponent("config.yaml"))
        try FileManager.default.copyItem(at: root.appendingPathComponent("examples"), to: directory.appendingPathComponent("examples"))
    }
}

/// File modes of a whole folder, for tests of accounts that may only read.
enum FolderModes {
    /// Makes every file and folder under `directory` (itself included) read-only for everyone,
    /// and readable by everyone.
    static func makeReadOnly(_ directory: URL) throws { try apply(directory, folders: 0o555, files: 0o444) }

    /// Gives the owner write access back, so the folder can be removed.
    static func makeWritable(_ directory: URL) throws { try apply(directory, folders: 0o755, files: 0o644) }

    private static func apply(_ directory: URL, folders: Int, files: Int) throws {
        var paths = [directory]
        let enumerator = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil)
        while let url = enumerator?.nextObject() as? URL { paths.append(url) }
        for url in paths {
            var isDirectory: ObjCBool = false
            _ = FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory)
            try FileManager.default.setAttributes([.posixPermissions: isDirectory.boolValue ? folders : files], ofItemAtPath: url.path)
        }
    }
}

/// Every file under a folder with its size and contents' hash, to prove a command wrote nothing.
struct FolderSnapshot: Equatable, CustomStringConvertible {
    var files: [String: Data]

    init(_ directory: URL) throws {
        files = [:]
        let base = directory.resolvingSymlinksInPath().path
        let enumerator = FileManager.default.enumerator(at: directory.resolvingSymlinksInPath(), includingPropertiesForKeys: nil)
        while let url = enumerator?.nextObject() as? URL {
            var isDirectory: ObjCBool = false
            _ = FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory)
            let relative = String(url.resolvingSymlinksInPath().path.dropFirst(base.count))
            files[relative] = isDirectory.boolValue ? Data("<dir>".utf8) : try Data(contentsOf: url)
        }
    }

    var description: String { files.keys.sorted().joined(separator: ", ") }
}

/// A copy of an example helper process that breaks one rule of its protocol, and the words of
/// the conformance case that must fail for it.
struct BrokenCopy: Sendable {
    let name: String
    let original: String
    let broken: String
    let rule: String

    init(_ name: String, _ original: String, _ broken: String, _ rule: String) {
        (self.name, self.original, self.broken, self.rule) = (name, original, broken, rule)
    }

    /// Runs `gateway check-adapter entry` on each copy of `source` (a config made by `config` from
    /// the copy's script name and text) and expects exit status 1 with a failing case naming its rule.
    static func expectEachFails(
        _ copies: [BrokenCopy], of source: String, entry: String, in clone: CLITests.FreshClone,
        config: (_ script: String, _ source: String) throws -> String
    ) async throws {
        for copy in copies {
            #expect(source.contains(copy.original), "the example still has the line \(copy.name) changes")
            let file = try config("\(copy.name).py", source.replacingOccurrences(of: copy.original, with: copy.broken))
            let check = try await clone.gateway("check-adapter", entry, "--config", file)
            #expect(check.status == 1, "\(copy.name): \(check)")
            let failing = check.stdout.split(separator: "\n").filter { $0.hasPrefix("  FAIL") }
            #expect(failing.contains { $0.contains(copy.rule) }, "\(copy.name) fails '\(copy.rule)': \(check)")
        }
    }
}
