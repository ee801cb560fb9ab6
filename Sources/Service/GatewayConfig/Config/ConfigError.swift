/// A place in a configuration file: the file as the user named it, and a 1-based line and column.
public struct ConfigLocation: Sendable, Hashable, CustomStringConvertible {
    public var file: String
    public var line: Int
    public var column: Int

    public init(file: String, line: Int, column: Int) {
        self.file = file
        self.line = line
        self.column = column
    }

    public var description: String { "\(file):\(line):\(column)" }
}

/// A configuration the gateway cannot run with. The message says what to change; the location
/// points at the offending key or value. Messages quote the YAML as written, before `${VAR}`
/// expansion, so values from the environment (secrets) never appear.
public struct ConfigError: Error, Sendable, CustomStringConvertible {
    /// What kind of problem it is.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let name: String
        private init(_ name: String) { self.name = name }

        /// The file is not valid YAML.
        public static let invalidYAML = Code("invalidYAML")
        /// The file, or a file it names, cannot be read.
        public static let unreadableFile = Code("unreadableFile")
        /// A key the gateway does not know.
        public static let unknownKey = Code("unknownKey")
        /// A required key is absent.
        public static let missingKey = Code("missingKey")
        /// A value of the wrong type (a list where a number belongs, ...).
        public static let wrongType = Code("wrongType")
        /// A value of the right type that is not allowed (a bad duration, an unknown policy, ...).
        public static let invalidValue = Code("invalidValue")
        /// `${VAR}` names a variable that is not set.
        public static let undefinedVariable = Code("undefinedVariable")
        /// Two things that must have different names share one.
        public static let duplicateName = Code("duplicateName")
        /// An adapter or cloud `kind` no registered factory handles.
        public static let unknownKind = Code("unknownKind")
        /// Settings that contradict each other.
        public static let inconsistent = Code("inconsistent")
        /// A store the configuration names does not match it (a missing table or column).
        public static let storeMismatch = Code("storeMismatch")
        /// A feature this build does not have yet.
        public static let unsupported = Code("unsupported")

        public var description: String { name }
    }

    public var code: Code
    public var message: String
    public var location: ConfigLocation?
    public var underlying: (any Error)?

    public init(_ code: Code, _ message: String, at location: ConfigLocation? = nil, underlying: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.location = location
        self.underlying = underlying
    }

    /// `file:line:column: message`, the form editors and terminals link to.
    public var description: String {
        guard let location else { return message }
        return "\(location): \(message)"
    }
}
