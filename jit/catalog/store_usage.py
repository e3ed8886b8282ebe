"""The usage part of the catalog: each tool's calls, errors and latency.

Mixed into :class:`~jit.catalog.store.Store` (which provides ``transaction``, ``_query``,
``_bump``, ``_lock``, ``unreachable`` and the ``_unrecorded`` calls it sets up empty and writes
once more at ``close``). A call is counted after it ran, so a catalog that cannot be written just
then keeps the count in memory until it answers again (:meth:`CallUsage.record_call`). Counting
moves ``usage_version``, not the catalog version: a cache of the catalog sees usage apart.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from ..errors import MAX_STORED_ERROR_CHARS, StoreError, bounded

__all__ = ["CallUsage"]

log = logging.getLogger("jit.catalog.store")  # the store's logger, whichever of its parts logs


class CallUsage:
    """Call counts of the :class:`~jit.catalog.store.Store` (a mixin; see the module docstring)."""

    _lock: Any
    #: Calls not yet written (the catalog was unreachable): (server, tool) -> [calls, errors,
    #: total latency, last called at, last error]; see :meth:`record_call`.
    _unrecorded: dict[tuple[str, str], list[Any]]

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
