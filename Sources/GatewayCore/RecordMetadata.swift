import Crypto
import Foundation

/// What the synchronizer remembers about a synced record: the change tag it last saw and a
/// fingerprint of each field value it last synced. The fingerprints are the common ancestor of
/// the three-way merge: a field whose current value differs from its fingerprint was changed.
///
/// Adapters store it as an opaque blob (``encoded()``).
public struct RecordMetadata: Sendable, Equatable {
    /// The cloud's change tag of the last synced version; `nil` when the record must be created.
    public var changeTag: String?
    /// The record type of the last synced version.
    public var recordType: String
    /// Fingerprints of the last synced field values, by field name.
    public var fingerprints: [String: FieldFingerprint]
    /// Fingerprints of values sent to the cloud since the last confirmed sync, by field name.
    /// An upload whose answer was lost (or whose process died) may or may not have been saved; a
    /// server value found here is one this replica wrote, so it counts as the common ancestor.
    public var sent: [String: [FieldFingerprint]]

    /// How many unconfirmed values are remembered per field.
    public static let sentValuesKept = 8

    public init(
        changeTag: String?, recordType: String, fingerprints: [String: FieldFingerprint],
        sent: [String: [FieldFingerprint]] = [:]
    ) {
        self.changeTag = changeTag
        self.recordType = recordType
        self.fingerprints = fingerprints
        self.sent = sent
    }

    /// Remembers that `fields` are about to be sent.
    public mutating func recordSending(_ fields: [String: FieldValue]) {
        for (name, value) in fields {
            let fingerprint = FieldFingerprint(value)
            var values = sent[name, default: []]
            guard !values.contains(fingerprint) else { continue }
            values.append(fingerprint)
            sent[name] = Array(values.suffix(Self.sentValuesKept))
        }
    }

    /// The ancestor to merge `server` against: the last synced values, except where the server
    /// holds a value this replica sent, which both sides have then seen.
    public func ancestor(against server: Record?) -> [String: FieldFingerprint] {
        guard let server, !sent.isEmpty else { return fingerprints }
        var ancestor = fingerprints
        for (name, value) in server.fields {
            let fingerprint = FieldFingerprint(value)
            if sent[name]?.contains(fingerprint) == true { ancestor[name] = fingerprint }
        }
        return ancestor
    }

    /// Metadata for a record as the cloud holds it (tag and user fields).
    public init(syncedRecord record: Record) {
        self.init(
            changeTag: record.changeTag, recordType: record.recordType,
            fingerprints: record.fields.mapValues(FieldFingerprint.init))
    }

    static let formatVersion: UInt8 = 2

    /// The blob adapters store.
    public func encoded() -> Data {
        var writer = BinaryWriter(capacity: 32 + fingerprints.count * 24)
        writer.writeByte(Self.formatVersion)
        if let changeTag {
            writer.writeByte(1)
            writer.writeString(changeTag)
        } else {
            writer.writeByte(0)
        }
        writer.writeString(recordType)
        writer.writeVarint(UInt64(fingerprints.count))
        for name in fingerprints.keys.sorted() {
            writer.writeString(name)
            writer.writeInt64(Int64(bitPattern: fingerprints[name]!.value))
        }
        writer.writeVarint(UInt64(sent.count))
        for name in sent.keys.sorted() {
            writer.writeString(name)
            writer.writeVarint(UInt64(sent[name]!.count))
            for fingerprint in sent[name]! { writer.writeInt64(Int64(bitPattern: fingerprint.value)) }
        }
        return Data(writer.bytes)
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
                    let tag: String? =
                        switch try reader.readByte() {
                        case 0: nil
                        default: try reader.readString()
                        }
                    let type = try reader.readString()
                    let count = try reader.readLength()
                    var fingerprints = [String: FieldFingerprint](minimumCapacity: count)
                    for _ in 0..<count {
                        let name = try reader.readString()
                        fingerprints[name] = FieldFingerprint(value: UInt64(bitPattern: try reader.readInt64()))
                    }
                    var sent: [String: [FieldFingerprint]] = [:]
                    for _ in 0..<(try reader.readLength()) {
                        let name = try reader.readString()
                        var values: [FieldFingerprint] = []
                        for _ in 0..<(try reader.readLength()) {
                            values.append(FieldFingerprint(value: UInt64(bitPattern: try reader.readInt64())))
                        }
                        sent[name] = values
                    }
                    guard reader.isAtEnd else {
                        throw BinaryDecodingError(offset: reader.offset, reason: "trailing bytes after the metadata")
                    }
                    return RecordMetadata(changeTag: tag, recordType: type, fingerprints: fingerprints, sent: sent)
                }.get()
            }
        } catch {
            throw SyncError(.corruptSyncState, "a record's sync metadata is damaged; reset the adapter", underlying: error)
        }
    }
}

/// A 64-bit digest of a field value's canonical encoding.
public struct FieldFingerprint: Hashable, Sendable {
    public var value: UInt64

    public init(value: UInt64) {
        self.value = value
    }

    /// The fingerprint of `field`.
    public init(_ field: FieldValue) {
        let digest = SHA256.hash(data: FieldCoding.encode(field))
        value = digest.withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }
    }
}
