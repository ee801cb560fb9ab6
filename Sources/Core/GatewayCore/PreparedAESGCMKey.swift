import Crypto
import Foundation

// swift-crypto builds a new BoringSSL AEAD context (key schedule and GHASH tables) for every
// `AES.GCM.seal` and `open`: two thirds of the cost of sealing a short field. Its bundled BoringSSL
// module is not a product, but SwiftPM makes it importable to every package that depends on
// `Crypto`. Where it is, a context is prepared once per key; anywhere else the public API is used.
// The tests check that both paths read each other's ciphertexts.
#if canImport(CCryptoBoringSSL)
import CCryptoBoringSSL
#endif

/// An AES-256-GCM key with its cipher context prepared once, so each seal or open costs only the
/// encryption itself. Nonces are 12 bytes and tags 16, as `AES.GCM` uses.
final class PreparedAESGCMKey: @unchecked Sendable {
    // @unchecked: BoringSSL's AEAD context is immutable after creation; `EVP_AEAD_CTX_seal` and
    // `EVP_AEAD_CTX_open` take it as `const`, so threads may share it without a lock.

    static let nonceSize = 12
    static let tagSize = 16

    private let key: SymmetricKey
    #if canImport(CCryptoBoringSSL)
    private let context: UnsafeMutablePointer<EVP_AEAD_CTX>
    #endif

    /// Whether seal and open use the prepared context (otherwise swift-crypto's public API).
    static var usesPreparedContext: Bool {
        #if canImport(CCryptoBoringSSL)
        true
        #else
        false
        #endif
    }

    /// - Parameter rawKey: 32 bytes.
    init(rawKey: Data) throws(FieldEncryptionError) {
        precondition(rawKey.count == 32, "an AES-256 key has 32 bytes")
        key = SymmetricKey(data: rawKey)
        #if canImport(CCryptoBoringSSL)
        let created = rawKey.withUnsafeBytes { raw in
            CCryptoBoringSSL_EVP_AEAD_CTX_new(
                CCryptoBoringSSL_EVP_aead_aes_256_gcm(), raw.bindMemory(to: UInt8.self).baseAddress, raw.count, Self.tagSize)
        }
        guard let created else { throw FieldEncryptionError(.cipherFailed, "the AES-256-GCM context could not be created") }
        context = created
        #endif
    }

    deinit {
        #if canImport(CCryptoBoringSSL)
        CCryptoBoringSSL_EVP_AEAD_CTX_free(context)
        #endif
    }

    /// Appends `ciphertext ‖ tag` for `plaintext` to `output`.
    func seal(
        _ plaintext: [UInt8], nonce: UnsafeRawBufferPointer, authenticating additional: [UInt8], appendingTo output: inout Data
    ) throws(FieldEncryptionError) {
        let sealed = plaintext.withUnsafeBytes { input in
            additional.withUnsafeBytes { ad in
                Result { () throws(FieldEncryptionError) in try seal(input, nonce: nonce, authenticating: ad, appendingTo: &output) }
            }
        }
        try sealed.get()
    }

    /// Appends `ciphertext ‖ tag` for `plaintext` to `output`, from raw bytes (no copies).
    func seal(
        _ plaintext: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer, authenticating additional: UnsafeRawBufferPointer,
        appendingTo output: inout Data
    ) throws(FieldEncryptionError) {
        precondition(nonce.count == Self.nonceSize)
        #if canImport(CCryptoBoringSSL)
        let start = output.count
        let capacity = plaintext.count + Self.tagSize
        output.count += capacity
        var written = 0
        let status = output.withUnsafeMutableBytes { raw in
            CCryptoBoringSSL_EVP_AEAD_CTX_seal(
                context, raw.baseAddress!.advanced(by: start).assumingMemoryBound(to: UInt8.self), &written, capacity,
                nonce.bindMemory(to: UInt8.self).baseAddress, nonce.count, plaintext.bindMemory(to: UInt8.self).baseAddress,
                plaintext.count, additional.bindMemory(to: UInt8.self).baseAddress, additional.count)
        }
        guard status == 1, written == capacity else { throw FieldEncryptionError(.cipherFailed, "AES-256-GCM sealing failed") }
        #else
        do {
            let box = try AES.GCM.seal(
                Array(plaintext), using: key, nonce: try AES.GCM.Nonce(data: Array(nonce)), authenticating: Array(additional))
            output.append(box.ciphertext)
            output.append(box.tag)
        } catch {
            throw FieldEncryptionError(.cipherFailed, "AES-256-GCM sealing failed")
        }
        #endif
    }

