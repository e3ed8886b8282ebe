"""What agents called for the tasks jit compiled: the record selection learns from.

Mixed into :class:`~jit.catalog.store.Store` (which provides ``transaction``, ``_query``, ``_bump``,
``_lock`` and ``unreachable``). A compile's task is kept as a :class:`TaskRecord`: a random id, the
shard, the embedding model and the task's vector (its text only when ``learning.keep_task_text``
asks for it: a privacy choice), and the tools the compile put in Full. Nothing is written by the
compile itself: the task's row is written with the first call reported against it
(:meth:`LearnedCalls.record_task_call`), so a compile no call followed leaves no trace. Each
``(task, server, tool)`` is one row, whatever number of calls a session makes of the tool for that
task (``ok`` is 1 once one of them succeeded): an agent looping on a tool counts once per task,
and a call reported again (a retry after an outage, a second host) is still one row.

Writes move ``learning_version`` (a ``meta`` counter), neither the catalog version nor
``usage_version``, and each call's row keeps the value it moved to (``seq``): the compiler's
memory of past tasks (:mod:`jit.selection.learning`) reads only the calls whose ``seq`` is past
the version it last saw (:meth:`LearnedCalls.learned_since`). The version is moved first in the
writing transaction, which holds the counter's row until it commits, so writers (of this host or
another on a shared PostgreSQL catalog) commit in the order of their ``seq``: a reader that sees
version N sees every call up to N. A forget also moves ``learning_forgotten``, which makes a
reader drop what it holds.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import StoreError
from .holders import host

__all__ = ["LearnedCalls", "LearnedTask", "TaskRecord"]

log = logging.getLogger("jit.catalog.store")

#: Calls kept in memory while the catalog is unreachable, at most (the oldest are dropped past it).
MAX_WAITING_CALLS = 10_000


@dataclass(frozen=True)
class TaskRecord:
    """One compile's task as learning keeps it: written with the first call reported against it."""

    shard: str
    model: str
    #: The task's unit vector (float32) in ``model``'s space.
    vector: np.ndarray = field(repr=False)
    #: ``(server, tool)`` of the tools the compile put in Full.
    shown: tuple[tuple[str, str], ...] = ()
    #: The task's text: None unless ``learning.keep_task_text``.
    text: str | None = None
    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    created_at: float = field(default_factory=time.time)


@dataclass(frozen=True)
class LearnedTask:
    """A past task as the compiler reads it back (:meth:`LearnedCalls.learned_tasks`)."""

    id: str
    vector: np.ndarray = field(repr=False)
    created_at: float
    shown: frozenset[tuple[str, str]]
    #: ``(server, tool)`` -> 1 if a call of it for this task succeeded, else 0.
    called: dict[tuple[str, str], int]


