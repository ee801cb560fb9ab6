import Foundation
import GatewayCore

/// CloudKit Web Services' error dictionaries (`serverErrorCode`, `reason`, `retryAfter`,
/// `redirectURL`, `uuid`) and their ``CloudError`` codes, both ways.
///
/// CloudKit's fourteen codes are coarser than ``CloudError/Code``: an oversized record, a bad
/// token and a malformed request are all `BAD_REQUEST`. The `gateway cloud serve` endpoint
/// therefore adds `gatewayErrorCode` with the exact code; the client prefers it when present and
/// falls back to the table below otherwise (iCloud never sends it; other clients ignore it).
public enum CloudKitErrorCoding {
    /// The extension key carrying the exact ``CloudError/Code`` name.
    public static let gatewayCodeKey = "gatewayErrorCode"

    /// The ``CloudError`` code for a CloudKit `serverErrorCode`.
    public static func code(forServerErrorCode serverCode: String) -> CloudError.Code {
        switch serverCode {
        case "ACCESS_DENIED": .permissionFailure
        case "ATOMIC_ERROR": .batchRequestFailed
        case "AUTHENTICATION_FAILED", "AUTHENTICATION_REQUIRED": .notAuthenticated
        case "BAD_REQUEST", "VALIDATING_REFERENCE_ERROR", "UNIQUE_FIELD_ERROR": .invalidArguments
        case "CONFLICT", "EXISTS": .serverRecordChanged
        case "NOT_FOUND": .unknownItem
        case "QUOTA_EXCEEDED": .quotaExceeded
        case "THROTTLED": .requestRateLimited
        case "TRY_AGAIN_LATER": .serviceUnavailable
        case "ZONE_NOT_FOUND": .zoneNotFound
        default: .internalError
        }
    }

    /// The CloudKit `serverErrorCode` and HTTP status the endpoint answers for `code`.
    public static func serverErrorCode(for code: CloudError.Code) -> (serverErrorCode: String, status: Int) {
        switch code {
        case .serverRecordChanged: ("CONFLICT", 409)
        case .zoneNotFound, .userDeletedZone: ("ZONE_NOT_FOUND", 404)
        case .requestRateLimited: ("THROTTLED", 429)
        case .zoneBusy, .serviceUnavailable, .networkFailure: ("TRY_AGAIN_LATER", 503)
        case .quotaExceeded: ("QUOTA_EXCEEDED", 413)
        case .notAuthenticated: ("AUTHENTICATION_FAILED", 401)
        case .permissionFailure: ("ACCESS_DENIED", 403)
        case .unknownItem, .assetNotAvailable: ("NOT_FOUND", 404)
        case .batchRequestFailed: ("ATOMIC_ERROR", 400)
        case .internalError: ("INTERNAL_ERROR", 500)
        default: ("BAD_REQUEST", 400)
        }
    }

    /// The error dictionary for `error`, with `recordName` for per-record errors.
    public static func encode(_ error: CloudError, recordName: String? = nil) -> JSONValue {
        var object: [String: JSONValue] = [
            "serverErrorCode": .string(serverErrorCode(for: error.code).serverErrorCode), "reason": .string(error.message),
            gatewayCodeKey: .string(error.code.name), "uuid": .string(UUID().uuidString),
        ]
        if let recordName { object["recordName"] = .string(recordName) }
        if let retryAfter = error.retryAfter {
            object["retryAfter"] = .double(Double(retryAfter.components.seconds) + Double(retryAfter.components.attoseconds) / 1e18)
        }
        return .object(object)
    }

    /// Whether `value` is an error dictionary rather than a record or zone.
    public static func isError(_ value: JSONValue) -> Bool {
        value["serverErrorCode"] != nil
    }

    /// The ``CloudError`` an error dictionary describes.
    /// - Parameters:
    ///   - context: what was being done, for the message (`"records/modify"`, `"record Notes/n-1"`).
    ///   - retryAfterHeader: the HTTP `Retry-After` header, used when the body has no `retryAfter`.
    public static func decode(_ value: JSONValue, context: String, retryAfterHeader: String? = nil) -> CloudError {
        let serverCode = value["serverErrorCode"]?.stringValue ?? "UNKNOWN"
        var code = code(forServerErrorCode: serverCode)
        if let exact = value[gatewayCodeKey]?.stringValue, let known = CloudError.Code.allCases.first(where: { $0.name == exact }) {
            code = known
        }
        let reason = value["reason"]?.stringValue ?? "no reason given"
        var message = "\(context): CloudKit answered \(serverCode): \(reason)"
        if let redirect = value["redirectURL"]?.stringValue {
            message += "; sign in at \(redirect) and store the new web auth token"
        }
        if let uuid = value["uuid"]?.stringValue { message += " (request \(uuid))" }
        let seconds = value["retryAfter"]?.doubleValue ?? retryAfterHeader.flatMap(Double.init)
        let retryAfter = seconds.flatMap { $0 >= 0 && $0 < 86_400 ? Duration.milliseconds(Int64($0 * 1000)) : nil }
        return CloudError(code, message, retryAfter: retryAfter)
    }
}
