import CloudKitWeb
import Foundation
import GatewayCore

/// Answers `records/query` pages over a cloud that can scan its record keys.
///
/// Without `sortBy` (or sorted by record name ascending), a page walks the zone's
/// (zone, record name) key from where the previous page stopped, examining at most
/// ``scanBudget`` records: a selective filter may give a short (even empty) page with a
/// continuation marker, never a scan of the whole zone per page. With a sort on anything else, the
/// first page reads every record of the type once, sorts the matches and keeps their names as a
/// cursor; later pages read only their records by name. A cursor idle for ``cursorLifetime`` is
/// dropped; a marker naming it re-runs the query and resumes at the same position.
actor RecordQueryPager {
    /// Records examined at most per unsorted page.
    static let scanBudget = 10_000
    /// Records read per scan call.
    static let scanChunk = 500
    /// Matches a sorted query may have.
    static let maximumSortedMatches = 200_000
    /// Sorted cursors kept at once; the least recently used goes first.
    static let maximumCursors = 16
    static let cursorLifetime: Duration = .seconds(600)

    private struct Cursor {
        var query: RecordQuery
        var zones: [ZoneID]
        var matches: [RecordID]
        var lastUsed: ContinuousClock.Instant
    }

    private var cursors: [String: Cursor] = [:]

    init() {}

    /// One page: at most `limit` records and, when more may follow, the marker for the next page.
    /// - Parameter cloud: what the caller may read (their view of the cloud).
    func page(
        _ query: RecordQuery, zones: [ZoneID], limit: Int, continuation: String?, in cloud: any CloudDatabase & RecordScanning
    ) async throws -> (records: [Record], next: String?) {
        let marker = try continuation.map { text throws(CloudError) in try QueryContinuation(text: text) }
        if query.sort.isEmpty || query.sort == [QuerySort(field: .recordName)] {
            return try await walk(query, zones: zones, limit: limit, from: marker, in: cloud)
        }
        return try await sorted(query, zones: zones, limit: limit, from: marker, in: cloud)
    }

    private func walk(_ query: RecordQuery, zones: [ZoneID], limit: Int, from marker: QueryContinuation?, in cloud: any CloudDatabase & RecordScanning) async throws -> (
        records: [Record], next: String?
    ) {
        var remaining = zones
        var after: String?
        if let marker {
            guard case .position(let zoneKey, let name) = marker else { throw QueryContinuation.mismatch }
            remaining = zones.filter { DatabaseChangeToken.key($0) >= zoneKey }
            if remaining.first.map(DatabaseChangeToken.key) == zoneKey { after = name }
        }
        var found: [Record] = []
        var examined = 0
        while let zone = remaining.first {
            let chunk = try await cloud.scanRecords(in: zone, ofType: query.recordType, after: after, limit: Self.scanChunk)
            for record in chunk {
                examined += 1
                after = record.id.recordName
                if query.matches(record) { found.append(record) }
                if found.count == limit || examined >= Self.scanBudget {
                    return (found, QueryContinuation.position(zone: DatabaseChangeToken.key(zone), after: record.id.recordName).text)
                }
            }
            if chunk.count < Self.scanChunk {
                remaining.removeFirst()
                after = nil
            }
        }
        return (found, nil)
    }

    private func sorted(_ query: RecordQuery, zones: [ZoneID], limit: Int, from marker: QueryContinuation?, in cloud: any CloudDatabase & RecordScanning) async throws -> (
        records: [Record], next: String?
    ) {
        dropExpiredCursors()
        var cursorID = UUID().uuidString
        var offset = 0
        var cursor: Cursor?
        if let marker {
            guard case .cursor(let id, let at) = marker else { throw QueryContinuation.mismatch }
            (cursorID, offset) = (id, at)
            cursor = cursors[id]
            if let found = cursor, found.query != query || found.zones != zones { throw QueryContinuation.mismatch }
        }
        if cursor == nil { cursor = try await run(query, zones: zones, in: cloud) }
        guard var cursor else { return ([], nil) }
        cursor.lastUsed = .now
        var records: [Record] = []
        var position = offset
        while records.count < limit, position < cursor.matches.count {
            let names = Array(cursor.matches[position..<min(cursor.matches.count, position + limit - records.count)])
            position += names.count
            // A record deleted or changed since the first page is left out or shown as it is now.
            for record in try await cloud.lookup(names).compactMap({ $0 }) where query.matches(record) { records.append(record) }
        }
        guard position < cursor.matches.count else {
            cursors[cursorID] = nil
            return (records, nil)
        }
        cursors[cursorID] = cursor
        if cursors.count > Self.maximumCursors, let oldest = cursors.min(by: { $0.value.lastUsed < $1.value.lastUsed })?.key {
            cursors[oldest] = nil
        }
        return (records, QueryContinuation.cursor(id: cursorID, offset: position).text)
    }

    /// Every match of `query` in `zones`, sorted.
    private func run(_ query: RecordQuery, zones: [ZoneID], in cloud: any CloudDatabase & RecordScanning) async throws -> Cursor {
        var matches: [Record] = []
        for zone in zones {
            var after: String?
            while true {
                let chunk = try await cloud.scanRecords(in: zone, ofType: query.recordType, after: after, limit: Self.scanChunk)
                for record in chunk where query.matches(record) {
                    matches.append(Self.sortKeys(of: record, for: query))
                    if matches.count > Self.maximumSortedMatches {
                        throw CloudError(
                            .limitExceeded,
                            "records/query: a sorted query may match at most \(Self.maximumSortedMatches) records; add a filter or leave out sortBy")
                    }
                }
                guard chunk.count == Self.scanChunk, let last = chunk.last else { break }
                after = last.id.recordName
            }
        }
        matches.sort { query.orders($0, before: $1) }
        return Cursor(query: query, zones: zones, matches: matches.map(\.id), lastUsed: .now)
    }

    /// What sorting needs of a record (its name, times and sort fields), so a cursor of many
    /// matches does not hold their other fields while it is built.
    private static func sortKeys(of record: Record, for query: RecordQuery) -> Record {
        var fields: [String: FieldValue] = [:]
        for key in query.sort {
            if case .field(let name) = key.field, let value = record[name] { fields[name] = value }
        }
        return Record(
            id: record.id, recordType: record.recordType, fields: fields, modifiedAt: record.modifiedAt, createdAt: record.createdAt)
    }

    private func dropExpiredCursors() {
        let now = ContinuousClock.now
        cursors = cursors.filter { now - $0.value.lastUsed < Self.cursorLifetime }
    }
}

