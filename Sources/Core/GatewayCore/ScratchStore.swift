/// An adapter over a new, empty store made for the adapter conformance check, with the means to
/// edit that store the way another program would. `gateway check-adapter` and the package's tests
/// run the conformance suite against it.
public protocol ScratchStore: Sendable {
    /// The adapter under test, syncing the zone it was made for.
    var adapter: any ModelAdapter { get }

    /// Saves a record into the store behind the adapter's back.
    func saveLocally(_ record: Record) async throws

    /// Deletes a record from the store behind the adapter's back.
    func deleteLocally(_ id: RecordID) async throws

    /// Every record the store holds (values only).
    func storedRecords() async throws -> [RecordID: Record]

    /// A record of type `Note` the store refuses to write.
    func recordThatFailsToApply(zone: ZoneID) -> Record

    /// Whether the store finds edits by looking (listing, scanning) rather than capturing them.
    var detectsChangesByScanning: Bool { get }

    /// Stops what the store started (a process).
    func close() async
}
