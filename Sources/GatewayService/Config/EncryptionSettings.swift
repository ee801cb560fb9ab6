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
