-- Definitions looked up by tool name across servers: a tool seen for the first time under a
-- server is checked against definitions another server name held for approval (a server renamed
-- in the config must not launder a pending change, jit/catalog/store_history.py). Without this
-- index each new tool scanned the whole history: a new server of 1,000 tools beside 20,000
-- history rows took 2.2 s to sync.

CREATE INDEX tool_history_by_name ON tool_history(name, server);
