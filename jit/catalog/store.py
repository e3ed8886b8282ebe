"""The catalog: embedded SQLite (with sqlite-vec) by default, or a shared PostgreSQL.

The catalog is the record of everything jit knows: servers and their status, tools
keyed by definition hash, analysis, usage, the embedding cache and the tools'
vectors. Search is not done here: the compiler reads the catalog into memory
(a vector matrix, a BM25 index; jit/selection/retrieve.py) and ranks there. The schema
changes only through the numbered files in ``migrations/``, each applied in one
transaction together with its record (name and checksum); an applied file that
was edited afterwards is refused at open, since the catalog no longer matches it
(the runner: jit/catalog/migrations.py). Server rows live in the
:class:`~jit.catalog.store_servers.ServerCatalog` mixin (with resources and prompts),
definition history and approvals in :class:`~jit.catalog.store_history.DefinitionHistory`,
the embedding model and vectors in :class:`~jit.catalog.store_vectors.VectorStore`.

One connection, guarded by a lock, serves every thread: the catalog is small
enough that writes are short, and WAL lets other processes (``jit`` CLI while
``jit serve`` runs) read alongside. The engine is chosen by the location: a path
is a SQLite file; a ``postgresql://`` URL is a catalog a team's hosts share
(:mod:`jit.catalog.backend` holds what differs between the two; the SQL here is
written once, in the dialect both accept).
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..config import DEFAULT_CATALOG_CONNECT_TIMEOUT, DEFAULT_CATALOG_STATEMENT_TIMEOUT
from ..errors import (
    MAX_STORED_ERROR_CHARS,
    CatalogBusyError,
    CatalogDamagedError,
    ServerNotRegisteredError,
    StoreError,
    bounded,
)
from ..models import (
    ServerStatus,
    StoredTool,
    SyncResult,
    ToolAnalysis,
    ToolDef,
    ToolState,
    canonical_json,
)
from ..paths import is_postgres_url
from . import holders
from .backend import Backend, SqliteBackend, is_busy, is_damaged, is_full, quick_check, redact
from .migrations import Migration, Migrations, default_migrations_dir
from .store_history import DefinitionHistory
from .store_servers import ServerCatalog
from .store_vectors import VectorStore

__all__ = ["Store", "text_hash"]

log = logging.getLogger(__name__)


#: What to do about a SQLite catalog that could not grow (SQLITE_FULL).
_FULL_HINT = (": the disk holding the catalog is full; nothing of this write was kept. Free some space and run the"
              " command again")


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class Store(DefinitionHistory, ServerCatalog, VectorStore):
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

    # ------------------------------------------------------------------ tools

    def sync_tools(self, server: str, tools: Iterable[ToolDef]) -> SyncResult:
        """Make the catalog's tools for ``server`` exactly ``tools``.

        Unchanged definitions (same hash) are not rewritten; changed ones are
        rewritten and marked for re-analysis (and re-embedding if their search
        text changed); tools no longer listed are removed.
        """
        result = SyncResult(server=server)
        now = time.time()
        incoming: dict[str, ToolDef] = {}
        for t in tools:
            if t.server != server:
                raise StoreError(f"tool {t.key} does not belong to server {server!r}")
            incoming[t.name] = t
        with self._storable(server, incoming), self.transaction() as c:
            if c.execute("SELECT 1 FROM servers WHERE name = ?", (server,)).fetchone() is None:
                raise ServerNotRegisteredError(f"unknown server {server!r}; call ensure_server first", server=server)
            existing = {
                r["name"]: r
                for r in c.execute("SELECT id, name, definition_hash, text_hash FROM tools WHERE server = ?", (server,))
            }
            gone = [existing[n]["id"] for n in existing if n not in incoming]
            result.removed = sorted(n for n in existing if n not in incoming)
            self._same_as_stored(c, incoming, existing)
            # Before any row changes: the definitions being replaced or dropped go to history.
            self._record_definitions(c, server, incoming, result, now)
            self._delete_tool_rows(c, gone)
            for name, t in incoming.items():
                dhash = t.definition_hash
                thash = text_hash(t.embedding_text())
                row = existing.get(name)
                if row is not None and row["definition_hash"] == dhash:
                    result.unchanged += 1
                    continue
                values = (
                    t.title, t.description, canonical_json(t.input_schema),
                    canonical_json(t.output_schema) if t.output_schema is not None else None,
                    canonical_json(t.annotations) if t.annotations is not None else None,
                    dhash, thash,
                )
                if row is None:
                    tool_id = c.execute(
                        "INSERT INTO tools(server, name, title, description, input_schema, output_schema,"
                        " annotations, definition_hash, text_hash, first_seen, updated_at)"
                        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                        (server, name, *values, now, now),
                    ).fetchone()[0]
                    result.added.append(name)
                else:
                    tool_id = row["id"]
                    text_changed = row["text_hash"] != thash
                    c.execute(
                        "UPDATE tools SET title = ?, description = ?, input_schema = ?, output_schema = ?,"
                        " annotations = ?, definition_hash = ?, text_hash = ?, needs_analysis = 1,"
                        " needs_embedding = CASE WHEN ? THEN 1 ELSE needs_embedding END, updated_at = ?"
                        " WHERE id = ?",
                        (*values, text_changed, now, tool_id),
                    )
                    if text_changed:
                        self._drop_vector(c, tool_id)
                    result.changed.append(name)
                # A definition analyzed before (same hash) needs no new analysis.
                c.execute(
                    "UPDATE tools SET needs_analysis = 0 WHERE id = ? AND EXISTS"
                    " (SELECT 1 FROM analysis WHERE definition_hash = ?)",
                    (tool_id, dhash),
                )
            result.added.sort()
            result.changed.sort()
            if result.touched:
                self._bump(c)
        return result

    @staticmethod
    @contextmanager
    def _storable(server: str, incoming: dict[str, ToolDef]) -> Iterator[None]:
        """Around :meth:`sync_tools`: a definition text cannot hold (a lone surrogate, a value of no
        JSON type, nesting past any bound), given by a library caller (discovery drops such tools
        first), is a :class:`StoreError` naming the tool and the place, not a ``UnicodeEncodeError``
        from hashing; the transaction has rolled back, so nothing of the server was written."""
        try:
            yield
        except (UnicodeError, TypeError, ValueError, RecursionError) as exc:
            from ..jsonrpc import find_unsendable, json_path  # only here: it imports the MCP types (0.14 s)

            for t in incoming.values():
                found = find_unsendable({"name": t.name, "title": t.title, "description": t.description,
                                         "input_schema": t.input_schema, "output_schema": t.output_schema,
                                         "annotations": t.annotations}, numbers=False)
                if found is not None:
                    where, why = found
                    raise StoreError(f"tool {t.key}: {json_path(where)} {why}; nothing of server {server!r} "
                                     "was written") from exc
            raise

    def sync_catalog(
        self, tools: Iterable[ToolDef], *, transport: str = "stdio", status: ServerStatus | None = None
    ) -> dict[str, SyncResult]:
        """:meth:`sync_tools` for every server the tools name, registering new servers.

        For catalogs built from files (evaluation, benchmarks, fixtures) rather than
        discovery; with ``status``, each server is recorded in that state.
        """
        by_server: dict[str, list[ToolDef]] = {}
        for t in tools:
            by_server.setdefault(t.server, []).append(t)
        known = {r[0] for r in self._query("SELECT name FROM servers")}
        results = {}
        for server, group in by_server.items():
            if server not in known:
                self.ensure_server(server, transport)
            results[server] = self.sync_tools(server, group)
            if status is not None:  # a declared state: no process holds a connection to it
                self.set_server_status(server, status, hold=False)
        return results

    def _delete_tool_rows(self, c: Any, ids: Sequence[int]) -> None:
        for tool_id in ids:
            self._drop_vector(c, tool_id)
            c.execute("DELETE FROM tools WHERE id = ?", (tool_id,))

    def tools(self, server: str | None = None, *, online: bool | None = None, approved: bool | None = None,
              analyzed: bool | None = None) -> list[StoredTool]:
        """Catalog tools in scope, ordered by server then name; ``online`` filters on server status,
        ``approved`` on whether the current definition is approved, ``analyzed`` on whether it has
        an analysis (in SQL: a caller after the few awaiting approval does not parse every tool)."""
        self._settle_statuses()
        scope, params = self._scope_sql("t.server")
        where = [scope]
        if server is not None:
            where.append("t.server = ?")
            params.append(server)
        if online is True:
            where.append(f"{_STATUS} IN ('connected', 'idle')")
        elif online is False:
            where.append(f"{_STATUS} NOT IN ('connected', 'idle')")
        if approved is not None:
            where.append(_APPROVED if approved else f"NOT {_APPROVED}")
        if analyzed is not None:
            where.append("a.data IS NOT NULL" if analyzed else "a.data IS NULL")
        return [_stored(r) for r in self._tool_rows(" WHERE " + " AND ".join(where) + " ORDER BY t.server, t.name",
                                                    params)]

    def tool_heads(self, servers: Iterable[str] | None = None) -> list[tuple[str, str]]:
        """``(server, name)`` of the catalog tools in scope (of ``servers``): what rendered names are made from."""
        scope, params = self._scope_sql("server")
        if servers is not None:
            wanted = sorted(set(servers))
            scope += f" AND server IN ({','.join('?' * len(wanted))})" if wanted else " AND 1 = 0"
            params = [*params, *wanted]
        return [(r[0], r[1]) for r in self._query(f"SELECT server, name FROM tools WHERE {scope}", params)]

    def tool(self, server: str, name: str) -> StoredTool | None:
        if self.scope is not None and server not in self.scope:
            return None
        self._settle_statuses()
        rows = self._tool_rows(" WHERE t.server = ? AND t.name = ?", (server, name))
        return _stored(rows[0]) if rows else None

    def tools_by_id(self, ids: Iterable[int]) -> dict[int, StoredTool]:
        ids = list(ids)
        out: dict[int, StoredTool] = {}
        for i in range(0, len(ids), 500):
            chunk = ids[i : i + 500]
            marks = ",".join("?" * len(chunk))
            for r in self._tool_rows(f" WHERE t.id IN ({marks})", chunk):
                out[r["id"]] = _stored(r)
        return out

    def tool_records(self, ids: Iterable[int] | None = None) -> dict[int, tuple[StoredTool, ToolState]]:
        """``id -> (tool, state)`` for the tools of ``ids`` (default: all) still in the catalog and
        in scope, the state as :meth:`tool_states` gives it, read in the same query as the tool: a
        reader holding older states can tell whether a tool is still the one it knew."""
        scope, params = self._scope_sql("t.server")
        if ids is None:
            self._settle_statuses()
            rows = self._tool_rows(f" WHERE {scope}", params)
        else:
            ids = list(ids)
            rows = []
            for i in range(0, len(ids), 500):
                chunk = ids[i : i + 500]
                rows += self._tool_rows(f" WHERE t.id IN ({','.join('?' * len(chunk))}) AND {scope}",
                                        [*chunk, *params])
        return _records_of(rows)

    def tool_record_batches(self, size: int = 2000) -> Iterator[dict[int, tuple[StoredTool, ToolState]]]:
        """:meth:`tool_records` of every tool, ``size`` at a time in id order, one query each: for a
        reader that keeps what it derives from each definition rather than the definitions (the
        retrieval index's texts; 100,000 definitions take ~540 MB). Each tool's state is read with
        it; a tool a writer changes meanwhile is read as its batch finds it."""
        self._settle_statuses()
        scope, params = self._scope_sql("t.server")
        after: int | None = None
        while True:
            where, args = (f" WHERE {scope}", params) if after is None else \
                (f" WHERE {scope} AND t.id > ?", [*params, after])
            rows = self._tool_rows(f"{where} ORDER BY t.id LIMIT {int(size)}", args)
            if not rows:
                return
            after = rows[-1]["id"]
            yield _records_of(rows)

    def _tool_rows(self, where: str, params: Sequence[Any]) -> list[Any]:
        """``_TOOL_SELECT`` + ``where``: this host's view of each tool's server status included."""
        return self._query(_TOOL_SELECT + where, [holders.host(), *params])

    def tool_count(self) -> int:
        scope, params = self._scope_sql("server")
        return int(self._query(f"SELECT count(*) FROM tools WHERE {scope}", params)[0][0])

    def tool_states(self) -> dict[int, ToolState]:
        """``id -> ToolState``: cheap to read (no definitions parsed), so a cache can see which
        tools changed since it last looked and reload only those. Tools in scope only."""
        self._settle_statuses()
        scope, params = self._scope_sql("t.server")
        rows = self._query(
            f"SELECT t.id, t.definition_hash, t.text_hash, t.needs_embedding, a.created_at, {_STATUS},"
            f" {_APPROVED}, COALESCE(u.calls, 0), COALESCE(u.errors, 0)"
            f" FROM tools t JOIN servers s ON s.name = t.server {_HOST_JOIN}"
            " LEFT JOIN analysis a ON a.definition_hash = t.definition_hash"
            " LEFT JOIN usage u ON u.server = t.server AND u.tool = t.name"
            f" WHERE {scope}", [holders.host(), *params],
        )
        return {r[0]: ToolState._make(r[1:]) for r in rows}

    # ------------------------------------------------------------------ analysis

    def pending_analysis(self) -> list[StoredTool]:
        """Tools in scope awaiting analysis (another config's tools wait for that config's analyzer)."""
        scope, params = self._scope_sql("t.server")
        return [_stored(r) for r in self._tool_rows(f" WHERE t.needs_analysis = 1 AND {scope} ORDER BY t.id", params)]

    def cached_analysis(self, definition_hash: str) -> ToolAnalysis | None:
        rows = self._query("SELECT data FROM analysis WHERE definition_hash = ?", (definition_hash,))
        return ToolAnalysis.from_json(json.loads(rows[0]["data"])) if rows else None

    def put_analyses(self, items: Iterable[tuple[str, ToolAnalysis]]) -> int:
        """Store analyses by definition hash and clear ``needs_analysis`` on their tools."""
        now = time.time()
        n = 0
        hashes: list[str] = []
        with self.transaction() as c:
            for dhash, analysis in items:
                c.execute(
                    "INSERT INTO analysis(definition_hash, analyzer, data, created_at) VALUES (?, ?, ?, ?)"
                    " ON CONFLICT(definition_hash) DO UPDATE SET analyzer = excluded.analyzer,"
                    " data = excluded.data, created_at = excluded.created_at",
                    (dhash, analysis.analyzer, canonical_json(analysis.to_json()), now),
                )
                hashes.append(dhash)
                n += 1
            # One UPDATE per 500 hashes over pending rows only (partial index): tools has no
            # index on definition_hash, so one UPDATE per hash scanned the whole table
            # (10,000 tools took ~80 s instead of ~1 s).
            for i in range(0, len(hashes), 500):
                chunk = hashes[i : i + 500]
                c.execute(
                    "UPDATE tools SET needs_analysis = 0 WHERE needs_analysis = 1"
                    f" AND definition_hash IN ({','.join('?' * len(chunk))})",
                    chunk,
                )
            if n:
                self._bump(c)
        return n

    def prune_analysis(self) -> int:
        """Drop analyses no tool refers to any more. The approved earlier definitions of a tool
        awaiting approval are still referred to: the role policy judges it as it was last approved."""
        with self.transaction() as c:
            cur = c.execute(
                "DELETE FROM analysis WHERE definition_hash NOT IN (SELECT definition_hash FROM tools)"
                " AND definition_hash NOT IN (SELECT h.definition_hash FROM tool_history h"
                " JOIN tools t ON t.server = h.server AND t.name = h.name"
                " JOIN tool_approvals ap ON ap.server = h.server AND ap.name = h.name"
                f" AND ap.definition_hash = h.definition_hash WHERE NOT {_APPROVED})"
            )
            return cur.rowcount

    def pending_embeddings(self) -> list[tuple[int, str, str]]:
        """``(tool_id, embedding_text, text_hash)`` of tools in scope whose vector is missing."""
        out = []
        scope, params = self._scope_sql("t.server")
        for r in self._tool_rows(f" WHERE t.needs_embedding = 1 AND {scope} ORDER BY t.id", params):
            tool = _stored(r).tool
            out.append((r["id"], tool.embedding_text(), r["text_hash"]))
        return out

    # ------------------------------------------------------------------ usage

    def record_call(self, server: str, tool: str, *, ok: bool, latency_ms: float, error: str | None = None) -> None:
        """Count one call of ``server``/``tool``; moves :meth:`usage_version`, not the catalog version.

        The call has run when it is counted, so a catalog that cannot be written just now (a
        PostgreSQL server down or restarting, a SQLite file locked past the busy timeout) does not
        make it fail: the count is kept in memory and written with the next call counted once the
        catalog answers (or at :meth:`close`), a warning logged meanwhile. Any other refusal
        (a read-only server) raises, and that call is not kept."""
        with self._lock:
            key = (server, tool)
            before = list(self._unrecorded[key]) if key in self._unrecorded else None
            entry = self._unrecorded.setdefault(key, [0, 0, 0.0, 0.0, None])
            entry[0] += 1
            entry[1] += 0 if ok else 1
            entry[2] += float(latency_ms)
            entry[3] = time.time()
            if not ok:  # a server's text, bounded
                entry[4] = None if error is None else bounded(error, MAX_STORED_ERROR_CHARS)
            try:
                self._write_usage()
            except StoreError as exc:
                if not self.unreachable(exc):
                    if before is None:
                        del self._unrecorded[key]
                    else:
                        self._unrecorded[key] = before
                    raise
                log.warning("a call to %s/%s is counted when the catalog answers again (%d waiting): %s",
                            server, tool, sum(e[0] for e in self._unrecorded.values()), exc.message)

    def unreachable(self, exc: StoreError) -> bool:
        """Whether ``exc`` (raised by this store) says the catalog could not be written or read just
        now (a PostgreSQL server down, restarting or dropping the connection; a SQLite file locked
        past the busy timeout), not that it refused: the same work can be tried again later."""
        if isinstance(exc, CatalogBusyError):
            return True
        return self._backend is not None and self._backend.unreachable(exc.__cause__ or exc.__context__)

    def _write_usage(self) -> None:
        """Write the calls :meth:`record_call` holds, in one transaction; forget them once committed."""
        with self.transaction() as c:
            for (server, tool), (calls, errors, latency, called_at, error) in self._unrecorded.items():
                self._bump(c, "usage_version", calls)
                c.execute(
                    "INSERT INTO usage(server, tool, calls, errors, total_latency_ms, last_called_at, last_error,"
                    " seq) VALUES (?, ?, ?, ?, ?, ?, ?,"
                    " (SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'usage_version'))"
                    " ON CONFLICT(server, tool) DO UPDATE SET"
                    " calls = usage.calls + excluded.calls, errors = usage.errors + excluded.errors,"
                    " total_latency_ms = usage.total_latency_ms + excluded.total_latency_ms,"
                    " last_called_at = excluded.last_called_at,"
                    " last_error = COALESCE(excluded.last_error, usage.last_error), seq = excluded.seq",
                    (server, tool, calls, errors, latency, called_at, error),
                )
        self._unrecorded = {}

    def usage_since(self, version: int) -> dict[int, tuple[int, int]]:
        """``tool id -> (calls, errors)`` of the catalog's tools called after ``usage_version`` was ``version``."""
        rows = self._query(
            "SELECT t.id, u.calls, u.errors FROM usage u JOIN tools t ON t.server = u.server AND t.name = u.tool"
            " WHERE u.seq > ?",
            (int(version),),
        )
        return {r[0]: (r[1], r[2]) for r in rows}

    def usage(self, server: str, tool: str) -> dict[str, Any] | None:
        rows = self._query("SELECT * FROM usage WHERE server = ? AND tool = ?", (server, tool))
        return dict(rows[0]) if rows else None

#: Whether a tool's current definition is an approved one (tool_approvals, migration 0004).
_APPROVED = ("EXISTS (SELECT 1 FROM tool_approvals ap WHERE ap.server = t.server AND ap.name = t.name"
             " AND ap.definition_hash = t.definition_hash)")

#: A server's status as this host sees it (migration 0007): its own where it has one, else the
#: shared one. The join's one parameter, first in every query using it, is :func:`holders.host`.
_HOST_JOIN = "LEFT JOIN server_host_status hs ON hs.server = s.name AND hs.host = ?"
_STATUS = "COALESCE(hs.status, s.status)"

_TOOL_SELECT = (
    f"SELECT t.*, {_STATUS} AS server_status, a.data AS analysis_data, a.created_at AS analysis_created_at,"
    " COALESCE(u.calls, 0) AS calls, COALESCE(u.errors, 0) AS errors,"
    f" {_APPROVED} AS approved"
    f" FROM tools t JOIN servers s ON s.name = t.server {_HOST_JOIN}"
    " LEFT JOIN analysis a ON a.definition_hash = t.definition_hash"
    " LEFT JOIN usage u ON u.server = t.server AND u.tool = t.name"
)


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


def _records_of(rows: Iterable[Any]) -> dict[int, tuple[StoredTool, ToolState]]:
    """``id -> (tool, state)`` of :data:`_TOOL_SELECT` rows (:meth:`Store.tool_records`)."""
    return {r["id"]: (_stored(r), ToolState(r["definition_hash"], r["text_hash"], r["needs_embedding"],
                                            r["analysis_created_at"], r["server_status"], r["approved"],
                                            r["calls"], r["errors"])) for r in rows}


def _stored(r: Any) -> StoredTool:
    tool = ToolDef(
        server=r["server"],
        name=r["name"],
        description=r["description"],
        input_schema=json.loads(r["input_schema"]),
        output_schema=json.loads(r["output_schema"]) if r["output_schema"] else None,
        title=r["title"],
        annotations=json.loads(r["annotations"]) if r["annotations"] else None,
    )
    return StoredTool(
        id=r["id"],
        tool=tool,
        definition_hash=r["definition_hash"],
        server_status=ServerStatus(r["server_status"]),
        analysis=ToolAnalysis.from_json(json.loads(r["analysis_data"])) if r["analysis_data"] else None,
        needs_analysis=bool(r["needs_analysis"]),
        needs_embedding=bool(r["needs_embedding"]),
        calls=r["calls"],
        errors=r["errors"],
        approved=bool(r["approved"]),
    )

