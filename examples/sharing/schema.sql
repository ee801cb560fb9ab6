-- The notes table both sides sync; a participant's file starts empty and fills from the zone.
CREATE TABLE notes (
    id INTEGER PRIMARY KEY,
    title TEXT NOT NULL,
    body TEXT NOT NULL DEFAULT ''
);
