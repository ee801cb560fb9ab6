import GatewayCore

/// What a ``JSONFilesAdapter`` syncs: a folder of JSON documents and one zone.
public struct JSONFilesAdapterConfiguration: Sendable {
    /// How documents are laid out in the folder.
    public enum Layout: String, Sendable, CaseIterable {
        /// `<directory>/<RecordType>/<recordName>.json`, one object per file.
        case filePerRecord = "file-per-record"
        /// `<directory>/<RecordType>.json`, one object keyed by record name.
        case collection
    }

    public var name: String
    /// The folder.
    public var directory: String
    public var zoneID: ZoneID
    public var layout: Layout
    /// How often change signals rescan the folder.
    public var pollInterval: Duration
    /// The kit's sidecar state database, such as `<state_dir>/adapters/<name>.sqlite`.
    public var statePath: String

    /// The store's file index, beside the state: `<state>.files.sqlite`.
    public var indexPath: String {
        (statePath.hasSuffix(".sqlite") ? String(statePath.dropLast(7)) : statePath) + ".files.sqlite"
    }

    public init(
        name: String, directory: String, zoneID: ZoneID, layout: Layout = .filePerRecord, pollInterval: Duration = .seconds(1),
        statePath: String
    ) {
        self.name = name
        self.directory = directory
        self.zoneID = zoneID
        self.layout = layout
        self.pollInterval = pollInterval
        self.statePath = statePath
    }
}

/// A JSON folder problem. Messages name files, never their contents.
public typealias JSONFilesAdapterError = CodedError<JSONFilesAdapterErrorCode>

/// What can make a `JSONFilesAdapterError`.
public enum JSONFilesAdapterErrorCode: String, Sendable, CaseIterable, CustomStringConvertible {
    /// The folder does not exist or cannot be read.
    case folderMissing
    /// A document is not what the layout needs (not an object, an entry not an object).
    case invalidDocument
    /// Two files stand for one record name (`a b.json` and `a%20b.json`, or a record in two
    /// collections): the second one is not synced until one of them goes.
    case duplicateRecordName
    /// A record from the cloud has a name no file can carry (NUL).
    case unwritableName
    /// A document or the file index cannot be read or written (disk full, permissions).
    case fileFailed
    /// The state of an earlier release cannot be carried over.
    case migrationFailed

    /// The code's name, as logs, metrics and JSON show it.
    public var name: String { rawValue }
    public var description: String { rawValue }
}
