#!/bin/bash
# Produces the upgrade fixtures with the gateway of the previous release (schema v1).
set -e
cd /tmp/fx
GW=/work/main/.build/debug/gateway
PSQL="psql -q -h 127.0.0.1 -p 55432 -U gateway"
$PSQL postgres -c "DROP DATABASE IF EXISTS fixture" -c "CREATE DATABASE fixture"
$PSQL fixture -c "CREATE TABLE note (id integer PRIMARY KEY, title text, body text, n bigint, score double precision, created timestamptz, photo bytea)"
sqlite3 notes.sqlite "CREATE TABLE note (id INTEGER PRIMARY KEY, title TEXT, body TEXT, n INTEGER, score REAL, created TEXT, photo BLOB);
WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM s WHERE i < 60)
INSERT INTO note SELECT i, 'note ' || i, CASE WHEN i % 3 = 0 THEN NULL ELSE 'body of ' || i END, i * 7, i * 0.25,
  '2026-11-0' || (i % 9 + 1) || 'T10:00:00Z', CASE WHEN i % 10 = 0 THEN X'0102030405' ELSE NULL END FROM s;"
$PSQL fixture -c "INSERT INTO note SELECT i + 1000, 'pg note ' || i, 'from postgres', i, i * 1.5, '2026-10-01T00:00:00Z'::timestamptz + i * interval '1 hour', NULL FROM generate_series(1, 40) i"
cat > config.yaml <<EOC
gateway: { state_dir: state, device_id: fixture-gateway }
cloud: { kind: embedded, path: cloud.sqlite }
adapters:
  - { name: app, kind: sqlite, path: notes.sqlite, zone: Notes, tables: [{ table: note, record_type: Note, columns: { created: iso8601 } }] }
  - { name: crm, kind: postgres, url: "postgres://gateway@127.0.0.1:55432/fixture", zone: Notes, tables: [{ table: note, record_type: Note }] }
  - { name: docs, kind: json, directory: docs, zone: Docs }
EOC
mkdir -p docs/Article
printf '{"title": "Welcome", "views": 3, "tags": ["a", "b"], "published": true}' > docs/Article/welcome.json
printf '{"title": "Second", "views": 1, "meta": {"x": 1}}' > docs/Article/second.json
$GW sync --config config.yaml --progress none
$GW sync --config config.yaml --progress none
# A deletion that reaches the cloud: a tombstone in the fixture.
sqlite3 notes.sqlite "DELETE FROM note WHERE id = 7;"
$GW sync --config config.yaml --progress none
# Changes made after the last sync of the old release: they must still be uploaded after the upgrade.
sqlite3 notes.sqlite "UPDATE note SET title = 'edited in SQLite before the upgrade' WHERE id = 5; DELETE FROM note WHERE id = 6; INSERT INTO note (id, title, n) VALUES (500, 'new in SQLite before the upgrade', 1);"
$PSQL fixture -c "UPDATE note SET title = 'edited in PostgreSQL before the upgrade' WHERE id = 1001" -c "DELETE FROM note WHERE id = 1002" -c "INSERT INTO note (id, title, n) VALUES (900, 'new in PostgreSQL before the upgrade', 2)"
printf '{"title": "Welcome, edited before the upgrade", "views": 4, "tags": ["a", "b"], "published": true}' > docs/Article/welcome.json
pg_dump -h 127.0.0.1 -p 55432 -U gateway --no-owner --no-privileges fixture > postgres-store.sql
# Checkpoint the WAL files into the databases, so each fixture is one file.
sqlite3 notes.sqlite "PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null
sqlite3 cloud.sqlite "PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null
sqlite3 docs/.gateway/state.sqlite "PRAGMA wal_checkpoint(TRUNCATE);" >/dev/null
ls -la

# docs/.gateway/state.sqlite, made again later (the first one was left out by .gitignore), with the
# gateway of the commit before the JSON adapter moved onto the adapter kit, in an empty folder:
#   config: { state_dir: state, device_id: fixture-gateway }, embedded cloud.sqlite (a copy),
#           adapters: [{ name: docs, kind: json, directory: docs, zone: Docs }]
#   $OLD_GW sync --config config.yaml --progress none      # downloads welcome and second
#   printf '{"title": "Welcome, edited before the upgrade", "views": 4, "tags": ["a", "b"], "published": true}' > docs/Article/welcome.json
#   sqlite3 docs/.gateway/state.sqlite "PRAGMA wal_checkpoint(TRUNCATE);"
