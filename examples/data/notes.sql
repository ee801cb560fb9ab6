-- The example notes database: schema and rows. `gateway sync` creates .gateway/examples/notes.sqlite from it.
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

BEGIN;
INSERT INTO tags (name, color) VALUES ('work', '#1f77b4');
INSERT INTO tags (name, color) VALUES ('home', '#ff7f0e');
INSERT INTO tags (name, color) VALUES ('ideas', '#2ca02c');
INSERT INTO tags (name, color) VALUES ('reading', '#d62728');
INSERT INTO tags (name, color) VALUES ('travel', '#9467bd');
INSERT INTO notes (id, title, body, pinned, rating, created_at, thumbnail) VALUES (1, 'Kilo echo mike', 'bravo charlie romeo delta lima sierra bravo quebec golf bravo charlie november', 0, 2.7, '2026-02-11T09:01:00Z', NULL);
INSERT INTO notes (id, title, body, pinned, rating, created_at, thumbnail) VALUES (2, 'Hotel charlie romeo', 'november bravo sierra delta hotel sierra bravo sierra sierra mike bravo hotel', 0, 0.3, '2026-03-12T10:02:00Z', NULL);
INSERT INTO note_tags (note_id, tag_name) VALUES (2, 'home');
INSERT INTO note_tags (note_id, tag_name) VALUES (2, 'ideas');
INSERT INTO notes (id, title, body, pinned, rating, created_at, thumbnail) VALUES (3, 'November echo romeo', 'delta sierra juliet romeo foxtrot delta sierra sierra golf lima delta romeo', 0, 4.6, '2026-04-13T11:03:00Z', NULL);
INSERT INTO notes (id, title, body, pinned, rating, created_at, thumbnail) VALUES (4, 'Sierra bravo tango', 'golf papa romeo november kilo oscar sierra oscar lima juliet hotel foxtrot', 0, 4.5, '2026-05-14T12:04:00Z', X'7c2999fdafe593253cd654af4dfad714');
INSERT INTO note_tags (note_id, tag_name) VALUES (4, 'work');
INSERT INTO note_tags (note_id, tag_name) VALUES (4, 'ideas');
INSERT INTO notes (id, title, body, pinned, rating, created_at, thumbnail) VALUES (5, 'Kilo lima tango', 'papa sierra oscar charlie charlie india papa charlie bravo juliet sierra oscar', 0, NULL, '2026-06-15T13:05:00Z', NULL);
INSERT INTO note_tags (note_id, tag_name) VALUES (5, 'reading');
INSERT INTO notes (id, title, body, pinned, rating, created_at, thumbnail) VALUES (6, 'Lima alpha oscar', 'lima foxtrot tango delta papa bravo golf juliet echo hotel mike mike', 0, 3.2, '2026-07-16T14:06:00Z', NULL);
INSERT INTO notes (id, title, body, pinned, rating, created_at, thumbnail) VALUES (7, 'Foxtrot oscar mike', 'romeo india echo november romeo india november lima mike hotel echo charlie', 1, 1.2, '2026-08-17T15:07:00Z', NULL);
INSERT INTO notes (id, title, body, pinned, rating, created_at, thumbnail) VALUES (8, 'Hotel hotel alpha', 'papa sierra foxtrot india juliet alpha echo november romeo lima tango sierra', 0, 2.1, '2026-09-18T16:08:00Z', X'401be9c8cbccc935f6cd1f61226ae153');
INSERT INTO notes (id, title, body, pinned, rating, created_at, thumbnail) VALUES (9, 'Kilo tango bravo', 'delta alpha sierra echo romeo delta lima tango alpha charlie golf tango', 0, 2.5, '2026-01-19T17:09:00Z', NULL);
INSERT INTO notes (id, title, body, pinned, rating, created_at, thumbnail) VALUES (10, 'India lima tango', 'lima papa delta delta papa oscar papa papa juliet charlie echo delta', 0, NULL, '2026-02-20T18:10:00Z', NULL);
INSERT INTO note_tags (note_id, tag_name) VALUES (10, 'ideas');
INSERT INTO note_tags (note_id, tag_name) VALUES (10, 'travel');
INSERT INTO notes (id, title, body, pinned, rating, created_at, thumbnail) VALUES (11, 'Papa foxtrot quebec', 'alpha golf quebec lima echo romeo alpha quebec juliet charlie india quebec', 0, 2.4, '2026-03-21T19:11:00Z', NULL);
INSERT INTO notes (id, title, body, pinned, rating, created_at, thumbnail) VALUES (12, 'Lima hotel romeo', 'romeo quebec kilo hotel tango golf hotel mike hotel golf quebec papa', 0, 2.3, '2026-04-22T08:12:00Z', X'0e0e8ff18463b0e4b2ba29703474f064');
INSERT INTO note_tags (note_id, tag_name) VALUES (12, 'home');
INSERT INTO notes (id, title, body, pinned, rating, created_at, thumbnail) VALUES (13, 'Papa tango tango', 'alpha papa lima charlie delta mike golf papa foxtrot november kilo charlie', 0, 4.7, '2026-05-23T09:13:00Z', NULL);
INSERT INTO note_tags (note_id, tag_name) VALUES (13, 'reading');
INSERT INTO notes (id, title, body, pinned, rating, created_at, thumbnail) VALUES (14, 'Mike charlie foxtrot', 'foxtrot echo alpha echo sierra oscar echo tango tango papa lima echo', 1, 3.6, '2026-06-24T10:14:00Z', NULL);
INSERT INTO note_tags (note_id, tag_name) VALUES (14, 'home');
INSERT INTO note_tags (note_id, tag_name) VALUES (14, 'work');
INSERT INTO notes (id, title, body, pinned, rating, created_at, thumbnail) VALUES (15, 'Alpha delta quebec', 'echo november golf golf alpha india golf juliet quebec hotel sierra kilo', 0, NULL, '2026-07-25T11:15:00Z', NULL);
INSERT INTO note_tags (note_id, tag_name) VALUES (15, 'travel');
INSERT INTO notes (id, title, body, pinned, rating, created_at, thumbnail) VALUES (16, 'November echo bravo', 'lima oscar sierra quebec november quebec echo romeo echo quebec quebec alpha', 0, 2.9, '2026-08-26T12:16:00Z', X'5d024c5848f23d1fa6f7361d7f618d15');
INSERT INTO notes (id, title, body, pinned, rating, created_at, thumbnail) VALUES (17, 'Quebec oscar romeo', 'alpha charlie oscar kilo tango quebec tango quebec golf india oscar quebec', 0, 3.5, '2026-09-27T13:17:00Z', NULL);
INSERT INTO note_tags (note_id, tag_name) VALUES (17, 'travel');
INSERT INTO notes (id, title, body, pinned, rating, created_at, thumbnail) VALUES (18, 'Hotel quebec india', 'romeo golf oscar echo november delta mike oscar kilo charlie hotel november', 0, 0.5, '2026-01-10T14:18:00Z', NULL);
INSERT INTO notes (id, title, body, pinned, rating, created_at, thumbnail) VALUES (19, 'Juliet delta echo', 'lima echo india echo oscar hotel delta mike papa foxtrot hotel foxtrot', 0, 4.6, '2026-02-11T15:19:00Z', NULL);
INSERT INTO note_tags (note_id, tag_name) VALUES (19, 'travel');
INSERT INTO notes (id, title, body, pinned, rating, created_at, thumbnail) VALUES (20, 'Mike kilo november', 'golf lima kilo charlie lima alpha kilo romeo oscar oscar alpha mike', 0, NULL, '2026-03-12T16:20:00Z', X'a997203975352b878b145c8a42d884cf');
INSERT INTO notes (id, title, body, pinned, rating, created_at, thumbnail) VALUES (21, 'Romeo quebec sierra', 'papa kilo charlie india bravo foxtrot november charlie india alpha charlie india', 1, 0.6, '2026-04-13T17:21:00Z', NULL);
INSERT INTO note_tags (note_id, tag_name) VALUES (21, 'home');
INSERT INTO note_tags (note_id, tag_name) VALUES (21, 'work');
INSERT INTO notes (id, title, body, pinned, rating, created_at, thumbnail) VALUES (22, 'India delta oscar', 'alpha kilo romeo november india tango echo bravo quebec hotel delta foxtrot', 0, 1.7, '2026-05-14T18:22:00Z', NULL);
INSERT INTO notes (id, title, body, pinned, rating, created_at, thumbnail) VALUES (23, 'Foxtrot golf juliet', 'juliet quebec golf juliet oscar quebec foxtrot india lima alpha india bravo', 0, 0.1, '2026-06-15T19:23:00Z', NULL);
INSERT INTO notes (id, title, body, pinned, rating, created_at, thumbnail) VALUES (24, 'Quebec romeo golf', 'quebec papa hotel oscar delta november papa romeo mike quebec juliet golf', 0, 1.5, '2026-07-16T08:24:00Z', X'af6547cfb11b42072482dc531c2bc390');
INSERT INTO note_tags (note_id, tag_name) VALUES (24, 'home');
INSERT INTO note_tags (note_id, tag_name) VALUES (24, 'ideas');
INSERT INTO notes (id, title, body, pinned, rating, created_at, thumbnail) VALUES (25, 'Bravo oscar foxtrot', 'foxtrot india oscar alpha india lima kilo romeo kilo hotel bravo juliet', 0, NULL, '2026-08-17T09:25:00Z', NULL);
INSERT INTO notes (id, title, body, pinned, rating, created_at, thumbnail) VALUES (26, 'Lima foxtrot alpha', 'kilo mike charlie papa india quebec golf hotel quebec alpha charlie india', 0, 0.6, '2026-09-18T10:26:00Z', NULL);
INSERT INTO notes (id, title, body, pinned, rating, created_at, thumbnail) VALUES (27, 'Mike sierra bravo', 'mike alpha juliet juliet hotel charlie sierra quebec echo tango mike kilo', 0, 4.7, '2026-01-19T11:27:00Z', NULL);
INSERT INTO note_tags (note_id, tag_name) VALUES (27, 'home');
INSERT INTO notes (id, title, body, pinned, rating, created_at, thumbnail) VALUES (28, 'Juliet tango echo', 'bravo quebec november quebec echo quebec quebec sierra alpha sierra hotel charlie', 1, 0.2, '2026-02-20T12:28:00Z', X'1544b835c0e719097dfa8701e9232f21');
INSERT INTO note_tags (note_id, tag_name) VALUES (28, 'reading');
INSERT INTO note_tags (note_id, tag_name) VALUES (28, 'ideas');
INSERT INTO notes (id, title, body, pinned, rating, created_at, thumbnail) VALUES (29, 'Charlie india hotel', 'golf hotel oscar papa mike charlie papa juliet bravo tango golf charlie', 0, 3.9, '2026-03-21T13:29:00Z', NULL);
INSERT INTO notes (id, title, body, pinned, rating, created_at, thumbnail) VALUES (30, 'Kilo india juliet', 'tango sierra echo alpha papa bravo papa india delta golf papa juliet', 0, NULL, '2026-04-22T14:30:00Z', NULL);
INSERT INTO note_tags (note_id, tag_name) VALUES (30, 'travel');
INSERT INTO note_tags (note_id, tag_name) VALUES (30, 'ideas');
INSERT INTO notes (id, title, body, pinned, rating, created_at, thumbnail) VALUES (31, 'Oscar oscar oscar', 'delta romeo golf juliet charlie papa alpha juliet oscar charlie quebec oscar', 0, 1.8, '2026-05-23T15:31:00Z', NULL);
INSERT INTO note_tags (note_id, tag_name) VALUES (31, 'home');
INSERT INTO notes (id, title, body, pinned, rating, created_at, thumbnail) VALUES (32, 'Golf charlie sierra', 'charlie echo quebec india lima echo tango quebec india delta lima hotel', 0, 3.2, '2026-06-24T16:32:00Z', X'f8c90c5101fbe6cf9a48d5b0c0a13da9');
INSERT INTO notes (id, title, body, pinned, rating, created_at, thumbnail) VALUES (33, 'Kilo kilo mike', 'delta golf alpha juliet india lima charlie mike mike sierra charlie lima', 0, 2.8, '2026-07-25T17:33:00Z', NULL);
INSERT INTO note_tags (note_id, tag_name) VALUES (33, 'work');
INSERT INTO notes (id, title, body, pinned, rating, created_at, thumbnail) VALUES (34, 'India delta bravo', 'juliet echo hotel india november quebec kilo golf lima november alpha mike', 0, 3.6, '2026-08-26T18:34:00Z', NULL);
INSERT INTO note_tags (note_id, tag_name) VALUES (34, 'home');
INSERT INTO note_tags (note_id, tag_name) VALUES (34, 'work');
INSERT INTO notes (id, title, body, pinned, rating, created_at, thumbnail) VALUES (35, 'Bravo november oscar', 'tango echo juliet papa bravo romeo echo foxtrot papa november kilo juliet', 1, NULL, '2026-09-27T19:35:00Z', NULL);
INSERT INTO note_tags (note_id, tag_name) VALUES (35, 'ideas');
INSERT INTO notes (id, title, body, pinned, rating, created_at, thumbnail) VALUES (36, 'India mike hotel', 'juliet papa romeo mike delta foxtrot foxtrot charlie golf quebec papa romeo', 0, 1.5, '2026-01-10T08:36:00Z', X'e7aae6da47627c2e59af2ea37abc8467');
INSERT INTO notes (id, title, body, pinned, rating, created_at, thumbnail) VALUES (37, 'November mike november', 'quebec golf mike india kilo bravo papa india sierra lima echo quebec', 0, 3.4, '2026-02-11T09:37:00Z', NULL);
INSERT INTO note_tags (note_id, tag_name) VALUES (37, 'home');
INSERT INTO note_tags (note_id, tag_name) VALUES (37, 'work');
INSERT INTO notes (id, title, body, pinned, rating, created_at, thumbnail) VALUES (38, 'India hotel mike', 'mike oscar november juliet alpha echo bravo november papa sierra papa alpha', 0, 0.5, '2026-03-12T10:38:00Z', NULL);
INSERT INTO note_tags (note_id, tag_name) VALUES (38, 'travel');
INSERT INTO notes (id, title, body, pinned, rating, created_at, thumbnail) VALUES (39, 'Oscar oscar hotel', 'delta hotel echo echo quebec delta oscar charlie romeo bravo alpha echo', 0, 1.5, '2026-04-13T11:39:00Z', NULL);
INSERT INTO note_tags (note_id, tag_name) VALUES (39, 'work');
INSERT INTO note_tags (note_id, tag_name) VALUES (39, 'ideas');
INSERT INTO notes (id, title, body, pinned, rating, created_at, thumbnail) VALUES (40, 'Echo india quebec', 'november delta delta charlie juliet quebec sierra golf mike india hotel tango', 0, NULL, '2026-05-14T12:40:00Z', X'00059aeb8ea17cf3787e0ed29d1c0b63');
INSERT INTO note_tags (note_id, tag_name) VALUES (40, 'reading');
INSERT INTO notes (id, title, body, pinned, rating, created_at, thumbnail) VALUES (41, 'Charlie india hotel', 'november lima hotel papa bravo kilo november lima mike golf alpha juliet', 0, 4.8, '2026-06-15T13:41:00Z', NULL);
INSERT INTO note_tags (note_id, tag_name) VALUES (41, 'work');
INSERT INTO note_tags (note_id, tag_name) VALUES (41, 'home');
INSERT INTO notes (id, title, body, pinned, rating, created_at, thumbnail) VALUES (42, 'Papa golf juliet', 'golf hotel oscar hotel india juliet delta tango papa tango foxtrot hotel', 1, 3.2, '2026-07-16T14:42:00Z', NULL);
INSERT INTO note_tags (note_id, tag_name) VALUES (42, 'work');
INSERT INTO notes (id, title, body, pinned, rating, created_at, thumbnail) VALUES (43, 'Tango echo mike', 'bravo golf alpha tango echo november bravo bravo foxtrot mike oscar kilo', 0, 4.7, '2026-08-17T15:43:00Z', NULL);
INSERT INTO notes (id, title, body, pinned, rating, created_at, thumbnail) VALUES (44, 'Charlie foxtrot kilo', 'golf foxtrot quebec oscar bravo juliet mike lima kilo oscar foxtrot delta', 0, 0.1, '2026-09-18T16:44:00Z', X'288f29b3d73f6ac2b69edd2c19f264be');
INSERT INTO note_tags (note_id, tag_name) VALUES (44, 'reading');
INSERT INTO note_tags (note_id, tag_name) VALUES (44, 'home');
INSERT INTO notes (id, title, body, pinned, rating, created_at, thumbnail) VALUES (45, 'Kilo lima papa', 'alpha november hotel mike bravo mike bravo oscar charlie bravo india golf', 0, NULL, '2026-01-19T17:45:00Z', NULL);
INSERT INTO note_tags (note_id, tag_name) VALUES (45, 'work');
INSERT INTO note_tags (note_id, tag_name) VALUES (45, 'ideas');
INSERT INTO notes (id, title, body, pinned, rating, created_at, thumbnail) VALUES (46, 'Lima india kilo', 'tango bravo india kilo india juliet alpha tango charlie alpha hotel delta', 0, 3.1, '2026-02-20T18:46:00Z', NULL);
INSERT INTO note_tags (note_id, tag_name) VALUES (46, 'reading');
INSERT INTO note_tags (note_id, tag_name) VALUES (46, 'travel');
INSERT INTO notes (id, title, body, pinned, rating, created_at, thumbnail) VALUES (47, 'India november papa', 'echo papa foxtrot alpha juliet echo tango hotel kilo kilo oscar lima', 0, 3.9, '2026-03-21T19:47:00Z', NULL);
INSERT INTO notes (id, title, body, pinned, rating, created_at, thumbnail) VALUES (48, 'Quebec golf mike', 'foxtrot hotel november charlie bravo papa romeo romeo kilo foxtrot november delta', 0, 0.5, '2026-04-22T08:48:00Z', X'872b6a31d7ffe4587744d5eb783e9696');
INSERT INTO note_tags (note_id, tag_name) VALUES (48, 'travel');
INSERT INTO notes (id, title, body, pinned, rating, created_at, thumbnail) VALUES (49, 'India lima india', 'india golf oscar hotel foxtrot hotel hotel echo juliet sierra golf kilo', 1, 0.5, '2026-05-23T09:49:00Z', NULL);
INSERT INTO note_tags (note_id, tag_name) VALUES (49, 'ideas');
INSERT INTO notes (id, title, body, pinned, rating, created_at, thumbnail) VALUES (50, 'Hotel quebec quebec', 'hotel delta oscar bravo delta alpha papa hotel oscar lima bravo juliet', 0, NULL, '2026-06-24T10:50:00Z', NULL);
COMMIT;
