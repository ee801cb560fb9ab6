import Foundation

/// A point in time with millisecond precision, the precision CloudKit Web Services keeps.
///
/// Storing milliseconds as an integer (rather than a `Date`) makes round trips through every
/// store exact, so a value read back compares equal to the value written.
public struct Timestamp: Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    /// Milliseconds since 1970-01-01T00:00:00Z.
    public var millisecondsSince1970: Int64

    /// The time `millisecondsSince1970` after the Unix epoch, CloudKit's unit.
    public init(millisecondsSince1970: Int64) {
        self.millisecondsSince1970 = millisecondsSince1970
    }

    /// The timestamp of `date`, truncated towards the past to whole milliseconds.
    public init(_ date: Date) {
        self.millisecondsSince1970 = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
    }

    /// The current time.
    public static func now() -> Timestamp { Timestamp(Date()) }

    /// The same instant as a `Date`.
    public var date: Date { Date(timeIntervalSince1970: Double(millisecondsSince1970) / 1000) }

    public static func < (lhs: Timestamp, rhs: Timestamp) -> Bool {
        lhs.millisecondsSince1970 < rhs.millisecondsSince1970
    }

    public var description: String { date.formatted(.iso8601) }
}
