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
  ``migrations/postgresql/`` for PostgreSQL), each atomically with its record, the
  run under a lock every process and host takes (:meth:`Backend.migrating`);
* **vectors**: a sqlite-vec ``vec0`` table created for the model's dimension, or
  a ``bytea`` column of float32 bytes (read as one query into ``np.frombuffer``);
* **change announcement**: PostgreSQL NOTIFYs the channel ``jit_catalog`` with each
  version bump, so a process on another host can wake on a change
  (:mod:`jit.catalog.backend_pg`); SQLite readers share the file and need no push.

The engine's own exceptions become :class:`~jit.errors.StoreError` in one place
(``Store._errors``) by :attr:`Backend.errors`.
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import pysqlite3.dbapi2 as sqlite3
import sqlite_vec

from ..errors import StoreError
from ..paths import is_postgres_url, masked_url

__all__ = ["Backend", "SqliteBackend", "is_busy", "is_damaged", "is_full", "not_a_catalog", "quick_check", "redact"]

T = TypeVar("T")


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

    def unreachable(self, exc: BaseException | None) -> bool:
        """Whether ``exc`` (the engine's) says the catalog could not be written just now, the
        write itself being fine: SQLite's lock held past the busy timeout; PostgreSQL's server
        down, restarting or dropping the connection, a statement or lock timeout."""
        return exc is not None and is_busy(exc)

    def describe(self, exc: BaseException) -> str:
        """An engine error as one line for a user: scrubbed, and for PostgreSQL with what to do."""
        return self.scrub(str(exc))

    def damaged(self, exc: BaseException) -> bool:
        """Whether ``exc`` (the engine's) says the catalog's storage is damaged (:func:`is_damaged`).
        A PostgreSQL server's storage is its administrators' to check: never."""
        return False

    def in_transaction(self) -> bool:
        raise NotImplementedError

    def ensure_open(self) -> None:
        """Before a statement outside any transaction: reconnect if the connection was lost
        (a database server restarted under a long-running ``jit serve``). SQLite's never is."""

    def read(self, run: Callable[[], T]) -> T:
        """``run`` (one read outside any transaction) on an open connection. PostgreSQL runs it
        once more on a new connection when the first meets a connection found lost only then."""
        self.ensure_open()
        return run()

    def begin(self) -> None:
        """Start a write transaction that excludes every other writer of the catalog (on an
        open connection: a lost one is replaced first, or when ``BEGIN`` finds it lost)."""
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

    def vector_rows(self, c: Any, ids: Sequence[int]) -> Iterator[tuple[int, bytes]]:
        """``(tool_id, float32 bytes)`` of those of ``ids`` that have a vector, any order."""
        for k in range(0, len(ids), 500):
            chunk = list(ids[k:k + 500])
            yield from c.execute(f"SELECT tool_id, embedding FROM tool_vectors WHERE tool_id IN "
                                 f"({','.join('?' * len(chunk))})", chunk)

    def announce(self, c: Any, counter: str) -> None:
        """Tell other processes ``counter`` moved (delivered when the transaction commits)."""


def _statements(script: str) -> Iterator[str]:
    """The statements of a migration file, one at a time (a connection's ``execute`` runs one;
    ``executescript`` would commit the transaction holding the write lock). A statement ends at
    a ``;`` that SQLite's own tokenizer calls complete, so one inside a string, a comment or a
    trigger's body does not end it."""
    start = 0
    for i, ch in enumerate(script):
        if ch == ";" and sqlite3.complete_statement(script[start:i + 1]):
            yield script[start:i + 1]
            start = i + 1
    if script[start:].strip():
        yield script[start:]  # a last statement without its ";"


def is_busy(exc: BaseException) -> bool:
    """A SQLite error saying another connection holds the lock this one needs (SQLITE_BUSY)."""
    return isinstance(exc, sqlite3.OperationalError) and str(exc).startswith("database is locked")


#: SQLite's primary result codes (extended codes add high bits): a file it cannot read as a
#: database, and a write that found no room.
_SQLITE_CORRUPT, _SQLITE_FULL, _SQLITE_NOTADB = 11, 13, 26


