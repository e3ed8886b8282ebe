-- The catalog: servers, their tools, analysis keyed by definition hash, usage,
-- the embedding cache, lexical search, and discovered resources and prompts.
-- The vec0 table of tool vectors is not here: its dimension depends on the
-- configured embedding model, so jit/store.py creates it (see meta.embedding_*).

CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) STRICT;

CREATE TABLE servers (
    name              TEXT PRIMARY KEY,
    transport         TEXT NOT NULL,
    status            TEXT NOT NULL DEFAULT 'unknown'
                      CHECK (status IN ('unknown','connecting','connected','disconnected','error','disabled','idle')),
    status_changed_at REAL,
    last_seen         REAL,
    last_error        TEXT,
    server_name       TEXT,
    server_version    TEXT,
    protocol_version  TEXT,
    capabilities      TEXT NOT NULL DEFAULT '{}',
    instructions      TEXT
) STRICT;

CREATE TABLE tools (
    id               INTEGER PRIMARY KEY,
    server           TEXT NOT NULL REFERENCES servers(name) ON DELETE CASCADE,
    name             TEXT NOT NULL,
    title            TEXT,
    description      TEXT NOT NULL DEFAULT '',
    input_schema     TEXT NOT NULL,
    output_schema    TEXT,
    annotations      TEXT,
    definition_hash  TEXT NOT NULL,
    -- sha256 of the embedding text (ToolDef.embedding_text): the embedding cache key
    text_hash        TEXT NOT NULL,
    needs_analysis   INTEGER NOT NULL DEFAULT 1,
    needs_embedding  INTEGER NOT NULL DEFAULT 1,
    first_seen       REAL NOT NULL,
    updated_at       REAL NOT NULL,
    UNIQUE (server, name)
) STRICT;

CREATE INDEX tools_pending_analysis ON tools(needs_analysis) WHERE needs_analysis = 1;
CREATE INDEX tools_pending_embedding ON tools(needs_embedding) WHERE needs_embedding = 1;

-- Keyed on the definition hash: an unchanged tool is never analyzed twice,
-- and a definition that comes back finds its analysis again.
CREATE TABLE analysis (
    definition_hash TEXT PRIMARY KEY,
    analyzer        TEXT NOT NULL,
    data            TEXT NOT NULL,
    created_at      REAL NOT NULL
) STRICT;

-- Keyed on (server, tool), not the tool row, so history survives re-definition.
CREATE TABLE usage (
    server         TEXT NOT NULL,
    tool           TEXT NOT NULL,
    calls          INTEGER NOT NULL DEFAULT 0,
    errors         INTEGER NOT NULL DEFAULT 0,
    total_latency_ms REAL NOT NULL DEFAULT 0,
    last_called_at REAL,
    last_error     TEXT,
    PRIMARY KEY (server, tool)
) STRICT;

-- Vectors by (model, text hash): text already embedded is never embedded again.
CREATE TABLE embedding_cache (
    model      TEXT NOT NULL,
    text_hash  TEXT NOT NULL,
    vector     BLOB NOT NULL,
    PRIMARY KEY (model, text_hash)
) STRICT, WITHOUT ROWID;

-- rowid = tools.id; kept in step by the store on every upsert and delete.
CREATE VIRTUAL TABLE tools_fts USING fts5(
    name, server, description, params,
    tokenize = 'porter unicode61 remove_diacritics 2'
);

CREATE TABLE resources (
    server      TEXT NOT NULL REFERENCES servers(name) ON DELETE CASCADE,
    uri         TEXT NOT NULL,
    name        TEXT,
    description TEXT,
    mime_type   TEXT,
    PRIMARY KEY (server, uri)
) STRICT;

CREATE TABLE prompts (
    server      TEXT NOT NULL REFERENCES servers(name) ON DELETE CASCADE,
    name        TEXT NOT NULL,
    description TEXT,
    arguments   TEXT NOT NULL DEFAULT '[]',
    PRIMARY KEY (server, name)
) STRICT;
