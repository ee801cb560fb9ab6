import Foundation
import GatewayCore
import GatewayTesting
import Testing

/// ISO 8601 text of timestamps: written digit by digit on bulk paths, so checked against
/// Foundation's formatter and against parsing back.
@Suite("Timestamp text")
struct TimestampTextTests {
    @Test("format agrees with Foundation and parses back, over years 1 to 9999 (property-based, 2,000 seeds)")
    func formatAgrees() throws {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        formatter.timeZone = TimeZone(identifier: "UTC")
        var random = SeededGenerator(seed: 42)
        let range: ClosedRange<Int64> = -62_135_596_800_000...253_402_300_799_999
        let edges: [Int64] = [range.lowerBound, range.upperBound, 0, -1, 1, 951_782_400_000, 1_767_323_045_678]
        for milliseconds in edges + (0..<2_000).map({ _ in Int64.random(in: range, using: &random) }) {
            let timestamp = Timestamp(millisecondsSince1970: milliseconds)
            let text = ISO8601Timestamps.format(timestamp)
            #expect(ISO8601Timestamps.parse(text) == timestamp, "\(milliseconds) → \(text) does not parse back")
            if milliseconds >= 0 {
                let reference = formatter.string(from: Date(timeIntervalSince1970: Double(milliseconds) / 1000))
                #expect(text == reference, "\(milliseconds)")
            }
        }
    }
}
