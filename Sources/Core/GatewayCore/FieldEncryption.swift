import Crypto
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One AES-256 key of a ``KeyRing``, named by an id that every ciphertext carries.
public struct EncryptionKey: Sendable {
    /// The key's name, stored in every ciphertext it seals so the ring can find it again.
    public let id: String
    /// Eight hex digits that tell keys apart without revealing them (an HMAC of a constant under
    /// the key): two gateways hold the same key for an id when their fingerprints agree.
    public let fingerprint: String
    let key: PreparedAESGCMKey
    let idBytes: [UInt8]

    /// - Throws: ``FieldEncryptionError`` when `id` is empty or longer than 255 bytes, or the key is
    ///   not 32 bytes.
    public init(id: String, rawKey: Data) throws(FieldEncryptionError) {
        guard !id.isEmpty, id.utf8.count <= 255 else { throw FieldEncryptionError(.invalidKey, "a key id must be 1 to 255 bytes") }
        guard rawKey.count == 32 else {
            throw FieldEncryptionError(.invalidKey, "key \(id) has \(rawKey.count) bytes; an AES-256 key has 32 (create one with `gateway keygen`)")
        }
        self.id = id
        self.key = try PreparedAESGCMKey(rawKey: rawKey)
        self.idBytes = Array(id.utf8)
        let mac = HMAC<SHA256>.authenticationCode(for: Data("sync-gateway key fingerprint".utf8), using: SymmetricKey(data: rawKey))
        self.fingerprint = mac.prefix(4).map { String(format: "%02x", $0) }.joined()
    }
}

/// A key ring: the first key encrypts, every key decrypts, so keys can be rotated without
/// re-encrypting what the cloud already holds.
public struct KeyRing: Sendable {
    /// The keys, the one that seals first.
    public let keys: [EncryptionKey]

    /// - Throws: ``FieldEncryptionError`` for an empty ring or two keys with one id.
    public init(_ keys: [EncryptionKey]) throws(FieldEncryptionError) {
        guard !keys.isEmpty else { throw FieldEncryptionError(.invalidKey, "a key ring needs at least one key") }
        guard Set(keys.map(\.id)).count == keys.count else { throw FieldEncryptionError(.invalidKey, "two keys of the ring have the same id") }
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
        var scratch = BinaryWriter(capacity: 128)
        return try seal(value, context: context, scratch: &scratch)
    }

    /// ``seal(_:context:)`` with the authenticated data and the value's encoding written into
    /// `scratch`, a buffer reused for every field of a record.
    func seal(_ value: FieldValue, context: FieldContext, scratch: inout BinaryWriter) throws(FieldEncryptionError) -> Data {
        let key = primary
        scratch.reset()
        context.writeAuthenticatedData(into: &scratch)
        let additionalCount = scratch.bytes.count
        FieldCoding.encode(value, into: &scratch)
        let nonceSize = PreparedAESGCMKey.nonceSize
        let plaintextCount = scratch.bytes.count - additionalCount
        var data = Data(capacity: 2 + key.idBytes.count + nonceSize + plaintextCount + PreparedAESGCMKey.tagSize)
        data.append(Self.formatVersion)
        data.append(UInt8(key.idBytes.count))
        data.append(contentsOf: key.idBytes)
        try withUnsafeTemporaryAllocation(byteCount: nonceSize, alignment: 1) { nonce throws(FieldEncryptionError) in
            NoncePool.shared.fill(nonce)
            data.append(contentsOf: UnsafeRawBufferPointer(nonce))
            try scratch.bytes.withUnsafeBytes { bytes in
                Result { () throws(FieldEncryptionError) in
                    try key.key.seal(
                        UnsafeRawBufferPointer(rebasing: bytes[additionalCount...]), nonce: UnsafeRawBufferPointer(nonce),
                        authenticating: UnsafeRawBufferPointer(rebasing: bytes[..<additionalCount]), appendingTo: &data)
                }
            }.get()
        }
        return data
    }

    /// Decrypts what ``seal(_:context:)`` produced, with whichever key of the ring it names.
    /// - Throws: ``FieldEncryptionError`` when no key of the ring has the id, the ciphertext was
    ///   changed or belongs to another field or record, or the bytes are not a sealed value.
    public func open(_ data: Data, context: FieldContext) throws(FieldEncryptionError) -> FieldValue {
        var scratch = BinaryWriter(capacity: 64)
        return try open(data, context: context, scratch: &scratch)
    }

