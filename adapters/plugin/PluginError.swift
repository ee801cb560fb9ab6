import GatewayCore

/// A plugin that failed or misbehaved. Messages name the adapter and the plugin's command and say
/// what happened; they never quote record values.
public struct PluginError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public enum Code: String, Sendable, CaseIterable, CustomStringConvertible {
        /// The command could not be started (not found, not executable).
        case startFailed = "pluginStartFailed"
        /// The process exited, or closed its standard output.
        case exited = "pluginExited"
        /// The process did not answer within the timeout; it was stopped.
        case timedOut = "pluginTimedOut"
        /// A line was not a JSON object, or a message lacked what the protocol requires.
        case malformedMessage = "pluginMalformedMessage"
        /// A line was longer than `max_message_bytes`.
        case oversizedMessage = "pluginOversizedMessage"
        /// The plugin speaks a protocol version this gateway does not.
        case protocolMismatch = "pluginProtocolMismatch"
        /// An answer to a request that was not asked, or not the one waiting.
        case unexpectedAnswer = "pluginUnexpectedAnswer"
        /// A record the protocol cannot carry (a name with control characters): nothing was sent.
        case unsendableRecord = "pluginUnsendableRecord"
        /// The plugin answered a request with an error of its own.
        case pluginReportedError
        /// Started with a scratch folder (`gateway check-adapter`), the plugin did not confirm it
        /// keeps its data there (`"scratch": true` in its hello answer) or does not serve `Note`:
        /// it was stopped before any request could reach its configured store.
        case scratchUnconfirmed = "pluginScratchUnconfirmed"

        /// The code's name, as logs, metrics and JSON show it.
        public var name: String { rawValue }
        public var description: String { rawValue }
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

    public var description: String {
        // Resolver and processor processes speak the same protocol; their messages name them as
        // what they are (adapter names hold no spaces, so no adapter reads as one).
        adapter.hasPrefix("resolver ") || adapter.hasPrefix("processor ")
            ? "\(adapter): program \(plugin): \(detail)" : "adapter \(adapter): plugin \(plugin): \(detail)"
    }
}

extension PluginError: FailureCoded {
    public var failureCode: String { code.rawValue }
    public var underlyingFailure: (any Error)? { underlying }
}
