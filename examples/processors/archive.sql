-- The processors example's archive database: the same table, empty; the documents arrive by sync.
CREATE TABLE documents (
    id INTEGER PRIMARY KEY,
    title TEXT NOT NULL,
    body TEXT NOT NULL DEFAULT '',
    attachment TEXT
);
