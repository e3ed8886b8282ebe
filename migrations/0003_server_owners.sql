-- Several configs may share one catalog (the default store, .jit/catalog.db, is
-- per directory, not per config file). Two things become per config or per
-- process here (jit/ownership.py, jit/holders.py, jit/store_servers.py):
--
-- Ownership. server_owners records which config files configure each server,
-- by config identity (the config file's absolute path). A sync forgets a server
-- only when its own config was an owner and no other owner is left; servers of
-- other configs are kept and reported. Rows from before this migration have no
-- owner: the first config that configures them claims them, and until then they
-- are kept (never pruned without `jit sync --prune-foreign`), because nothing
-- tells which config they came from.
--
-- Status holders. A `connecting`/`connected` status is true only while the
-- process holding that connection lives. server_holds has one row per server and
-- process holding it (holder id "host:pid:start-token"), holders one row per such
-- process with a heartbeat (for holders on other hosts, where no pid can be
-- checked). servers.status is the summary: the best live hold, else the last
-- status written; servers.status_holder names the process behind it.

CREATE TABLE server_owners (
    server     TEXT NOT NULL REFERENCES servers(name) ON DELETE CASCADE,
    config     TEXT NOT NULL,
    claimed_at REAL NOT NULL,
    PRIMARY KEY (server, config)
) STRICT, WITHOUT ROWID;

CREATE INDEX server_owners_by_config ON server_owners(config);

CREATE TABLE holders (
    id         TEXT PRIMARY KEY,
    host       TEXT NOT NULL,
    pid        INTEGER NOT NULL,
    started_at REAL NOT NULL,
    heartbeat  REAL NOT NULL,
    command    TEXT
) STRICT;

CREATE TABLE server_holds (
    server TEXT NOT NULL REFERENCES servers(name) ON DELETE CASCADE,
    holder TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('connecting', 'connected')),
    since  REAL NOT NULL,
    PRIMARY KEY (server, holder)
) STRICT, WITHOUT ROWID;

ALTER TABLE servers ADD COLUMN status_holder TEXT;
ALTER TABLE servers ADD COLUMN status_note TEXT;

-- Statuses written before holders were recorded cannot be checked: a process that
-- was killed left them `connected` forever. Read them as closed at the last contact.
UPDATE servers
SET status = CASE WHEN last_seen IS NOT NULL THEN 'idle' ELSE 'unknown' END,
    status_note = 'the process that held this status is unknown (catalog from before jit recorded holders)'
WHERE status IN ('connecting', 'connected') AND transport != 'harness';
