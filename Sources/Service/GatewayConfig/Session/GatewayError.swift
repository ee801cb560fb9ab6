import GatewayCore

/// A gateway that cannot do what it was asked: its state folder, a store or the cloud is
/// unavailable, or another gateway process holds the lock. Messages never contain row data or
/// secrets.
public typealias GatewayError = CodedError<GatewayErrorCode>

/// What can make a `GatewayError`.
public enum GatewayErrorCode: String, Sendable, CaseIterable, CustomStringConvertible {
    /// `state_dir` cannot be created or written.
    case stateUnavailable
    /// A file in `state_dir` is damaged.
    case corruptState
    /// Another gateway process on the same `state_dir` is syncing.
    case alreadyRunning
    /// An adapter's store cannot be opened or read.
    case storeUnavailable
    /// The cloud cannot be opened or reached.
    case cloudUnavailable
    /// A command named an adapter the config does not have.
    case unknownAdapter
    /// A file the command would write already exists.
    case fileExists
    /// The control server cannot listen on `gateway.control.listen` (the port is taken, or the
    /// address is not this machine's).
    case controlUnavailable
    /// A `gateway share` command the cloud refused: the zone, share or invitation does not
    /// exist, or the cloud keeps no users.
    case shareRefused

    /// The code's name, as logs, metrics and JSON show it.
    public var name: String { rawValue }
    public var description: String { rawValue }
}
