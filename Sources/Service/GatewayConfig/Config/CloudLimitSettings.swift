import GatewayCore

/// `limits:` of a cloud kind (`embedded`, over `CloudLimits.selfHosted`; `postgres`, over
/// `CloudLimits.postgresCloud`; `cloudkit`, over `CloudLimits.cloudKit`): the keys given, over the
/// kind's defaults.
public struct CloudLimitSettings: Decodable, Sendable {
    private var maxOperations: Int?
    private var maxRecordSize: Int?
    private var maxRequestSize: Int?
    private var maxAssetSize: Int64?

    enum Keys: String, CodingKey {
        case maxOperations = "max_operations", maxRecordSize = "max_record_size", maxRequestSize = "max_request_size"
        case maxAssetSize = "max_asset_size"
    }

    /// Reads `max_operations`, `max_record_size`, `max_request_size` and `max_asset_size`.
    public init(from decoder: any Decoder) throws {
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
    public func applied(to base: CloudLimits) -> CloudLimits {
        var limits = base
        limits.maxOperationsPerRequest = maxOperations ?? base.maxOperationsPerRequest
        limits.maxRecordSize = maxRecordSize ?? base.maxRecordSize
        limits.maxRequestSize = maxRequestSize ?? base.maxRequestSize
        limits.maxAssetSize = maxAssetSize ?? base.maxAssetSize
        return limits
    }
}
