import Foundation

/// What the synchronizer remembers about a synced record: the change tag it last saw and a
/// fingerprint of each field value it last synced. The fingerprints are the common ancestor of
/// the three-way merge: a field whose current value differs from its fingerprint was changed.
///
/// Adapters store it as an opaque blob (``encoded()``).
public struct RecordMetadata: Sendable, Equatable {
    /// The cloud's change tag of the last synced version; `nil` when the record must be created.
    public var changeTag: String?
    /// The change tag an adapter forgot so that the zone downloads again (a column added to the
    /// store's table, whose values the cloud may hold): the store still holds that version's other
    /// values. A local delete of a record whose cloud version still carries this tag deletes the
    /// version the store synced, not one changed since.
    public var formerChangeTag: String?
    /// The record type of the last synced version.
    public var recordType: String
    /// Fingerprints of the last synced field values, by field name.
    public var fingerprints: [String: FieldFingerprint]
    /// Fingerprints of (field name, value) pairs sent to the cloud since the last confirmed sync.
    /// An upload whose answer was lost (or whose process died) may or may not have been saved; a
    /// server value found here is one this replica wrote, so it counts as the common ancestor.
    public var sent: [UInt64]
    /// The synced version's superseded values: (field name, value) pairs that earlier versions of
    /// the record held and a later one replaced, newest first (the cloud keeps them in
    /// ``SyncConfiguration/supersededValuesField``). An upload carries them on, with the values it
    /// replaces, so a replica holding one of them as a pending edit knows the zone moved past it.
    public var superseded: [UInt64]
    /// The store deleted the record and the cloud confirmed it (or had no such record left). Kept
    /// until a download brings the deletion back: that deletion is the store's own, older than a
    /// record the store created again under the name meanwhile, which must not lose to it.
    public var deletedHere: Bool

    /// How many unconfirmed (field, value) pairs are remembered.
    public static let sentValuesKept = 64
    /// How many superseded (field, value) pairs a record carries.
    public static let supersededValuesKept = 16

    /// Metadata of a synced version: its change tag, type, field fingerprints, what this replica
    /// sent since, and the values the version superseded.
    public init(
        changeTag: String?, recordType: String, fingerprints: [String: FieldFingerprint], sent: [UInt64] = [], superseded: [UInt64] = [],
        formerChangeTag: String? = nil, deletedHere: Bool = false
    ) {
        self.changeTag = changeTag
        self.formerChangeTag = formerChangeTag
        self.deletedHere = deletedHere
        self.recordType = recordType
        self.fingerprints = fingerprints
        self.sent = sent
        self.superseded = superseded
    }

    /// The superseded values of the version an upload makes from this synced version: the
    /// values of `sent` fields that differ from the synced ones (a field named without a value
    /// is in `cleared`), then the synced version's own, newest first, without repeats, at most
    /// ``supersededValuesKept``.
    package func superseding(sent: some Collection<(key: String, value: FieldFingerprint)>, cleared: some Sequence<String>) -> [UInt64] {
        var replaced: [UInt64] = []
        for (name, fingerprint) in sent {
            if let synced = fingerprints[name], synced != fingerprint { replaced.append(Self.pair(name, synced)) }
        }
        for name in cleared {
            if let synced = fingerprints[name] { replaced.append(Self.pair(name, synced)) }
        }
        guard !replaced.isEmpty || !superseded.isEmpty else { return [] }
        var result: [UInt64] = []
        for pair in replaced + superseded where !result.contains(pair) {
            result.append(pair)
            if result.count == Self.supersededValuesKept { break }
        }
        return result
    }

    /// Whether `value` of `field` is one the record held before a later version replaced it.
    public func supersedes(_ field: String, _ value: FieldValue) -> Bool {
        !superseded.isEmpty && superseded.contains(Self.pair(field, FieldFingerprint(value)))
    }

