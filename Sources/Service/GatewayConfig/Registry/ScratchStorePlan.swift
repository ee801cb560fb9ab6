import GatewayCore

/// An adapter plan that can also open its kind of adapter over a new, empty store, so
/// `gateway check-adapter` can run the conformance suite against the configured adapter without
/// touching its real store or state.
public protocol ScratchStorePlan: AdapterPlan {
    /// Whether the kind finds local edits by looking (listing, scanning) rather than capturing them.
    var detectsChangesByScanning: Bool { get }

    /// An adapter of this configuration over a new store and new state inside `directory`
    /// (which exists and is empty), syncing `zone`.
    func openScratch(in directory: String, zone: ZoneID) async throws -> any ScratchStore
}
