import GatewayCore

/// Checks of a table entry's `record_name` and column lists that hold for every SQL kind, made
/// while the config is decoded so `gateway validate` names their line.
public enum TableEntryChecks {
    /// The placeholders a `record_name` template knows.
    static let placeholders: Set<String> = ["<Type>", "<pk>"]

    /// Decodes `record_name` (default `<pk>`), refusing a template without `<pk>` exactly once
    /// or with a placeholder it does not know (`<Typ>` would be kept as text in every name).
    public static func recordName<Keys: CodingKey>(_ container: KeyedDecodingContainer<Keys>, forKey key: Keys) throws -> String {
        guard let template = try container.decodeIfPresent(Located<String>.self, forKey: key) else { return "<pk>" }
        var unknown: [String] = []
        var rest = Substring(template.value)
        while let open = rest.firstIndex(of: "<"), let close = rest[open...].firstIndex(of: ">") {
            let token = rest[open...close]
            let word = token.dropFirst().dropLast()
            if !word.isEmpty, word.allSatisfy({ $0.isLetter || $0 == "_" }), !placeholders.contains(String(token)) { unknown.append(String(token)) }
            rest = rest[rest.index(after: open)...]
        }
        if let first = unknown.first {
            let hint = first.lowercased().hasPrefix("<t") ? "<Type>" : "<pk>"
            throw template.problem(.invalidValue, "unknown placeholder \(first) in the record name template; it knows <Type> and <pk> (did you mean \(hint)?)")
        }
        guard template.value.components(separatedBy: "<pk>").count == 2 else {
            throw template.problem(.invalidValue, "the record name template must contain <pk> exactly once")
        }
        return template.value
    }

    /// Refuses a column both `include` and `exclude` name: the entry says two things of it.
    public static func includeAndExclude<Keys: CodingKey>(_ container: KeyedDecodingContainer<Keys>, include: Keys, exclude: Keys) throws {
        guard let included = try container.decodeIfPresent([String].self, forKey: include),
            let excluded = try container.decodeIfPresent([Located<String>].self, forKey: exclude)
        else { return }
        if let both = excluded.first(where: { included.contains($0.value) }) {
            throw both.problem(.inconsistent, "column \(both.value) is both included and excluded; name it in one list")
        }
    }
}
