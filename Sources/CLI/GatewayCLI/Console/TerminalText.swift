/// Text from stores and clouds (record names, messages quoting them) made safe to print on a
/// terminal: a name may hold any character, and an escape sequence in one must not move the
/// cursor or recolour the screen.
enum TerminalText {
    /// `text` with control characters written as `\u{…}`.
    static func printable(_ text: String) -> String {
        var output = ""
        output.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            if scalar.properties.generalCategory == .control {
                output += "\\u{\(String(scalar.value, radix: 16))}"
            } else {
                output.unicodeScalars.append(scalar)
            }
        }
        return output
    }
}
