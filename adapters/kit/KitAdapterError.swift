import GatewayCore

/// A failure of a kit adapter: its state database, or its store. Messages name the adapter and
/// the place, never field values.
public typealias KitAdapterError = CodedError<KitAdapterErrorCode>

/// What can make a `KitAdapterError`.
public enum KitAdapterErrorCode: String, Sendable, CaseIterable, CustomStringConvertible {
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
