import Foundation
import EmbeddedCloud
import GatewayCore
import GatewayConfig

/// `kind: embedded`: the cloud in one SQLite file on this machine; the default.
///
/// Keys: `path` (default `<state_dir>/cloud.sqlite`), `limits` (`max_operations`,
/// `max_record_size`, `max_request_size`, `max_asset_size`; ``CloudLimits/selfHosted`` by default),
/// `tombstone_retention` (default 30d) and `poll_interval` (default 100ms).
public struct EmbeddedCloudKind: CloudKind {
    public let name = "embedded"

    public init() {}

    enum Keys: String, CodingKey {
        case kind, path, limits, tombstoneRetention = "tombstone_retention", pollInterval = "poll_interval"
    }

    public func decodePlan(from decoder: any Decoder, context: ConfigContext) throws -> any CloudPlan {
        let container = try decoder.container(keyedBy: Keys.self)
        _ = try container.decodeIfPresent(String.self, forKey: .kind)
        let path = try container.decodeIfPresent(String.self, forKey: .path).map(context.resolve)
            ?? URL(fileURLWithPath: context.stateDirectory).appendingPathComponent("cloud.sqlite").path
        var configuration = EmbeddedCloud.Configuration()
        configuration.limits = try container.decodeIfPresent(CloudLimitSettings.self, forKey: .limits)?.applied(to: .selfHosted) ?? .selfHosted
        for (key, keyPath) in [(Keys.tombstoneRetention, \EmbeddedCloud.Configuration.tombstoneRetention), (.pollInterval, \.signalPollInterval)] {
            if let value = try container.decodeIfPresent(Located<ConfigDuration>.self, forKey: key) {
                guard value.value.duration > .zero else { throw value.problem(.invalidValue, "must be longer than 0s") }
                configuration[keyPath: keyPath] = value.value.duration
            }
        }
        return EmbeddedCloudPlan(path: path, configuration: configuration)
    }
}

/// `limits:` of a cloud that enforces them itself: the keys given, over the kind's defaults.
struct CloudLimitSettings: Decodable {
    private var maxOperations: Int?
    private var maxRecordSize: Int?
    private var maxRequestSize: Int?
    private var maxAssetSize: Int64?

    enum Keys: String, CodingKey {
        case maxOperations = "max_operations", maxRecordSize = "max_record_size", maxRequestSize = "max_request_size"
        case maxAssetSize = "max_asset_size"
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        if let value = try container.decodeIfPresent(Located<Int>.self, forKey: .maxOperations) {
            guard value.value >= 1 else { throw value.problem(.invalidValue, "must be at least 1") }
            maxOperations = value.value
        }
        for (key, keyPath) in [(Keys.maxRecordSize, \CloudLimitSettings.maxRecordSize), (.maxRequestSize, \.maxRequestSize)] {
            if let value = try container.decodeIfPresent(Located<ByteSize>.self, forKey: key) {
                guard value.value.bytes >= 1, value.value.bytes <= Int64(Int32.max) else {
                    throw value.problem(.invalidValue, "must be between 1 byte and 2GB")
                }
                self[keyPath: keyPath] = Int(value.value.bytes)
            }
        }
        if let value = try container.decodeIfPresent(Located<ByteSize>.self, forKey: .maxAssetSize) {
            guard value.value.bytes >= 1 else { throw value.problem(.invalidValue, "must be at least 1 byte") }
            maxAssetSize = value.value.bytes
        }
        // Every kind's default record and request sizes are CloudKit's.
        let limits = applied(to: CloudLimits.cloudKit)
        if limits.maxRequestSize < limits.maxRecordSize {
            throw decoder.configProblem(.inconsistent, "max_request_size must be at least max_record_size")
        }
    }

    /// `base` with the keys that were given.
    func applied(to base: CloudLimits) -> CloudLimits {
        var limits = base
        limits.maxOperationsPerRequest = maxOperations ?? base.maxOperationsPerRequest
        limits.maxRecordSize = maxRecordSize ?? base.maxRecordSize
        limits.maxRequestSize = maxRequestSize ?? base.maxRequestSize
        limits.maxAssetSize = maxAssetSize ?? base.maxAssetSize
        return limits
    }
}

struct EmbeddedCloudPlan: CloudPlan {
    let path: String
    let configuration: EmbeddedCloud.Configuration

    var limits: CloudLimits { configuration.limits }

    func check() async throws {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
            guard !isDirectory.boolValue else {
                throw GatewayError(
                    .cloudUnavailable, "the embedded cloud \(path) is a folder; point cloud.path at the cloud's file (or leave it out for <state_dir>/cloud.sqlite)")
            }
            guard FileManager.default.isReadableFile(atPath: path) else {
                throw GatewayError(.cloudUnavailable, "the embedded cloud \(path) cannot be read; check its permissions and cloud.path")
            }
        }
    }

    func open() async throws -> any CloudDatabase {
        try FileManager.default.createDirectory(
            at: URL(fileURLWithPath: path).deletingLastPathComponent(), withIntermediateDirectories: true)
        do {
            return try EmbeddedCloud(path: path, configuration: configuration)
        } catch let error as CloudError {
            throw GatewayError(.cloudUnavailable, "cannot open the embedded cloud: \(error.message) (cloud.path)", underlying: error)
        }
    }
}
