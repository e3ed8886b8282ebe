-- Rug pulls: a tool whose definition changes after jit first saw it.
--
-- tool_history keeps every definition a tool had before its current one, with
-- the usage earned under it (moved out of `usage` when it was replaced, so the
-- new text starts without the old text's track record and nothing is lost).
-- tool_approvals records which definition hashes of a tool are trusted: the
-- first one seen (trust on first use), the harness's own, and each one a user
-- approved with `jit approve`. A tool whose current hash is not among them is
-- "changed, awaiting approval" (jit/store.py, jit/compiler.py).
--
-- Neither table references `tools` or `servers`: history and approvals outlive
-- a tool's removal, so a tool that leaves and comes back changed is still
-- recognised as changed.

CREATE TABLE tool_history (
    id               INTEGER PRIMARY KEY,
    server           TEXT NOT NULL,
    name             TEXT NOT NULL,
    definition_hash  TEXT NOT NULL,
    -- canonical JSON: {"title", "description", "input_schema", "output_schema", "annotations"}
    definition       TEXT NOT NULL,
    first_seen       REAL NOT NULL,
    last_seen        REAL NOT NULL,
    replaced_at      REAL NOT NULL,
    -- the definition hash that replaced it; NULL: the server stopped listing the tool
    replaced_by      TEXT,
    calls            INTEGER NOT NULL DEFAULT 0,
    errors           INTEGER NOT NULL DEFAULT 0,
    total_latency_ms REAL NOT NULL DEFAULT 0,
    last_called_at   REAL,
    last_error       TEXT
) STRICT;

CREATE INDEX tool_history_by_tool ON tool_history(server, name, id);

CREATE TABLE tool_approvals (
    server          TEXT NOT NULL,
    name            TEXT NOT NULL,
    definition_hash TEXT NOT NULL,
    approved_at     REAL NOT NULL,
    how             TEXT NOT NULL CHECK (how IN ('first_use', 'harness', 'user')),
    PRIMARY KEY (server, name, definition_hash)
) STRICT, WITHOUT ROWID;

-- When each server's tools were last listed: a replaced definition was last seen
-- at its server's listing before the one that replaced it (tool_history.last_seen).
-- One row per server, so a listing costs one write, not one per tool.
CREATE TABLE tool_listings (
    server    TEXT PRIMARY KEY,
    listed_at REAL NOT NULL
) STRICT;

-- A catalog from before this migration: what it holds now is what the user has
-- been running, so it is the trusted baseline.
INSERT INTO tool_approvals(server, name, definition_hash, approved_at, how)
    SELECT server, name, definition_hash, updated_at, 'first_use' FROM tools WHERE true
    ON CONFLICT DO NOTHING;
