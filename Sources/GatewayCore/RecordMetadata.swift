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

    public init(changeTag: String?, recordType: String, fingerprints: [String: FieldFingerprint]) {
        self.changeTag = changeTag
        self.recordType = recordType
        self.fingerprints = fingerprints
    }

    /// Metadata for a record as the cloud holds it (tag and user fields).
    public init(syncedRecord record: Record) {
        self.init(
            changeTag: record.changeTag, recordType: record.recordType,
            fingerprints: record.fields.mapValues(FieldFingerprint.init))
    }

    static let formatVersion: UInt8 = 1

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
                    return RecordMetadata(changeTag: tag, recordType: type, fingerprints: fingerprints)
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
