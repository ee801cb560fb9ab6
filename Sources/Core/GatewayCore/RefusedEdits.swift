import Foundation

/// Local edits of a zone that another user shared read-only, which the cloud refused with
/// ``CloudError/Code/permissionFailure``: they can never be sent. Rather than leave the store
/// different from the zone for good, the synchronizer keeps each refused record (its local
/// values, or its deletion) as one JSON line in `<directory>/<adapter>.jsonl`, then writes the
/// owner's version into the store, and reports the record in
/// ``AdapterSyncReport/refusedEdits``. Nothing is lost, and the store stays a replica of the zone.
struct RefusedEditsJournal {
    let directory: String

    /// One kept edit.
    struct Entry {
        var adapter: String
        var zone: String
        var owner: String
        var recordName: String
        var refusedAt: String
        /// The local record as it was (`nil`: the edit deleted it).
        var record: Record?
        var reason: String

        /// The entry as one line of JSON: names and reason as strings, the record's fields as
        /// plain JSON values (binary values in base64), `"deleted": true` for a deletion.
        var line: [UInt8] {
            var out: [UInt8] = []
            func key(_ name: String, _ value: String, first: Bool = false) {
                out += Array((first ? "" : ",").utf8)
                JSONValue.writeString(name, into: &out)
                out.append(UInt8(ascii: ":"))
                JSONValue.writeString(value, into: &out)
            }
            out.append(UInt8(ascii: "{"))
            key("adapter", adapter, first: true)
            key("zone", zone)
            key("owner", owner)
            key("recordName", recordName)
            key("refusedAt", refusedAt)
            key("reason", reason)
            if let record {
                key("recordType", record.recordType)
                out += Array(",\"fields\":{".utf8)
                for (index, (name, value)) in record.fields.sorted(by: { $0.key < $1.key }).enumerated() {
                    if index > 0 { out.append(UInt8(ascii: ",")) }
                    JSONValue.writeString(name, into: &out)
                    out.append(UInt8(ascii: ":"))
                    out += Array(value.jsonText(bytes: { $0.base64EncodedString() }).utf8)
                }
                out.append(UInt8(ascii: "}"))
            } else {
                out += Array(",\"deleted\":true".utf8)
            }
            out += Array("}\n".utf8)
            return out
        }
    }

    /// Appends `entries` to the adapter's journal; the file is created on first use.
    func keep(_ entries: [Entry], adapter: String) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = URL(fileURLWithPath: directory).appendingPathComponent("\(adapter).jsonl").path
        var data = Data()
        for entry in entries { data.append(contentsOf: entry.line) }
        if !FileManager.default.fileExists(atPath: path) { _ = FileManager.default.createFile(atPath: path, contents: nil) }
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        defer { try? handle.close() }
        try handle.seekToEnd()
        try handle.write(contentsOf: data)
        try handle.synchronize()
    }
}

extension SyncContext {
    /// Keeps the refused local edits of `refused` (record and the cloud's reason) in the
    /// journal, then replaces them in the store with the zone's versions, committed with
    /// `zoneState`. Without a journal folder (``SyncConfiguration/refusedEditsDirectory``) the
    /// edits stay in the store, marked failed.
    func restoreRefused(_ refused: [(RecordID, CloudError)], zoneState: ZoneSyncState, report: inout AdapterSyncReport) async throws {
        guard !refused.isEmpty, let directory = configuration.refusedEditsDirectory else { return }
        let ids = refused.map(\.0)
        let local = try await localState(of: ids)
        let now = ISO8601Timestamps.format(Timestamp(millisecondsSince1970: Int64(Date().timeIntervalSince1970 * 1000)))
        let entries = refused.map { id, error in
            RefusedEditsJournal.Entry(
                adapter: name, zone: zone.zoneName, owner: zone.ownerName, recordName: id.recordName, refusedAt: now, record: local[id]?.record,
                reason: error.message)
        }
        do {
            try RefusedEditsJournal(directory: directory).keep(entries, adapter: name)
        } catch {
            throw SyncError(
                .adapterFailed, "cannot keep the local edits a read-only share refused in \(directory) (\(error)); they stay in the store, marked failed",
                adapter: name, underlying: error)
        }
        let servers = try await retrying("looking up refused records") { try await cloud.lookup(ids) }
        var reserved = ReservedPositions(configuration)
        try checkCompatibility(servers.compactMap { $0 }, reserved: &reserved)
        var changes = DownloadedChanges(state: SyncStateUpdate(zoneState: zoneState.encoded()))
        for (id, found) in zip(ids, servers) {
            var server: Record?
            if let found { server = try await localForm(found, reserved: &reserved).record }
            let current = local[id]
            let pendingVersion = current?.pendingVersion ?? 0
            let recordType = server?.recordType ?? current?.record?.recordType ?? ""
            let rebased = server.map { RecordMetadata(syncedRecord: $0) } ?? RecordMetadata(changeTag: nil, recordType: recordType, fingerprints: [:])
            let conflict = ConflictContext(recordID: id, ancestor: nil, local: current?.record, server: server, superseded: [])
            _ = Self.record(.server, of: conflict, recordType: recordType, rebased: rebased, pendingVersion: pendingVersion, into: &changes)
            changes.expectedPendingVersions[id] = pendingVersion
        }
        let restored = changes
        try await store("restoring refused records") { try await adapter.apply(restored) }
        report.downloaded += restored.writes.count
        report.deletedLocally += restored.deletes.count
        report.refusedEdits += refused.count
    }
}
