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

    @Test("years before 0000 and after 9999 are written as ISO 8601 expanded years and parse back (property-based, 2,000 seeds)")
    func expandedYears() throws {
        // 44 BC (year -43 in ISO 8601's count, which has a year 0) and the year 10000.
        let march15 = Timestamp(millisecondsSince1970: -63_517_824_000_000)
        #expect(ISO8601Timestamps.format(march15) == "-0043-03-15T00:00:00.000Z")
        #expect(ISO8601Timestamps.format(Timestamp(millisecondsSince1970: 253_402_300_800_000)) == "+10000-01-01T00:00:00.000Z")
        #expect(ISO8601Timestamps.parse("-0043-03-15T00:00:00.000Z") == march15)
        #expect(ISO8601Timestamps.parse("+002026-01-02") == ISO8601Timestamps.parse("2026-01-02"), "six digits, as JavaScript writes them")
        for malformed in ["-43-03-15", "+-0043-03-15", "--0043-03-15", "0043-03-15T00:00:00.000Z-", "20260-01-02"] {
            #expect(ISO8601Timestamps.parse(malformed) == nil, "\(malformed)")
        }
        var random = SeededGenerator(seed: 7)
        for _ in 0..<2_000 {
            // About 290 million years either way, as far as milliseconds in 64 bits reach.
            let milliseconds = Int64.random(in: -9_000_000_000_000_000...9_000_000_000_000_000, using: &random)
            let timestamp = Timestamp(millisecondsSince1970: milliseconds)
            #expect(ISO8601Timestamps.parse(ISO8601Timestamps.format(timestamp)) == timestamp, "\(milliseconds)")
        }
    }
}
