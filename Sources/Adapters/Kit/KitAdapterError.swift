/// A failure of a kit adapter: its state database, or its store. Messages name the adapter and
/// the place, never field values.
public struct KitAdapterError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let name: String
        public init(_ name: String) { self.name = name }

        /// The sidecar state database cannot be opened, read or written.
        public static let stateFailed = Code("stateFailed")
        /// The sidecar state holds something this release cannot read.
        public static let corruptState = Code("corruptState")
        /// The store failed an operation.
        public static let storeFailed = Code("storeFailed")

        public var description: String { name }
    }

    public var code: Code
    public var message: String
    public var underlying: (any Error)?

    public init(_ code: Code, _ message: String, underlying: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.underlying = underlying
    }

    /// The message, which already says what the underlying error was.
    public var description: String { message }
}
