"""The definition history and approvals of the catalog's tools (rug-pull bookkeeping).

Mixed into :class:`~jit.catalog.store.Store` (which provides ``transaction``, ``_query``,
``_bump`` and ``tools``), as :mod:`jit.catalog.store_servers` is for server rows.
:meth:`Store.sync_tools` calls :meth:`DefinitionHistory._record_definitions` before
it rewrites any row: a definition being replaced (or dropped) goes to ``tool_history``
with the usage earned under it; a tool's new definition hash waits for approval
(``tool_approvals``, migration 0004) unless it is the tool's first (trusted on first
use) or the harness's own. See :mod:`jit.catalog.approval` for the policy.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from typing import Any

from ..models import HARNESS_SERVER, StoredTool, SyncResult, ToolDef, canonical_json, changed_fields

__all__ = ["MAX_HISTORY_PER_SERVER", "MAX_HISTORY_PER_TOOL", "DefinitionHistory"]

#: Earlier definitions kept per tool, and per server: an upstream that changes its tools in a loop
#: (a new description at every listing) cannot grow the catalog without bound. The newest are kept;
#: the current definition, its approval and its usage are never touched.
MAX_HISTORY_PER_TOOL = 20
MAX_HISTORY_PER_SERVER = 2000


class DefinitionHistory:
    """Definition history and approvals of the :class:`~jit.catalog.store.Store` (a mixin; see the module docstring)."""

    def _same_as_stored(self, c: Any, incoming: dict[str, ToolDef], existing: dict[str, Any]) -> None:
        """Part of :meth:`sync_tools`, first: an incoming definition whose hash differs from its
        stored one only because of the order of a set-like schema list (``required``, a ``type``
        list), or empty ``annotations`` against none (:func:`_said`), is the stored one, replaced
        in ``incoming`` by it.

        JSON Schema gives those lists no order, but the hash keeps it: a server that builds
        ``required`` from a Python set lists it in another order at each start (string hashes are
        salted per process), which read as a changed definition every time: its usage moved to
        history, and under ``security.pin_definitions`` a tool withheld until approved."""
        for name, t in incoming.items():
            row = existing.get(name)
            if row is None or row["definition_hash"] == t.definition_hash:
                continue
            stored = c.execute("SELECT title, description, input_schema, output_schema, annotations FROM tools"
                               " WHERE id = ?", (row["id"],)).fetchone()
            before = _definition(stored)
            if _order_free(_said(before)) == _order_free(_said(_definition_of(t))):
                incoming[name] = ToolDef(server=t.server, name=t.name, **before)

    def _record_definitions(self, c: Any, server: str, incoming: dict[str, ToolDef],
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
                    "INSERT INTO tool_approvals(server, name, definition_hash, approved_at, how)"
                    " VALUES (?, ?, ?, ?, 'harness') ON CONFLICT DO NOTHING", (server, name, dhash, now),
                )
                continue
            if name not in rows:
                held = None if name in approved else self._held_elsewhere(c, server, t)
                if held is not None:  # a definition the catalog holds for approval under another name
                    result.changes[name] = [f"the definition awaiting approval as {held}/{name}"]
                elif name not in approved:  # never seen before: trusted on first use
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

    @staticmethod
    def _held_elsewhere(c: Any, server: str, t: ToolDef) -> str | None:
        """The server (another name) under which ``t``'s very definition was recorded and never approved.

        Trust on first use is for a definition the catalog has not judged. A pinned change awaiting
        approval whose server was renamed in the config (the old name forgotten, its definitions retired
        to the history) came back under the new name as a new tool, trusted and served, with nothing said."""
        mine = canonical_json(_definition_of(t))
        for r in c.execute("SELECT server, definition_hash, definition FROM tool_history WHERE name = ?"
                           " AND server <> ? ORDER BY id DESC", (t.name, server)).fetchall():
            if r[2] == mine and c.execute("SELECT 1 FROM tool_approvals WHERE server = ? AND name = ?"
                                          " AND definition_hash = ?", (r[0], t.name, r[1])).fetchone() is None:
                return str(r[0])
        return None

    def _retire_server(self, c: Any, server: str) -> None:
        """Every current definition of a server being forgotten goes to ``tool_history`` (its usage
        row stays, as a dropped tool's does): if the server is configured again and a tool comes
        back changed, that is a change, and the usage earned by the old text stays with the old text."""
        listed = c.execute("SELECT listed_at FROM tool_listings WHERE server = ?", (server,)).fetchone()
        now = time.time()
        for row in c.execute(
            "SELECT name, title, description, input_schema, output_schema, annotations, definition_hash, updated_at"
            " FROM tools WHERE server = ?", (server,),
        ).fetchall():
            seen = max(row["updated_at"], listed[0]) if listed else row["updated_at"]
            self._retire(c, server, row, seen, None, now)

    def _retire(self, c: Any, server: str, row: Any, last_seen: float,
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
        self._trim_history(c, server, row["name"])
        # A dropped tool keeps its usage row: if it comes back unchanged, its record stands.
        if replaced_by is not None and usage is not None:
            c.execute("DELETE FROM usage WHERE server = ? AND tool = ?", (server, row["name"]))

    @staticmethod
    def _trim_history(c: Any, server: str, name: str) -> None:
        """Drop the oldest earlier definitions past :data:`MAX_HISTORY_PER_TOOL` for the tool and
        :data:`MAX_HISTORY_PER_SERVER` for its server (ids grow with time; SQL both backends read).

        The newest record of each approved definition is kept whatever its age: while a change
        awaits approval, the role policy also judges the tool as it was last approved
        (:meth:`approved_definitions`), and an upstream churning unapproved definitions must not
        push that one out. Approved definitions are few (each is a user's approval or a first use)."""
        c.execute(
            "DELETE FROM tool_history WHERE server = ? AND name = ? AND id < (SELECT id FROM tool_history"
            f" WHERE server = ? AND name = ? ORDER BY id DESC LIMIT 1 OFFSET ?) AND NOT {_NEWEST_APPROVED}",
            (server, name, server, name, MAX_HISTORY_PER_TOOL - 1),
        )
        c.execute(
            "DELETE FROM tool_history WHERE server = ? AND id < (SELECT id FROM tool_history"
            f" WHERE server = ? ORDER BY id DESC LIMIT 1 OFFSET ?) AND NOT {_NEWEST_APPROVED}",
            (server, server, MAX_HISTORY_PER_SERVER - 1),
        )

    def _returning(self, c: Any, server: str, name: str, t: ToolDef, result: SyncResult) -> None:
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
        c.execute("UPDATE tool_history SET replaced_by = ? WHERE id = ?", (t.definition_hash, last["id"]))
        if usage is not None:
            # The usage row kept since the drop is the old text's whole record (_retire copied it
            # then; adding it again would count each call twice).
            c.execute(
                "UPDATE tool_history SET calls = ?, errors = ?, total_latency_ms = ?,"
                " last_called_at = COALESCE(?, last_called_at), last_error = COALESCE(?, last_error) WHERE id = ?",
                (*tuple(usage), last["id"]),
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
        if definition_hash is not None and len(definition_hash) < 8:
            raise ValueError(f"definition_hash must be a prefix of at least 8 characters, got {definition_hash!r}")
        pending = [st for st in self.tools(server, approved=False) if tool is None or st.tool.name == tool]
        if definition_hash is not None:
            pending = [st for st in pending if st.definition_hash.startswith(definition_hash.lower())]
        if not pending:
            return []
        now = time.time()
        with self.transaction() as c:
            c.executemany(
                "INSERT INTO tool_approvals(server, name, definition_hash, approved_at, how)"
                " VALUES (?, ?, ?, ?, 'user') ON CONFLICT DO NOTHING",
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

    def approved_definitions(self, keys: Iterable[tuple[str, str]]) -> dict[tuple[str, str], tuple[ToolDef, str]]:
        """``(server, tool) -> (definition, hash)``: the definition each tool had when it was last
        approved (its newest approved record in ``tool_history``), for the tools of ``keys`` that have
        one. A tool awaiting approval is judged by the role policy as this definition too, so that a
        change nobody approved cannot widen what a role may see or call."""
        out: dict[tuple[str, str], tuple[ToolDef, str]] = {}
        for server, name in keys:
            rows = self._query(
                "SELECT h.definition_hash, h.definition FROM tool_history h WHERE h.server = ? AND h.name = ?"
                " AND EXISTS (SELECT 1 FROM tool_approvals ap WHERE ap.server = h.server AND ap.name = h.name"
                " AND ap.definition_hash = h.definition_hash) ORDER BY h.id DESC LIMIT 1", (server, name))
            if rows:
                out[(server, name)] = (ToolDef(server=server, name=name, **json.loads(rows[0]["definition"])),
                                       rows[0]["definition_hash"])
        return out

    def definition_history(self, server: str, tool: str) -> list[dict[str, Any]]:
        """Every earlier definition of a tool, newest first: the definition, when it was first
        and last seen and replaced (and by which hash), and the usage earned under it."""
        rows = self._query("SELECT * FROM tool_history WHERE server = ? AND name = ? ORDER BY id DESC",
                           (server, tool))
        return [{**dict(r), "definition": json.loads(r["definition"])} for r in rows]


#: A ``tool_history`` row that is the newest record of an approved definition of its tool
#: (:meth:`DefinitionHistory._trim_history` keeps those).
_NEWEST_APPROVED = (
    "(EXISTS (SELECT 1 FROM tool_approvals ap WHERE ap.server = tool_history.server AND ap.name = tool_history.name"
    " AND ap.definition_hash = tool_history.definition_hash) AND tool_history.id = (SELECT MAX(h2.id)"
    " FROM tool_history h2 WHERE h2.server = tool_history.server AND h2.name = tool_history.name"
    " AND h2.definition_hash = tool_history.definition_hash))"
)


def _definition(r: Any) -> dict[str, Any]:
    """A ``tools`` row's definition as ``tool_history`` keeps it (the fields the hash covers)."""
    return {
        "title": r["title"],
        "description": r["description"],
        "input_schema": json.loads(r["input_schema"]),
        "output_schema": json.loads(r["output_schema"]) if r["output_schema"] else None,
        "annotations": json.loads(r["annotations"]) if r["annotations"] else None,
    }


#: Schema keywords whose list value is a set: its order means nothing (JSON Schema 2020-12).
_SET_KEYWORDS = frozenset({"required", "type"})


def _order_free(value: Any, key: str | None = None) -> Any:
    """``value`` with the lists of :data:`_SET_KEYWORDS` sorted, at any depth (for comparison only)."""
    if isinstance(value, dict):
        return {k: _order_free(v, k) for k, v in value.items()}
    if isinstance(value, list):
        items = [_order_free(v) for v in value]
        if key in _SET_KEYWORDS and all(isinstance(v, str) for v in items):
            return sorted(items)
        return items
    return value


def _said(definition: dict[str, Any]) -> dict[str, Any]:
    """``definition`` as far as it says anything: empty ``annotations`` are none (for comparison only).

    Discovery stores none for an object left empty once the keys MCP does not define and the ``null``
    hints are gone, but catalogs written before it hold ``{}``: a server that stopped sending an empty
    object (or a vendor key) must not read as a changed definition, its usage moved and, pinned, withheld."""
    return {**definition, "annotations": definition["annotations"] or None}


def _definition_of(t: ToolDef) -> dict[str, Any]:
    return {"title": t.title, "description": t.description, "input_schema": t.input_schema,
            "output_schema": t.output_schema, "annotations": t.annotations}
