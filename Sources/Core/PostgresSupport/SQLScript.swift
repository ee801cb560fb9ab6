import Foundation

/// A SQL script split into its statements, for a driver that runs one statement per request.
///
/// Splits at semicolons outside quoted text: single-quoted strings (with `''`), double-quoted
/// identifiers, dollar-quoted bodies (`$$…$$`, `$tag$…$tag$`, as functions use), `--` line
/// comments and `/* */` block comments (nested, as PostgreSQL allows). Empty statements are
/// dropped.
public enum SQLScript {
    public static func statements(_ script: String) -> [String] {
        let characters = Array(script.unicodeScalars)
        var statements: [String] = []
        var current = String.UnicodeScalarView()
        var index = 0
        func flush() {
            let text = String(current).trimmingCharacters(in: .whitespacesAndNewlines)
            if !text.isEmpty { statements.append(text) }
            current = String.UnicodeScalarView()
        }
        func starts(with text: String, at position: Int) -> Bool {
            let scalars = Array(text.unicodeScalars)
            guard position + scalars.count <= characters.count else { return false }
            return Array(characters[position..<position + scalars.count]) == scalars
        }
        while index < characters.count {
            let character = characters[index]
            switch character {
            case "'", "\"":
                current.append(character)
                index += 1
                while index < characters.count {
                    current.append(characters[index])
                    if characters[index] == character {
                        // A doubled quote is the quote itself, inside the text.
                        if index + 1 < characters.count, characters[index + 1] == character {
                            current.append(characters[index + 1])
                            index += 2
                            continue
                        }
                        index += 1
                        break
                    }
                    index += 1
                }
            case "-" where starts(with: "--", at: index):
                while index < characters.count, characters[index] != "\n" {
                    current.append(characters[index])
                    index += 1
                }
            case "/" where starts(with: "/*", at: index):
                var depth = 0
                while index < characters.count {
                    if starts(with: "/*", at: index) {
                        depth += 1
                        current.append(contentsOf: "/*".unicodeScalars)
                        index += 2
                    } else if starts(with: "*/", at: index) {
                        depth -= 1
                        current.append(contentsOf: "*/".unicodeScalars)
                        index += 2
                        if depth == 0 { break }
                    } else {
                        current.append(characters[index])
                        index += 1
                    }
                }
            case "$":
                // A dollar quote's tag: `$$` or `$name$`; anything else is a parameter or name.
                var end = index + 1
                while end < characters.count, characters[end].properties.isAlphabetic || characters[end] == "_" || ("0"..."9").contains(characters[end]) {
                    end += 1
                }
                guard end < characters.count, characters[end] == "$", !(index + 1 < end && ("0"..."9").contains(characters[index + 1])) else {
                    current.append(character)
                    index += 1
                    continue
                }
                let tag = String(String.UnicodeScalarView(characters[index...end]))
                current.append(contentsOf: tag.unicodeScalars)
                index = end + 1
                while index < characters.count, !starts(with: tag, at: index) {
                    current.append(characters[index])
                    index += 1
                }
                if index < characters.count {
                    current.append(contentsOf: tag.unicodeScalars)
                    index += tag.unicodeScalars.count
                }
            case ";":
                flush()
                index += 1
            default:
                current.append(character)
                index += 1
            }
        }
        flush()
        return statements
    }
}
