"""The tools part of the catalog: definitions by hash, every read of them, and their analyses.

Mixed into :class:`~jit.catalog.store.Store` (which provides ``transaction``, ``_query`` and
``_bump``; ``_scope_sql``, ``_settle_statuses``, ``ensure_server`` and ``set_server_status`` come
from :class:`~jit.catalog.store_servers.ServerCatalog`, ``_same_as_stored`` and
``_record_definitions`` from :class:`~jit.catalog.store_history.DefinitionHistory`, ``_drop_vector``
from :class:`~jit.catalog.store_vectors.VectorStore`). A tool is stored by its definition hash
and its search text's hash: a definition seen before keeps its analysis, a text seen before its
vector. Every read of a tool comes with its server's status as this host sees it, its usage and
whether its definition is approved (:data:`_TOOL_SELECT`), limited to the store's scope.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from ..errors import ServerNotRegisteredError, StoreError
from ..models import ServerStatus, StoredTool, SyncResult, ToolAnalysis, ToolDef, ToolState, canonical_json
from . import holders

__all__ = ["ToolCatalog", "text_hash"]


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class ToolCatalog:
    """Tools and analyses of the :class:`~jit.catalog.store.Store` (a mixin; see the module docstring)."""

    scope: frozenset[str] | None

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


def _records_of(rows: Iterable[Any]) -> dict[int, tuple[StoredTool, ToolState]]:
    """``id -> (tool, state)`` of :data:`_TOOL_SELECT` rows (:meth:`ToolCatalog.tool_records`)."""
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
