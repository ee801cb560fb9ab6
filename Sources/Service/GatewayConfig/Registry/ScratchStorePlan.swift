import GatewayCore

/// An adapter plan that can also open its kind of adapter over a new, empty store, so
/// `gateway check-adapter` can run the conformance suite against the configured adapter without
/// touching its real store or state.
public protocol ScratchStorePlan: AdapterPlan {
    /// Whether the kind finds local edits by looking (listing, scanning) rather than capturing them.
    var detectsChangesByScanning: Bool { get }

    /// Whether the kind's adapter keeps failure marks (implements `failedRecords()`); default
    /// `true`. An adapter on `ModelAdapter`'s default says `false`, and the check expects refused
    /// records to be offered again instead.
    var keepsFailureMarks: Bool { get }

    /// Whether the kind's adapter signals its changes (implements `changeSignals()`); default
    /// `true`. An adapter on the default says `false`, and the check leaves the signal cases out.
    var signalsChanges: Bool { get }

    /// An adapter of this configuration over a new store and new state inside `directory`
    /// (which exists and is empty), syncing `zone`.
    func openScratch(in directory: String, zone: ZoneID) async throws -> any ScratchStore
}

extension ScratchStorePlan {
    public var keepsFailureMarks: Bool { true }
    public var signalsChanges: Bool { true }
}
