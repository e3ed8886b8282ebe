"""The catalog: embedded SQLite (with sqlite-vec) by default, or a shared PostgreSQL.

The catalog is the record of everything jit knows: servers and their status, tools
keyed by definition hash, analysis, usage, the embedding cache and the tools'
vectors. Search is not done here: the compiler reads the catalog into memory
(a vector matrix, a BM25 index; jit/selection/retrieve.py) and ranks there. The schema
changes only through the numbered files in ``migrations/``, each applied in one
transaction together with its record (name and checksum); an applied file that
was edited afterwards is refused at open, since the catalog no longer matches it
(the runner: jit/catalog/migrations.py).

:class:`Store` here is the engine boundary: opening, transactions, reads, the one place
the engine's errors become :class:`~jit.errors.StoreError`, migrations, meta and the version
counters. What it stores lives in its mixins: tools and analyses in
:class:`~jit.catalog.store_tools.ToolCatalog`, call counts in
:class:`~jit.catalog.store_usage.CallUsage`, what agents called for each task in
:class:`~jit.catalog.store_learning.LearnedCalls`, server rows (with resources and prompts) in
:class:`~jit.catalog.store_servers.ServerCatalog`, definition history and approvals in
:class:`~jit.catalog.store_history.DefinitionHistory`, the embedding model and vectors in
:class:`~jit.catalog.store_vectors.VectorStore`.

One connection, guarded by a lock, serves every thread: the catalog is small
enough that writes are short, and WAL lets other processes (``jit`` CLI while
``jit serve`` runs) read alongside. The engine is chosen by the location: a path
is a SQLite file; a ``postgresql://`` URL is a catalog a team's hosts share
(:mod:`jit.catalog.backend` holds what differs between the two; the SQL of the
catalog is written once, in the dialect both accept).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..config import DEFAULT_CATALOG_CONNECT_TIMEOUT, DEFAULT_CATALOG_STATEMENT_TIMEOUT
from ..errors import CatalogBusyError, CatalogDamagedError, StoreError
from ..paths import is_postgres_url
from .backend import Backend, SqliteBackend, is_busy, is_damaged, is_full, quick_check, redact
from .migrations import Migration, Migrations, default_migrations_dir
from .store_history import DefinitionHistory
from .store_learning import LearnedCalls, TaskRecord
from .store_servers import ServerCatalog
from .store_tools import ToolCatalog
from .store_usage import CallUsage
from .store_vectors import VectorStore

__all__ = ["Store", "open_backend"]

log = logging.getLogger(__name__)


#: What to do about a SQLite catalog that could not grow (SQLITE_FULL).
_FULL_HINT = (": the disk holding the catalog is full; nothing of this write was kept. Free some space and run the"
              " command again")


class Store(ToolCatalog, CallUsage, LearnedCalls, DefinitionHistory, ServerCatalog, VectorStore):
    """The catalog. Use as a context manager or call :meth:`close`.

    ``Store(location)`` opens (creating if needed), checks that the migrations it ran
    are still the files in ``migrations_dir``, and applies pending ones (with
    ``migrate=False`` it only checks). ``location`` is a SQLite file, ``":memory:"``
    for throwaway catalogs, or a ``postgresql://`` URL (then ``local_path`` names
    where this host keeps files derived from the catalog, such as the compiled view;
    without it, none are kept; ``connect_timeout`` and ``statement_timeout`` bound how long
    its server may keep a call waiting: ``catalog.*`` in the config).

    :attr:`location` is the catalog as it may be printed (a URL's password
    redacted); :attr:`path` is the local path derived files are named after.
    """

    def __init__(self, location: str | Path, *, migrations_dir: Path | None = None, migrate: bool = True,
                 local_path: str | Path | None = None, connect_timeout: int = DEFAULT_CATALOG_CONNECT_TIMEOUT,
                 statement_timeout: float = DEFAULT_CATALOG_STATEMENT_TIMEOUT) -> None:
        postgres = is_postgres_url(location)
        self.location = redact(str(location))
        self.path = (str(local_path) if local_path is not None else ":memory:") if postgres else str(location)
        self._lock = threading.RLock()
        if not postgres and self.path != ":memory:":
            try:
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:  # under a file, read-only parent: an error of the tree, not a traceback
                raise StoreError(f"cannot create the catalog's directory: {exc.strerror or exc}",
                                 path=self.path) from exc
        self._backend: Backend | None = None
        self._depth = 0  # 1 inside a transaction() (nested ones join it)
        #: Set once the file was found damaged: every later write is refused with it.
        self._damaged: CatalogDamagedError | None = None
        #: Calls not yet written (the catalog was unreachable): (server, tool) -> [calls, errors,
        #: total latency, last called at, last error]; see :meth:`record_call`.
        self._unrecorded: dict[tuple[str, str], list[Any]] = {}
        #: Calls of learned tasks not yet written; see :meth:`record_task_call`.
        self._unlearned: list[tuple[TaskRecord, str, str, bool, float]] = []
        with self._errors("open"):
            self._backend = open_backend(location, connect_timeout=connect_timeout,
                                         statement_timeout=statement_timeout)
            self._conn = self._backend.conn
            self.migrations_dir = self._backend.migrations_dir(migrations_dir or default_migrations_dir())
            self._migrations = Migrations(self._backend, self._lock, self.migrations_dir,
                                          query=self._query, catalog_path=self.location)
            self._migrations.ensure_table()
        if migrate:
            self.migrate()
        else:
            self.check_migrations()

    # ------------------------------------------------------------------ plumbing

    @property
    def dialect(self) -> str:
        """``"sqlite"`` or ``"postgresql"``."""
        assert self._backend is not None
        return self._backend.dialect

    def close(self) -> None:
        with self._lock:
            if self._backend is not None:
                if self._unrecorded:  # one last try for calls an outage kept from the catalog
                    try:
                        self._write_usage()
                    except StoreError as exc:
                        log.warning("%s", exc.message)
                    if self._unrecorded:
                        log.warning("%d calls could not be counted in the catalog %s: it was unreachable"
                                    " until this process ended", sum(e[0] for e in self._unrecorded.values()),
                                    self.location)
                if self._unlearned:
                    try:
                        self._write_learned()
                    except StoreError as exc:
                        log.warning("%d calls of recorded tasks could not be learned: %s", len(self._unlearned),
                                    exc.message)
                self._backend.close()

    def wait_for_change(self, timeout: float, *, usage: bool = True) -> bool:
        """Block up to ``timeout`` seconds for a change by any process (this one included);
        True if one came. ``usage=False``: tool calls (:meth:`usage_version`) do not count.
        A PostgreSQL catalog is pushed (LISTEN/NOTIFY on another connection, so the store
        stays free meanwhile); a SQLite one is polled (its versions every 50 ms)."""
        assert self._backend is not None
        deadline = time.monotonic() + timeout
        wanted = {"catalog_version", "usage_version"} if usage else {"catalog_version"}
        if self._backend.dialect == "postgresql":
            while (left := deadline - time.monotonic()) > 0:
                with self._errors("listen"):
                    if wanted & set(self._backend.listen(left)):  # type: ignore[attr-defined]
                        return True
            return False
        start = self.versions()
        while time.monotonic() < deadline:
            time.sleep(0.05)
            now = self.versions()
            if now[0] != start[0] or (usage and now[1] != start[1]):
                return True
        return False

    def __repr__(self) -> str:
        return f"Store({self.location!r})"  # a URL's password redacted

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _errors(self, what: str) -> Iterator[None]:
        """The one boundary where the engine's errors (sqlite3's, psycopg's) become
        :class:`StoreError`, their message scrubbed of any password.

        The engine is read when an error arrives, not on entry: at open the block starts
        before the backend exists, and a PostgreSQL error after it connected (no right to
        create the migrations table, a read-only server) must be translated too."""
        try:
            yield
        except BaseException as exc:
            backend = self._backend
            # A PostgresBackend translates its own connection failure; before it exists, only SQLite's.
            if not isinstance(exc, backend.errors if backend is not None else SqliteBackend.errors):
                raise
            if backend is None or backend.dialect == "sqlite":
                if backend.damaged(exc) if backend is not None else is_damaged(exc):
                    raise self._damage(str(exc)) from exc
                if is_busy(exc):  # past the busy timeout: the catalog is fine, another process holds it
                    raise CatalogBusyError(
                        f"catalog {what} failed: another process held the catalog's write lock for over"
                        f" {SqliteBackend.busy_timeout:g} s ({exc}); try again when it is done",
                        path=self.location) from exc
                hint = _FULL_HINT if is_full(exc) else ""
                raise StoreError(f"catalog {what} failed: {exc}{hint} (catalog {self.location})",
                                 path=self.location) from exc
            # Not chained: a traceback printing the cause would bypass the scrubbing.
            # Named: a team's hosts may use more than one catalog, and the server's message names none.
            raise StoreError(f"catalog {what} failed: {backend.describe(exc)} (catalog {self.location})",
                             path=self.location) from None

    def _damage(self, what: str) -> CatalogDamagedError:
        """The error for a damaged catalog file, kept: nothing more is written to it by this store."""
        self._damaged = CatalogDamagedError(
            f"the catalog {self.location} is damaged ({what}); nothing more is written to it: `jit doctor` keeps "
            "it aside and rebuilds the catalog from what is intact in it and from the servers", path=self.location)
        return self._damaged

    def check_intact(self) -> None:
        """Raise :class:`~jit.errors.CatalogDamagedError` if SQLite finds the catalog file damaged
        (``PRAGMA quick_check``: every page and link; 0.2 to 2 s for 20,000 tools), as before a sync writes
        into it. A PostgreSQL catalog's storage is its server's to check: nothing is read."""
        assert self._backend is not None
        if self._damaged is not None:
            raise CatalogDamagedError(self._damaged.message, **self._damaged.details)
        if self._backend.dialect != "sqlite":
            return
        with self._lock, self._errors("check"):
            found = quick_check(self._conn)
        if found is not None:
            raise self._damage(found)

    def unreachable(self, exc: StoreError) -> bool:
        """Whether ``exc`` (raised by this store) says the catalog could not be written or read just
        now (a PostgreSQL server down, restarting or dropping the connection; a SQLite file locked
        past the busy timeout), not that it refused: the same work can be tried again later."""
        if isinstance(exc, CatalogBusyError):
            return True
        return self._backend is not None and self._backend.unreachable(exc.__cause__ or exc.__context__)

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        """One write transaction, excluding every other writer; nested calls join the outer one.
        A catalog found damaged is not written to (:class:`~jit.errors.CatalogDamagedError`)."""
        with self._lock, self._errors("write"):
            backend = self._backend
            assert backend is not None
            if self._damaged is not None:
                raise CatalogDamagedError(self._damaged.message, **self._damaged.details)
            if self._depth or backend.in_transaction():
                yield self._conn
                return
            backend.begin()
            self._depth = 1
            try:
                yield self._conn
            except BaseException:
                # SQLite rolls back by itself on some errors (a full disk, SQLITE_FULL): a ROLLBACK
                # then fails ("no transaction is active") and would hide the error that counts.
                if backend.in_transaction():
                    backend.rollback()
                raise
            finally:
                self._depth = 0
            backend.commit()

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        with self._lock, self._errors("read"):
            if self._depth:  # inside a transaction: on its connection, never retried
                return self._conn.execute(sql, params).fetchall()
            return self._backend.read(lambda: self._conn.execute(sql, params).fetchall())  # type: ignore[union-attr]

    def _bump(self, conn: Any, counter: str = "catalog_version", by: int = 1) -> None:
        conn.execute(
            "INSERT INTO meta(key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value = CAST(meta.value AS INTEGER) + ?",
            (counter, str(by), by),
        )
        assert self._backend is not None
        self._backend.announce(conn, counter)

    # ------------------------------------------------------------------ migrations (jit/catalog/migrations.py)

    def migrations(self) -> list[Migration]:
        return self._migrations.all()

    def applied_migrations(self) -> dict[int, str]:
        return self._migrations.applied()

    def pending_migrations(self) -> list[Migration]:
        return self._migrations.pending()

    def check_migrations(self, migrations: Sequence[Migration] | None = None) -> None:
        """Refuse a catalog whose applied migrations no longer match their files (:meth:`Migrations.check`)."""
        self._migrations.check(migrations)

    def migrate(self) -> list[Migration]:
        """Check the applied migrations, then apply pending ones in order, each atomically
        with its record (:meth:`Migrations.apply`)."""
        with self._errors("migrate"):
            return self._migrations.apply()

    # ------------------------------------------------------------------ meta

    def get_meta(self, key: str) -> str | None:
        rows = self._query("SELECT value FROM meta WHERE key = ?", (key,))
        return rows[0]["value"] if rows else None

    def set_meta(self, key: str, value: str) -> None:
        with self.transaction() as c:
            c.execute(
                "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                (key, value),
            )

    def catalog_version(self) -> int:
        """A counter bumped by every change to tools, analyses, vectors or server status.

        Tool calls, which alter a selection only through usage, move
        :meth:`usage_version` instead; a cache of the catalog watches both."""
        return self.versions()[0]

    def versions(self) -> tuple[int, int]:
        """``(catalog_version, usage_version)`` in one read, for a cache checking both per use."""
        rows = self._query("SELECT key, value FROM meta WHERE key IN ('catalog_version', 'usage_version')")
        found = {r[0]: int(r[1]) for r in rows}
        return found.get("catalog_version", 0), found.get("usage_version", 0)

    def catalog_id(self) -> str | None:
        """The catalog's random identity (migration 0006): files derived from it name it."""
        return self.get_meta("catalog_id")

    def usage_version(self) -> int:
        """A counter bumped by every :meth:`record_call`; see :meth:`usage_since`."""
        return self.versions()[1]


def open_backend(location: str | Path, *, connect_timeout: int = DEFAULT_CATALOG_CONNECT_TIMEOUT,
                 statement_timeout: float = DEFAULT_CATALOG_STATEMENT_TIMEOUT) -> Backend:
    """The engine for a ``store`` setting: a ``postgresql://`` URL (its waits bounded by the two
    timeouts), else a SQLite path."""
    if is_postgres_url(location):
        try:
            from .backend_pg import PostgresBackend
        except ImportError as exc:  # psycopg comes with the `postgres` extra
            raise StoreError(f"a PostgreSQL catalog needs psycopg 3, jit-mcp's `postgres` extra: "
                             f"pip install 'psycopg[binary]>=3.2,<4' ({exc})",
                             path=redact(str(location))) from None
        return PostgresBackend(str(location), connect_timeout=connect_timeout, statement_timeout=statement_timeout)
    return SqliteBackend(str(location))
