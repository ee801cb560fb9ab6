/// An error with a stable code of its own, more precise than the ``SyncError`` code that wraps it
/// when it reaches a report: a plugin's `pluginExited`, a SQL store's `missingTable`. Every
/// surface (the sync summary, the log, `/status`, the status page) shows the most precise code of
/// an adapter's failure (``AdapterSyncReport/failureCode``).
public protocol FailureCoded: Error {
    /// The code, as logs, metrics and JSON show it.
    var failureCode: String { get }
    /// The error that caused this one, searched for a more precise code still.
    var underlyingFailure: (any Error)? { get }
}

extension CodedError: FailureCoded {
    public var failureCode: String { code.rawValue }
    public var underlyingFailure: (any Error)? { underlying }
}

extension SyncError: FailureCoded {
    public var failureCode: String { code.rawValue }
    public var underlyingFailure: (any Error)? { underlying }
}

/// The most precise code in `error`'s chain of causes: the innermost ``FailureCoded`` error's.
public func mostPreciseFailureCode(of error: any Error) -> String? {
    var code: String?
    var current: (any Error)? = error
    var depth = 0
    while let coded = current as? any FailureCoded, depth < 16 {
        code = coded.failureCode
        current = coded.underlyingFailure
        depth += 1
    }
    return code
}
