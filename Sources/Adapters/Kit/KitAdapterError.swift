/// A failure of a kit adapter: its state database, or its store. Messages name the adapter and
/// the place, never field values.
public struct KitAdapterError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public enum Code: String, Sendable, CaseIterable, CustomStringConvertible {
        /// The sidecar state database cannot be opened, read or written.
        case stateFailed
        /// The sidecar state holds something this release cannot read.
        case corruptState
        /// The store failed an operation.
        case storeFailed

        /// The code's name, as logs, metrics and JSON show it.
        public var name: String { rawValue }
        public var description: String { rawValue }
    }

    /// What went wrong, as a stable code.
    public var code: Code
    /// What happened and where, with the underlying error's description; never field values.
    public var message: String
    /// The error that caused this one, when there is one.
    public var underlying: (any Error)?

    /// An error with a code, a message naming the adapter and place, and the error that caused it.
    public init(_ code: Code, _ message: String, underlying: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.underlying = underlying
    }

    /// The message, which already says what the underlying error was.
    public var description: String { message }
}
