import Foundation
import Logging
import Synchronization

/// A log handler that writes one JSON object per line to standard error, for log collectors:
/// `time` (ISO 8601, UTC), `level`, `label`, `message`, `source`, then the metadata keys
/// (`adapter`, `sync`, …) as strings.
public struct JSONLogHandler: LogHandler {
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    private let label: String
    private static let output = Mutex(())

    public init(label: String) {
        self.label = label
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { _, new in new } }
        if let extra = event.metadata { merged.merge(extra) { _, new in new } }
        var object: [String: String] = [:]
        for (key, value) in merged { object[key] = "\(value)" }
        object["time"] = ISO8601DateFormatter().string(from: Date())
        object["level"] = event.level.rawValue
        object["label"] = label
        object["message"] = "\(event.message)"
        object["source"] = event.source
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard var line = try? encoder.encode(object) else { return }
        line.append(0x0A)
        Self.output.withLock { _ in FileHandle.standardError.write(line) }
    }
}
