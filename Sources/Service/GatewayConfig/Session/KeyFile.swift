import Foundation
import GatewayCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Key files for encrypted fields: the base64 of 32 random bytes (an AES-256 key) and a newline,
/// readable by the owner only.
public enum KeyFile {
    /// Writes a new random key. The file is created with mode 0600 and never replaces an
    /// existing one, so a key that encrypted data cannot be lost by accident.
    /// - Throws: ``GatewayError/Code/fileExists`` when `path` exists.
    public static func create(at path: String) throws {
        var generator = SystemRandomNumberGenerator()
        let key = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        try createSecret(at: path, text: Data(key).base64EncodedString() + "\n")
    }

    /// The fingerprint of the key in the file at `path` (``EncryptionKey/fingerprint``), to compare
    /// the key files of several gateways without showing the keys.
    /// - Throws: ``GatewayError/Code/stateUnavailable`` when the file cannot be read or is not a key.
    public static func fingerprint(at path: String) throws -> String {
        guard let raw = key(at: path) else {
            throw GatewayError(.stateUnavailable, "\(path) cannot be read as a key file (the base64 of 32 bytes, as `gateway keygen` writes)")
        }
        return try EncryptionKey(id: "key", rawKey: raw).fingerprint
    }

    /// The 32 bytes of the key in the file at `path`; `nil` when it cannot be read or is not one.
    public static func key(at path: String) -> Data? {
        guard let data = FileManager.default.contents(atPath: path),
            let raw = Data(base64Encoded: String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)), raw.count == 32
        else { return nil }
        return raw
    }

    /// Writes `text` to a new file of mode 0600 (its folder 0700), never replacing a file.
    /// - Throws: ``GatewayError/Code/fileExists`` when `path` exists.
    public static func createSecret(at path: String, text: String) throws {
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent()
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw GatewayError(.stateUnavailable, "cannot create \(folder.path): \(error.localizedDescription)", underlying: error)
        }
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            if errno == EEXIST { throw GatewayError(.fileExists, "\(path) already exists; a key file is never replaced") }
            throw GatewayError(.stateUnavailable, "cannot create \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        // The umask may have narrowed the mode further; it must not be wider than 0600.
        fchmod(descriptor, 0o600)
        let written = text.withCString { write(descriptor, $0, strlen($0)) }
        guard written == text.utf8.count, fsync(descriptor) == 0 else {
            unlink(path)
            throw GatewayError(.stateUnavailable, "cannot write \(path): \(String(cString: strerror(errno)))")
        }
    }
}
