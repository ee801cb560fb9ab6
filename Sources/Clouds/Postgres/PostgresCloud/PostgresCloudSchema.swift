import GatewayCore
import PostgresNIO
import PostgresSupport

/// The PostgreSQL cloud's tables, created and upgraded in place.
///
/// Records are keyed by their zone's `zone_key` (a number each zone gets when created) and their
/// name, and no statement touches two zones, so the tables can be distributed by zone. A number
/// rather than the zone's owner and name keeps both record indexes narrow: an insert maintained
/// two keys of three text columns, which cost a third of each saved record's time in the
/// database. Assets are content-addressed and shared by every zone: the protocol uploads them
/// before naming a zone. Creation runs under a transaction-scoped advisory lock, so gateways
/// starting together do not race.
enum PostgresCloudSchema {
    /// 1: the first release. 2: `records.created_at`, when a record was first saved (`NULL` for
    /// records saved before: their `modified_at` stands in). 3: `subscriptions`, each user's
    /// database and zone subscriptions. 4: the change feed's index keyed by the zone's columns
    /// in the `"C"` collation instead of the columns themselves (`records_in_feed_order`), so
    /// record lookups by name are always planned on the primary key. 5: records keyed by the
    /// zone's `zone_key` instead of its owner and name (the records table is rebuilt once).
    static let currentVersion = 5
    /// The advisory lock key serializing schema changes (an arbitrary constant: "gwcloud").
    static let migrationLock: Int64 = 0x6777_636C_6F75_64

    static func migrate(_ connection: PooledConnection, schema: String) async throws {
        let s = SQLQuoting.identifier(schema)
        try await connection.query("SELECT pg_advisory_xact_lock(\(migrationLock))", logger: connection.logger)
        try await connection.query(PostgresQuery(unsafeSQL: "CREATE SCHEMA IF NOT EXISTS \(s)"), logger: connection.logger)
        try await connection.query(
            PostgresQuery(unsafeSQL: "CREATE TABLE IF NOT EXISTS \(s).schema_version (version integer NOT NULL)"),
            logger: connection.logger)
        let rows = try await connection.query(PostgresQuery(unsafeSQL: "SELECT max(version) FROM \(s).schema_version"), logger: connection.logger)
        var version = 0
        for try await (value) in rows.decode(Int?.self) { version = value ?? 0 }
        guard version < currentVersion else {
            if version > currentVersion {
                throw PostgresFailure(
                    .statementFailed,
                    "the cloud schema \(schema) has version \(version), newer than the \(currentVersion) this gateway supports; upgrade the gateway")
            }
            return
        }
        if version > 0 {
            if version < 2 { try await addCreationTimes(connection, schema: s) }
            try await connection.query(PostgresQuery(unsafeSQL: subscriptionsTable(s)), logger: connection.logger)
            if version < 5 { try await keyRecordsByZoneNumber(connection, schema: s) }
            try await connection.query(
                PostgresQuery(unsafeSQL: "INSERT INTO \(s).schema_version (version) VALUES (\(currentVersion))"), logger: connection.logger)
            return
        }
        // Zones keep their change-feed position: `generation` is new on every creation, so tokens
        // of a deleted zone never match its successor; `last_seq` is the commit sequence;
        // `purged_seq` is the newest tombstone removed, below which tokens have expired.
        let statements =
            [
                """
                CREATE TABLE IF NOT EXISTS \(s).zones (
                    owner_name text NOT NULL,
                    zone_name text NOT NULL,
                    generation bytea NOT NULL,
                    last_seq bigint NOT NULL DEFAULT 0,
                    purged_seq bigint NOT NULL DEFAULT 0,
                    created_at bigint NOT NULL,
                    zone_key bigint GENERATED ALWAYS AS IDENTITY,
                    PRIMARY KEY (owner_name, zone_name)
                )
                """,
                zoneKeyIndex(s),
                recordsTable(s),
            ] + recordIndexes(s) + [
                """
                CREATE TABLE IF NOT EXISTS \(s).assets (
                    checksum text PRIMARY KEY,
                    size bigint NOT NULL,
                    data bytea NOT NULL,
                    created_at bigint NOT NULL
                )
                """,
                subscriptionsTable(s),
                "INSERT INTO \(s).schema_version (version) VALUES (\(currentVersion))",
            ]
        try await run(statements, on: connection)
    }

    private static func zoneKeyIndex(_ s: String) -> String {
        "CREATE UNIQUE INDEX IF NOT EXISTS zones_by_key ON \(s).zones (zone_key)"
    }

