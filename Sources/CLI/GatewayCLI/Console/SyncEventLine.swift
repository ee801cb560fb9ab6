import Foundation
import GatewayCore

/// Sync events as JSON lines (`gateway sync --progress json`), for programs that wrap the
/// gateway: one object per event with `event`, `adapter` and the event's counts.
public struct SyncEventLine: Encodable, Equatable, Sendable {
    public var event: String
    public var adapter: String
    public var written: Int?
    public var deleted: Int?
    public var records: Int?
    public var pending: Int?
    public var saved: Int?
    public var failed: Int?
    public var done: Int?
    public var total: Int?
    public var size: Int?
    public var record: String?
    public var resolution: String?
    public var error: String?
    public var attempt: Int?
    public var outcome: String?

    public init(_ event: SyncEvent) {
        switch event {
        case .adapterStarted(let adapter):
            self.init(event: "adapterStarted", adapter: adapter)
        case .willFetch(let adapter):
            self.init(event: "willFetch", adapter: adapter)
        case .willApply(let adapter, let records):
            self.init(event: "willApply", adapter: adapter)
            self.records = records
        case .didFetch(let adapter, let written, let deleted):
            self.init(event: "didFetch", adapter: adapter)
            (self.written, self.deleted) = (written, deleted)
        case .willUpload(let adapter, let pending):
            self.init(event: "willUpload", adapter: adapter)
            self.pending = pending
        case .willCommit(let adapter, let records):
            self.init(event: "willCommit", adapter: adapter)
            self.records = records
        case .didUpload(let adapter, let saved, let deleted, let failed):
            self.init(event: "didUpload", adapter: adapter)
            (self.saved, self.deleted, self.failed) = (saved, deleted, failed)
        case .progress(let adapter, let done, let total):
            self.init(event: "progress", adapter: adapter)
            (self.done, self.total) = (done, total)
        case .conflict(let adapter, let recordID, _, let resolution):
            self.init(event: "conflict", adapter: adapter)
            (record, self.resolution) = (recordID.recordName, resolution.rawValue)
        case .batchSizeChanged(let adapter, let size):
            self.init(event: "batchSizeChanged", adapter: adapter)
            self.size = size
        case .retrying(let adapter, let error, let attempt, _):
            self.init(event: "retrying", adapter: adapter)
            (self.error, self.attempt) = (error.code.name, attempt)
        case .adapterFinished(let report):
            self.init(event: "adapterFinished", adapter: report.adapter)
            outcome = switch report.outcome {
            case .synced: "synced"
            case .paused: "paused"
            case .failed(let code, _): "failed:\(report.failureCode ?? code.rawValue)"
            }
        }
    }

    private init(event: String, adapter: String) {
        self.event = event
        self.adapter = adapter
    }

    /// The event as one line of JSON with a newline.
    public var text: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: (try? encoder.encode(self)) ?? Data("{}".utf8), as: UTF8.self) + "\n"
    }
}