/// The opaque `continuationMarker` of a query page: where an unsorted walk stopped, or a sorted
/// cursor and the offset in it.
enum QueryContinuation: Equatable {
    case position(zone: String, after: String)
    case cursor(id: String, offset: Int)

    static let mismatch = CloudError(
        .invalidArguments, "records/query: the continuationMarker belongs to another query; send the query it came with")

    init(text: String) throws(CloudError) {
        let invalid = CloudError(.invalidArguments, "records/query: the continuationMarker is not one this endpoint issued")
        guard let data = Data(base64URLText: text), let parts = (try? JSONValue.parse(data))?.arrayValue?.compactMap(\.stringValue),
            parts.count == 3
        else { throw invalid }
        switch parts[0] {
        case "p": self = .position(zone: parts[1], after: parts[2])
        case "c":
            guard let offset = Int(parts[2]), offset >= 0 else { throw invalid }
            self = .cursor(id: parts[1], offset: offset)
        default: throw invalid
        }
    }

    var text: String {
        let parts =
            switch self {
            case .position(let zone, let after): ["p", zone, after]
            case .cursor(let id, let offset): ["c", id, String(offset)]
            }
        let data = (try? JSONValue.array(parts.map(JSONValue.string)).serialized()) ?? Data()
        return data.base64URLText
    }
}
