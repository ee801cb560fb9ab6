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
        let expanded = template.replacingOccurrences(of: "<Type>", with: recordType)
        let parts = expanded.components(separatedBy: "<pk>")
        guard parts.count == 2 else { return nil }
        prefix = parts[0]
        suffix = parts[1]
        self.keyColumnCount = keyColumnCount
    }

    /// The record name for key components (as text).
    public func name(for components: [String]) -> String {
        let key = components.count == 1 ? components[0] : components.map(Self.escape).joined(separator: "|")
        return prefix + key + suffix
    }

    /// The key components of a record name, or `nil` when the name does not fit the template.
    public func components(of name: String) -> [String]? {
        guard name.hasPrefix(prefix), name.hasSuffix(suffix), name.count >= prefix.count + suffix.count else { return nil }
        let key = String(name.dropFirst(prefix.count).dropLast(suffix.count))
        if keyColumnCount == 1 { return [key] }
        var components: [String] = []
        var current = ""
        var escaping = false
        for character in key {
            if escaping {
                current.append(character)
                escaping = false
            } else if character == "\\" {
                escaping = true
            } else if character == "|" {
                components.append(current)
                current = ""
            } else {
                current.append(character)
            }
        }
        guard !escaping else { return nil }
        components.append(current)
        return components.count == keyColumnCount ? components : nil
    }

    /// Whether `name` has this template's shape: its prefix and suffix, byte for byte, around a
    /// key of the right number of components. Cheaper than ``components(of:)`` for single-column
    /// keys, which it does not split.
    public func fits(_ name: String) -> Bool {
        guard keyColumnCount == 1 else { return components(of: name) != nil }
        let (bytes, head, tail) = (name.utf8, prefix.utf8, suffix.utf8)
        return bytes.count >= head.count + tail.count && bytes.starts(with: head) && bytes.reversed().starts(with: tail.reversed())
    }

    /// Escapes the backslash and the separator `|` in one key component, so joined components
    /// split back unambiguously.
    public static func escape(_ component: String) -> String {
        component.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "|", with: "\\|")
    }

    /// Whether two templates could give records of different tables the same name.
    public static func mayCollide(_ a: RecordNameTemplate, _ b: RecordNameTemplate) -> Bool {
        let prefixesOverlap = a.prefix.hasPrefix(b.prefix) || b.prefix.hasPrefix(a.prefix)
        let suffixesOverlap = a.suffix.hasSuffix(b.suffix) || b.suffix.hasSuffix(a.suffix)
        return prefixesOverlap && suffixesOverlap
    }
}
