import Foundation
import GatewayTesting
import TestScheduling
import Testing

/// SQLite's process-wide settings (`SQLiteProcessSettings`), each case in a fresh process (the
/// test helper `SQLiteWriter`): settings of the whole process apply only before SQLite's first use,
/// which in this test process depends on which test opened a connection first.
@Suite("SQLite process settings", .heavy)
struct SQLiteProcessSettingsTests {
    /// What the helper reports: whether the settings applied, and the memory SQLite counted for
    /// opening a connection and running a query.
    static func report(_ when: String) async throws -> (applied: Bool, counted: Int64, rows: Int) {
        let directory = try TemporaryDirectory(prefix: "sqlite-process-settings")
        defer { directory.remove() }
        let output = directory.path("output.txt")
        let child = try ChildProcess(try BuiltExecutable.path("SQLiteWriter"), arguments: ["process-settings", when], standardOutput: output)
        #expect(try await child.wait(timeout: .seconds(60)) == 0)
        let fields = Dictionary(
            uniqueKeysWithValues: try String(contentsOfFile: output, encoding: .utf8).split(whereSeparator: \.isWhitespace).compactMap { pair in
                let parts = pair.split(separator: "=", maxSplits: 1)
                return parts.count == 2 ? (String(parts[0]), String(parts[1])) : nil
            })
        return (fields["applied"] == "true", Int64(fields["counted"] ?? "") ?? -1, Int(fields["rows"] ?? "") ?? -1)
    }

    @Test("applied first thing, SQLite counts no memory and connections work")
    func appliedFirst() async throws {
        let report = try await Self.report("first")
        #expect(report.applied)
        #expect(report.counted == 0, "memory statistics are off")
        #expect(report.rows == 1_000)
    }

    @Test("applied after a connection opened, nothing changes: statistics stay on")
    func appliedLate() async throws {
        let report = try await Self.report("after-open")
        #expect(!report.applied)
        #expect(report.counted > 0, "SQLite still counts the new connection's memory")
        #expect(report.rows == 1_000)
    }
}
