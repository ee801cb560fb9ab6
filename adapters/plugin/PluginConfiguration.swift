import CloudKitWeb
import GatewayCore

/// How to start and talk to one plugin process.
public struct PluginConfiguration: Sendable {
    /// The adapter's name, for messages and the handshake.
    public var adapterName: String
    public var zoneID: ZoneID
    /// The program: a path, or a name looked up in `PATH`.
    public var command: String
    public var arguments: [String]
    /// Variables added to the gateway's environment for the process.
    public var environment: [String: String]
    /// The process's working directory (the gateway's when `nil`).
    public var workingDirectory: String?
    /// The plugin's own settings, passed in the handshake unchanged.
    public var settings: JSONValue
    /// How long the process may take to answer the handshake.
    public var startTimeout: Duration
    /// How long any other request may take.
    public var requestTimeout: Duration
    /// The longest line either side may send, in bytes.
    public var maxMessageBytes: Int
    /// Most records in one `read` or `write` message; larger batches are split.
    public var maxRecordsPerMessage: Int
    /// A folder the plugin must keep its data in instead of its configured store: set by the
    /// conformance check, which needs a new, empty store.
    public var scratchDirectory: String?

    /// The default of ``maxRecordsPerMessage``: a plugin adapter's download page
    /// (``PluginAdapterKind/largestDownloadPage``) in one `read` and one `write` message. Measured
    /// (`BENCHMARKS.md`): into the CSV example, 100,000 rows, 4.55 s against 5.45 s with 1,000 (medians
    /// of 6 alternating runs), each message costing both processes a round trip and the example an
    /// `fsync`.
    public static let defaultMaxRecordsPerMessage = 2_000

    public init(
        adapterName: String, zoneID: ZoneID, command: String, arguments: [String] = [], environment: [String: String] = [:],
        workingDirectory: String? = nil, settings: JSONValue = .object([:]), startTimeout: Duration = .seconds(10),
        requestTimeout: Duration = .seconds(30), maxMessageBytes: Int = 64 << 20, maxRecordsPerMessage: Int = PluginConfiguration.defaultMaxRecordsPerMessage,
        scratchDirectory: String? = nil
    ) {
        self.adapterName = adapterName
        self.zoneID = zoneID
        self.command = command
        self.arguments = arguments
        self.environment = environment
        self.workingDirectory = workingDirectory
        self.settings = settings
        self.startTimeout = startTimeout
        self.requestTimeout = requestTimeout
        self.maxMessageBytes = maxMessageBytes
        self.maxRecordsPerMessage = maxRecordsPerMessage
        self.scratchDirectory = scratchDirectory
    }

    /// The command line as messages show it.
    public var displayName: String {
        ([command] + arguments).map { $0.contains(" ") ? "'\($0)'" : $0 }.joined(separator: " ")
    }
}
