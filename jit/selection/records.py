"""A snapshot's tool definitions, read from the catalog when a compile first needs them.

A compile renders a few hundred candidates out of a catalog of up to 100,000
tools; reading and parsing every definition (JSON schemas included) to build a
snapshot cost most of a fresh process's first compile and most of its memory.
:class:`ToolRecords` is the snapshot's ``id -> StoredTool`` mapping with the
definitions read on first use, in batches (:meth:`ToolRecords.prefetch`), and
kept in a bounded cache that later snapshots share for the tools that did not change.

A snapshot stands for one catalog version, but a definition read later may be
newer. Each tool is read with its state (:meth:`jit.catalog.store.Store.tool_records`)
and compared with the state the snapshot holds: a tool that changed or left since
raises :class:`StaleSnapshot`, and the compile starts over on the newest snapshot
(:meth:`jit.selection.catalog_view.CatalogView.invalidate`). Usage counts are the
snapshot's own (a call since does not make the tool a different one).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import replace

from ..catalog.store import Store
from ..models import StoredTool, ToolAnalysis

__all__ = ["CACHE_SIZE", "EffectiveAnalyses", "StaleSnapshot", "ToolRecords"]

#: Definitions kept in memory per catalog view; past it the oldest half is dropped (the
#: tools of a few dozen compiles: re-reading one costs tens of microseconds).
CACHE_SIZE = 8192


class StaleSnapshot(Exception):
    """A tool of the snapshot changed or left the catalog after the snapshot was taken.

    A signal between the view and the compiler, which compiles again on a newer snapshot;
    never raised to users (after repeated races the compiler raises a SelectionError)."""

    def __init__(self, tool: int, records: ToolRecords) -> None:
        super().__init__(f"tool {tool} changed since the snapshot was taken")
        self.tool = tool
        #: The records of the snapshot that met it (CatalogView.invalidate).
        self.records = records


def _usage_of(state: tuple) -> tuple[int, int]:
    return int(state[-2]), int(state[-1])


class _Cache:
    """Definitions as read, ``id -> (tool, state)``, shared by the snapshots of one view."""

    def __init__(self, size: int = CACHE_SIZE) -> None:
        self.size = size
        self.entries: dict[int, tuple[StoredTool, tuple]] = {}
        self.lock = threading.Lock()

    def put(self, found: dict[int, tuple[StoredTool, tuple]]) -> None:
        with self.lock:
            if len(self.entries) + len(found) > self.size:
                keep = list(self.entries.items())[len(self.entries) // 2:]
                self.entries = dict(keep)
            self.entries.update(found)

    def drop(self, ids: Iterable[int]) -> None:
        with self.lock:
            for i in ids:
                self.entries.pop(i, None)


class ToolRecords(Mapping[int, StoredTool]):
    """``id -> StoredTool`` of one snapshot: the tools of ``states``, read when first asked for."""

    def __init__(self, store: Store, states: Mapping[int, tuple], cache: _Cache | None = None) -> None:
        self._store = store
        self._states = states
        self._cache = cache if cache is not None else _Cache()

    def evolve(self, states: Mapping[int, tuple], changed: Iterable[int] = (),
               read: dict[int, tuple[StoredTool, tuple]] | None = None) -> ToolRecords:
        """The records of the next snapshot: ``changed`` tools forgotten (or replaced by ``read``,
        definitions read with their states), the rest shared."""
        self._cache.drop(changed)
        if read:
            self._cache.put(read)
        return ToolRecords(self._store, states, self._cache)

    def __getitem__(self, i: int) -> StoredTool:
        state = self._states[i]
        entry = self._cache.entries.get(i)
        if entry is None:
            self.prefetch((i,))
            entry = self._cache.entries[i]
        st, read_state = entry
        if read_state[:-2] != state[:-2]:
            raise StaleSnapshot(i, self)
        usage = _usage_of(state)
        return st if (st.calls, st.errors) == usage else replace(st, calls=usage[0], errors=usage[1])

    def prefetch(self, ids: Iterable[int]) -> None:
        """Read the definitions of ``ids`` not read yet, in one query per 500."""
        entries = self._cache.entries
        missing = [i for i in ids if i not in entries and i in self._states]
        if not missing:
            return
        found = self._store.tool_records(missing)
        gone = next((i for i in missing if i not in found), None)
        self._cache.put(found)
        if gone is not None:
            raise StaleSnapshot(gone, self)

    def __iter__(self) -> Iterator[int]:
        return iter(self._states)

    def __len__(self) -> int:
        return len(self._states)

    def __contains__(self, i: object) -> bool:
        return i in self._states


class EffectiveAnalyses(Mapping[int, ToolAnalysis]):
    """``id -> ToolAnalysis`` as the selection sees it (``effective``, usually
    :func:`jit.analysis.analyze.effective_tool`'s), computed on first use from ``records``."""

    def __init__(self, records: ToolRecords, effective: Callable[[StoredTool], ToolAnalysis],
                 known: dict[int, ToolAnalysis] | None = None) -> None:
        self._records = records
        self._effective = effective
        self._known: dict[int, ToolAnalysis] = known if known is not None else {}

    def evolve(self, records: ToolRecords, changed: Iterable[int] = (),
               computed: dict[int, ToolAnalysis] | None = None, *, keep: bool = True) -> EffectiveAnalyses:
        """The analyses of the next snapshot: ``changed`` tools' replaced by ``computed`` (or
        forgotten); ``keep=False`` forgets all (the config's view of every tool changed)."""
        known = {k: v for k, v in self._known.items() if k in records} if keep else {}
        for i in changed:
            known.pop(i, None)
        if computed:
            known.update((i, a) for i, a in computed.items() if i in records)
        if len(known) > CACHE_SIZE:
            known = dict(list(known.items())[len(known) // 2:])
        return EffectiveAnalyses(records, self._effective, known)

    def __getitem__(self, i: int) -> ToolAnalysis:
        a = self._known.get(i)
        if a is None:
            a = self._known[i] = self._effective(self._records[i])
        return a

    def __iter__(self) -> Iterator[int]:
        return iter(self._records)

    def __len__(self) -> int:
        return len(self._records)

    def __contains__(self, i: object) -> bool:
        return i in self._records


def heads_of(records: Iterable[StoredTool]) -> dict[int, tuple[str, str]]:
    """``id -> (server, name)``: what a snapshot keeps of every tool without its definition."""
    return {st.id: (st.tool.server, st.tool.name) for st in records}
