-- A server's status as one host sees it, where that differs from the shared one.
--
-- servers.status is one summary for everyone: the best live hold (a connection some
-- live process has) wins. On a catalog several hosts share (a PostgreSQL `store`,
-- docs/team.md) a server can be up for one host and unreachable from another: host B's
-- failed connect does not change the summary while host A holds a live connection. It
-- is recorded here instead, for host B only (host: jit/catalog/holders.py, `JIT_HOST`
-- or the host name), and host B's reads of statuses (what its compiles treat as
-- online) take it over the summary. Any later status host B writes replaces it.
-- On one host (the SQLite default) a live hold is always this host's own: no row is
-- ever written, and reads are as before.

CREATE TABLE server_host_status (
    server     TEXT NOT NULL REFERENCES servers(name) ON DELETE CASCADE,
    host       TEXT NOT NULL,
    status     TEXT NOT NULL
               CHECK (status IN ('unknown','connecting','connected','disconnected','error','disabled','idle')),
    last_error TEXT,
    since      REAL NOT NULL,
    PRIMARY KEY (server, host)
) STRICT, WITHOUT ROWID;
