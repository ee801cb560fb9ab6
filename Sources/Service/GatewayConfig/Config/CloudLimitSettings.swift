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
        // Every key is read before any value is judged: a key not yet read when a value fails
        // would be reported as unknown (`max_request_size` looks like a misspelt `max_record_size`).
        let operations = try container.decodeIfPresent(Located<Int>.self, forKey: .maxOperations)
        let recordSize = try container.decodeIfPresent(Located<ByteSize>.self, forKey: .maxRecordSize)
        let requestSize = try container.decodeIfPresent(Located<ByteSize>.self, forKey: .maxRequestSize)
        let assetSize = try container.decodeIfPresent(Located<ByteSize>.self, forKey: .maxAssetSize)
        if let operations {
            guard operations.value >= 1 else { throw operations.problem(.invalidValue, "must be at least 1") }
            maxOperations = operations.value
        }
        func checked(_ size: Located<ByteSize>?) throws -> Int? {
            guard let size else { return nil }
            guard size.value.bytes >= 1, size.value.bytes <= Int64(Int32.max) else {
                throw size.problem(.invalidValue, "must be between 1 byte and 2GB")
            }
            return Int(size.value.bytes)
        }
        maxRecordSize = try checked(recordSize)
        maxRequestSize = try checked(requestSize)
        if let assetSize {
            guard assetSize.value.bytes >= 1 else { throw assetSize.problem(.invalidValue, "must be at least 1 byte") }
            maxAssetSize = assetSize.value.bytes
        }
        // Every kind's default record and request sizes are CloudKit's.
        let limits = applied(to: CloudLimits.cloudKit)
        if limits.maxRequestSize < limits.maxRecordSize {
            let given = { (size: Int?) in size == nil ? ", the default" : "" }
            throw decoder.configProblem(
                .inconsistent,
                "max_request_size (\(limits.maxRequestSize) bytes\(given(maxRequestSize))) must be at least max_record_size (\(limits.maxRecordSize) bytes\(given(maxRecordSize))): a record of the largest size must fit in a request; raise max_request_size or lower max_record_size"
            )
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
