/// An error with a stable code from a closed set, a message that says what happened and what to
/// do, and the error that caused it.
///
/// The gateway's plain error types are this with a code enum of their own (`GatewayError`,
/// `KitAdapterError`, `JSONFilesAdapterError`); errors that carry more (a record, a retry delay, a
/// table, a missing key) are structs of their own with the same three properties.
public struct CodedError<Codes>: Error, Sendable, CustomStringConvertible
where Codes: RawRepresentable & Sendable & Hashable, Codes.RawValue == String {
    /// The error's set of codes.
    public typealias Code = Codes

    /// What went wrong, as a stable code programs and logs match on.
    public var code: Code
    /// What happened and where, with the underlying error's description; never row data or secrets.
    public var message: String
    /// The error that caused this one, when there is one.
    public var underlying: (any Error)?

    /// An error with a code, a message and the error that caused it.
    public init(_ code: Code, _ message: String, underlying: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.underlying = underlying
    }

    /// The message, which already says what the underlying error was.
    public var description: String { message }
}
