import Foundation
import GatewayCore

/// The `encryption:` section: the key ring for encrypted fields.
public struct EncryptionSettings: Sendable, Decodable {
    /// `keys`: the first encrypts, every key decrypts (rotation).
    public var keys: [KeySource]

    enum CodingKeys: String, CodingKey { case keys }

    public init() { keys = [] }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        keys = try container.decodeIfPresent([KeySource].self, forKey: .keys) ?? []
        var seen: Set<String> = []
        for key in keys where !seen.insert(key.id.value).inserted {
            throw key.id.problem(.duplicateName, "two keys have the id '\(key.id.value)'; key ids must be unique")
        }
    }
}

/// One key of the ring: `{ id, file }` or `{ id, env }`.
public struct KeySource: Sendable, Decodable {
    /// Where the key's bytes come from.
    public enum Origin: Sendable, Equatable {
        /// A file written by `gateway keygen` (base64 of 32 bytes), resolved against the config's folder.
        case file(String)
        /// An environment variable holding the base64 of 32 bytes.
        case environment(String)
    }

    /// `id`: names the key in ciphertexts, so old values find their key after rotation.
    public var id: Located<String>
    public var origin: Origin

    enum CodingKeys: String, CodingKey { case id, file, env }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(Located<String>.self, forKey: .id)
        guard ConfigName.isValid(id.value) else {
            throw id.problem(.invalidValue, "key ids use 1 to 64 letters, digits, '-', '_' or '.'")
        }
        let file = try container.decodeIfPresent(String.self, forKey: .file)
        let variable = try container.decodeIfPresent(String.self, forKey: .env)
        switch (file, variable) {
        case (let file?, nil): origin = .file(file)
        case (nil, let variable?): origin = .environment(variable)
        default:
            throw decoder.configProblem(.inconsistent, "give the key exactly one of 'file' or 'env'")
        }
    }
}

extension KeySource {
    /// Reads the key: a file relative to the config's folder, or an environment variable, holding
    /// the base64 of 32 bytes (what `gateway keygen` writes).
    /// - Throws: ``ConfigError`` at the key's `id`, never quoting the key.
    func load(context: ConfigContext, environment: [String: String]) throws -> EncryptionKey {
        let text: String
        switch origin {
        case .file(let path):
            let resolved = context.resolve(path)
            var isFolder: ObjCBool = false
            if FileManager.default.fileExists(atPath: resolved, isDirectory: &isFolder), isFolder.boolValue {
                throw id.problem(.unreadableFile, "key file \(path) is a folder; point 'file' at the key file inside it")
            }
            guard let data = FileManager.default.contents(atPath: resolved) else {
                throw id.problem(
                    .unreadableFile, "key file \(path) cannot be read; create it with `gateway keygen --id \(id.value) --output \(path)`")
            }
            text = String(decoding: data, as: UTF8.self)
        case .environment(let variable):
            guard let value = environment[variable], !value.isEmpty else {
                throw id.problem(.undefinedVariable, "environment variable \(variable) holding key \(id.value) is not set")
            }
            text = value
        }
        guard let raw = Data(base64Encoded: text.trimmingCharacters(in: .whitespacesAndNewlines)), raw.count == 32 else {
            throw id.problem(.invalidValue, "key \(id.value) is not the base64 of 32 bytes; create one with `gateway keygen`")
        }
        do {
            return try EncryptionKey(id: id.value, rawKey: raw)
        } catch {
            throw id.problem(.invalidValue, error.message)
        }
    }
}