    /// ``open(_:context:)`` with the authenticated data written into `scratch`.
    func open(_ data: Data, context: FieldContext, scratch: inout BinaryWriter) throws(FieldEncryptionError) -> FieldValue {
        let start = data.startIndex
        guard data.count >= 2, data[start] == Self.formatVersion, data.count >= 2 + Int(data[start + 1]) + 28 else {
            throw FieldEncryptionError(.notCiphertext, "the value is not a ciphertext this gateway wrote")
        }
        let idEnd = start + 2 + Int(data[start + 1])
        let idBytes = data[(start + 2)..<idEnd]
        guard let key = keys.first(where: { $0.idBytes.elementsEqual(idBytes) }) else {
            let id = String(decoding: idBytes, as: UTF8.self)
            throw FieldEncryptionError(.unknownKey, "it was encrypted with key \(id), which the key ring does not have", missingKey: id)
        }
        let nonceOffset = idEnd - start
        let sealedOffset = nonceOffset + PreparedAESGCMKey.nonceSize
        scratch.reset()
        context.writeAuthenticatedData(into: &scratch)
        let value: FieldValue?
        do {
            value = try data.withUnsafeBytes { raw in
                try scratch.bytes.withUnsafeBytes { additional in
                    try key.key.open(
                        UnsafeRawBufferPointer(rebasing: raw[sealedOffset...]),
                        nonce: UnsafeRawBufferPointer(rebasing: raw[nonceOffset..<sealedOffset]),
                        authenticating: additional
                    ) { plaintext throws(BinaryDecodingError) in try FieldCoding.decodeValue(plaintext) }
                }
            }
        } catch let error as FieldEncryptionError {
            throw error
        } catch {
            throw FieldEncryptionError(.corruptPlaintext, "the decrypted bytes are not a field value: \(error)", underlying: error)
        }
        guard let value else {
            throw FieldEncryptionError(
                .tampered,
                "key \(key.id) (fingerprint \(key.fingerprint)) cannot decrypt it: it was encrypted with another key under the same id (every gateway must hold the same key for an id: compare `gateway keygen --fingerprint` of each key file), or the ciphertext was altered or belongs to another field or record")
        }
        return value
    }
}

/// Random 96-bit nonces from the kernel's CSPRNG, fetched 4 KB at a time: swift-crypto's own
/// nonces cost two `getrandom` calls each, a fifth of the cost of sealing a short field.
final class NoncePool: Sendable {
    static let shared = NoncePool()

    private struct State {
        var bytes = [UInt8](repeating: 0, count: 4_096)
        var offset = 4_096
    }

    private let state = Mutex(State())

    /// Fills `nonce` with the next unused random bytes.
    func fill(_ nonce: UnsafeMutableRawBufferPointer) {
        state.withLock { state in
            if state.offset + nonce.count > state.bytes.count {
                Self.fill(&state.bytes)
                state.offset = 0
            }
            state.bytes.withUnsafeBytes { bytes in
                nonce.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[state.offset..<(state.offset + nonce.count)]))
            }
            state.offset += nonce.count
        }
    }

    private static func fill(_ buffer: inout [UInt8]) {
        buffer.withUnsafeMutableBytes { raw in
            var filled = 0
            let descriptor = open("/dev/urandom", O_RDONLY | O_CLOEXEC)
            if descriptor >= 0 {
                while filled < raw.count {
                    let count = read(descriptor, raw.baseAddress! + filled, raw.count - filled)
                    guard count > 0 else { break }
                    filled += count
                }
                close(descriptor)
            }
            // Without /dev/urandom: the standard library's generator, 8 bytes a call.
            var generator = SystemRandomNumberGenerator()
            while filled < raw.count {
                let word = generator.next()
                for shift in stride(from: 0, to: 64, by: 8) where filled < raw.count {
                    raw[filled] = UInt8(truncatingIfNeeded: word >> UInt64(shift))
                    filled += 1
                }
            }
        }
    }
}

/// Where an encrypted value belongs; authenticated with the ciphertext.
public struct FieldContext: Sendable, Hashable {
    /// The record's type.
    public var recordType: String
    /// The record's name.
    public var recordName: String
    /// The field's name.
    public var field: String

    /// The place of one field value: a ciphertext moved to another record or field no longer
    /// authenticates.
    public init(recordType: String, recordName: String, field: String) {
        self.recordType = recordType
        self.recordName = recordName
        self.field = field
    }

    /// Appends the authenticated data: a format prefix, then type, name and field, NUL-separated.
    func writeAuthenticatedData(into writer: inout BinaryWriter) {
        writer.writeBytes(Self.prefix)
        writer.writeBytes(recordType.utf8)
        writer.writeByte(0)
        writer.writeBytes(recordName.utf8)
        writer.writeByte(0)
        writer.writeBytes(field.utf8)
    }

