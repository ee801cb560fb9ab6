import GatewayCore
import Logging
import NIOCore
import PostgresNIO

/// A connection lent by ``PostgresConnectionPool`` for one operation.
///
/// PostgresNIO 1.33 writes each statement to the channel without a write promise: a statement
/// written after the connection has closed reaches no handler, and the caller's `await` is never
/// resumed. A PostgreSQL restart in the middle of a transaction left the gateway waiting forever
/// on its `ROLLBACK`. Here every statement is written from the connection's own event loop right
/// after checking that the connection is open, so it either reaches the connection's handler
/// (which answers it or fails it when the connection closes) or fails at once with
/// ``PostgresFailure/Code/connectionFailed``. Together with the pool's deadline, which closes the
/// connection of an operation that runs too long, no statement can wait forever.
public struct PooledConnection: Sendable {
    /// The underlying connection; write statements through the methods of this type instead.
    public let connection: PostgresConnection
    /// Runs jobs on the connection's event loop (see ``PostgresConnectionPool/withConnection(doing:_:)``).
    let loop: EventLoopTaskExecutor

    init(_ connection: PostgresConnection) {
        self.connection = connection
        self.loop = EventLoopTaskExecutor(connection.eventLoop)
    }

    /// The connection's logger.
    public var logger: Logger { connection.logger }

    /// Whether the connection has closed (the server went away, or the deadline closed it).
    public var isClosed: Bool { connection.isClosed }

