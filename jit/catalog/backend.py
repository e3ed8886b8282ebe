"""The catalog's database engines behind one seam: embedded SQLite (the default) or PostgreSQL.

:class:`~jit.catalog.store.Store` writes its SQL once, in the dialect both engines
accept (``?`` placeholders, ``INSERT ... ON CONFLICT``, ``RETURNING``); a
:class:`Backend` supplies only what differs between them:

* **connecting** and the printable name of the catalog (a PostgreSQL URL with its
  password redacted: :func:`redact`);
* **write transactions**: SQLite's ``BEGIN IMMEDIATE`` takes the file's one write
  lock; PostgreSQL's ``BEGIN`` plus a transaction-level advisory lock does the
  same for every host sharing the catalog, so the store's read-then-write
  transactions (sync, reconcile, usage counters) never interleave;
* **migrations**: each engine applies its own files (``migrations/`` for SQLite,
  ``migrations/postgresql/`` for PostgreSQL), each atomically with its record;
* **vectors**: a sqlite-vec ``vec0`` table created for the model's dimension, or
  a ``bytea`` column of float32 bytes (read as one query into ``np.frombuffer``);
* **change announcement**: PostgreSQL NOTIFYs the channel ``jit_catalog`` with each
  version bump, so a process on another host can wake on a change
  (:mod:`jit.catalog.backend_pg`); SQLite readers share the file and need no push.

The engine's own exceptions become :class:`~jit.errors.StoreError` in one place
(``Store._errors``) by :attr:`Backend.errors`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pysqlite3.dbapi2 as sqlite3
import sqlite_vec

from ..paths import is_postgres_url, masked_url

__all__ = ["Backend", "SqliteBackend", "is_postgres_url", "redact"]

def redact(location: str) -> str:
    """``location`` safe to print: a URL's password (in the user part or a ``password=``
    parameter) becomes ``***``. Anything else is returned as is."""
    if not is_postgres_url(location):
        return location
    return masked_url(location, bare_user=False, query_key=lambda k: k.lower() == "password")


class Backend:
    """What one engine does differently (see the module docstring). One per :class:`Store`."""

    #: "sqlite" or "postgresql": which files in ``migrations/`` apply.
    dialect: str
    #: The catalog as it may be printed (no password).
    location: str
    #: The engine's exception base classes, turned into StoreError at the store's boundary.
    errors: tuple[type[BaseException], ...]
    #: The connection the store's SQL runs on (``execute``/``executemany`` returning a cursor).
    conn: Any

    def close(self) -> None:
        self.conn.close()

    def scrub(self, message: str) -> str:
        """An engine error's message with any secret removed."""
        return message

    def in_transaction(self) -> bool:
        raise NotImplementedError

    def ensure_open(self) -> None:
        """Before a statement outside any transaction: reconnect if the connection was lost
        (a database server restarted under a long-running ``jit serve``). SQLite's never is."""

    def begin(self) -> None:
        """Start a write transaction that excludes every other writer of the catalog."""
        raise NotImplementedError

    def commit(self) -> None:
        self.conn.execute("COMMIT")

    def rollback(self) -> None:
        self.conn.execute("ROLLBACK")

    def migrations_dir(self, base: Path) -> Path:
        return base

    def ensure_migrations_table(self) -> None:
        raise NotImplementedError

    @contextmanager
    def migrating(self) -> Iterator[None]:
        """Held while migrations are checked and applied (other hosts wait)."""
        yield

    def apply_migration(self, sql: str, record: tuple[int, str, str, float]) -> None:
        """Run one migration file and insert its ``(version, name, checksum, applied_at)``
        record in one transaction; raise the engine's error after rolling back."""
        raise NotImplementedError

    def has_vector_table(self) -> bool:
        return True

    def reset_vectors(self, c: Any, dim: int) -> None:
        """Drop every tool vector and make room for vectors of ``dim`` dimensions."""
        c.execute("DELETE FROM tool_vectors")

    def announce(self, c: Any, counter: str) -> None:
        """Tell other processes ``counter`` moved (delivered when the transaction commits)."""


class SqliteBackend(Backend):
    """One SQLite file (or ``:memory:``) with sqlite-vec, in WAL mode."""

    dialect = "sqlite"
    errors = (sqlite3.Error,)

    def __init__(self, path: str) -> None:
        self.location = path
        self.conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30)
        self.conn.row_factory = sqlite3.Row
        self.conn.enable_load_extension(True)
        sqlite_vec.load(self.conn)
        self.conn.enable_load_extension(False)
        if path != ":memory:":
            self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA foreign_keys=ON")
        self.conn.execute("PRAGMA synchronous=NORMAL")

    def in_transaction(self) -> bool:
        return self.conn.in_transaction

    def begin(self) -> None:
        self.conn.execute("BEGIN IMMEDIATE")

    def ensure_migrations_table(self) -> None:
        self.conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            " version INTEGER PRIMARY KEY, name TEXT NOT NULL, checksum TEXT NOT NULL,"
            " applied_at REAL NOT NULL) STRICT"
        )

    def apply_migration(self, sql: str, record: tuple[int, str, str, float]) -> None:
        version, name, checksum, at = record
        insert = (f"INSERT INTO schema_migrations(version, name, checksum, applied_at) "
                  f"VALUES ({version}, '{name}', '{checksum}', {at!r});")
        try:
            # executescript would commit a pending transaction first, so the
            # BEGIN lives inside the script and the record commits with it.
            self.conn.executescript(f"BEGIN IMMEDIATE;\n{sql}\n;{insert}\nCOMMIT;")
        except sqlite3.Error:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            raise

    def has_vector_table(self) -> bool:
        return self.conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'tool_vectors'").fetchone() is not None

    def reset_vectors(self, c: Any, dim: int) -> None:
        c.execute("DROP TABLE IF EXISTS tool_vectors")
        c.execute(f"CREATE VIRTUAL TABLE tool_vectors USING vec0("
                  f"tool_id INTEGER PRIMARY KEY, embedding float[{int(dim)}] distance_metric=cosine)")