    /// Remembers that `fields` are about to be sent.
    public mutating func recordSending(_ fields: [String: FieldValue]) {
        recordSending(FieldFingerprint.of(fields))
    }

    /// Remembers that values with these fingerprints are about to be sent.
    public mutating func recordSending(_ fingerprints: [String: FieldFingerprint]) {
        recordSending(fingerprints.lazy.map { ($0.key, $0.value) })
    }

    /// Remembers that values with these (field name, fingerprint) pairs are about to be sent.
    mutating func recordSending(_ fingerprints: some Sequence<(String, FieldFingerprint)>) {
        for (name, fingerprint) in fingerprints {
            let pair = Self.pair(name, fingerprint)
            if !sent.contains(pair) { sent.append(pair) }
        }
        if sent.count > Self.sentValuesKept { sent.removeFirst(sent.count - Self.sentValuesKept) }
    }

    /// The ancestor to merge `server` against: the last synced values, except where the server
    /// holds a value this replica sent, which both sides have then seen.
    public func ancestor(against server: Record?) -> [String: FieldFingerprint] {
        guard let server, !sent.isEmpty else { return fingerprints }
        var ancestor = fingerprints
        server.forEachField { name, value in
            let fingerprint = FieldFingerprint(value)
            if sent.contains(Self.pair(name, fingerprint)) { ancestor[name] = fingerprint }
        }
        return ancestor
    }

    /// Whether a version was ever synced: a change tag, or the fields of one. Metadata holding
    /// only the intents of a first upload (no tag, no fields) is no common ancestor.
    public var hasSyncedVersion: Bool { changeTag != nil || !fingerprints.isEmpty }

    /// Whether every value of `server` is one this replica synced or sent: the version is then
    /// this replica's own write whose answer it never had (or an earlier state of it), not a
    /// change made elsewhere. A store restored from a backup, or new, lacks the intents of the
    /// writes its adapter made since, so a version it did not send is never taken for its own.
    public func recognizes(_ server: Record) -> Bool {
        guard !deletedHere else { return false }
        var recognized = true
        server.forEachField { name, value in
            guard recognized else { return }
            let fingerprint = FieldFingerprint(value)
            if fingerprints[name] != fingerprint && !sent.contains(Self.pair(name, fingerprint)) { recognized = false }
        }
        return recognized
    }

    /// Whether every field `record` names holds the synced version's value (null where that
    /// version had none): the record is a copy of the synced version, whatever happened to its
    /// store since. A field its layout does not name is unknown to its store and not compared.
    public func holdsSyncedValues(of record: Record) -> Bool {
        guard hasSyncedVersion else { return false }
        for (position, name) in record.layout.fieldNames.enumerated() where fingerprints[name] != record[position: position].map(FieldFingerprint.init) {
            return false
        }
        return true
    }

    /// Whether `server` holds a value for a field this replica neither synced nor sent: a field
    /// its store never named, kept by a partial save.
    public func lacksField(of server: Record) -> Bool {
        var lacks = false
        server.forEachField { name, _ in
            if !lacks && fingerprints[name] == nil { lacks = true }
        }
        return lacks
    }

    /// One number for a field name and a value's fingerprint.
    static func pair(_ name: String, _ fingerprint: FieldFingerprint) -> UInt64 {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in name.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
        hash ^= fingerprint.value &* 0x9E37_79B9_7F4A_7C15
        return (hash ^ (hash >> 29)) &* 0xBF58_476D_1CE4_E5B9
    }

    /// Metadata for a record as the cloud holds it (tag and user fields).
    public init(syncedRecord record: Record, superseded: [UInt64] = []) {
        self.init(
            changeTag: record.changeTag, recordType: record.recordType,
            fingerprints: FieldFingerprint.of(record), superseded: superseded)
    }

    static let formatVersion: UInt8 = 2

