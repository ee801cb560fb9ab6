/// Which passes of an ordered sync uploaded to which zone, and when, in the order of the sync's
/// passes: what tells the synchronizer that an adapter's pass began before a sibling on its zone
/// uploaded, so the adapter has not downloaded that upload yet.
struct ZoneUploadLedger {
    private let zones: [ZoneID]
    private var clock = 0
    /// When each adapter's latest pass began.
    private var started: [Int?]
    /// For each zone, when each adapter's latest uploading pass ended.
    private var uploads: [ZoneID: [Int: Int]] = [:]
    /// When each adapter's latest pass ended having saved records the cloud completed with
    /// fields its store lacks (``AdapterSyncReport/savesTheCloudCompleted``).
    private var completedByTheCloud: [Int: Int] = [:]

    /// - Parameter zones: the zone of each adapter, by position.
    init(zones: [ZoneID]) {
        self.zones = zones
        started = Array(repeating: nil, count: zones.count)
    }

    /// Notes that the adapter at `index` begins a pass.
    mutating func passStarts(_ index: Int) {
        clock += 1
        started[index] = clock
    }

    /// Notes the end of a pass that uploaded (saved or deleted) `uploaded` records, `completed` of
    /// whose saves the cloud completed with fields the store lacks.
    mutating func passEnded(_ index: Int, uploaded: Int, completed: Int = 0) {
        clock += 1
        if uploaded > 0 { uploads[zones[index], default: [:]][index] = clock }
        if completed > 0 { completedByTheCloud[index] = clock }
    }

    /// The adapters, in order, whose latest pass began before a sibling on their zone finished an
    /// uploading pass, or saved records the cloud completed (their store takes the cloud's
    /// versions on its next download).
    func behind() -> [Int] {
        zones.indices.filter { index in
            guard let start = started[index] else { return false }
            if let completed = completedByTheCloud[index], completed > start { return true }
            return uploads[zones[index]]?.contains { $0.key != index && $0.value > start } ?? false
        }
    }
}
