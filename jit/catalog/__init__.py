"""The catalog: the SQLite store and its migrations, server ownership and status holders, definition history and approvals, and the embedding passes that fill its vectors."""