    /// The blob adapters store.
    public func encoded() -> Data {
        let sorted = fingerprints.indices.sorted(by: { fingerprints[$0].key < fingerprints[$1].key }).lazy.map { self.fingerprints[$0] }
        return Self.encoded(
            changeTag: changeTag, recordType: recordType, sortedFingerprints: sorted, sent: sent, superseded: superseded, formerChangeTag: formerChangeTag,
            deletedHere: deletedHere)
    }

    /// The blob of the metadata of a record the store deleted and the cloud confirmed deleted
    /// (``deletedHere``).
    public static func encodedDeletion() -> Data { deletionBlob }

    private static let deletionBlob = RecordMetadata(changeTag: nil, recordType: "", fingerprints: [:], deletedHere: true).encoded()

    /// The blob of the metadata of `record` as the cloud holds it, like
    /// `RecordMetadata(syncedRecord: record).encoded()` without building the fingerprint dictionary.
    public static func encoded(syncedRecord record: Record, superseded: [UInt64] = []) -> Data {
        // The same bytes as `encoded(changeTag:recordType:sortedFingerprints:sent:)` with
        // `FieldFingerprint.sorted(of:)`, written straight from the values in the layout's
        // canonical order: the array of pairs in between was a download's largest per-record
        // allocation after the record itself.
        let (names, values) = (record.layout.fieldNames, record.values)
        var writer = BinaryWriter(capacity: 32 + values.count * 24)
        writeHeader(changeTag: record.changeTag, formerChangeTag: nil, recordType: record.recordType, fieldCount: record.fieldCount, into: &writer)
        var scratch = BinaryWriter(capacity: 0)
        for position in record.layout.canonicalOrder {
            guard let value = values[position] else { continue }
            writer.writeString(names[position])
            writer.writeInt64(Int64(bitPattern: FieldFingerprint(value, using: &scratch).value))
        }
        writer.writeVarint(0)
        writeSuperseded(superseded, into: &writer)
        return Data(writer.bytes)
    }

    /// The superseded values, after the sent ones; absent when there are none (the blobs of
    /// records never updated stay as they were).
    private static func writeSuperseded(_ superseded: [UInt64], into writer: inout BinaryWriter) {
        guard !superseded.isEmpty else { return }
        writer.writeVarint(UInt64(superseded.count))
        for pair in superseded { writer.writeInt64(Int64(bitPattern: pair)) }
    }

    /// The blob of a metadata whose fingerprints are given sorted by field name.
    static func encoded(
        changeTag: String?, recordType: String, sortedFingerprints: some Collection<(key: String, value: FieldFingerprint)>, sent: [UInt64],
        superseded: [UInt64] = [], formerChangeTag: String? = nil, deletedHere: Bool = false
    ) -> Data {
        var writer = BinaryWriter(capacity: 32 + sortedFingerprints.count * 24 + sent.count * 8)
        writeHeader(
            changeTag: changeTag, formerChangeTag: formerChangeTag, deletedHere: deletedHere, recordType: recordType,
            fieldCount: sortedFingerprints.count, into: &writer)
        for (name, fingerprint) in sortedFingerprints {
            writer.writeString(name)
            writer.writeInt64(Int64(bitPattern: fingerprint.value))
        }
        writer.writeVarint(UInt64(sent.count))
        for pair in sent { writer.writeInt64(Int64(bitPattern: pair)) }
        writeSuperseded(superseded, into: &writer)
        return Data(writer.bytes)
    }

    /// The blob's start: format version, change tag (a flag, then the tag: 1 for the change tag,
    /// 2 for a former one, 0 for none, 3 for none and deleted here), record type and the count of
    /// fingerprints that follow.
    private static func writeHeader(
        changeTag: String?, formerChangeTag: String?, deletedHere: Bool = false, recordType: String, fieldCount: Int,
        into writer: inout BinaryWriter
    ) {
        writer.writeByte(Self.formatVersion)
        if let changeTag {
            writer.writeByte(1)
            writer.writeString(changeTag)
        } else if let formerChangeTag {
            writer.writeByte(2)
            writer.writeString(formerChangeTag)
        } else if deletedHere {
            writer.writeByte(3)
        } else {
            writer.writeByte(0)
        }
        writer.writeString(recordType)
        writer.writeVarint(UInt64(fieldCount))
    }

