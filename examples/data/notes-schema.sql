-- The schema of the example notes database, without rows: seeds the replica in config.yaml.
CREATE TABLE notes (
    id INTEGER PRIMARY KEY,
    title TEXT NOT NULL,
    body TEXT NOT NULL DEFAULT '',
    pinned BOOLEAN NOT NULL DEFAULT 0,
    rating REAL,
    created_at DATETIME NOT NULL,
    thumbnail BLOB
);

CREATE TABLE tags (
    name TEXT PRIMARY KEY,
    color TEXT NOT NULL
);

CREATE TABLE note_tags (
    note_id INTEGER NOT NULL,
    tag_name TEXT NOT NULL,
    PRIMARY KEY (note_id, tag_name)
);
