import GatewayCore

/// A closed set of words a config value must be one of. Decoding one through the config decoder
/// lists the allowed words and suggests the closest when the value is misspelled.
public protocol ConfigChoice: CaseIterable, RawRepresentable, Decodable, Sendable where RawValue == String {}

extension MergePolicy: ConfigChoice {}
extension MergePreference: ConfigChoice {}
extension ZoneDeletedPolicy: ConfigChoice {}

/// A decoded value together with where it was written, for checks that run after decoding.
public struct Located<Value: Decodable & Sendable>: Decodable, Sendable {
    public var value: Value
    /// Where the value is in the file; `nil` outside the config decoder.
    public var location: ConfigLocation?
    /// The key path, as `adapters[0].zone`.
    public var path: String

    public init(_ value: Value, at location: ConfigLocation? = nil, path: String = "") {
        self.value = value
        self.location = location
        self.path = path
    }

    public init(from decoder: any Decoder) throws {
        if let node = decoder as? ConfigNodeDecoder {
            value = try node.decodeValue(Value.self)
            location = node.location
            path = node.path
        } else {
            value = try Value(from: decoder)
            location = nil
            path = ConfigNodeDecoder.pathText(decoder.codingPath)
        }
    }

    /// An error about this value: `'path': message` at its location.
    public func problem(_ code: ConfigError.Code, _ message: String) -> ConfigError {
        ConfigError(code, path.isEmpty ? message : "'\(path)': \(message)", at: location)
    }
}

extension Decoder {
    /// An error about the value this decoder reads, naming its key path and location when the
    /// decoder is the config decoder.
    public func configProblem(_ code: ConfigError.Code, _ message: String) -> ConfigError {
        if let node = self as? ConfigNodeDecoder { return node.problem(code, message) }
        let path = ConfigNodeDecoder.pathText(codingPath)
        return ConfigError(code, path.isEmpty ? message : "'\(path)': \(message)")
    }

    /// Where the value this decoder reads is, when it is the config decoder.
    public var configLocation: ConfigLocation? { (self as? ConfigNodeDecoder)?.location }

    /// The key path of the value this decoder reads, as `adapters[0].tables[1]`.
    public var configPath: String { ConfigNodeDecoder.pathText(codingPath) }

    /// The value as written in the file, before `${VAR}` expansion, for messages.
    var configRawText: String? { (self as? ConfigNodeDecoder)?.rawText }
}
