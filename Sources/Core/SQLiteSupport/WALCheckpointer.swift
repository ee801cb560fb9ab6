import Foundation
import GRDB
import Synchronization

/// Copies a WAL database's committed pages back into the database file on a connection of its
/// own, so that the pool's writer commits without doing it.
///
/// SQLite's automatic checkpoint runs inside the commit that crosses its threshold: that writer
/// copies about 4 MB and waits for two `fdatasync`s before its commit returns. A sync's upload
/// commits to the cloud file and to the source in every round, so those waits were on its
/// critical path (upload alone 1.26 → 1.10 s per 100,000 rows with them moved here). A
/// `PASSIVE` checkpoint on another connection runs beside the writer's appends and never waits
/// for readers or writers.
///
/// The store calls ``noteWrite()`` after each write transaction; at most one checkpoint runs at
/// a time, at most one per ``interval``. The writer's own automatic checkpoint stays, at
/// ``safetyNetPages``, for a WAL that grows faster than this keeps up (or when opening this
/// connection failed). Checkpoints are crash-safe: a process killed during one loses nothing.
public final class WALCheckpointer: Sendable {
    /// The writer's own automatic checkpoint threshold, in pages (SQLite's default is 1,000).
    public static let safetyNetPages = 10_000
    /// The shortest time between two background checkpoints.
    public static let interval: Duration = .milliseconds(25)

    private struct State {
        var connection: DatabaseQueue?
        var running = false
        var lastStart: ContinuousClock.Instant?
        var closed = false
    }

    private let path: String
    private let configuration: GRDB.Configuration
    private let state = Mutex(State())
    /// Where the checkpoints run: serial, owned by this object.
    private let queue: DispatchQueue

    /// A checkpointer for the database at `path`, opened with `configuration` (its busy mode and
    /// connection settings) on first use.
    public init(path: String, configuration: GRDB.Configuration) {
        self.path = path
        var configuration = configuration
        configuration.label = "WALCheckpointer"
        self.configuration = configuration
        queue = DispatchQueue(label: "gateway.wal-checkpoint")
    }

    /// Sets the writer's own checkpoint threshold to the safety net; call it from the pool's
    /// `prepareDatabase`.
    public static func prepareWriter(_ db: Database) throws {
        try db.execute(sql: "PRAGMA wal_autocheckpoint = \(safetyNetPages)")
    }

    /// A write transaction committed: starts a checkpoint unless one runs or started less than
    /// ``interval`` ago.
    public func noteWrite() {
        let start = state.withLock { state -> Bool in
            let now = ContinuousClock.now
            guard !state.closed, !state.running, state.lastStart.map({ now - $0 >= Self.interval }) ?? true else { return false }
            state.running = true
            state.lastStart = now
            return true
        }
        guard start else { return }
        queue.async { [self] in
            runCheckpoint()
            state.withLock { $0.running = false }
        }
    }

    /// Waits for a running checkpoint and closes the connection; later writes start none.
    public func close() {
        state.withLock { $0.closed = true }
        queue.sync {}
        let connection = state.withLock { state -> DatabaseQueue? in
            defer { state.connection = nil }
            return state.connection
        }
        try? connection?.close()
    }

    deinit {
        // A pending checkpoint holds `self`, so nothing runs any more here.
        try? state.withLock { $0.connection }?.close()
    }

    private func runCheckpoint() {
        // Failures (the file gone, a busy lock) are left to the writer's own safety net.
        guard let connection = openedConnection() else { return }
        _ = try? connection.writeWithoutTransaction { db in try db.checkpoint(.passive) }
    }

    private func openedConnection() -> DatabaseQueue? {
        if let connection = state.withLock({ $0.closed ? nil : $0.connection }) { return connection }
        guard state.withLock({ !$0.closed }), let connection = try? DatabaseQueue(path: path, configuration: configuration) else { return nil }
        state.withLock { $0.connection = connection }
        return connection
    }
}

extension DatabasePool {
    /// Closes the pool and, when it was the last user of the database at `path`, checkpoints the
    /// WAL into the file and removes the `-wal` and `-shm` files.
    ///
    /// GRDB closes the pool's writer before its read-only readers, and a read-only connection
    /// cannot checkpoint: no connection of the pool removes the WAL. A last connection of our own
    /// does, unless another program still has the database open. `stillNamesOpenedFile` is asked
    /// before it opens (a connection would create a file removed meanwhile).
    /// - Returns: whether the pool closed (a connection still in use keeps it open).
    @discardableResult
    public func closeRemovingWAL(path: String, stillNamesOpenedFile: () -> Bool) async -> Bool {
        guard (try? close()) != nil else { return false }
        guard stillNamesOpenedFile(), let last = try? DatabaseQueue(path: path) else { return true }
        _ = try? await last.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master") }
        try? last.close()
        return true
    }
}
