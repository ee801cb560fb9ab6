/// A gateway that cannot do what it was asked: its state folder, a store or the cloud is
/// unavailable, or another gateway process holds the lock. Messages never contain row data or
/// secrets.
public struct GatewayError: Error, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let name: String
        private init(_ name: String) { self.name = name }

        /// `state_dir` cannot be created or written.
        public static let stateUnavailable = Code("stateUnavailable")
        /// A file in `state_dir` is damaged.
        public static let corruptState = Code("corruptState")
        /// Another gateway process on the same `state_dir` is syncing.
        public static let alreadyRunning = Code("alreadyRunning")
        /// An adapter's store cannot be opened or read.
        public static let storeUnavailable = Code("storeUnavailable")
        /// The cloud cannot be opened or reached.
        public static let cloudUnavailable = Code("cloudUnavailable")
        /// A command named an adapter the config does not have.
        public static let unknownAdapter = Code("unknownAdapter")
        /// A file the command would write already exists.
        public static let fileExists = Code("fileExists")

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

    public var description: String { message }
}
