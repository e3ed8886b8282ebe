"""The servers part of the catalog: registration, owners, statuses and who holds them.

Mixed into :class:`~jit.catalog.store.Store` (which provides ``transaction``, ``_query``,
``_bump`` and ``_delete_tool_rows``). Two concerns live here because both are
about server rows shared by several configs and processes:

* **Owners** (``server_owners``): see :mod:`jit.catalog.ownership`.
* **Status holders** (``server_holds``, ``holders``): a ``connecting`` or
  ``connected`` status is written with the process that holds the connection
  (:mod:`jit.catalog.holders`). ``servers.status`` is the summary of the live holds (a
  connection any live process has wins), else the last status written. So a
  ``jit sync`` that connects and closes while ``jit serve`` holds the same
  server leaves it ``connected``, and a process killed with its servers
  connected leaves statuses that read ``idle`` ("last holder pid N exited
  without closing") once anyone reads them (:meth:`ServerCatalog._settle_statuses`).
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..errors import MAX_STORED_ERROR_CHARS, ServerNotRegisteredError, StoreError, bounded
from ..models import HARNESS_SERVER, ServerRecord, ServerStatus, canonical_json
from . import holders

__all__ = ["Reconciled", "ServerCatalog"]

log = logging.getLogger(__name__)

_HELD = (ServerStatus.CONNECTING.value, ServerStatus.CONNECTED.value)


@dataclass
class Reconciled:
    """What one sync did to servers its config does not configure (the result of
    :meth:`ServerCatalog.reconcile_owner`)."""

    #: Forgotten with their tools (their analyses go when no tool refers to them).
    removed: list[str] = field(default_factory=list)
    #: Kept because another config configures them: server -> those configs.
    kept: dict[str, list[str]] = field(default_factory=dict)
    #: Kept because no config is recorded for them (synced before jit recorded owners).
    unowned: list[str] = field(default_factory=list)
    #: Servers this config configures that other configs configure too: server -> those configs.
    shared: dict[str, list[str]] = field(default_factory=dict)


class ServerCatalog:
    """Server rows of the :class:`~jit.catalog.store.Store` (a mixin; see the module docstring)."""

    #: Server names reads are limited to; None: every server (see :meth:`set_scope`).
    scope: frozenset[str] | None = None

    # ------------------------------------------------------------------ scope

    def set_scope(self, servers: Iterable[str] | None) -> None:
        """Limit tool and server reads (``tools``, ``tool``, ``tool_states``, ``servers``,
        ``server``, pending analysis and embedding, vectors) to ``servers``; None lifts it.

        What a config's commands see (:func:`jit.catalog.ownership.open_catalog`). Writes
        and :meth:`reconcile_owner` are never limited."""
        self.scope = None if servers is None else frozenset(servers)

    def _scope_sql(self, column: str) -> tuple[str, list[str]]:
        """``(column IN (...), names)`` for the scope, or ``("1 = 1", [])`` without one."""
        if self.scope is None:
            return "1 = 1", []
        names = sorted(self.scope)
        return f"{column} IN ({','.join('?' * len(names))})", names

    # ------------------------------------------------------------------ registration

    def ensure_server(self, name: str, transport: str, *, owner: str | None = None) -> None:
        """Register a configured server (status ``unknown`` if new), and ``owner`` as a config
        that configures it (:func:`jit.catalog.ownership.config_identity`)."""
        with self.transaction() as c:
            c.execute(
                "INSERT INTO servers(name, transport) VALUES (?, ?) "
                "ON CONFLICT(name) DO UPDATE SET transport = excluded.transport",
                (name, transport),
            )
            if owner is not None and name != HARNESS_SERVER:
                c.execute("INSERT INTO server_owners(server, config, claimed_at) VALUES (?, ?, ?)"
                          " ON CONFLICT DO NOTHING", (name, owner, time.time()))

    def remove_server(self, name: str) -> None:
        """Forget a server and all its tools, whichever config owns it."""
        with self.transaction() as c:
            self._forget(c, name)

    def _forget(self, c: Any, name: str) -> None:
        self._retire_server(c, name)  # jit/catalog/store_history.py: a definition is never lost unrecorded
        ids = [r[0] for r in c.execute("SELECT id FROM tools WHERE server = ?", (name,))]
        self._delete_tool_rows(c, ids)
        c.execute("DELETE FROM servers WHERE name = ?", (name,))
        self._bump(c)

    # ------------------------------------------------------------------ owners

    def server_owners(self) -> dict[str, list[str]]:
        """Every server (scope ignored) -> the configs recorded as configuring it, sorted."""
        out: dict[str, list[str]] = {r[0]: [] for r in self._query("SELECT name FROM servers ORDER BY name")}
        for r in self._query("SELECT server, config FROM server_owners ORDER BY server, config"):
            out.setdefault(r[0], []).append(r[1])
        return out

    def reconcile_owner(self, owner: str, configured: Iterable[str], *, forget_foreign: bool = False) -> Reconciled:
        """One config's sync, in one transaction: claim the servers it configures, drop its
        claim on the others, and forget a server once no config claims it any more.

        Servers another config claims are kept, and so are servers nobody claims
        (rows from before owners were recorded): they may be another config's. With
        ``forget_foreign`` every server ``owner`` does not configure is forgotten.
        The harness pseudo-server is never touched.
        """
        configured = set(configured)
        result = Reconciled()
        now = time.time()
        with self.transaction() as c:
            owners: dict[str, set[str]] = {r[0]: set() for r in c.execute("SELECT name FROM servers")}
            for server, config in c.execute("SELECT server, config FROM server_owners"):
                owners.setdefault(server, set()).add(config)
            for name in sorted(owners):
                if name == HARNESS_SERVER:
                    continue
                claims = owners[name]
                if name in configured:
                    if owner not in claims:
                        c.execute("INSERT INTO server_owners(server, config, claimed_at) VALUES (?, ?, ?)"
                                  " ON CONFLICT DO NOTHING", (name, owner, now))
                    if claims - {owner}:
                        result.shared[name] = sorted(claims - {owner})
                    continue
                others = sorted(claims - {owner})
                if forget_foreign or (owner in claims and not others):
                    self._forget(c, name)
                    result.removed.append(name)
                    continue
                if owner in claims:
                    c.execute("DELETE FROM server_owners WHERE server = ? AND config = ?", (name, owner))
                if others:
                    result.kept[name] = others
                else:
                    result.unowned.append(name)
        return result

    # ------------------------------------------------------------------ statuses

    def set_server_status(
        self,
        name: str,
        status: ServerStatus,
        *,
        error: str | None = None,
        server_name: str | None = None,
        server_version: str | None = None,
        protocol_version: str | None = None,
        capabilities: dict[str, Any] | None = None,
        instructions: str | None = None,
        hold: bool = True,
    ) -> None:
        """Record a status transition by this process (and, on connect, what the server reported).

        ``connecting``/``connected`` make this process a holder of the server
        (``hold=False``: a status no process holds, e.g. the harness's). Any other
        status ends this process's hold; while another live process still holds
        the server, the summary stays that process's status and this write's
        status and error are not applied (they are about this process's connection).
        """
        now = time.time()
        me = holders.current()
        held = hold and status.value in _HELD
        error = None if error is None else bounded(error, MAX_STORED_ERROR_CHARS)  # a server's text, bounded
        with self.transaction() as c:
            row = c.execute("SELECT status FROM servers WHERE name = ?", (name,)).fetchone()
            if row is None:
                raise ServerNotRegisteredError(f"unknown server {name!r}; call ensure_server first", server=name)
            if held:
                self._register_holder(c, me, now)
                c.execute(
                    "INSERT INTO server_holds(server, holder, status, since) VALUES (?, ?, ?, ?)"
                    " ON CONFLICT(server, holder) DO UPDATE SET status = excluded.status, since = excluded.since",
                    (name, me.id, status.value, now),
                )
            else:
                c.execute("DELETE FROM server_holds WHERE server = ? AND holder = ?", (name, me.id))
            others = [h for h in self._live_holds(c, name) if h[0] != me.id]
            best = _best(others)
            if best is not None and (not held or (status is ServerStatus.CONNECTING and best[1] == "connected")):
                value, holder, applies = best[1], best[0], False
            else:
                value, holder, applies = status.value, me.id if held else None, True
            # This host's own view (migration 0007): a status it cannot apply because only
            # processes on other hosts hold the server is true for this host alone.
            own = None
            if not applies and not held and all(_host_of(h[0]) != me.host for h in others):
                own = status.value
            changed = self._set_own_status(c, name, me.host, own, error, now)
            changed |= row["status"] != value
            c.execute(
                "UPDATE servers SET status = ?, status_holder = ?, status_note = NULL,"
                " status_changed_at = CASE WHEN ? THEN ? ELSE status_changed_at END WHERE name = ?",
                (value, holder, changed, now, name),
            )
            if applies:
                c.execute(
                    "UPDATE servers SET"
                    " last_error = CASE WHEN ? IS NOT NULL THEN ? WHEN ? = 'connected' THEN NULL ELSE last_error END,"
                    " last_seen = CASE WHEN ? = 'connected' THEN ? ELSE last_seen END WHERE name = ?",
                    (error, error, value, value, now, name),
                )
            if server_name is not None or capabilities is not None:
                c.execute(
                    "UPDATE servers SET server_name = ?, server_version = ?, protocol_version = ?,"
                    " capabilities = ?, instructions = ? WHERE name = ?",
                    (server_name, server_version, protocol_version, canonical_json(capabilities or {}),
                     instructions, name),
                )
            if changed:
                self._bump(c)

    def _set_own_status(self, c: Any, name: str, host: str, status: str | None, error: str | None,
                        now: float) -> bool:
        """Record (or, with None, clear) ``host``'s own status of ``name``; True if it changed."""
        before = c.execute("SELECT status FROM server_host_status WHERE server = ? AND host = ?",
                           (name, host)).fetchone()
        if status is None:
            if before is not None:
                c.execute("DELETE FROM server_host_status WHERE server = ? AND host = ?", (name, host))
            return before is not None
        c.execute(
            "INSERT INTO server_host_status(server, host, status, last_error, since) VALUES (?, ?, ?, ?, ?)"
            " ON CONFLICT(server, host) DO UPDATE SET status = excluded.status, last_error = excluded.last_error,"
            " since = excluded.since", (name, host, status, error, now),
        )
        return before is None or before[0] != status

    def _own_statuses(self) -> dict[str, tuple[str, str | None]]:
        """``server -> (status, last_error)`` this host keeps apart from the shared status."""
        rows = self._query("SELECT server, status, last_error FROM server_host_status WHERE host = ?",
                           (holders.host(),))
        return {r[0]: (r[1], r[2]) for r in rows}

    def touch_server(self, name: str) -> None:
        """Mark the server as seen now (a successful ping or call); also this process's heartbeat."""
        now = time.time()
        with self.transaction() as c:
            c.execute("UPDATE servers SET last_seen = ? WHERE name = ?", (now, name))
            c.execute("UPDATE holders SET heartbeat = ? WHERE id = ?", (now, holders.current().id))

    def held_status(self, name: str) -> ServerStatus | None:
        """This process's own hold on ``name`` (``connecting``/``connected``), None if it holds none."""
        rows = self._query("SELECT status FROM server_holds WHERE server = ? AND holder = ?",
                           (name, holders.current().id))
        return ServerStatus(rows[0][0]) if rows else None

    def release_holder(self) -> None:
        """Forget this process as a holder once it holds nothing (a closing client manager)."""
        me = holders.current().id
        with self.transaction() as c:
            c.execute("DELETE FROM holders WHERE id = ? AND NOT EXISTS (SELECT 1 FROM server_holds WHERE holder = ?)",
                      (me, me))

    def _register_holder(self, c: Any, me: holders.Holder, now: float) -> None:
        c.execute(
            "INSERT INTO holders(id, host, pid, started_at, heartbeat, command) VALUES (?, ?, ?, ?, ?, ?)"
            " ON CONFLICT(id) DO UPDATE SET heartbeat = excluded.heartbeat",
            (me.id, me.host, me.pid, now, now, " ".join(sys.argv)[:300]),
        )

    def _live_holds(self, c: Any, name: str) -> list[tuple[str, str]]:
        """``(holder, status)`` of the live holds on ``name``; dead holders' rows are deleted."""
        rows = c.execute(
            "SELECT h.holder, h.status, p.heartbeat FROM server_holds h LEFT JOIN holders p ON p.id = h.holder"
            " WHERE h.server = ?", (name,),
        ).fetchall()
        live = []
        for holder_id, status, heartbeat in rows:
            h = holders.parse(holder_id)
            if h is not None and holders.is_alive(h, heartbeat):
                live.append((holder_id, status))
            else:
                c.execute("DELETE FROM server_holds WHERE server = ? AND holder = ?", (name, holder_id))
        return live

    def _settle_statuses(self) -> None:
        """Correct statuses whose holder is gone: the one place a read writes.

        Cheap when nothing is held (two small queries). A server whose recorded
        holder died reads the best remaining live hold, else ``idle`` (it answered
        at ``last_seen``) or ``unknown`` (never answered), with a note naming the
        process that exited. The correction is written, so every later read (and
        every SQL filter on status) agrees, and the catalog version moves.
        """
        held = self._query("SELECT name, status_holder FROM servers WHERE status IN ('connecting', 'connected')"
                           " AND status_holder IS NOT NULL")
        holds = self._query("SELECT server, holder FROM server_holds")
        if not held and not holds:
            return
        beats = {r[0]: r[1] for r in self._query("SELECT id, heartbeat FROM holders")}
        alive: dict[str, bool] = {}

        def gone(holder_id: str) -> bool:
            if holder_id not in alive:
                h = holders.parse(holder_id)
                alive[holder_id] = h is not None and holders.is_alive(h, beats.get(holder_id))
            return not alive[holder_id]

        suspects = {name for name, holder_id in held if gone(holder_id)}
        suspects |= {server for server, holder_id in holds if gone(holder_id)}
        if not suspects:
            return
        now = time.time()
        try:
            with self.transaction() as c:
                changed = False
                for name in sorted(suspects):
                    changed |= self._settle(c, name, now)
                c.execute("DELETE FROM holders WHERE id NOT IN (SELECT holder FROM server_holds)"
                          " AND id NOT IN (SELECT status_holder FROM servers WHERE status_holder IS NOT NULL)")
                if changed:
                    self._bump(c)
        except StoreError as exc:  # a read-only catalog: the read goes on with the statuses as recorded
            log.warning("could not correct the status of servers whose holder exited (%s): %s",
                        ", ".join(sorted(suspects)), exc.message)

    def _settle(self, c: Any, name: str, now: float) -> bool:
        row = c.execute("SELECT status, status_holder, last_seen FROM servers WHERE name = ?", (name,)).fetchone()
        if row is None:
            return False
        best = _best(self._live_holds(c, name))
        note = None
        if best is not None:
            holder, value = best
        elif row["status"] in _HELD and row["status_holder"]:
            h = holders.parse(row["status_holder"])
            heartbeat = c.execute("SELECT heartbeat FROM holders WHERE id = ?", (row["status_holder"],)).fetchone()
            if h is not None and holders.is_alive(h, heartbeat[0] if heartbeat else None):
                return False
            holder = row["status_holder"]
            value = ServerStatus.IDLE.value if row["last_seen"] is not None else ServerStatus.UNKNOWN.value
            who = h.describe() if h is not None else holder
            note = f"last holder {who} exited without closing its connection"
        else:
            return False
        if (value, holder) == (row["status"], row["status_holder"]):
            return False
        c.execute(
            "UPDATE servers SET status = ?, status_holder = ?, status_note = ?,"
            " status_changed_at = CASE WHEN status != ? THEN ? ELSE status_changed_at END WHERE name = ?",
            (value, holder, note, value, now, name),
        )
        return row["status"] != value

    # ------------------------------------------------------------------ reads

    def servers(self, *, everything: bool = False) -> list[ServerRecord]:
        """The servers in scope (``everything``: all of them), by name, statuses settled."""
        self._settle_statuses()
        where, params = ("1 = 1", []) if everything else self._scope_sql("name")
        own = self._own_statuses()
        return [_server(r, own.get(r["name"]))
                for r in self._query(f"SELECT * FROM servers WHERE {where} ORDER BY name", params)]

    def server_statuses(self) -> dict[str, tuple[ServerStatus, float | None]]:
        """``name -> (status, last_seen)`` of the servers in scope, statuses settled: what the
        selection reads of a server, without parsing the rest (:meth:`servers`)."""
        self._settle_statuses()
        where, params = self._scope_sql("name")
        rows = self._query(f"SELECT name, status, last_seen FROM servers WHERE {where}", params)
        own = self._own_statuses()
        return {r[0]: (ServerStatus(own[r[0]][0] if r[0] in own else r[1]), r[2]) for r in rows}

    def server(self, name: str, *, everything: bool = False) -> ServerRecord | None:
        """One server, None if unknown or (unless ``everything``) out of scope."""
        if not everything and self.scope is not None and name not in self.scope:
            return None
        self._settle_statuses()
        rows = self._query("SELECT * FROM servers WHERE name = ?", (name,))
        return _server(rows[0], self._own_statuses().get(name)) if rows else None

    # ------------------------------------------------------------------ resources and prompts

    def replace_resources(self, server: str, resources: Iterable[dict[str, Any]]) -> None:
        with self.transaction() as c:
            c.execute("DELETE FROM resources WHERE server = ?", (server,))
            c.executemany(
                "INSERT INTO resources(server, uri, name, description, mime_type) VALUES (?, ?, ?, ?, ?)"
                " ON CONFLICT(server, uri) DO UPDATE SET name = excluded.name, description = excluded.description,"
                " mime_type = excluded.mime_type",
                [(server, r["uri"], r.get("name"), r.get("description"), r.get("mime_type")) for r in resources],
            )

    def replace_prompts(self, server: str, prompts: Iterable[dict[str, Any]]) -> None:
        with self.transaction() as c:
            c.execute("DELETE FROM prompts WHERE server = ?", (server,))
            c.executemany(
                "INSERT INTO prompts(server, name, description, arguments) VALUES (?, ?, ?, ?)"
                " ON CONFLICT(server, name) DO UPDATE SET description = excluded.description,"
                " arguments = excluded.arguments",
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


def _best(holds: list[tuple[str, str]]) -> tuple[str, str] | None:
    """The hold the summary shows: a connected one before a connecting one (then by holder id)."""
    if not holds:
        return None
    return min(holds, key=lambda h: (h[1] != ServerStatus.CONNECTED.value, h[0]))


def _host_of(holder_id: str) -> str | None:
    h = holders.parse(holder_id)
    return h.host if h is not None else None


def _server(r: Any, own: tuple[str, str | None] | None = None) -> ServerRecord:
    """A ``servers`` row; ``own``: this host's own ``(status, last_error)``, which it reads instead."""
    holder = holders.parse(r["status_holder"]) if r["status"] in _HELD else None
    note = r["status_note"]
    if own is not None:
        who = holder.describe() if holder is not None else "another host"
        note = f"{own[0]} from this host ({holders.host()}); {r['status']} for {who}"
        holder = None
    return ServerRecord(
        name=r["name"],
        transport=r["transport"],
        status=ServerStatus(own[0] if own is not None else r["status"]),
        status_changed_at=r["status_changed_at"],
        last_seen=r["last_seen"],
        last_error=own[1] if own is not None and own[1] is not None else r["last_error"],
        server_name=r["server_name"],
        server_version=r["server_version"],
        protocol_version=r["protocol_version"],
        capabilities=json.loads(r["capabilities"] or "{}"),
        instructions=r["instructions"],
        holder=holder.describe() if holder is not None else None,
        note=note,
    )
