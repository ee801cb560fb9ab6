/// A size written as in `512KB`, `1MB`, `2MiB` or a plain number of bytes. KB, MB and GB are
/// decimal (1MB = 1,000,000 bytes, as CloudKit counts its limits); KiB, MiB and GiB are binary.
public struct ByteSize: Sendable, Hashable, Decodable, CustomStringConvertible {
    public var bytes: Int64

    public init(bytes: Int64) { self.bytes = bytes }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let bytes = Self.parse(text) else {
            throw decoder.configProblem(
                .invalidValue, "expected a size such as 512KB, 1MB or 2MiB, found '\(decoder.configRawText ?? text)'")
        }
        self.bytes = bytes
    }

    public static func parse(_ text: String) -> Int64? {
        let units: [String: Int64] = [
            "": 1, "B": 1, "KB": 1_000, "MB": 1_000_000, "GB": 1_000_000_000,
            "KiB": 1_024, "MiB": 1_048_576, "GiB": 1_073_741_824,
        ]
        let compact = text.filter { $0 != " " && $0 != "_" }
        let digits = compact.prefix(while: { $0.isASCII && $0.isNumber })
        guard !digits.isEmpty, let number = Int64(digits), let unit = units[String(compact.dropFirst(digits.count))] else {
            return nil
        }
        let (bytes, overflow) = number.multipliedReportingOverflow(by: unit)
        return overflow ? nil : bytes
    }

    public var description: String { "\(bytes) bytes" }
}
