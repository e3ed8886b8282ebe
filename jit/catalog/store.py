"""The catalog: SQLite (through pysqlite3) with sqlite-vec vectors.

SQLite is the record of everything jit knows: servers and their status, tools
keyed by definition hash, analysis, usage, the embedding cache and the tools'
vectors. Search is not done here: the compiler reads the catalog into memory
(a vector matrix, a BM25 index; jit/selection/retrieve.py) and ranks there. The schema
changes only through the numbered files in ``migrations/``, each applied in one
transaction together with its record (name and checksum); an applied file that
was edited afterwards is refused at open, since the catalog no longer matches it.

One connection, guarded by a lock, serves every thread: the catalog is small
enough that writes are short, and WAL lets other processes (``jit`` CLI while
``jit serve`` runs) read alongside.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pysqlite3.dbapi2 as sqlite3
import sqlite_vec

from ..errors import MigrationError, StoreError
from ..models import (
    HARNESS_SERVER,
    ServerStatus,
    StoredTool,
    SyncResult,
    ToolAnalysis,
    ToolDef,
    canonical_json,
    changed_fields,
)
from ..paths import bundled_dir
from .store_servers import ServerCatalog

__all__ = ["Migration", "Store", "default_migrations_dir", "text_hash"]

_MIGRATION_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


def default_migrations_dir() -> Path:
    return bundled_dir("migrations")


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    path: Path

    @property
    def sql(self) -> str:
        return self.path.read_text(encoding="utf-8")

    @property
    def checksum(self) -> str:
        return text_hash(self.sql)


def _load_migrations(directory: Path) -> list[Migration]:
    if not directory.is_dir():
        raise MigrationError(f"migrations directory not found: {directory}")
    found: list[Migration] = []
    for p in sorted(directory.iterdir()):
        if p.suffix != ".sql":
            continue
        m = _MIGRATION_NAME.match(p.name)
        if not m:
            raise MigrationError(f"migration file name must look like 0001_name.sql: {p.name}")
        found.append(Migration(int(m.group(1)), m.group(2), p))
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise MigrationError(f"two migrations share a version number in {directory}")
    return found


class Store(ServerCatalog):
    """The SQLite catalog. Use as a context manager or call :meth:`close`.

    ``Store(path)`` opens (creating if needed), checks that the migrations it ran
    are still the files in ``migrations_dir``, and applies pending ones (with
    ``migrate=False`` it only checks). ``path`` may be ``":memory:"`` for
    throwaway catalogs.
    """

    def __init__(self, path: str | Path, *, migrations_dir: Path | None = None, migrate: bool = True) -> None:
        self.path = str(path)
        self.migrations_dir = migrations_dir or default_migrations_dir()
        self._lock = threading.RLock()
        if self.path != ":memory:":
            try:
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:  # under a file, read-only parent: an error of the tree, not a traceback
                raise StoreError(f"cannot create the catalog's directory: {exc.strerror or exc}",
                                 path=self.path) from exc
        with self._errors("open"):
            self._conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=30)
            self._conn.row_factory = sqlite3.Row
            self._conn.enable_load_extension(True)
            sqlite_vec.load(self._conn)
            self._conn.enable_load_extension(False)
            if self.path != ":memory:":
                self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA foreign_keys=ON")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                " version INTEGER PRIMARY KEY, name TEXT NOT NULL, checksum TEXT NOT NULL,"
                " applied_at REAL NOT NULL) STRICT"
            )
        if migrate:
            self.migrate()
        else:
            self.check_migrations()

    # ------------------------------------------------------------------ plumbing

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _errors(self, what: str) -> Iterator[None]:
        """The one boundary where sqlite3 errors become :class:`StoreError`."""
        try:
            yield
        except sqlite3.Error as exc:
            raise StoreError(f"catalog {what} failed: {exc}", path=self.path) from exc

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction; nested calls join the outer one."""
        with self._lock, self._errors("write"):
            if self._conn.in_transaction:
                yield self._conn
                return
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def _query(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> list[sqlite3.Row]:
        with self._lock, self._errors("read"):
            return self._conn.execute(sql, params).fetchall()

    def _bump(self, conn: sqlite3.Connection, counter: str = "catalog_version") -> None:
        conn.execute(
            "INSERT INTO meta(key, value) VALUES (?, '1') "
            "ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1",
            (counter,),
        )

    # ------------------------------------------------------------------ migrations

    def migrations(self) -> list[Migration]:
        return _load_migrations(self.migrations_dir)

    def applied_migrations(self) -> dict[int, str]:
        return {r["version"]: r["name"] for r in self._query("SELECT version, name FROM schema_migrations")}

    def pending_migrations(self) -> list[Migration]:
        done = self.applied_migrations()
        return [m for m in self.migrations() if m.version not in done]

    def check_migrations(self, migrations: Sequence[Migration] | None = None) -> None:
        """Refuse a catalog whose applied migrations no longer match their files.

        A migration runs once per catalog, so an edit to an applied file never reaches
        the catalogs that already ran it: they would silently differ from new ones
        (a constraint, a column, a default). Each record keeps the checksum of the text
        that ran; a file whose text now differs is a :class:`MigrationError` naming it.
        A recorded version with no file (a catalog from a newer jit) is not checked here.
        """
        recorded = {r["version"]: (r["name"], r["checksum"])
                    for r in self._query("SELECT version, name, checksum FROM schema_migrations")}
        for m in self.migrations() if migrations is None else migrations:
            if m.version not in recorded:
                continue
            name, checksum = recorded[m.version]
            if (name, checksum) != (m.name, m.checksum):
                raise MigrationError(
                    f"migration {m.path.name} differs from the one this catalog ran"
                    f" (recorded as {m.version:04d}_{name}.sql, sha256 {checksum[:12]}; the file now has"
                    f" sha256 {m.checksum[:12]}): an applied migration must not be edited; restore the file and"
                    " put the change in a new migration (a catalog made by a pre-release jit: delete it and"
                    " run `jit sync`)",
                    path=self.path, migration=str(m.path),
                )

    def migrate(self) -> list[Migration]:
        """Check the applied migrations (:meth:`check_migrations`), then apply pending
        ones in order, each atomically with its record."""
        applied: list[Migration] = []
        with self._lock:
            found = self.migrations()
            self.check_migrations(found)
            done = self.applied_migrations()
            for m in (m for m in found if m.version not in done):
                record = (
                    "INSERT INTO schema_migrations(version, name, checksum, applied_at) "
                    f"VALUES ({m.version}, '{m.name}', '{m.checksum}', {time.time()!r});"
                )
                try:
                    # executescript would commit a pending transaction first, so the
                    # BEGIN lives inside the script and the record commits with it.
                    self._conn.executescript(f"BEGIN IMMEDIATE;\n{m.sql}\n;{record}\nCOMMIT;")
                except sqlite3.Error as exc:
                    if self._conn.in_transaction:
                        self._conn.execute("ROLLBACK")
                    raise MigrationError(
                        f"migration {m.path.name} failed and was rolled back: {exc}", path=str(m.path)
                    ) from exc
                applied.append(m)
        return applied

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
        with self.transaction() as c:
            if c.execute("SELECT 1 FROM servers WHERE name = ?", (server,)).fetchone() is None:
                raise StoreError(f"unknown server {server!r}; call ensure_server first", server=server)
            existing = {
                r["name"]: r
                for r in c.execute("SELECT id, name, definition_hash, text_hash FROM tools WHERE server = ?", (server,))
            }
            gone = [existing[n]["id"] for n in existing if n not in incoming]
            result.removed = sorted(n for n in existing if n not in incoming)
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
                    cur = c.execute(
                        "INSERT INTO tools(server, name, title, description, input_schema, output_schema,"
                        " annotations, definition_hash, text_hash, first_seen, updated_at)"
                        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (server, name, *values, now, now),
                    )
                    tool_id = cur.lastrowid
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

    def _delete_tool_rows(self, c: sqlite3.Connection, ids: Sequence[int]) -> None:
        for tool_id in ids:
            self._drop_vector(c, tool_id)
            c.execute("DELETE FROM tools WHERE id = ?", (tool_id,))

    def tools(self, server: str | None = None, *, online: bool | None = None) -> list[StoredTool]:
        """Catalog tools in scope, ordered by server then name; ``online`` filters on server status."""
        self._settle_statuses()
        sql = _TOOL_SELECT
        scope, params = self._scope_sql("t.server")
        where = [scope]
        if server is not None:
            where.append("t.server = ?")
            params.append(server)
        if online is True:
            where.append("s.status IN ('connected', 'idle')")
        elif online is False:
            where.append("s.status NOT IN ('connected', 'idle')")
        sql += " WHERE " + " AND ".join(where) + " ORDER BY t.server, t.name"
        return [_stored(r) for r in self._query(sql, params)]

    def tool(self, server: str, name: str) -> StoredTool | None:
        if self.scope is not None and server not in self.scope:
            return None
        self._settle_statuses()
        rows = self._query(_TOOL_SELECT + " WHERE t.server = ? AND t.name = ?", (server, name))
        return _stored(rows[0]) if rows else None

    def tools_by_id(self, ids: Iterable[int]) -> dict[int, StoredTool]:
        ids = list(ids)
        out: dict[int, StoredTool] = {}
        for i in range(0, len(ids), 500):
            chunk = ids[i : i + 500]
            marks = ",".join("?" * len(chunk))
            for r in self._query(_TOOL_SELECT + f" WHERE t.id IN ({marks})", chunk):
                out[r["id"]] = _stored(r)
        return out

    def tool_count(self) -> int:
        scope, params = self._scope_sql("server")
        return int(self._query(f"SELECT count(*) FROM tools WHERE {scope}", params)[0][0])

    def tool_states(self) -> dict[int, tuple[Any, ...]]:
        """``id -> (definition_hash, text_hash, needs_embedding, analysis created_at, server status,
        approved, calls, errors)``: cheap to read (no definitions parsed), so a cache can see which
        tools changed since it last looked and reload only those. Tools in scope only."""
        self._settle_statuses()
        scope, params = self._scope_sql("t.server")
        rows = self._query(
            "SELECT t.id, t.definition_hash, t.text_hash, t.needs_embedding, a.created_at, s.status,"
            f" {_APPROVED}, COALESCE(u.calls, 0), COALESCE(u.errors, 0)"
            " FROM tools t JOIN servers s ON s.name = t.server"
            " LEFT JOIN analysis a ON a.definition_hash = t.definition_hash"
            " LEFT JOIN usage u ON u.server = t.server AND u.tool = t.name"
            f" WHERE {scope}", params,
        )
        return {r[0]: tuple(r[1:]) for r in rows}

    # ------------------------------------------------------------------ analysis

    def pending_analysis(self) -> list[StoredTool]:
        """Tools in scope awaiting analysis (another config's tools wait for that config's analyzer)."""
        scope, params = self._scope_sql("t.server")
        return [_stored(r) for r in self._query(
            _TOOL_SELECT + f" WHERE t.needs_analysis = 1 AND {scope} ORDER BY t.id", params)]

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
        """Drop analyses no tool refers to any more."""
        with self.transaction() as c:
            cur = c.execute(
                "DELETE FROM analysis WHERE definition_hash NOT IN (SELECT definition_hash FROM tools)"
            )
            return cur.rowcount

    # ------------------------------------------------------------------ embeddings

    def embedding_model(self) -> tuple[str, int] | None:
        name, dim = self.get_meta("embedding_model"), self.get_meta("embedding_dim")
        return (name, int(dim)) if name and dim else None

    def set_embedding_model(self, model: str, dim: int) -> bool:
        """Declare the embedding model. A change drops every vector and marks all tools
        for re-embedding, so vectors of two models are never mixed. Returns True on change."""
        if self.embedding_model() == (model, dim) and self._has_vec_table():
            return False
        with self.transaction() as c:
            c.execute("DROP TABLE IF EXISTS tool_vectors")
            c.execute(
                f"CREATE VIRTUAL TABLE tool_vectors USING vec0("
                f"tool_id INTEGER PRIMARY KEY, embedding float[{int(dim)}] distance_metric=cosine)"
            )
            c.execute("UPDATE tools SET needs_embedding = 1")
            for key, value in (("embedding_model", model), ("embedding_dim", str(int(dim)))):
                c.execute(
                    "INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                    (key, value),
                )
            self._bump(c)
        return True

    def _has_vec_table(self) -> bool:
        return bool(self._query("SELECT 1 FROM sqlite_master WHERE name = 'tool_vectors'"))

    def _drop_vector(self, c: sqlite3.Connection, tool_id: int) -> None:
        if c.execute("SELECT 1 FROM sqlite_master WHERE name = 'tool_vectors'").fetchone():
            c.execute("DELETE FROM tool_vectors WHERE tool_id = ?", (tool_id,))

    def pending_embeddings(self) -> list[tuple[int, str, str]]:
        """``(tool_id, embedding_text, text_hash)`` of tools in scope whose vector is missing."""
        out = []
        scope, params = self._scope_sql("t.server")
        for r in self._query(_TOOL_SELECT + f" WHERE t.needs_embedding = 1 AND {scope} ORDER BY t.id", params):
            tool = _stored(r).tool
            out.append((r["id"], tool.embedding_text(), r["text_hash"]))
        return out

    def cached_vectors(self, model: str, hashes: Iterable[str]) -> dict[str, bytes]:
        hashes = list(dict.fromkeys(hashes))
        out: dict[str, bytes] = {}
        for i in range(0, len(hashes), 500):
            chunk = hashes[i : i + 500]
            marks = ",".join("?" * len(chunk))
            for r in self._query(
                f"SELECT text_hash, vector FROM embedding_cache WHERE model = ? AND text_hash IN ({marks})",
                [model, *chunk],
            ):
                out[r["text_hash"]] = r["vector"]
        return out

    def cache_vectors(self, model: str, rows: Iterable[tuple[str, bytes]]) -> int:
        """Add ``(text_hash, float32 bytes)`` to the embedding cache without giving them to a tool.

        For texts embedded for other uses (the evaluation's baseline texts), so they
        are never embedded twice either. Returns how many rows were offered.
        """
        n = 0
        with self.transaction() as c:
            for thash, vec in rows:
                c.execute(
                    "INSERT OR IGNORE INTO embedding_cache(model, text_hash, vector) VALUES (?, ?, ?)",
                    (model, thash, vec),
                )
                n += 1
        return n

    def put_vectors(self, model: str, rows: Iterable[tuple[int, str, bytes]], *, cache: bool = True) -> int:
        """Store ``(tool_id, text_hash, float32 bytes)``; clears ``needs_embedding``."""
        current = self.embedding_model()
        if current is None or current[0] != model:
            raise StoreError(f"embedding model {model!r} is not the catalog's model {current!r}")
        n = 0
        with self.transaction() as c:
            for tool_id, thash, vec in rows:
                if cache:
                    c.execute(
                        "INSERT OR IGNORE INTO embedding_cache(model, text_hash, vector) VALUES (?, ?, ?)",
                        (model, thash, vec),
                    )
                c.execute("DELETE FROM tool_vectors WHERE tool_id = ?", (tool_id,))
                c.execute("INSERT INTO tool_vectors(tool_id, embedding) VALUES (?, ?)", (tool_id, vec))
                c.execute("UPDATE tools SET needs_embedding = 0 WHERE id = ?", (tool_id,))
                n += 1
            if n:
                self._bump(c)
        return n

    def vector_matrix(self) -> tuple[np.ndarray, np.ndarray]:
        """The vectors of the tools in scope as ``(ids int64[n], matrix float32[n, dim])`` for in-memory scans."""
        model = self.embedding_model()
        if model is None or not self._has_vec_table():
            return np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.float32)
        if self.scope is None:
            rows = self._query("SELECT tool_id, embedding FROM tool_vectors ORDER BY tool_id")
        else:
            scope, params = self._scope_sql("t.server")
            rows = self._query("SELECT v.tool_id, v.embedding FROM tool_vectors v JOIN tools t ON t.id = v.tool_id"
                               f" WHERE {scope} ORDER BY v.tool_id", params)
        ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        mat = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), model[1])
        return ids, mat.copy()

    # ------------------------------------------------------------------ definition history and approvals

    def _record_definitions(self, c: sqlite3.Connection, server: str, incoming: dict[str, ToolDef],
                            result: SyncResult, now: float) -> None:
        """Part of :meth:`sync_tools`, run before it rewrites any row: rug-pull bookkeeping.

        A definition being replaced (or no longer listed) goes to ``tool_history`` with
        the usage earned under it, which leaves ``usage`` (so the new text does not
        inherit the old text's track record; nothing is lost). A tool seen for the
        first time is trusted on first use; a tool whose new definition hash was
        never approved is listed in ``result.awaiting_approval``. The harness's own
        tools (``available_tools.json``, written by the user) are always approved.
        """
        # Hashes only: definitions (possibly large) are read for the few rows that change.
        rows = {r[0]: (r[1], r[2]) for r in c.execute(
            "SELECT name, id, definition_hash FROM tools WHERE server = ?", (server,))}
        listed = c.execute("SELECT listed_at FROM tool_listings WHERE server = ?", (server,)).fetchone()
        approved: dict[str, set[str]] = {}
        for r in c.execute("SELECT name, definition_hash FROM tool_approvals WHERE server = ?", (server,)):
            approved.setdefault(r[0], set()).add(r[1])
        for name, (tool_id, dhash) in rows.items():
            new = incoming.get(name)
            if new is None or dhash != new.definition_hash:
                row = c.execute(
                    "SELECT name, title, description, input_schema, output_schema, annotations, definition_hash,"
                    " updated_at FROM tools WHERE id = ?", (tool_id,),
                ).fetchone()
                # Last seen at this server's previous listing: it was current until this one.
                seen = max(row["updated_at"], listed[0]) if listed else row["updated_at"]
                if new is not None:
                    result.changes[name] = changed_fields(_definition(row), _definition_of(new))
                self._retire(c, server, row, seen, new.definition_hash if new is not None else None, now)
        for name, t in incoming.items():
            dhash = t.definition_hash
            if server == HARNESS_SERVER:
                c.execute(
                    "INSERT OR IGNORE INTO tool_approvals(server, name, definition_hash, approved_at, how)"
                    " VALUES (?, ?, ?, ?, 'harness')", (server, name, dhash, now),
                )
                continue
            if name not in rows:
                if name not in approved:  # never seen before: trusted on first use
                    c.execute(
                        "INSERT INTO tool_approvals(server, name, definition_hash, approved_at, how)"
                        " VALUES (?, ?, ?, ?, 'first_use')", (server, name, dhash, now),
                    )
                    approved[name] = {dhash}
                else:  # back after it was dropped: compared with what it was then
                    self._returning(c, server, name, t, result)
            if dhash not in approved.get(name, ()):
                result.awaiting_approval.append(name)
        result.awaiting_approval.sort()
        c.execute(
            "INSERT INTO tool_listings(server, listed_at) VALUES (?, ?)"
            " ON CONFLICT(server) DO UPDATE SET listed_at = excluded.listed_at", (server, now),
        )

    def _retire(self, c: sqlite3.Connection, server: str, row: sqlite3.Row, last_seen: float,
                replaced_by: str | None, now: float) -> None:
        """Move a tool's current definition, and the usage earned under it, to ``tool_history``."""
        usage = c.execute(
            "SELECT calls, errors, total_latency_ms, last_called_at, last_error FROM usage"
            " WHERE server = ? AND tool = ?", (server, row["name"]),
        ).fetchone()
        c.execute(
            "INSERT INTO tool_history(server, name, definition_hash, definition, first_seen, last_seen, replaced_at,"
            " replaced_by, calls, errors, total_latency_ms, last_called_at, last_error)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (server, row["name"], row["definition_hash"], canonical_json(_definition(row)), row["updated_at"],
             last_seen, now, replaced_by, *(tuple(usage) if usage else (0, 0, 0.0, None, None))),
        )
        # A dropped tool keeps its usage row: if it comes back unchanged, its record stands.
        if replaced_by is not None and usage is not None:
            c.execute("DELETE FROM usage WHERE server = ? AND tool = ?", (server, row["name"]))

    def _returning(self, c: sqlite3.Connection, server: str, name: str, t: ToolDef, result: SyncResult) -> None:
        """A tool listed again after it was dropped: if its definition differs from the one it
        had then, that is a change, and the usage kept since moves to that definition's history."""
        last = c.execute(
            "SELECT id, definition_hash, definition FROM tool_history WHERE server = ? AND name = ?"
            " ORDER BY id DESC LIMIT 1", (server, name),
        ).fetchone()
        if last is None or last["definition_hash"] == t.definition_hash:
            return
        result.changes[name] = changed_fields(json.loads(last["definition"]), _definition_of(t))
        usage = c.execute(
            "SELECT calls, errors, total_latency_ms, last_called_at, last_error FROM usage"
            " WHERE server = ? AND tool = ?", (server, name),
        ).fetchone()
        calls, errors, latency, called_at, error = tuple(usage) if usage else (0, 0, 0.0, None, None)
        c.execute(
            "UPDATE tool_history SET replaced_by = ?, calls = calls + ?, errors = errors + ?,"
            " total_latency_ms = total_latency_ms + ?, last_called_at = COALESCE(?, last_called_at),"
            " last_error = COALESCE(?, last_error) WHERE id = ?",
            (t.definition_hash, calls, errors, latency, called_at, error, last["id"]),
        )
        c.execute("DELETE FROM usage WHERE server = ? AND tool = ?", (server, name))

    def awaiting_approval(self, server: str, tool: str) -> bool:
        """True when ``server``/``tool`` is in the catalog with a definition never approved
        (the call path's check under ``security.pin_definitions``: one indexed read)."""
        rows = self._query(
            "SELECT 1 FROM tools t WHERE t.server = ? AND t.name = ? AND NOT EXISTS (SELECT 1 FROM tool_approvals"
            " ap WHERE ap.server = t.server AND ap.name = t.name AND ap.definition_hash = t.definition_hash)",
            (server, tool),
        )
        return bool(rows)

    def approve(self, server: str | None = None, tool: str | None = None, *,
                definition_hash: str | None = None) -> list[StoredTool]:
        """Approve the current definition of every tool awaiting approval that matches
        (``server``, ``tool``; None: any). With ``definition_hash`` (a prefix is enough)
        a tool is approved only while its definition is still that one, so what is
        approved is what was reviewed. Returns the tools approved."""
        pending = [st for st in self.tools(server) if not st.approved and (tool is None or st.tool.name == tool)]
        if definition_hash is not None:
            pending = [st for st in pending if st.definition_hash.startswith(definition_hash.lower())]
        if not pending:
            return []
        now = time.time()
        with self.transaction() as c:
            c.executemany(
                "INSERT OR IGNORE INTO tool_approvals(server, name, definition_hash, approved_at, how)"
                " VALUES (?, ?, ?, ?, 'user')",
                [(st.tool.server, st.tool.name, st.definition_hash, now) for st in pending],
            )
            self._bump(c)
        return pending

    def approvals(self, server: str, tool: str) -> list[dict[str, Any]]:
        """The approved definition hashes of a tool, newest first, with when and how."""
        rows = self._query(
            "SELECT definition_hash, approved_at, how FROM tool_approvals WHERE server = ? AND name = ?"
            " ORDER BY approved_at DESC", (server, tool),
        )
        return [dict(r) for r in rows]

    def definition_history(self, server: str, tool: str) -> list[dict[str, Any]]:
        """Every earlier definition of a tool, newest first: the definition, when it was first
        and last seen and replaced (and by which hash), and the usage earned under it."""
        rows = self._query("SELECT * FROM tool_history WHERE server = ? AND name = ? ORDER BY id DESC",
                           (server, tool))
        return [{**dict(r), "definition": json.loads(r["definition"])} for r in rows]

    # ------------------------------------------------------------------ usage

    def record_call(self, server: str, tool: str, *, ok: bool, latency_ms: float, error: str | None = None) -> None:
        """Count one call of ``server``/``tool``; moves :meth:`usage_version`, not the catalog version."""
        with self.transaction() as c:
            self._bump(c, "usage_version")
            c.execute(
                "INSERT INTO usage(server, tool, calls, errors, total_latency_ms, last_called_at, last_error, seq)"
                " VALUES (?, ?, 1, ?, ?, ?, ?, (SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'usage_version'))"
                " ON CONFLICT(server, tool) DO UPDATE SET"
                " calls = calls + 1, errors = errors + excluded.errors,"
                " total_latency_ms = total_latency_ms + excluded.total_latency_ms,"
                " last_called_at = excluded.last_called_at,"
                " last_error = COALESCE(excluded.last_error, last_error), seq = excluded.seq",
                (server, tool, 0 if ok else 1, float(latency_ms), time.time(), None if ok else error),
            )

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

    # ------------------------------------------------------------------ resources and prompts

    def replace_resources(self, server: str, resources: Iterable[dict[str, Any]]) -> None:
        with self.transaction() as c:
            c.execute("DELETE FROM resources WHERE server = ?", (server,))
            c.executemany(
                "INSERT OR REPLACE INTO resources(server, uri, name, description, mime_type) VALUES (?, ?, ?, ?, ?)",
                [(server, r["uri"], r.get("name"), r.get("description"), r.get("mime_type")) for r in resources],
            )

    def replace_prompts(self, server: str, prompts: Iterable[dict[str, Any]]) -> None:
        with self.transaction() as c:
            c.execute("DELETE FROM prompts WHERE server = ?", (server,))
            c.executemany(
                "INSERT OR REPLACE INTO prompts(server, name, description, arguments) VALUES (?, ?, ?, ?)",
                [(server, p["name"], p.get("description"), canonical_json(p.get("arguments") or []))
                 for p in prompts],
            )

    def resources(self, server: str | None = None) -> list[dict[str, Any]]:
        sql, params = "SELECT * FROM resources", []
        if server:
            sql, params = sql + " WHERE server = ?", [server]
        return [dict(r) for r in self._query(sql + " ORDER BY server, uri", params)]

    def prompts(self, server: str | None = None) -> list[dict[str, Any]]:
        sql, params = "SELECT * FROM prompts", []
        if server:
            sql, params = sql + " WHERE server = ?", [server]
        return [
            {**dict(r), "arguments": json.loads(r["arguments"])}
            for r in self._query(sql + " ORDER BY server, name", params)
        ]


