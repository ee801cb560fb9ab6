/// Expands `${VAR}` and `${VAR:-default}` in a config value from the environment. `$$` stands
/// for a literal `$`. A `${VAR}` whose variable is unset is an error rather than an empty string,
/// so a forgotten secret stops the gateway instead of weakening it; `${VAR:-}` opts into empty.
enum VariableExpansion {
    enum Problem: Error, Equatable {
        case undefined(String)
        case malformed
    }

    static func expand(_ text: String, environment: [String: String]) throws(Problem) -> String {
        guard text.contains("$") else { return text }
        var result = ""
        var index = text.startIndex
        while index < text.endIndex {
            let character = text[index]
            guard character == "$" else {
                result.append(character)
                index = text.index(after: index)
                continue
            }
            let next = text.index(after: index)
            if next < text.endIndex, text[next] == "$" {
                result.append("$")
                index = text.index(after: next)
                continue
            }
            guard next < text.endIndex, text[next] == "{" else {
                result.append("$")
                index = next
                continue
            }
            guard let close = text[next...].firstIndex(of: "}") else { throw .malformed }
            let body = text[text.index(after: next)..<close]
            let name: Substring
            let fallback: Substring?
            if let separator = body.range(of: ":-") {
                name = body[..<separator.lowerBound]
                fallback = body[separator.upperBound...]
            } else {
                name = body
                fallback = nil
            }
            guard isVariableName(name) else { throw .malformed }
            if let value = environment[String(name)], !(value.isEmpty && fallback != nil) {
                result += value
            } else if let fallback {
                result += fallback
            } else {
                throw .undefined(String(name))
            }
            index = text.index(after: close)
        }
        return result
    }

    private static func isVariableName(_ name: Substring) -> Bool {
        guard let first = name.first, first == "_" || first.isASCII && first.isLetter else { return false }
        return name.allSatisfy { $0 == "_" || $0.isASCII && ($0.isLetter || $0.isNumber) }
    }
}
