import Crypto
import Foundation

/// One AES-256 key of a ``KeyRing``, named by an id that every ciphertext carries.
public struct EncryptionKey: Sendable {
    public let id: String
    let key: SymmetricKey

    /// - Throws: ``FieldEncryptionError`` when `id` is empty or longer than 255 bytes, or the key is
    ///   not 32 bytes.
    public init(id: String, rawKey: Data) throws(FieldEncryptionError) {
        guard !id.isEmpty, id.utf8.count <= 255 else { throw FieldEncryptionError("a key id must be 1 to 255 bytes") }
        guard rawKey.count == 32 else {
            throw FieldEncryptionError("key \(id) has \(rawKey.count) bytes; an AES-256 key has 32 (create one with `gateway keygen`)")
        }
        self.id = id
        self.key = SymmetricKey(data: rawKey)
    }
}

/// A key ring: the first key encrypts, every key decrypts, so keys can be rotated without
/// re-encrypting what the cloud already holds.
public struct KeyRing: Sendable {
    public let keys: [EncryptionKey]

    /// - Throws: ``FieldEncryptionError`` for an empty ring or two keys with one id.
    public init(_ keys: [EncryptionKey]) throws(FieldEncryptionError) {
        guard !keys.isEmpty else { throw FieldEncryptionError("a key ring needs at least one key") }
        guard Set(keys.map(\.id)).count == keys.count else { throw FieldEncryptionError("two keys of the ring have the same id") }
        self.keys = keys
    }

    /// The key new values are encrypted with.
    public var primary: EncryptionKey { keys[0] }

    static let formatVersion: UInt8 = 1

    /// Encrypts a value with AES-256-GCM under the primary key. The value's canonical encoding is
    /// sealed, so its type survives; `context` is authenticated, so the ciphertext is valid only in
    /// that field of that record.
    ///
    /// Layout: version (1 byte), key id length (1 byte), key id, nonce (12), ciphertext, tag (16).
    public func seal(_ value: FieldValue, context: FieldContext) throws(FieldEncryptionError) -> Data {
        let key = primary
        do {
            let box = try AES.GCM.seal(Data(FieldCoding.encode(value)), using: key.key, authenticating: context.authenticatedData)
            guard let combined = box.combined else { throw FieldEncryptionError("AES-GCM produced no combined box") }
            var data = Data([Self.formatVersion, UInt8(key.id.utf8.count)])
            data.append(contentsOf: key.id.utf8)
            data.append(combined)
            return data
        } catch let error as FieldEncryptionError {
            throw error
        } catch {
            throw FieldEncryptionError("encryption failed: \(error)")
        }
    }

    /// Decrypts what ``seal(_:context:)`` produced, with whichever key of the ring it names.
    /// - Throws: ``FieldEncryptionError`` when no key of the ring has the id, the ciphertext was
    ///   changed or belongs to another field or record, or the bytes are not a sealed value.
    public func open(_ data: Data, context: FieldContext) throws(FieldEncryptionError) -> FieldValue {
        let bytes = [UInt8](data)
        guard bytes.count >= 2, bytes[0] == Self.formatVersion, bytes.count >= 2 + Int(bytes[1]) + 28 else {
            throw FieldEncryptionError("the value is not a ciphertext this gateway wrote")
        }
        let idLength = Int(bytes[1])
        let id = String(decoding: bytes[2..<(2 + idLength)], as: UTF8.self)
        guard let key = keys.first(where: { $0.id == id }) else {
            throw FieldEncryptionError("it was encrypted with key \(id), which the key ring does not have", missingKey: id)
        }
        let plaintext: Data
        do {
            let box = try AES.GCM.SealedBox(combined: Data(bytes[(2 + idLength)...]))
            plaintext = try AES.GCM.open(box, using: key.key, authenticating: context.authenticatedData)
        } catch {
            throw FieldEncryptionError(
                "key \(id) cannot decrypt it: the ciphertext was altered, or belongs to another field or record")
        }
        do {
            return try FieldCoding.decodeValue([UInt8](plaintext))
        } catch {
            throw FieldEncryptionError("the decrypted bytes are not a field value")
        }
    }
}

/// Where an encrypted value belongs; authenticated with the ciphertext.
public struct FieldContext: Sendable, Hashable {
    public var recordType: String
    public var recordName: String
    public var field: String

    public init(recordType: String, recordName: String, field: String) {
        self.recordType = recordType
        self.recordName = recordName
        self.field = field
    }

    var authenticatedData: Data {
        Data("gateway-field-v1\u{0}\(recordType)\u{0}\(recordName)\u{0}\(field)".utf8)
    }
}

/// A value that cannot be encrypted or decrypted. Messages name keys, never values.
public struct FieldEncryptionError: Error, Sendable, CustomStringConvertible {
    public var message: String
    /// The key id a ciphertext names that the ring does not have.
    public var missingKey: String?

    public init(_ message: String, missingKey: String? = nil) {
        self.message = message
        self.missingKey = missingKey
    }

    public var description: String { message }
}

/// Which fields of an adapter's record types are encrypted, and the key ring.
public struct FieldEncryption: Sendable {
    public var keyRing: KeyRing
    /// Encrypted field names by record type.
    public var fields: [String: Set<String>]

    public init(keyRing: KeyRing, fields: [String: Set<String>]) {
        self.keyRing = keyRing
        self.fields = fields
    }

    /// The record with its configured fields sealed (values already sealed stay as they are).
    public func encrypt(_ record: Record) throws(FieldEncryptionError) -> Record {
        guard let names = fields[record.recordType], !names.isEmpty else { return record }
        var record = record
        for name in names {
            guard let value = record.fields[name] else { continue }
            if case .encrypted = value { continue }
            let context = FieldContext(recordType: record.recordType, recordName: record.id.recordName, field: name)
            record.fields[name] = .encrypted(try keyRing.seal(value, context: context))
        }
        return record
    }

    /// The record with every sealed field opened, configured or not.
    /// - Throws: ``SyncError`` with code ``SyncError/Code/undecryptableField`` naming the record
    ///   and the field.
    public func decrypt(_ record: Record) throws(SyncError) -> Record {
        var record = record
        for (name, value) in record.fields {
            guard case .encrypted(let data) = value else { continue }
            let context = FieldContext(recordType: record.recordType, recordName: record.id.recordName, field: name)
            do {
                record.fields[name] = try keyRing.open(data, context: context)
            } catch {
                throw SyncError(
                    .undecryptableField,
                    "field \(name) of record \(record.id.recordName) cannot be decrypted: \(error.message). Add the key to encryption.keys; nothing was applied and the change token did not move")
            }
        }
        return record
    }
}

extension Record {
    /// Whether any field holds a sealed value.
    var hasEncryptedFields: Bool {
        fields.values.contains { if case .encrypted = $0 { true } else { false } }
    }
}