#: Whether a tool's current definition is an approved one (tool_approvals, migration 0004).
_APPROVED = ("EXISTS (SELECT 1 FROM tool_approvals ap WHERE ap.server = t.server AND ap.name = t.name"
             " AND ap.definition_hash = t.definition_hash)")

_TOOL_SELECT = (
    "SELECT t.*, s.status AS server_status, a.data AS analysis_data,"
    " COALESCE(u.calls, 0) AS calls, COALESCE(u.errors, 0) AS errors,"
    f" {_APPROVED} AS approved"
    " FROM tools t JOIN servers s ON s.name = t.server"
    " LEFT JOIN analysis a ON a.definition_hash = t.definition_hash"
    " LEFT JOIN usage u ON u.server = t.server AND u.tool = t.name"
)


def _stored(r: sqlite3.Row) -> StoredTool:
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


def _definition(r: sqlite3.Row) -> dict[str, Any]:
    """A ``tools`` row's definition as ``tool_history`` keeps it (the fields the hash covers)."""
    return {
        "title": r["title"],
        "description": r["description"],
        "input_schema": json.loads(r["input_schema"]),
        "output_schema": json.loads(r["output_schema"]) if r["output_schema"] else None,
        "annotations": json.loads(r["annotations"]) if r["annotations"] else None,
    }


def _definition_of(t: ToolDef) -> dict[str, Any]:
    return {"title": t.title, "description": t.description, "input_schema": t.input_schema,
            "output_schema": t.output_schema, "annotations": t.annotations}
