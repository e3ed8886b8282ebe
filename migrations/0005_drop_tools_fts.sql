-- The FTS5 index of tool text (tools_fts, 0001) is gone: nothing read it.
-- Selection ranks lexically with its own in-memory BM25 over name, title,
-- server, description and parameter text (jit/retrieve.py), rebuilt from the
-- tools table with the rest of the compiler's catalog view, so the FTS5 table
-- was only upkeep on every sync. Its content is derived from `tools`; dropping
-- it loses nothing.

DROP TABLE IF EXISTS tools_fts;