    private static let prefix = Array("gateway-field-v1\u{0}".utf8)
}

/// A value that cannot be encrypted or decrypted, or a key ring that cannot be built. Messages
/// name keys, never values.
public struct FieldEncryptionError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public enum Code: String, Sendable, CaseIterable, CustomStringConvertible {
        /// A key or key ring is not usable (wrong length, empty ring, duplicate ids).
        case invalidKey
        /// The value is not a ciphertext the gateway wrote.
        case notCiphertext
        /// The ciphertext names a key the ring does not have (see ``FieldEncryptionError/missingKey``).
        case unknownKey
        /// Authentication failed: the ciphertext was altered, or belongs to another field or record.
        case tampered
        /// The decrypted bytes are not a field value.
        case corruptPlaintext
        /// The cipher itself failed (OpenSSL/BoringSSL could not set up or seal).
        case cipherFailed

        /// The code's name, as logs, metrics and JSON show it.
        public var name: String { rawValue }
        public var description: String { rawValue }
    }

    /// What went wrong, as a stable code.
    public var code: Code
    /// What happened, naming keys and fields, never values.
    public var message: String
    /// The key id a ciphertext names that the ring does not have.
    public var missingKey: String?
    /// The error that caused this one, when there is one.
    public var underlying: (any Error)?

    /// An error with a code, a message, the key a ciphertext names when the ring lacks it, and the
    /// cause.
    public init(_ code: Code, _ message: String, missingKey: String? = nil, underlying: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.missingKey = missingKey
        self.underlying = underlying
    }

    public var description: String { message }
}

/// Which fields of an adapter's record types are encrypted, and the key ring.
public struct FieldEncryption: Sendable {
    /// The keys: the first seals, all of them open.
    public var keyRing: KeyRing
    /// Encrypted field names by record type.
    public var fields: [String: Set<String>]

    /// Encryption of `fields` (field names by record type) with `keyRing`.
    public init(keyRing: KeyRing, fields: [String: Set<String>]) {
        self.keyRing = keyRing
        self.fields = fields
    }

    /// The record with its configured fields sealed (values already sealed stay as they are).
    public func encrypt(_ record: Record) throws(FieldEncryptionError) -> Record {
        var record = record
        try encrypt(&record)
        return record
    }

    /// Seals the configured fields of `record` in place: a record whose values are not shared
    /// is not copied.
    func encrypt(_ record: inout Record) throws(FieldEncryptionError) {
        guard let names = fields[record.recordType], !names.isEmpty else { return }
        var scratch = BinaryWriter(capacity: 256)
        for name in names {
            guard let position = record.layout.position(of: name), let value = record.values[position] else { continue }
            if case .encrypted = value { continue }
            let context = FieldContext(recordType: record.recordType, recordName: record.id.recordName, field: name)
            record[position: position] = .encrypted(try keyRing.seal(value, context: context, scratch: &scratch))
        }
    }

    /// The record with every sealed field opened, configured or not.
    /// - Throws: ``SyncError`` with code ``SyncError/Code/undecryptableField`` naming the record
    ///   and the field.
    public func decrypt(_ record: Record) throws(SyncError) -> Record {
        var record = record
        var scratch = BinaryWriter(capacity: 128)
        for position in record.values.indices {
            guard case .encrypted(let data)? = record.values[position] else { continue }
            let name = record.layout.fieldNames[position]
            let context = FieldContext(recordType: record.recordType, recordName: record.id.recordName, field: name)
            do {
                record[position: position] = try keyRing.open(data, context: context, scratch: &scratch)
            } catch {
                // Only a missing key is fixed by adding one. A value that does not open with the
                // key it names is that record's: the download leaves it out until the cloud
                // holds another (``RefusedDownload``).
                let advice =
                    switch error.code {
                    case .unknownKey: "Add the key to encryption.keys"
                    default:
                        "The gateway that wrote it may hold another key under the same id (compare `gateway keygen --fingerprint` on both; give them the same key), or the value was altered or moved to another record or field in the cloud (replace or delete that record there)"
                    }
                throw SyncError(
                    .undecryptableField, "field \(name) of record \(record.id.recordName) cannot be decrypted: \(error.message). \(advice)",
                    underlying: error)
            }
        }
        return record
    }
}

extension Record {
    /// Whether any field holds a sealed value.
    var hasEncryptedFields: Bool {
        values.contains { if case .encrypted? = $0 { true } else { false } }
    }
}
