import Foundation

/// A server version of a record in the form the store holds it (see ``SyncContext/localForm(_:reserved:)``).
struct IncomingRecord: Sendable {
    var id: RecordID
    /// The record without the reserved fields; `nil`: deleted on the server.
    var record: Record?
    /// Whether this replica wrote that version (its stamp was in the device field).
    var writtenHere = false
    /// The store's change-log version of the change this replica uploaded as that version, when
    /// its stamp carries one (``SyncContext/writerStampField(_:version:)``).
    var writtenHereFromVersion: Int64?
    /// A record a full refetch did not return (no record, not even a tombstone), rather than a
    /// tombstone from the feed.
    var absentFromCloud = false
    /// The values earlier versions held and this one replaced (``RecordMetadata/superseded``).
    var superseded: [UInt64] = []
}

/// Where a layout keeps the two fields the gateway reserves, remembered for the last layout seen:
/// a page's records share a layout or two, so the names are looked up once per layout.
struct ReservedPositions {
    let compatibilityField: String
    let deviceField: String
    let supersededField: String
    private var layout: RecordLayout?
    private var positions: (compatibility: Int?, device: Int?, superseded: Int?) = (nil, nil, nil)

    init(_ configuration: SyncConfiguration) {
        compatibilityField = configuration.compatibilityVersionField
        deviceField = configuration.deviceIDField
        supersededField = configuration.supersededValuesField
    }

    mutating func of(_ layout: RecordLayout) -> (compatibility: Int?, device: Int?, superseded: Int?) {
        if layout !== self.layout {
            self.layout = layout
            positions = (layout.position(of: compatibilityField), layout.position(of: deviceField), layout.position(of: supersededField))
        }
        return positions
    }
}

extension SyncContext {
    /// Refuses records written by a newer model version, before anything of their page is applied.
    func checkCompatibility(_ records: [Record], reserved: inout ReservedPositions) throws {
        // By index: iterating the records copied each one (about 1.5% of a download's CPU).
        for index in records.indices {
            guard let position = reserved.of(records[index].layout).compatibility,
                case .int64(let version)? = records[index].values[position], version > configuration.compatibilityVersion
            else { continue }
            throw SyncError(
                .higherModelVersionFound,
                "record \(records[index].id) was written with model version \(version), newer than this gateway's \(configuration.compatibilityVersion); upgrade the gateway. Nothing of that page was applied and the change token did not move",
                adapter: name)
        }
    }

    func checkCompatibility(_ records: [Record]) throws {
        var reserved = ReservedPositions(configuration)
        try checkCompatibility(records, reserved: &reserved)
    }

    /// A cloud record as the adapter sees it: encrypted fields decrypted, asset fields replaced by
    /// their bytes (checked against their checksum), the fields the gateway reserves for itself
    /// made null (the device stamp says whether this replica wrote that version). Works on the
    /// record's one copy of its values.
    func localForm(_ record: consuming Record, reserved: inout ReservedPositions) async throws -> IncomingRecord {
        try open(&record)
        for position in record.values.indices {
            guard case .asset(let reference)? = record.values[position] else { continue }
            let data = try await retrying("downloading an asset") { try await cloud.downloadAsset(reference) }
            guard Int64(data.count) == reference.size, AssetChecksum.of(data) == reference.checksum else {
                throw SyncError(
                    .cloudFailed,
                    "the asset of field \(record.layout.fieldNames[position]) of record \(record.id.recordName) does not match its checksum; nothing of the page was applied and the change token did not move",
                    adapter: name)
            }
            record[position: position] = .bytes(data)
        }
        let (compatibility, device, supersededPosition) = reserved.of(record.layout)
        var stamp: FieldValue?
        if let device {
            stamp = record.values[device]
            record[position: device] = nil
        }
        if let compatibility { record[position: compatibility] = nil }
        var superseded: [UInt64] = []
        if let supersededPosition {
            if case .bytes(let data)? = record.values[supersededPosition] { superseded = Self.supersededValues(data) }
            record[position: supersededPosition] = nil
        }
        let (writtenHere, version) = ownership(of: stamp)
        return IncomingRecord(id: record.id, record: record, writtenHere: writtenHere, writtenHereFromVersion: version, superseded: superseded)
    }

    /// Whether a device field's value is this replica's stamp, and the change-log version it
    /// carries (stamps of earlier releases carry none). Compared byte for byte: a stamp is an
    /// identifier, not text.
    func ownership(of stamp: FieldValue?) -> (writtenHere: Bool, version: Int64?) {
        guard case .string(let text)? = stamp else { return (false, nil) }
        let own = writerStamp.utf8
        guard text.utf8.starts(with: own) else { return (false, nil) }
        let rest = text.utf8.dropFirst(own.count)
        guard let separator = rest.first else { return (true, nil) }
        guard separator == UInt8(ascii: "@"), let version = Int64(Substring(rest.dropFirst())) else { return (false, nil) }
        return (true, version)
    }

    /// The device field's value for a record uploaded from the change with `version`: the
    /// writer stamp and the version, so that a later sync can tell a local change made before
    /// that upload from one made after it (the merge's rule for a restored store's deletes).
    static func writerStampField(_ writerStamp: String, version: Int64) -> FieldValue {
        .string("\(writerStamp)@\(version)")
    }

    /// The digests of a superseded-values field (8 bytes each, little-endian); a damaged field
    /// (another client's bytes) counts as none.
    static func supersededValues(_ data: Data) -> [UInt64] {
        guard data.count % 8 == 0, data.count <= 8 * RecordMetadata.supersededValuesKept else { return [] }
        var values: [UInt64] = []
        values.reserveCapacity(data.count / 8)
        var index = data.startIndex
        while index < data.endIndex {
            var value: UInt64 = 0
            for offset in 0..<8 { value |= UInt64(data[index + offset]) << (8 * UInt64(offset)) }
            values.append(value)
            index += 8
        }
        return values
    }

    /// The field value holding `values`.
    static func supersededField(_ values: [UInt64]) -> FieldValue {
        var data = Data(capacity: values.count * 8)
        for value in values { for offset in 0..<8 { data.append(UInt8(truncatingIfNeeded: value >> (8 * UInt64(offset)))) } }
        return .bytes(data)
    }

    func localForm(_ record: consuming Record) async throws -> IncomingRecord {
        var reserved = ReservedPositions(configuration)
        return try await localForm(record, reserved: &reserved)
    }

    /// The record with its encrypted fields decrypted.
    /// - Throws: ``SyncError/Code/undecryptableField`` when a field cannot be decrypted (or this
    ///   adapter has no keys), before anything of the page is applied.
    private func open(_ record: inout Record) throws {
        guard record.hasEncryptedFields else { return }
        guard let encryption = options.encryption else {
            let position = record.values.firstIndex { if case .encrypted? = $0 { true } else { false } }
            let field = position.map { record.layout.fieldNames[$0] } ?? ""
            throw SyncError(
                .undecryptableField,
                "field \(field) of record \(record.id.recordName) is encrypted, and adapter \(name) has no keys; configure encryption.keys",
                adapter: name)
        }
        do {
            record = try encryption.decrypt(record)
        } catch {
            var error = error
            error.adapter = name
            throw error
        }
    }
}
