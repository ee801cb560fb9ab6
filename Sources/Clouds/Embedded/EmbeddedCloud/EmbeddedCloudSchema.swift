import GRDB
import GatewayCore

/// The embedded cloud's tables, created and upgraded in place.
///
/// The version lives in `PRAGMA user_version` and is read inside an IMMEDIATE transaction, so two
/// processes opening a new file at once cannot both create the tables.
enum EmbeddedCloudSchema {
    /// 1: the first release. 2: `records` is keyed by (zone, record name) `WITHOUT ROWID`, one
    /// B-tree insert fewer per saved record. 3: `records.created_at`, when a record was first
    /// saved (`NULL` for records saved before: their `modified_at` stands in). 4: `records` is a
    /// rowid table again, with a unique index on (zone, record name): a record's row (about 300
    /// bytes) is too large for a `WITHOUT ROWID` B-tree, which then splits pages and rewrites more
    /// of them per commit than a rowid table plus a small index does. 5: `subscriptions`, each
    /// user's database and zone subscriptions.
    static let currentVersion = 5

    static func migrate(_ db: Database) throws {
        let version = try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0
        guard version < currentVersion else {
            if version > currentVersion {
                throw CloudError(
                    .internalError,
                    "the cloud file has schema version \(version), newer than the \(currentVersion) this gateway supports; upgrade the gateway")
            }
            return
        }
        if version == 0 {
            try createCurrent(db)
        } else {
            if version < 4 { try rebuildRecords(db, from: version) }
            try createSubscriptions(db)
        }
        try db.execute(sql: "PRAGMA user_version = \(currentVersion)")
    }

    /// A new file.
    private static func createCurrent(_ db: Database) throws {
        // Zones keep their change-feed position: `generation` is new on every creation, so tokens
        // of a deleted zone never match its successor; `last_seq` is the commit sequence;
        // `purged_seq` is the newest tombstone removed, below which tokens have expired.
        try db.execute(
            sql: """
                CREATE TABLE IF NOT EXISTS zones (
                    zone_key INTEGER PRIMARY KEY AUTOINCREMENT,
                    owner_name TEXT NOT NULL,
                    zone_name TEXT NOT NULL,
                    generation BLOB NOT NULL,
                    last_seq INTEGER NOT NULL DEFAULT 0,
                    purged_seq INTEGER NOT NULL DEFAULT 0,
                    created_at INTEGER NOT NULL,
                    UNIQUE (owner_name, zone_name)
                );
                CREATE TABLE IF NOT EXISTS assets (
                    checksum TEXT PRIMARY KEY,
                    size INTEGER NOT NULL,
                    data BLOB NOT NULL,
                    created_at INTEGER NOT NULL
                );
                """)
        try createRecords(db, named: "records")
        try createRecordIndexes(db)
        try createSubscriptions(db)
    }

    /// Subscriptions by owner and identifier; `zone_name`/`zone_owner` are empty for a database
    /// subscription, and `definition` is the client's subscription dictionary (JSON).
    private static func createSubscriptions(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE TABLE IF NOT EXISTS subscriptions (
                    owner TEXT NOT NULL,
                    subscription_id TEXT NOT NULL,
                    zone_owner TEXT NOT NULL,
                    zone_name TEXT NOT NULL,
                    definition BLOB NOT NULL,
                    PRIMARY KEY (owner, subscription_id)
                ) WITHOUT ROWID
                """)
    }

    private static func createRecords(_ db: Database, named name: String) throws {
        try db.execute(
            sql: """
                CREATE TABLE \(name) (
                    zone_key INTEGER NOT NULL REFERENCES zones(zone_key) ON DELETE CASCADE,
                    record_name TEXT NOT NULL,
                    record_type TEXT NOT NULL,
                    change_tag TEXT,
                    seq INTEGER NOT NULL,
                    deleted INTEGER NOT NULL DEFAULT 0,
                    modified_at INTEGER NOT NULL,
                    fields BLOB,
                    created_at INTEGER
                )
                """)
    }

    private static func createRecordIndexes(_ db: Database) throws {
        try db.execute(
            sql: """
                CREATE UNIQUE INDEX IF NOT EXISTS records_by_name ON records (zone_key, record_name);
                CREATE UNIQUE INDEX IF NOT EXISTS records_by_seq ON records (zone_key, seq);
                CREATE INDEX IF NOT EXISTS tombstones_by_age ON records (zone_key, modified_at) WHERE deleted = 1;
                """)
    }

    /// A file of an earlier schema: its records move, in this transaction, into the current
    /// table, in feed order. Schemas before 3 have no creation times (`NULL`).
    private static func rebuildRecords(_ db: Database, from version: Int) throws {
        try createRecords(db, named: "records_next")
        let createdAt = version >= 3 ? "created_at" : "NULL"
        try db.execute(
            sql: """
                INSERT INTO records_next (zone_key, record_name, record_type, change_tag, seq, deleted, modified_at, fields, created_at)
                SELECT zone_key, record_name, record_type, change_tag, seq, deleted, modified_at, fields, \(createdAt)
                FROM records ORDER BY zone_key, seq;
                DROP TABLE records;
                ALTER TABLE records_next RENAME TO records;
                """)
        try createRecordIndexes(db)
    }
}