    /// Decodes a blob made by ``encoded()``.
    /// - Throws: ``SyncError`` with code ``SyncError/Code/corruptSyncState`` for damaged blobs.
    public init(decoding data: Data) throws {
        do {
            self = try data.withUnsafeBytes { buffer in
                try Result { () throws(BinaryDecodingError) -> RecordMetadata in
                    var reader = BinaryReader(buffer)
                    guard try reader.readByte() == Self.formatVersion else {
                        throw BinaryDecodingError(offset: 0, reason: "unknown metadata version")
                    }
                    let flag = try reader.readByte()
                    let tagText: String? = flag == 0 || flag == 3 ? nil : try reader.readString()
                    let (tag, former) = flag == 2 ? (nil, tagText) : (tagText, nil)
                    let type = try reader.readString()
                    let count = try reader.readLength()
                    var fingerprints = [String: FieldFingerprint](minimumCapacity: count)
                    for _ in 0..<count {
                        let name = try reader.readString()
                        fingerprints[name] = FieldFingerprint(value: UInt64(bitPattern: try reader.readInt64()))
                    }
                    var sent: [UInt64] = []
                    for _ in 0..<(try reader.readLength()) { sent.append(UInt64(bitPattern: try reader.readInt64())) }
                    var superseded: [UInt64] = []
                    if !reader.isAtEnd {
                        for _ in 0..<(try reader.readLength()) { superseded.append(UInt64(bitPattern: try reader.readInt64())) }
                    }
                    guard reader.isAtEnd else {
                        throw BinaryDecodingError(offset: reader.offset, reason: "trailing bytes after the metadata")
                    }
                    return RecordMetadata(
                        changeTag: tag, recordType: type, fingerprints: fingerprints, sent: sent, superseded: superseded, formerChangeTag: former,
                        deletedHere: flag == 3)
                }.get()
            }
        } catch {
            throw SyncError(.corruptSyncState, "a record's sync metadata is damaged; reset the adapter", underlying: error)
        }
    }
}

/// A 64-bit digest of a field value's canonical encoding, stable across processes and versions.
///
/// It tells whether a value changed since the last sync, not what it was, so a fast
/// non-cryptographic hash is enough (FNV-1a over the encoding, then a SplitMix64 finaliser to
/// spread the bits); a collision would only make one edit look unchanged to the merge.
public struct FieldFingerprint: Hashable, Sendable {
    /// The 64-bit hash.
    public var value: UInt64

    /// A fingerprint with a known hash.
    public init(value: UInt64) {
        self.value = value
    }

    /// The fingerprint of `field`.
    public init(_ field: FieldValue) {
        var writer = BinaryWriter(capacity: 32)
        self.init(field, using: &writer)
    }

    /// The fingerprint of `field`, encoding it in `writer`'s reused storage when it is not one
    /// of the scalar kinds, whose encoding is hashed as it is produced.
    init(_ field: FieldValue, using writer: inout BinaryWriter) {
        // The same bytes as `FieldCoding.encode(_:into:identityOnly:)` writes (a test holds the
        // two to it): building them in a buffer first was about half of fingerprinting a record.
        var hash = FNV1a()
        switch field {
        case .string(var string):
            hash.add(FieldCoding.Tag.string.rawValue)
            string.withUTF8 { utf8 in
                hash.addVarint(UInt64(utf8.count))
                hash.add(UnsafeRawBufferPointer(utf8))
            }
        case .int64(let int):
            hash.add(FieldCoding.Tag.int64.rawValue)
            hash.addInt64(int)
        case .double(let double):
            hash.add(FieldCoding.Tag.double.rawValue)
            hash.addInt64(Int64(bitPattern: double.bitPattern))
        case .timestamp(let timestamp):
            hash.add(FieldCoding.Tag.timestamp.rawValue)
            hash.addInt64(timestamp.millisecondsSince1970)
        default:
            writer.reset()
            FieldCoding.encode(field, into: &writer, identityOnly: true)
            writer.bytes.withUnsafeBytes { hash.add($0) }
        }
        value = hash.finalized
    }

