/// A plugin that failed or misbehaved. Messages name the adapter and the plugin's command and say
/// what happened; they never quote record values.
public struct PluginError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let name: String
        public init(_ name: String) { self.name = name }

        /// The command could not be started (not found, not executable).
        public static let startFailed = Code("pluginStartFailed")
        /// The process exited, or closed its standard output.
        public static let exited = Code("pluginExited")
        /// The process did not answer within the timeout; it was stopped.
        public static let timedOut = Code("pluginTimedOut")
        /// A line was not a JSON object, or a message lacked what the protocol requires.
        public static let malformedMessage = Code("pluginMalformedMessage")
        /// A line was longer than `max_message_bytes`.
        public static let oversizedMessage = Code("pluginOversizedMessage")
        /// The plugin speaks a protocol version this gateway does not.
        public static let protocolMismatch = Code("pluginProtocolMismatch")
        /// An answer to a request that was not asked, or not the one waiting.
        public static let unexpectedAnswer = Code("pluginUnexpectedAnswer")
        /// A record the protocol cannot carry (a name with control characters): nothing was sent.
        public static let unsendableRecord = Code("pluginUnsendableRecord")
        /// The plugin answered a request with an error of its own.
        public static let pluginReportedError = Code("pluginReportedError")

        public var description: String { name }
    }

    public var code: Code
    /// The adapter the plugin serves.
    public var adapter: String
    /// The plugin's command, as configured.
    public var plugin: String
    /// What happened.
    public var detail: String
    public var underlying: (any Error)?

    public init(_ code: Code, adapter: String, plugin: String, _ detail: String, underlying: (any Error)? = nil) {
        self.code = code
        self.adapter = adapter
        self.plugin = plugin
        self.detail = detail
        self.underlying = underlying
    }

    public var description: String { "adapter \(adapter): plugin \(plugin): \(detail)" }
}
