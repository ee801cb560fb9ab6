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

    /// Notes the end of a pass that uploaded (saved or deleted) `uploaded` records.
    mutating func passEnded(_ index: Int, uploaded: Int) {
        clock += 1
        if uploaded > 0 { uploads[zones[index], default: [:]][index] = clock }
    }

    /// The adapters, in order, whose latest pass began before a sibling on their zone finished an
    /// uploading pass.
    func behind() -> [Int] {
        zones.indices.filter { index in
            guard let start = started[index] else { return false }
            return uploads[zones[index]]?.contains { $0.key != index && $0.value > start } ?? false
        }
    }
}
