import Foundation

/// What a kind needs to know while it reads its section of the config.
public struct ConfigContext: Sendable {
    /// The folder relative paths are resolved against: the config file's folder.
    public var baseDirectory: String
    /// The gateway's state folder (`gateway.state_dir`), resolved.
    public var stateDirectory: String

    public init(baseDirectory: String, stateDirectory: String) {
        self.baseDirectory = baseDirectory
        self.stateDirectory = Self.resolve(stateDirectory, against: baseDirectory)
    }

    /// Where a kit adapter (a plugin, a JSON folder) keeps its sync state:
    /// `<state_dir>/adapters/<name>.sqlite`.
    public func adapterStatePath(named name: String) -> String {
        URL(fileURLWithPath: stateDirectory).appendingPathComponent("adapters").appendingPathComponent(name + ".sqlite").path
    }

    /// `path` resolved against the config file's folder; absolute paths stay as they are.
    public func resolve(_ path: String) -> String {
        Self.resolve(path, against: baseDirectory)
    }

    static func resolve(_ path: String, against base: String) -> String {
        if path.hasPrefix("/") { return path }
        if path.hasPrefix("~/") { return NSHomeDirectory() + path.dropFirst(1) }
        let joined = URL(fileURLWithPath: base).appendingPathComponent(path).standardizedFileURL.path
        return joined
    }
}
