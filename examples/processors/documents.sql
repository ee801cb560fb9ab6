-- The processors example's office database: documents whose `attachment` column holds the path
-- of a file under examples/processors/files/ (relative to that folder).
CREATE TABLE documents (
    id INTEGER PRIMARY KEY,
    title TEXT NOT NULL,
    body TEXT NOT NULL DEFAULT '',
    attachment TEXT
);

BEGIN;
INSERT INTO documents (id, title, body, attachment) VALUES (1, 'Planning meeting', 'What we decided on Tuesday and who does what next', 'minutes.txt');
INSERT INTO documents (id, title, body, attachment) VALUES (2, 'New logo', 'The green circle won the vote', 'logo.svg');
INSERT INTO documents (id, title, body, attachment) VALUES (3, 'Reading list', 'Three books for the summer', NULL);
COMMIT;
