/// Text compared and hashed by its UTF-8 bytes, as stores and clouds compare keys and names.
///
/// `String`'s `==` and hash follow canonical equivalence: the composed "é" and "e" followed by a
/// combining acute are one key to a `Dictionary<String, _>`, but two rows to SQLite or
/// PostgreSQL and two records to CloudKit. Wherever names of records or keys of rows identify
/// something, they are compared with this. Record names as dictionary keys are ``RecordName``s;
/// other texts (paths, primary-key values) are wrapped in ``ExactText/Key``.
public enum ExactText {
    /// Whether the two texts have the same bytes.
    @inlinable
    public static func equal(_ lhs: String, _ rhs: String) -> Bool {
        let compared = lhs.utf8.withContiguousStorageIfAvailable { left in
            rhs.utf8.withContiguousStorageIfAvailable { right in
                left.count == right.count && (left.baseAddress == right.baseAddress || left.elementsEqual(right))
            }
        }
        return (compared ?? nil) ?? lhs.utf8.elementsEqual(rhs.utf8)
    }

    /// Feeds the text's bytes to `hasher`.
    @inlinable
    public static func hash(_ text: String, into hasher: inout Hasher) {
        let hashed: Void? = text.utf8.withContiguousStorageIfAvailable { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        if hashed == nil {
            for byte in text.utf8 { hasher.combine(byte) }
        }
        hasher.combine(0xFF as UInt8)
    }

    /// A text as a dictionary or set key, equal to another only when their bytes are.
    public struct Key: Hashable, Sendable, CustomStringConvertible {
        /// The text, as given.
        public let text: String

        /// The key of `text`.
        @inlinable
        public init(_ text: String) { self.text = text }

        /// Whether the two keys' texts have the same bytes.
        @inlinable
        public static func == (lhs: Key, rhs: Key) -> Bool { ExactText.equal(lhs.text, rhs.text) }

        /// Feeds the text's bytes to `hasher`.
        @inlinable
        public func hash(into hasher: inout Hasher) { ExactText.hash(text, into: &hasher) }

        /// The text.
        public var description: String { text }
    }
}