    private static func recordsTable(_ s: String) -> String {
        """
        CREATE TABLE IF NOT EXISTS \(s).records (
            zone_key bigint NOT NULL,
            record_name text NOT NULL,
            record_type text NOT NULL,
            change_tag text,
            seq bigint NOT NULL,
            deleted boolean NOT NULL DEFAULT false,
            modified_at bigint NOT NULL,
            fields bytea,
            created_at bigint,
            CONSTRAINT records_pkey PRIMARY KEY (zone_key, record_name)
        )
        """
    }

    /// The records table's secondary indexes: the change feed's order (``feedIndex``) and
    /// tombstones by age, for purging.
    private static func recordIndexes(_ s: String) -> [String] {
        [feedIndex(s), "CREATE INDEX IF NOT EXISTS tombstones_by_age ON \(s).records (zone_key, modified_at) WHERE deleted"]
    }

    /// The change feed's order within a zone, keyed by `zone_key + 0` and the sequence: an index
    /// only a query naming that expression (the feed's) can use.
    ///
    /// Statistics are missing or stale exactly when they matter (a new cloud's first upload, a
    /// zone newer than the last `ANALYZE`): the planner then estimates a zone at a row or two.
    /// With an index on the zone's plain column, lookups by record name were planned on it and
    /// filtered the whole zone per request; `record_name = ANY(…)` was even planned on the
    /// primary key's zone prefix alone. Both quadratic in the zone's size. So lookups probe the
    /// primary key once per name (a lateral join, every key column equal), which no other index
    /// can serve, and the feed reads this index in order with sorting disabled. The expression
    /// costs nothing measurable per insert.
    private static func feedIndex(_ s: String) -> String {
        "CREATE UNIQUE INDEX IF NOT EXISTS records_in_feed_order ON \(s).records ((zone_key + 0), seq)"
    }

    /// Versions 1 to 4 to 5: zones get their numbers, and the records table is rebuilt keyed by
    /// them (its rows copied once, the secondary indexes built after the copy).
    private static func keyRecordsByZoneNumber(_ connection: PooledConnection, schema s: String) async throws {
        let statements =
            [
                "ALTER TABLE \(s).zones ADD COLUMN IF NOT EXISTS zone_key bigint GENERATED ALWAYS AS IDENTITY",
                zoneKeyIndex(s),
                "ALTER TABLE \(s).records RENAME TO records_by_zone_name",
                "ALTER TABLE \(s).records_by_zone_name DROP CONSTRAINT records_pkey",
                "DROP INDEX IF EXISTS \(s).records_in_feed_order, \(s).records_by_seq, \(s).tombstones_by_age",
                recordsTable(s),
                """
                INSERT INTO \(s).records (zone_key, record_name, record_type, change_tag, seq, deleted, modified_at, fields, created_at)
                SELECT z.zone_key, r.record_name, r.record_type, r.change_tag, r.seq, r.deleted, r.modified_at, r.fields, r.created_at
                FROM \(s).records_by_zone_name AS r JOIN \(s).zones AS z USING (owner_name, zone_name)
                """,
            ] + recordIndexes(s) + ["DROP TABLE \(s).records_by_zone_name"]
        try await run(statements, on: connection)
    }

    /// Runs schema statements in order, in the migration's transaction.
    private static func run(_ statements: [String], on connection: PooledConnection) async throws {
        for statement in statements {
            try await connection.query(PostgresQuery(unsafeSQL: statement), logger: connection.logger)
        }
    }

    /// Version 1 to 2: a nullable column, so no row is rewritten.
    private static func addCreationTimes(_ connection: PooledConnection, schema s: String) async throws {
        try await connection.query(
            PostgresQuery(unsafeSQL: "ALTER TABLE \(s).records ADD COLUMN IF NOT EXISTS created_at bigint"), logger: connection.logger)
    }

    /// Subscriptions by owner and identifier; `zone_name`/`zone_owner` are empty for a database
    /// subscription, and `definition` is the client's subscription dictionary (JSON).
    private static func subscriptionsTable(_ s: String) -> String {
        """
        CREATE TABLE IF NOT EXISTS \(s).subscriptions (
            owner text NOT NULL,
            subscription_id text NOT NULL,
            zone_owner text NOT NULL,
            zone_name text NOT NULL,
            definition bytea NOT NULL,
            PRIMARY KEY (owner, subscription_id)
        )
        """
    }
}