class LearnedCalls:
    """The learning record of the :class:`~jit.catalog.store.Store` (a mixin; see the module docstring)."""

    _lock: Any
    #: Calls not yet written (the catalog was unreachable): (task, server, tool, ok, called at).
    _unlearned: list[tuple[TaskRecord, str, str, bool, float]]

    def record_task_call(self, task: TaskRecord, server: str, tool: str, *, ok: bool) -> None:
        """Record that ``server``/``tool`` was called for ``task`` (and whether it succeeded); the
        task's row is written with its first call. A catalog that cannot be written just now keeps
        the call in memory until the next one is written (a warning logged); any other refusal raises."""
        with self._lock:
            self._unlearned.append((task, server, tool, bool(ok), time.time()))
            try:
                self._write_learned()
            except StoreError as exc:
                if not self.unreachable(exc):  # type: ignore[attr-defined]
                    self._unlearned.pop()
                    raise
                del self._unlearned[:-MAX_WAITING_CALLS]
                log.warning("a call to %s/%s is learned when the catalog answers again (%d waiting): %s",
                            server, tool, len(self._unlearned), exc.message)

    def _write_learned(self) -> None:
        with self.transaction() as c:  # type: ignore[attr-defined]
            # First: the rows below carry the version this moves to (see the module docstring).
            self._bump(c, "learning_version", len(self._unlearned))  # type: ignore[attr-defined]
            written: set[str] = set()
            for task, server, tool, ok, at in self._unlearned:
                if task.id not in written:
                    written.add(task.id)
                    c.execute(
                        "INSERT INTO learned_tasks(id, shard, model, vector, shown, task_text, host, created_at)"
                        " VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO NOTHING",
                        (task.id, task.shard, task.model, np.asarray(task.vector, dtype=np.float32).tobytes(),
                         json.dumps([list(s) for s in task.shown]), task.text, host(), task.created_at))
                c.execute(
                    "INSERT INTO learned_calls(task_id, server, tool, ok, calls, called_at, seq) VALUES (?, ?, ?, ?, 1, ?,"
                    " (SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'learning_version'))"
                    " ON CONFLICT(task_id, server, tool) DO UPDATE SET"
                    " ok = CASE WHEN excluded.ok > learned_calls.ok THEN excluded.ok ELSE learned_calls.ok END,"
                    " calls = learned_calls.calls + 1, called_at = excluded.called_at, seq = excluded.seq",
                    (task.id, server, tool, int(ok), at))
        self._unlearned = []

    def learning_version(self) -> int:
        """A counter every recorded call moves."""
        return self.learning_versions()[0]

    def learning_versions(self) -> tuple[int, int]:
        """``(learning_version, learning_forgotten)`` in one read: the second moves with every forget."""
        rows = self._query(  # type: ignore[attr-defined]
            "SELECT key, value FROM meta WHERE key IN ('learning_version', 'learning_forgotten')")
        found = {str(k): int(v) for k, v in rows}
        return found.get("learning_version", 0), found.get("learning_forgotten", 0)

    def learned_tasks(self, shard: str, model: str) -> list[LearnedTask]:
        """The recorded tasks of ``shard`` whose vectors are ``model``'s, each with its calls."""
        return self.learned_since(shard, model, -1)[0]

    def learned_since(self, shard: str, model: str, version: int) -> tuple[list[LearnedTask], int]:
        """The recorded tasks of ``shard`` (``model``'s vectors) with a call recorded or changed after
        ``learning_version`` was ``version``, each with those calls only; and the highest version
        among them (``version`` if none)."""
        # The calls first, by their seq's index (SQLite keeps a CROSS JOIN's order): starting from the
        # shard's tasks would read all of them to find the few calls recorded since.
        rows = self._query(  # type: ignore[attr-defined]
            "SELECT t.id, t.vector, t.created_at, t.shown, c.server, c.tool, c.ok, c.seq FROM learned_calls c"
            " CROSS JOIN learned_tasks t WHERE c.seq > ? AND c.task_id = t.id AND t.shard = ? AND t.model = ?"
            " ORDER BY t.id", (int(version), shard, model))
        out: list[LearnedTask] = []
        for r in rows:
            if not out or out[-1].id != r[0]:
                shown = frozenset((str(s), str(n)) for s, n in json.loads(r[3]))
                out.append(LearnedTask(str(r[0]), np.frombuffer(bytes(r[1]), dtype=np.float32), float(r[2]),
                                       shown, {}))
            out[-1].called[(str(r[4]), str(r[5]))] = int(r[6])
        return out, max((int(r[7]) for r in rows), default=int(version))

    def learned_summary(self, shard: str | None = None) -> list[dict[str, Any]]:
        """What was learned, per shard and tool: the tasks it was called for successfully, the tasks
        its calls all failed for, its calls, the hosts that reported them and its last call."""
        where, params = ("WHERE t.shard = ?", (shard,)) if shard is not None else ("", ())
        rows = self._query(  # type: ignore[attr-defined]
            "SELECT t.shard, c.server, c.tool, SUM(c.ok) AS ok_tasks, SUM(1 - c.ok) AS failed_tasks,"
            " SUM(c.calls) AS calls, COUNT(DISTINCT t.host) AS hosts, MAX(c.called_at) AS last_called_at"
            f" FROM learned_calls c JOIN learned_tasks t ON t.id = c.task_id {where}"
            " GROUP BY t.shard, c.server, c.tool ORDER BY t.shard, ok_tasks DESC, c.server, c.tool", params)
        return [{"shard": r[0], "server": r[1], "tool": r[2], "ok_tasks": int(r[3]), "failed_tasks": int(r[4]),
                 "calls": int(r[5]), "hosts": int(r[6]), "last_called_at": float(r[7])} for r in rows]

    def learned_task_count(self) -> int:
        return int(self._query("SELECT COUNT(*) FROM learned_tasks")[0][0])  # type: ignore[attr-defined]

    def forget_learned(self, *, tool: str | None = None, server: str | None = None, shard: str | None = None,
                       before: float | None = None) -> int:
        """Forget what was learned: the calls of ``tool`` (a tool name; with ``server``, that server's
        only), of ``server``'s tools, of ``shard``'s tasks, or of tasks recorded ``before`` a time
        (seconds since the epoch); the conditions given all apply. Tasks left with no call go too.
        Returns the number of calls forgotten. At least one condition is required."""
        conds: list[str] = []
        task_conds: list[str] = []
        params: list[Any] = []
        for where, sql, value in ((conds, "tool = ?", tool), (conds, "server = ?", server),
                                  (task_conds, "shard = ?", shard), (task_conds, "created_at < ?", before)):
            if value is not None:
                where.append(sql)
                params.append(value)
        if not conds and not task_conds:
            raise StoreError("forgetting what was learned needs a tool, a server, a shard or an age")
        if task_conds:
            conds.append(f"task_id IN (SELECT id FROM learned_tasks WHERE {' AND '.join(task_conds)})")
        with self.transaction() as c:  # type: ignore[attr-defined]
            n = c.execute(f"DELETE FROM learned_calls WHERE {' AND '.join(conds)}", params).rowcount
            c.execute("DELETE FROM learned_tasks WHERE NOT EXISTS"
                      " (SELECT 1 FROM learned_calls c WHERE c.task_id = learned_tasks.id)")
            self._bump(c, "learning_version", 1)  # type: ignore[attr-defined]
            self._bump(c, "learning_forgotten", 1)  # type: ignore[attr-defined]
        return int(n or 0)
