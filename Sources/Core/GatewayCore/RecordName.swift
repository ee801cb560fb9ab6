/// A record's name as a dictionary or set key: equal to another only when their UTF-8 bytes are.
///
/// CloudKit, SQLite, PostgreSQL and file systems keep "é" and "e\u{301}" apart, while `String`'s
/// `==` holds them equal; a `Dictionary<String, _>` of record names would merge two records into
/// one. Collections keyed by record names use this type (``RecordID/name`` gives it), so no call
/// site wraps a name by hand.
public struct RecordName: Hashable, Sendable, Codable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// The name, as given.
    public let text: String

    /// The record name `text`.
    @inlinable
    public init(_ text: String) { self.text = text }

    /// The record name `value`.
    public init(stringLiteral value: String) { self.text = value }

    /// Decodes the name from a string.
    public init(from decoder: any Decoder) throws {
        text = try decoder.singleValueContainer().decode(String.self)
    }

    /// Encodes the name as a string.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(text)
    }

    /// Whether the two names have the same bytes.
    @inlinable
    public static func == (lhs: RecordName, rhs: RecordName) -> Bool { ExactText.equal(lhs.text, rhs.text) }

    /// Feeds the name's bytes to `hasher`, as ``RecordID`` hashes its name.
    @inlinable
    public func hash(into hasher: inout Hasher) { ExactText.hash(text, into: &hasher) }

    /// The name.
    public var description: String { text }
}

extension RecordID {
    /// The record's name as a key that compares bytes.
    @inlinable
    public var name: RecordName { RecordName(recordName) }
}
