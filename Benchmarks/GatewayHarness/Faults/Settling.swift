import EmbeddedCloud
import Foundation
import GatewayCore
import PostgresCloud
import PostgresSupport

/// The zone every fault scenario syncs.
enum FaultZone {
    static let zone = ZoneID(zoneName: "Items")

    /// Every record of the zone in `cloud`, as `id → title|n`.
    static func lines(in cloud: any CloudDatabase) async throws -> [String: String] {
        var lines: [String: String] = [:]
        var token: ChangeToken?
        while true {
            let page = try await cloud.fetchChanges(in: zone, since: token, limit: 2_000)
            for record in page.modified {
                guard case .string(let title)? = record.fields["title"], case .int64(let n)? = record.fields["n"] else {
                    lines[record.id.recordName] = "malformed"
                    continue
                }
                lines[record.id.recordName] = SQLiteItems.line(title: title, n: n)
            }
            for id in page.deleted { lines[id.recordName] = nil }
            token = page.token
            if !page.moreComing { break }
        }
        return lines
    }

    /// The zone in an embedded cloud file.
    static func lines(inEmbedded path: String) async throws -> [String: String] {
        try await lines(in: try EmbeddedCloud(path: path))
    }

    /// The zone in a PostgreSQL cloud.
    static func lines(inPostgres endpoint: PostgresEndpoint) async throws -> [String: String] {
        let cloud = try await PostgresCloud.open(endpoint)
        do {
            let found = try await lines(in: cloud)
            await cloud.close()
            return found
        } catch {
            await cloud.close()
            throw error
        }
    }
}

/// Waits until every side holds what the writers left, then compares them.
struct Settling {
    typealias Reader = @Sendable () async throws -> [String: String]

    struct Outcome: Encodable {
        var settled: Bool
        var seconds: Double
        var sides: [SideComparison]
        var lost: Int { sides.map(\.lost).max() ?? 0 }
        var duplicated: Int { sides.map(\.duplicated).max() ?? 0 }
    }

    /// Polls every side until all of them equal `expected` or `timeout` passes.
    static func wait(for expected: [String: String], sides: [(String, Reader)], timeout: Duration) async -> Outcome {
        let started = ContinuousClock.now
        var last: [SideComparison] = []
        while true {
            var comparisons: [SideComparison] = []
            for (name, read) in sides {
                do {
                    comparisons.append(SideComparison(side: name, lines: try await read(), expected: expected))
                } catch {
                    var unreadable = SideComparison(side: name, lines: [:], expected: expected)
                    unreadable.example = "unreadable: \(error)"
                    comparisons.append(unreadable)
                }
            }
            last = comparisons
            let seconds = Double((ContinuousClock.now - started).components.seconds)
            if comparisons.allSatisfy({ $0.lost == 0 && $0.duplicated == 0 }) {
                return Outcome(settled: true, seconds: seconds, sides: comparisons)
            }
            if ContinuousClock.now - started > timeout { return Outcome(settled: false, seconds: seconds, sides: last) }
            try? await Task.sleep(for: .seconds(1))
        }
    }
}