    /// Opens `sealed` (`ciphertext ‖ tag`) and hands the plaintext to `body`; nil when the tag does
    /// not match (wrong key, altered bytes, or other authenticated data).
    func open<T>(
        _ sealed: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer, authenticating additional: [UInt8],
        _ body: (UnsafeRawBufferPointer) throws(BinaryDecodingError) -> T
    ) throws(BinaryDecodingError) -> T? {
        try additional.withUnsafeBytes { ad in
            Result { () throws(BinaryDecodingError) in try open(sealed, nonce: nonce, authenticating: ad, body) }
        }.get()
    }

    /// Opens `sealed` (`ciphertext ‖ tag`) with raw authenticated data; see the other `open`.
    func open<T>(
        _ sealed: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer, authenticating additional: UnsafeRawBufferPointer,
        _ body: (UnsafeRawBufferPointer) throws(BinaryDecodingError) -> T
    ) throws(BinaryDecodingError) -> T? {
        precondition(nonce.count == Self.nonceSize)
        guard sealed.count >= Self.tagSize else { return nil }
        #if canImport(CCryptoBoringSSL)
        let capacity = sealed.count - Self.tagSize
        return try withUnsafeTemporaryAllocation(byteCount: max(capacity, 1), alignment: 1) {
            buffer throws(BinaryDecodingError) -> T? in
            var written = 0
            let status = CCryptoBoringSSL_EVP_AEAD_CTX_open(
                context, buffer.baseAddress!.assumingMemoryBound(to: UInt8.self), &written, capacity,
                nonce.bindMemory(to: UInt8.self).baseAddress, nonce.count, sealed.bindMemory(to: UInt8.self).baseAddress,
                sealed.count, additional.bindMemory(to: UInt8.self).baseAddress, additional.count)
            guard status == 1 else {
                CCryptoBoringSSL_ERR_clear_error()
                return nil
            }
            return try body(UnsafeRawBufferPointer(rebasing: buffer[0..<written]))
        }
        #else
        let plaintext: Data
        do {
            let box = try AES.GCM.SealedBox(
                nonce: AES.GCM.Nonce(data: Array(nonce)), ciphertext: Array(sealed[0..<(sealed.count - Self.tagSize)]),
                tag: Array(sealed[(sealed.count - Self.tagSize)...]))
            plaintext = try AES.GCM.open(box, using: key, authenticating: Array(additional))
        } catch {
            return nil
        }
        return try plaintext.withUnsafeBytes { buffer throws(BinaryDecodingError) in try body(buffer) }
        #endif
    }

    /// The same seal through swift-crypto's public API, for checking the prepared path against it.
    func sealWithPublicAPI(_ plaintext: [UInt8], nonce: [UInt8], authenticating additional: [UInt8]) throws -> [UInt8] {
        let box = try AES.GCM.seal(plaintext, using: key, nonce: try AES.GCM.Nonce(data: nonce), authenticating: additional)
        return Array(box.ciphertext) + Array(box.tag)
    }

    /// The same open through swift-crypto's public API, for checking the prepared path against it.
    func openWithPublicAPI(_ sealed: [UInt8], nonce: [UInt8], authenticating additional: [UInt8]) throws -> [UInt8] {
        let box = try AES.GCM.SealedBox(
            nonce: AES.GCM.Nonce(data: nonce), ciphertext: sealed.dropLast(Self.tagSize), tag: sealed.suffix(Self.tagSize))
        return Array(try AES.GCM.open(box, using: key, authenticating: additional))
    }
}