    /// The reference definition: FNV-1a over the whole identity encoding, then the finaliser.
    package static func byEncoding(_ field: FieldValue) -> FieldFingerprint {
        var writer = BinaryWriter(capacity: 32)
        FieldCoding.encode(field, into: &writer, identityOnly: true)
        var hash = FNV1a()
        writer.bytes.withUnsafeBytes { hash.add($0) }
        return FieldFingerprint(value: hash.finalized)
    }

    /// 64-bit FNV-1a, fed byte by byte, with a SplitMix64 finaliser.
    private struct FNV1a {
        private var hash: UInt64 = 0xCBF2_9CE4_8422_2325

        mutating func add(_ byte: UInt8) {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
        }

        mutating func add(_ bytes: UnsafeRawBufferPointer) {
            for byte in bytes { add(byte) }
        }

        /// As `BinaryWriter.writeVarint(_:)` writes it.
        mutating func addVarint(_ value: UInt64) {
            var value = value
            while value >= 0x80 {
                add(UInt8(truncatingIfNeeded: value) | 0x80)
                value >>= 7
            }
            add(UInt8(value))
        }

        /// As `BinaryWriter.writeInt64(_:)` writes it: little-endian.
        mutating func addInt64(_ value: Int64) {
            withUnsafeBytes(of: value.littleEndian) { add($0) }
        }

        var finalized: UInt64 {
            var hash = hash
            hash = (hash ^ (hash >> 30)) &* 0xBF58_476D_1CE4_E5B9
            hash = (hash ^ (hash >> 27)) &* 0x94D0_49BB_1331_11EB
            return hash ^ (hash >> 31)
        }
    }

    /// The fingerprints of a record's fields.
    public static func of(_ fields: [String: FieldValue]) -> [String: FieldFingerprint] {
        var writer = BinaryWriter(capacity: 64)
        var result = [String: FieldFingerprint](minimumCapacity: fields.count)
        for (name, value) in fields { result[name] = FieldFingerprint(value, using: &writer) }
        return result
    }

    /// The fingerprints of a record's non-null fields.
    public static func of(_ record: Record) -> [String: FieldFingerprint] {
        var writer = BinaryWriter(capacity: 64)
        var result = [String: FieldFingerprint](minimumCapacity: record.values.count)
        record.forEachField { name, value in result[name] = FieldFingerprint(value, using: &writer) }
        return result
    }

    /// The fingerprints of a record's non-null fields sorted by field name (the order metadata
    /// blobs hold them in), read by position in the layout's canonical order: no dictionary, no sort.
    public static func sorted(of record: Record) -> [(key: String, value: FieldFingerprint)] {
        var writer = BinaryWriter(capacity: 64)
        var result: [(key: String, value: FieldFingerprint)] = []
        result.reserveCapacity(record.values.count)
        let names = record.layout.fieldNames
        for position in record.layout.canonicalOrder {
            guard let value = record.values[position] else { continue }
            result.append((names[position], FieldFingerprint(value, using: &writer)))
        }
        return result
    }

    /// The fingerprints of a record's fields, sorted by field name: the order metadata blobs
    /// hold them in, without a dictionary to build.
    public static func sorted(of fields: [String: FieldValue]) -> [(key: String, value: FieldFingerprint)] {
        var writer = BinaryWriter(capacity: 64)
        var result: [(key: String, value: FieldFingerprint)] = []
        result.reserveCapacity(fields.count)
        for (name, value) in fields { result.append((name, FieldFingerprint(value, using: &writer))) }
        result.sort { $0.key < $1.key }
        return result
    }
}