    /// Runs a statement and collects its rows; see `PostgresConnection.query(_:logger:)`.
    ///
    /// The rows are read whole, on the connection's event loop, never through PostgresNIO's
    /// back-pressured row sequence: PostgresNIO 1.33 traps (`RowStreamStateMachine`: "How can we
    /// receive a body part, after a channelReadComplete, but no read has been forwarded yet") when
    /// the server closes the connection while rows wait for a slow reader, which a PostgreSQL
    /// restart during a large page did, ending the gateway. Collected, the stream always asks for
    /// more in the same event-loop tick, so it never waits for a reader. Results are pages the
    /// gateway sized itself, so holding one whole costs little.
    @discardableResult
    public func query(_ query: PostgresQuery, logger: Logger, file: String = #fileID, line: Int = #line) async throws
        -> PostgresRows
    {
        let connection = connection
        return try await withTaskExecutorPreference(loop) {
            // On the connection's event loop, nothing closes the channel between this check and
            // the write inside `query`: it has no suspension point before it.
            try Self.checkOpen(connection)
            let result: PostgresQueryResult = try await connection.query(query, logger: logger, file: file, line: line).get()
            return PostgresRows(result.rows, affectedRows: result.metadata.rows)
        }
    }

    /// Runs a prepared statement; see `PostgresConnection.execute(_:logger:)`.
    public func execute<Statement: PostgresPreparedStatement, Row>(
        _ statement: Statement, logger: Logger, file: String = #fileID, line: Int = #line
    ) async throws -> AsyncThrowingMapSequence<PostgresRowSequence, Row> where Row == Statement.Row {
        let connection = connection
        return try await withTaskExecutorPreference(loop) {
            try Self.checkOpen(connection)
            return try await connection.execute(statement, logger: logger, file: file, line: line)
        }
    }

    /// Copies rows into `table` of `schema` with `COPY … FROM STDIN` (text format), sending
    /// `data` as it is: rows separated by newlines, columns by tabs, values escaped as COPY's
    /// text format wants (``PostgresCopyText``). Must run inside a transaction: the schema is put
    /// on the transaction's `search_path`, since PostgresNIO quotes the table name whole.
    public func copy(into table: String, of schema: String, columns: [String], data: ByteBuffer, logger: Logger) async throws {
        try await query(PostgresQuery(unsafeSQL: "SET LOCAL search_path TO " + SQLQuoting.identifier(schema)), logger: logger)
        let connection = connection
        try await withTaskExecutorPreference(loop) {
            try Self.checkOpen(connection)
            try await connection.copyFrom(table: table, columns: columns, logger: logger) { writer in
                try await writer.write(data)
            }
        }
    }

    /// Starts `LISTEN channel` for the rest of the connection's life, and returns a stream that
    /// yields when a notification with `payload` arrives (several that arrive before the reader
    /// looks count as one) and ends when the connection closes.
    ///
    /// There is no way to stop listening but closing the connection, on purpose: PostgresNIO 1.33
    /// traps (`ListenStateMachine`: "Invalid state: starting") when a notification arrives while
    /// it issues `LISTEN` again on a connection that listened before, and a writer's steady
    /// `NOTIFY`s hit that within seconds when a listener stops and starts per change. One `LISTEN`
    /// per connection never goes through that state with notifications in flight.
    /// - Throws: ``PostgresFailure`` when the connection is closed or `LISTEN` did not take effect.
    public func subscribe(to channel: String, payload: String, logger: Logger) async throws -> AsyncStream<Void> {
        let (notifications, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let connection = connection
        try await withTaskExecutorPreference(loop) {
            try Self.checkOpen(connection)
            connection.addListener(channel: channel) { _, notification in
                if notification.payload == payload { continuation.yield() }
            }
        }
        connection.closeFuture.whenComplete { _ in continuation.finish() }
        // The statement runs after the `LISTEN` queued above, so its answer says whether that
        // took effect (a failed `LISTEN` leaves its listener silent rather than failing it).
        let listening = try await query(
            "SELECT count(*)::int8 FROM pg_listening_channels() AS listening(name) WHERE name = \(channel)", logger: logger)
        var isListening = false
        for try await count in listening.decode(Int64.self) { isListening = count > 0 }
        guard isListening else {
            continuation.finish()
            throw PostgresFailure(.statementFailed, "LISTEN on \(channel) did not take effect")
        }
        return notifications
    }

    /// Closes the connection.
    public func close() async throws {
        try await connection.close()
    }

    /// Starts closing the connection without waiting, for `deinit`s.
    public func closeWithoutWaiting() {
        connection.closeWithoutWaiting()
    }

    private static func checkOpen(_ connection: PostgresConnection) throws {
        guard !connection.isClosed else {
            throw PostgresFailure(.connectionFailed, "the connection to the server was closed before the statement could be sent")
        }
    }
}

/// The rows of a statement, read whole (``PooledConnection/query(_:logger:file:line:)``): an
/// async sequence of rows, read as PostgresNIO's row sequence is.
public struct PostgresRows: AsyncSequence, Sendable {
    public typealias Element = PostgresRow
    public typealias Failure = Never

    /// The rows, in the server's order.
    public let rows: [PostgresRow]
    /// How many rows the statement inserted, updated or deleted, as its command tag says
    /// (`nil` for a statement whose tag counts none).
    public let affectedRows: Int?

    init(_ rows: [PostgresRow], affectedRows: Int?) {
        self.rows = rows
        self.affectedRows = affectedRows
    }

    public func makeAsyncIterator() -> Iterator { Iterator(base: rows.makeIterator()) }

    /// Walks the rows.
    public struct Iterator: AsyncIteratorProtocol {
        var base: IndexingIterator<[PostgresRow]>
        public mutating func next() async -> PostgresRow? { base.next() }
    }

    /// Each row decoded as `columnType`; see `PostgresRow.decode(_:file:line:)`.
    public func decode<each Column: PostgresDecodable>(
        _ columnType: (repeat each Column).Type, file: String = #fileID, line: Int = #line
    ) -> DecodedPostgresRows<repeat each Column> {
        DecodedPostgresRows(rows: rows, file: file, line: line)
    }
}

/// The rows of a statement, each decoded as it is read (``PostgresRows/decode(_:file:line:)``).
public struct DecodedPostgresRows<each Column: PostgresDecodable>: AsyncSequence {
    public typealias Element = (repeat each Column)
    public typealias Failure = any Error

    let rows: [PostgresRow]
    let file: String
    let line: Int

    public func makeAsyncIterator() -> Iterator { Iterator(base: rows.makeIterator(), file: file, line: line) }

    /// Decodes the rows one by one.
    public struct Iterator: AsyncIteratorProtocol {
        var base: IndexingIterator<[PostgresRow]>
        let file: String
        let line: Int

        public mutating func next() async throws -> (repeat each Column)? {
            guard let row = base.next() else { return nil }
            return try row.decode((repeat each Column).self, file: file, line: line)
        }
    }
}

/// Runs tasks' jobs on one event loop, so that code between two suspension points runs as one
/// event-loop tick, ordered with the channel's own events.
final class EventLoopTaskExecutor: TaskExecutor {
    let eventLoop: any EventLoop

    init(_ eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        eventLoop.execute { job.runSynchronously(on: executor) }
    }
}
