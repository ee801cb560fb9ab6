import Foundation
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

struct EmbeddedCloudPlan: CloudPlan {
    /// Keeps every user's zones; the gateway acts as `cloud.user`.
    var keepsUsers: Bool { true }

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
