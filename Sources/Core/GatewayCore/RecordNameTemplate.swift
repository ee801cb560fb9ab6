/// Turns primary keys into record names and back, following a table's `record_name` template.
///
/// A single-column key is used as is; the columns of a composite key are joined with `|` after
/// escaping `\` and `|` with a backslash, so every key has exactly one name and back.
public struct RecordNameTemplate: Sendable, Equatable {
    /// Text before the key.
    public let prefix: String
    /// Text after the key.
    public let suffix: String
    /// How many key columns the name joins.
    public let keyColumnCount: Int

    /// - Returns: `nil` when `template` does not contain `<pk>` exactly once.
    public init?(_ template: String, recordType: String, keyColumnCount: Int) {
        // By bytes, like every match on names: "<pk>" followed by a combining mark is still the
        // placeholder.
        let expanded = Self.split(Array(template.utf8), on: "<Type>").joined(separator: Array(recordType.utf8))
        let parts = Self.split(Array(expanded), on: "<pk>")
        guard parts.count == 2 else { return nil }
        prefix = String(decoding: parts[0], as: UTF8.self)
        suffix = String(decoding: parts[1], as: UTF8.self)
        self.keyColumnCount = keyColumnCount
    }

    /// The runs of `bytes` between occurrences of `separator`'s bytes.
    private static func split(_ bytes: [UInt8], on separator: String) -> [ArraySlice<UInt8>] {
        let token = Array(separator.utf8)
        var parts: [ArraySlice<UInt8>] = []
        var (start, index) = (0, 0)
        while index + token.count <= bytes.count {
            if bytes[index..<index + token.count].elementsEqual(token) {
                parts.append(bytes[start..<index])
                index += token.count
                start = index
            } else {
                index += 1
            }
        }
        parts.append(bytes[start...])
        return parts
    }

    /// The record name for key components (as text).
    public func name(for components: [String]) -> String {
        let key = components.count == 1 ? components[0] : components.map(Self.escape).joined(separator: "|")
        return prefix + key + suffix
    }

    /// The key components of a record name, or `nil` when the name does not fit the template.
    ///
    /// Matched byte for byte, as the stores' capture triggers build names (`prefix || key ||
    /// suffix`): a key that starts with a combining mark still splits off its prefix, and every
    /// name ``name(for:)`` gives splits back into the same components.
    public func components(of name: String) -> [String]? {
        guard let key = keyBytes(of: name) else { return nil }
        if keyColumnCount == 1 { return [String(decoding: key, as: UTF8.self)] }
        // `\` and `|` are ASCII, never part of a longer UTF-8 sequence: splitting and unescaping
        // bytes keeps every other character whole.
        var components: [String] = []
        components.reserveCapacity(keyColumnCount)
        var current: [UInt8] = []
        var escaping = false
        for byte in key {
            if escaping {
                current.append(byte)
                escaping = false
            } else if byte == UInt8(ascii: "\\") {
                escaping = true
            } else if byte == UInt8(ascii: "|") {
                components.append(String(decoding: current, as: UTF8.self))
                current.removeAll(keepingCapacity: true)
            } else {
                current.append(byte)
            }
        }
        guard !escaping else { return nil }
        components.append(String(decoding: current, as: UTF8.self))
        return components.count == keyColumnCount ? components : nil
    }

    /// Whether `name` has this template's shape: its prefix and suffix, byte for byte, around a
    /// key of the right number of components. Cheaper than ``components(of:)`` for single-column
    /// keys, which it does not copy.
    public func fits(_ name: String) -> Bool {
        guard keyColumnCount == 1 else { return components(of: name) != nil }
        return keyBytes(of: name) != nil
    }

    /// The bytes of `name` between the prefix and the suffix, or `nil` when it lacks either or
    /// they would overlap. Both are whole UTF-8 sequences, so the key starts and ends on
    /// character boundaries of the encoding.
    private func keyBytes(of name: String) -> Substring.UTF8View? {
        let (bytes, head, tail) = (Substring(name).utf8, prefix.utf8, suffix.utf8)
        guard bytes.count >= head.count + tail.count, bytes.starts(with: head), bytes.reversed().starts(with: tail.reversed()) else {
            return nil
        }
        return bytes.dropFirst(head.count).dropLast(tail.count)
    }

    /// Escapes the backslash and the separator `|` in one key component, so joined components
    /// split back unambiguously.
    ///
    /// Byte for byte, like the triggers' `replace()`: a `|` followed by a combining mark is one
    /// character but still a separator to split on, so it is escaped too.
    public static func escape(_ component: String) -> String {
        let (backslash, separator) = (UInt8(ascii: "\\"), UInt8(ascii: "|"))
        guard component.utf8.contains(where: { $0 == backslash || $0 == separator }) else { return component }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(component.utf8.count + 4)
        for byte in component.utf8 {
            if byte == backslash || byte == separator { bytes.append(backslash) }
            bytes.append(byte)
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Whether two templates could give records of different tables the same name.
    public static func mayCollide(_ a: RecordNameTemplate, _ b: RecordNameTemplate) -> Bool {
        // By bytes, as names are matched: "e" and a decomposed "é" overlap.
        let (aHead, bHead) = (a.prefix.utf8, b.prefix.utf8)
        let (aTail, bTail) = (a.suffix.utf8.reversed(), b.suffix.utf8.reversed())
        let prefixesOverlap = aHead.starts(with: bHead) || bHead.starts(with: aHead)
        let suffixesOverlap = aTail.starts(with: bTail) || bTail.starts(with: aTail)
        return prefixesOverlap && suffixesOverlap
    }
}
