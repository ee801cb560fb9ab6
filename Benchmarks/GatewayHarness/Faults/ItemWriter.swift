import Foundation
import GatewayTesting

/// A program writing one store while the gateway syncs it: inserts, updates and deletes of the
/// ids it owns (its prefix), remembering each write only once its transaction committed. A write
/// the store refuses (its server is down, its disk is full) is tried again later, as a real
/// program would.
final class ItemWriter: Sendable {
    let store: any ItemStore
    let prefix: String
    /// Writes per second, about.
    let rate: Double
    /// What the store holds of the writer's ids after every committed write (`nil`: deleted).
    let journal = LockedValue<[String: String?]>([:])
    let counts = LockedValue((writes: 0, refused: 0))
    /// Set by `stop()`: the writer finishes the write in flight, settles it, and returns. Task
    /// cancellation would cut a write between its commit and its answer, leaving the journal
    /// unsure of what the store holds.
    private let stopping = LockedValue(false)

    init(store: any ItemStore, prefix: String, rate: Double) {
        self.store = store
        self.prefix = prefix
        self.rate = rate
    }

    /// Asks `run` to return after the write in flight.
    func stop() { stopping.set(true) }

    /// Writes until `stop()` is called (or, abruptly, until the task is cancelled).
    func run(seed: UInt64) async {
        var random = SeededGenerator(seed: seed)
        var live: [String] = []
        var next = 0
        let pause = Duration.milliseconds(Int(1000 / max(rate, 0.1)))
        while !stopping.get(), !Task.isCancelled {
            let roll = Double.random(in: 0..<1, using: &random)
            var target: String?
            do {
                if roll < 0.15, !live.isEmpty {
                    let index = Int.random(in: 0..<live.count, using: &random)
                    let id = live[index]
                    target = id
                    try await store.delete(id)
                    live.remove(at: index)
                    journal.withLock { $0[id] = .some(nil) }
                } else {
                    let id: String
                    if roll < 0.5 || live.isEmpty {
                        id = "\(prefix)-\(next)"
                        next += 1
                    } else {
                        id = live[Int.random(in: 0..<live.count, using: &random)]
                    }
                    target = id
                    let title = "\(prefix) write \(counts.get().writes)"
                    let n = Int64.random(in: -1_000_000...1_000_000, using: &random)
                    try await store.put(id, title: title, n: n)
                    if !live.contains(id) { live.append(id) }
                    journal.withLock { $0[id] = .some(SQLiteItems.line(title: title, n: n)) }
                }
                counts.withLock { $0.writes += 1 }
            } catch {
                counts.withLock { $0.refused += 1 }
                // A failed commit may still have committed (the server died before it answered):
                // what the store holds once it answers again is what the write did.
                if let target, let found = await settle(target) {
                    journal.withLock { $0[target] = .some(found) }
                    if found == nil { live.removeAll { $0 == target } } else if !live.contains(target) { live.append(target) }
                }
            }
            try? await Task.sleep(for: pause)
        }
    }

    /// The row of `id` as the store holds it, asked until the store answers (for up to two
    /// minutes, or until the task is cancelled).
    private func settle(_ id: String) async -> String?? {
        for _ in 0..<600 where !Task.isCancelled {
            do {
                return .some(try await store.line(of: id))
            } catch {
                try? await Task.sleep(for: .milliseconds(200))
            }
        }
        return nil
    }

    /// The rows the writer's ids should have in every store once the gateways settle.
    var expected: [String: String] { journal.get().compactMapValues { $0 } }
}

/// What every side should hold: the preloaded rows, then what each writer committed.
struct ExpectedItems {
    var lines: [String: String]

    init(preloaded: [String: String], writers: [ItemWriter]) {
        lines = preloaded
        for writer in writers {
            for (id, value) in writer.journal.get() { lines[id] = value }
        }
    }
}

/// How one side compares with what is expected.
struct SideComparison: Encodable {
    var side: String
    /// Expected rows missing or holding another value.
    var lost: Int
    /// Rows no writer left there (never written, or deleted).
    var duplicated: Int
    var example: String?

    init(side: String, lines: [String: String], expected: [String: String]) {
        self.side = side
        let missing = expected.filter { lines[$0.key] != $0.value }.map(\.key).sorted()
        let extra = lines.keys.filter { expected[$0] == nil }.sorted()
        lost = missing.count
        duplicated = extra.count
        example = missing.first.map { "\($0): expected \(expected[$0] ?? "-"), found \(lines[$0] ?? "nothing")" }
            ?? extra.first.map { "\($0): found \(lines[$0] ?? ""), expected nothing" }
    }
}
