import GatewayCore

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
    public enum Code: String, Sendable, CaseIterable, CustomStringConvertible {
        /// The file is not valid YAML.
        case invalidYAML
        /// The file, or a file it names, cannot be read.
        case unreadableFile
        /// A key the gateway does not know.
        case unknownKey
        /// A required key is absent.
        case missingKey
        /// A value of the wrong type (a list where a number belongs, ...).
        case wrongType
        /// A value of the right type that is not allowed (a bad duration, an unknown policy, ...).
        case invalidValue
        /// `${VAR}` names a variable that is not set.
        case undefinedVariable
        /// Two things that must have different names share one.
        case duplicateName
        /// An adapter or cloud `kind` no registered factory handles.
        case unknownKind
        /// Settings that contradict each other.
        case inconsistent
        /// A store the configuration names does not match it (a missing table or column).
        case storeMismatch
        /// A feature this build does not have yet.
        case unsupported

        /// The code's name, as logs, metrics and JSON show it.
        public var name: String { rawValue }
        public var description: String { rawValue }
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

/// A store that no longer matches the config reports its own cause's code (a SQL store's
/// `missingTable`), as a store that fails after the start does.
extension ConfigError: FailureCoded {
    public var failureCode: String { code.rawValue }
    public var underlyingFailure: (any Error)? { underlying }
}