def is_full(exc: BaseException) -> bool:
    """A SQLite error saying the catalog could not grow: the disk (or the file's size limit) is full."""
    return isinstance(exc, sqlite3.Error) and (getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF == _SQLITE_FULL


def is_damaged(exc: BaseException, conn: Any = None) -> bool:
    """A SQLite error saying the file is damaged: SQLITE_CORRUPT ("database disk image is malformed")
    or SQLITE_NOTADB. sqlite-vec reports a vector it cannot read back from a broken page as a plain
    error ("Could not fetch vector data for 1692, reading from blob failed"): with ``conn``, such an
    error counts when ``PRAGMA quick_check`` then finds the file damaged."""
    if not isinstance(exc, sqlite3.Error):
        return False
    if (getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF in (_SQLITE_CORRUPT, _SQLITE_NOTADB):
        return True
    if conn is None or "blob" not in str(exc):
        return False
    try:
        return quick_check(conn) is not None
    except sqlite3.Error as again:
        return is_damaged(again)


def quick_check(conn: Any) -> str | None:
    """SQLite's ``PRAGMA quick_check`` of the file (every page and link, not index contents; for
    20,000 tools, a 150 MB file, 0.2 s in the page cache and 2 s from disk): None if it finds
    nothing wrong, else its first finding."""
    rows = [r[0] for r in conn.execute("PRAGMA quick_check(1)")]
    return None if rows == ["ok"] else str(rows[0]).replace("*** in database main ***", "").strip().splitlines()[0]


#: The first 16 bytes of every SQLite database file.
SQLITE_HEADER = b"SQLite format 3\x00"

#: What to do about a file at the catalog's path that is not a catalog (:func:`not_a_catalog`).
_KEEP_ASIDE = ("jit does not start a new catalog over an existing file, whose usage and approvals would be lost "
               "without a word: restore the catalog from a backup, or run `jit doctor` to keep the file aside "
               "and build a new catalog from the servers")


def not_a_catalog(path: str) -> StoreError | None:
    """The error for an existing file at ``path`` that cannot be a catalog, before SQLite opens it
    (which would take an empty file for a new database, and a file of another kind for one it
    cannot read): None for a path with no file yet, or a file that begins as a SQLite database."""
    try:
        with open(path, "rb") as f:
            head = f.read(len(SQLITE_HEADER))
    except FileNotFoundError:
        return None
    except OSError as exc:
        return StoreError(f"cannot read the catalog file {path}: {exc.strerror or exc}", path=path)
    if not head:
        return StoreError(f"the catalog file {path} is empty (0 bytes), not a catalog; {_KEEP_ASIDE}", path=path)
    if head != SQLITE_HEADER:
        return StoreError(f"the catalog file {path} is not a SQLite database (it begins {head[:8]!r}): if `store` "
                          "names the wrong file, point it at the catalog; if this was the catalog, its first page "
                          "is lost: move the file aside and `jit sync` builds a new catalog", path=path)
    return None


def _create(path: str) -> None:
    """Make a new, empty catalog file at ``path`` in one step: under a name of its own first, then
    linked into place, so no process ever finds the file at ``path`` empty (an empty file there
    is an error, :func:`not_a_catalog`). Another process creating it at the same moment wins the
    link; this one then opens that file. Where the file system has no hard links, SQLite creates
    the file in place, as it does by itself."""
    temporary = f"{path}.new-{os.getpid()}-{secrets.token_hex(4)}"
    try:
        conn = sqlite3.connect(temporary, isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode=WAL")  # written into the header: the file is never empty
            _migrations_table(conn)
        finally:
            conn.close()
        os.link(temporary, path)
    except FileExistsError:
        pass
    except OSError:
        if not os.path.exists(path):  # no hard links here (or no room): let SQLite create it at open
            return
    finally:
        for suffix in ("", "-wal", "-shm"):
            try:
                os.unlink(temporary + suffix)
            except FileNotFoundError:
                pass


def _migrations_table(conn: Any) -> None:
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        " version INTEGER PRIMARY KEY, name TEXT NOT NULL, checksum TEXT NOT NULL,"
        " applied_at REAL NOT NULL) STRICT"
    )


class SqliteBackend(Backend):
    """One SQLite file (or ``:memory:``) with sqlite-vec, in WAL mode.

    A path with no file is made a new catalog (:func:`_create`); an existing file must be one: an
    empty file, a file of another kind, or a SQLite database of something else is a
    :class:`~jit.errors.StoreError` naming it and saying what to do, nothing written."""

    dialect = "sqlite"
    errors = (sqlite3.Error,)
    #: Seconds a statement waits for another process's write lock before "database is locked".
    busy_timeout = 30.0

    def __init__(self, path: str) -> None:
        self.location = path
        if path != ":memory:":
            problem = not_a_catalog(path)
            if problem is not None:
                raise problem
            if not os.path.exists(path):
                _create(path)
        self.conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=self.busy_timeout)
        self.conn.row_factory = sqlite3.Row
        self.conn.enable_load_extension(True)
        sqlite_vec.load(self.conn)
        self.conn.enable_load_extension(False)
        if path != ":memory:":
            self._use_wal()
            self._check_is_catalog()
        self.conn.execute("PRAGMA foreign_keys=ON")
        self.conn.execute("PRAGMA synchronous=NORMAL")

    def _check_is_catalog(self) -> None:
        """A SQLite database with tables but none of a catalog's is another program's: refused
        (migrating it would add jit's tables to it). One with no table at all is a new catalog."""
        tables = [r[0] for r in self.conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")]
        if tables and "schema_migrations" not in tables:
            self.conn.close()
            shown = ", ".join(tables[:5]) + (f" and {len(tables) - 5} more" if len(tables) > 5 else "")
            raise StoreError(f"the catalog file {self.location} is a SQLite database but not a jit catalog (it "
                             f"holds {shown}, no schema_migrations): point `store` at a catalog, or at a path "
                             "with no file for a new one", path=self.location)

    def _use_wal(self) -> None:
        """Switch the file to WAL (readers then never wait for the writer).

        Switching a file still in rollback mode takes its exclusive lock while this
        connection already reads it; when another process switches at the same moment,
        SQLite answers "database is locked" at once rather than wait (both waiting could
        deadlock). So the switch is tried again until the busy timeout: by then the other
        process has made the file WAL and this switch has nothing left to do.
        """
        deadline = time.monotonic() + self.busy_timeout
        while True:
            try:
                self.conn.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as exc:
                if not is_busy(exc) or time.monotonic() >= deadline:
                    raise
            time.sleep(0.01)

    def in_transaction(self) -> bool:
        return self.conn.in_transaction

    def damaged(self, exc: BaseException) -> bool:
        return is_damaged(exc, self.conn)

    def begin(self) -> None:
        self.conn.execute("BEGIN IMMEDIATE")

    def ensure_migrations_table(self) -> None:
        _migrations_table(self.conn)

    @contextmanager
    def migrating(self) -> Iterator[None]:
        """The file's write lock, from reading which migrations are applied to the last one's commit.

        ``BEGIN IMMEDIATE`` takes it first, so processes opening a new catalog together (two
        clients starting ``jit serve``) wait their turn (the busy timeout) and then find the
        files applied, rather than both running them. Each file runs in a savepoint
        (:meth:`apply_migration`): one that fails is undone alone, and those before it commit.
        """
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        finally:
            # The files applied commit even when a later one failed (it was rolled back to its savepoint).
            if self.conn.in_transaction:
                self.conn.execute("COMMIT")

    def apply_migration(self, sql: str, record: tuple[int, str, str, float]) -> None:
        self.conn.execute("SAVEPOINT migration")
        try:
            for statement in _statements(sql):
                self.conn.execute(statement)
            self.conn.execute("INSERT INTO schema_migrations(version, name, checksum, applied_at)"
                              " VALUES (?, ?, ?, ?)", record)
        except BaseException:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK TO migration")
                self.conn.execute("RELEASE migration")
            raise
        self.conn.execute("RELEASE migration")

    def has_vector_table(self) -> bool:
        return self.conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'tool_vectors'").fetchone() is not None

    def vector_rows(self, c: Any, ids: Sequence[int]) -> Iterator[tuple[int, bytes]]:
        # One lookup per id: a vec0 table answers ``tool_id IN (...)`` by scanning every row
        # (25 ms for 50 ids among 100,000), ``tool_id = ?`` by its key (~7 µs).
        for i in ids:
            row = c.execute("SELECT tool_id, embedding FROM tool_vectors WHERE tool_id = ?", (i,)).fetchone()
            if row is not None:
                yield row[0], row[1]

    def reset_vectors(self, c: Any, dim: int) -> None:
        c.execute("DROP TABLE IF EXISTS tool_vectors")
        c.execute(f"CREATE VIRTUAL TABLE tool_vectors USING vec0("
                  f"tool_id INTEGER PRIMARY KEY, embedding float[{int(dim)}] distance_metric=cosine)")

