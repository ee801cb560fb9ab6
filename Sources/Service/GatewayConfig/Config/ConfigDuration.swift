import Foundation

/// A duration written as in `500ms`, `30s`, `5m`, `1h30m` or `2d`. A bare number is refused:
/// `sync_interval: 60` could mean seconds or minutes.
public struct ConfigDuration: Sendable, Hashable, Decodable, CustomStringConvertible {
    public var duration: Duration
    /// The text as written.
    public var text: String

    public init(_ duration: Duration, text: String) {
        self.duration = duration
        self.text = text
    }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let duration = Self.parse(text) else {
            throw decoder.configProblem(
                .invalidValue, "expected a duration such as 500ms, 30s, 5m, 1h or 1h30m, found '\(decoder.configRawText ?? text)'")
        }
        self.init(duration, text: text)
    }

    /// Parses a sequence of `<number><unit>` parts with units ms, s, m, h, d.
    public static func parse(_ text: String) -> Duration? {
        let units: [(String, Int64)] = [("ms", 1), ("s", 1_000), ("m", 60_000), ("h", 3_600_000), ("d", 86_400_000)]
        var rest = Substring(text.trimmingCharacters(in: .whitespaces))
        guard !rest.isEmpty else { return nil }
        var milliseconds: Int64 = 0
        while !rest.isEmpty {
            let digits = rest.prefix(while: \.isASCII).prefix(while: \.isNumber)
            guard !digits.isEmpty, let number = Int64(digits) else { return nil }
            rest = rest.dropFirst(digits.count)
            let unitText = rest.prefix(while: \.isLetter)
            guard let unit = units.first(where: { $0.0 == unitText }) else { return nil }
            rest = rest.dropFirst(unitText.count)
            let (product, overflow) = number.multipliedReportingOverflow(by: unit.1)
            guard !overflow else { return nil }
            milliseconds += product
        }
        return .milliseconds(milliseconds)
    }

    public var description: String { text }
}
