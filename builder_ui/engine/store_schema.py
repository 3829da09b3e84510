"""The run store's database schema: its tables, its version and the migration of older ones.

`RunStore` (`builder_ui.engine.store`) makes these tables in a new database and, on opening
one an older keras_seq made, adds the columns it lacks (`migrate`), keeping every row.
"""

from __future__ import annotations

import re
import sqlite3

SCHEMA_VERSION = 1
DB_NAME = "runs.sqlite"

SCHEMA = """
CREATE TABLE IF NOT EXISTS schema_version (
    version INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    sweep_id TEXT,
    spec TEXT NOT NULL,
    status TEXT NOT NULL,
    created REAL NOT NULL,
    started REAL,
    finished REAL,
    backend TEXT,
    device TEXT,
    precision TEXT,
    params INTEGER,
    metrics TEXT NOT NULL DEFAULT '{}',
    wall_time REAL,
    examples_per_sec REAL,
    artifacts TEXT NOT NULL DEFAULT '{}',
    error TEXT,
    pid INTEGER,
    host TEXT,
    pid_started TEXT,
    note TEXT NOT NULL DEFAULT '',
    starred INTEGER NOT NULL DEFAULT 0,
    archived INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS runs_status ON runs (status);
CREATE INDEX IF NOT EXISTS runs_sweep ON runs (sweep_id);
CREATE TABLE IF NOT EXISTS epochs (
    run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    epoch INTEGER NOT NULL,
    metrics TEXT NOT NULL,
    time REAL NOT NULL,
    seconds REAL,
    PRIMARY KEY (run_id, epoch)
);
CREATE TABLE IF NOT EXISTS tags (
    run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    tag TEXT NOT NULL,
    PRIMARY KEY (run_id, tag)
);
CREATE INDEX IF NOT EXISTS tags_tag ON tags (tag);
CREATE TABLE IF NOT EXISTS sweeps (
    id TEXT PRIMARY KEY,
    spec TEXT NOT NULL,
    created REAL NOT NULL
);
"""

# Columns added to `runs` after the first release, with their definitions: a database made
# by an older keras_seq gets them on open (`ALTER TABLE ... ADD COLUMN`, see `migrate`).
# They have defaults, so an older keras_seq still reads and writes such a database and the
# schema version stays 1; the `tags` and `sweeps` tables are made by `CREATE TABLE IF NOT
# EXISTS`.
ADDED_COLUMNS = {
    "note": "TEXT NOT NULL DEFAULT ''",
    "starred": "INTEGER NOT NULL DEFAULT 0",
    "archived": "INTEGER NOT NULL DEFAULT 0",
}
# The tables and indexes `SCHEMA` makes: a store that has them (and the added columns) is
# opened without writing.
SCHEMA_NAMES = frozenset(re.findall(r"IF NOT EXISTS (\w+)", SCHEMA))


def migrate(conn: sqlite3.Connection) -> None:
    """Add the columns an older keras_seq's `runs` table lacks (`ADDED_COLUMNS`); keeps rows."""
    present = {row["name"] for row in conn.execute("PRAGMA table_info(runs)")}
    for column, definition in ADDED_COLUMNS.items():
        if column not in present:
            conn.execute(f"ALTER TABLE runs ADD COLUMN {column} {definition}")
