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
from ..errors import ToolNotFoundError
from ..models import StoredTool, ToolAnalysis, ToolState
from .scored_tool import ScoredTool

__all__ = ["CACHE_SIZE", "CandidateReader", "EffectiveAnalyses", "StaleSnapshot", "ToolRecords"]

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


class _Cache:
    """Definitions as read, ``id -> (tool, state)``, shared by the snapshots of one view."""

    def __init__(self, size: int = CACHE_SIZE) -> None:
        self.size = size
        self.entries: dict[int, tuple[StoredTool, ToolState]] = {}
        self.lock = threading.Lock()

    def put(self, found: dict[int, tuple[StoredTool, ToolState]]) -> None:
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

    def __init__(self, store: Store, states: Mapping[int, ToolState], cache: _Cache | None = None) -> None:
        self._store = store
        self._states = states
        self._cache = cache if cache is not None else _Cache()

    def evolve(self, states: Mapping[int, ToolState], changed: Iterable[int] = (),
               read: dict[int, tuple[StoredTool, ToolState]] | None = None) -> ToolRecords:
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
        if read_state.changed_since(state):
            raise StaleSnapshot(i, self)
        calls, errors = int(state.calls), int(state.errors)
        return st if (st.calls, st.errors) == (calls, errors) else replace(st, calls=calls, errors=errors)

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

    def narrowed(self, ids: Iterable[int]) -> ToolRecords:
        """The records of ``ids`` alone, with the same states and cache: what a tool set keeps to
        read its candidates later without keeping the snapshot's states of every tool alive."""
        return ToolRecords(self._store, {i: self._states[i] for i in ids}, self._cache)

    def current(self, i: int) -> StoredTool | None:
        """Tool ``i`` as the catalog holds it now (None: it left), whatever the snapshot held."""
        found = self._store.tool_records((i,)).get(i)
        return found[0] if found is not None else None


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
        if len(known) > CACHE_SIZE:  # the newest half of a cache's worth: a first build computes every tool's
            known = dict(list(known.items())[-(CACHE_SIZE // 2):])
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

    @property
    def effective(self) -> Callable[[StoredTool], ToolAnalysis]:
        """How an analysis is computed from a definition (nothing remembered)."""
        return self._effective

    def __contains__(self, i: object) -> bool:
        return i in self._records


#: Candidates a compile reads at once when one of them is first asked for (:class:`CandidateReader`).
READ_BATCH = 16


class CandidateReader:
    """Reads a compile's candidates' definitions when first asked for, a batch at a time.

    A compile scores and tiers its few hundred candidates from what the snapshot holds, and
    fitting the token budget measures those it may render, best first, until the budget is
    spent: most candidates are never rendered and need no definition. ``order`` is the order
    the budget visits them in, so a miss reads the next :data:`READ_BATCH` unread candidates
    in that order in one query. A read that finds a tool changed since the snapshot raises
    :class:`StaleSnapshot` (the compiler compiles again on a newer snapshot).

    ``complete(st, analysis)`` gives a candidate's summary and facts makers once its
    definition is read (``analysis(st)``: its effective analysis, asked only if they are). After :meth:`seal` (the compile is done) the reader keeps only the
    unread candidates' records; reading one later finds the definition the compile saw, or,
    if the tool changed since, the catalog's current one (a tool that left raises
    :class:`~jit.errors.ToolNotFoundError`)."""

    def __init__(self, records: ToolRecords, analyses: EffectiveAnalyses,
                 complete: Callable[[StoredTool, Callable[[StoredTool], ToolAnalysis | None]],
                                    tuple[Callable[[], str], Callable[[], dict]]]) -> None:
        self._records = records
        self._analysis: Callable[[StoredTool], ToolAnalysis | None] = lambda st: analyses.get(st.id)
        self._complete = complete
        self._order: list[ScoredTool] = []
        self._next = 0
        self._sealed = False

    def order(self, candidates: Iterable[ScoredTool]) -> None:
        """The order batches are read in (the budget's)."""
        self._order = [s for s in candidates if not s.loaded]
        self._next = 0

    def load(self, s: ScoredTool) -> None:
        """Read ``s`` and, while the compile runs, the next unread candidates in order."""
        if self._sealed:
            self._load_late(s)
            return
        batch = [s]
        while len(batch) < READ_BATCH and self._next < len(self._order):
            t = self._order[self._next]
            self._next += 1
            if not t.loaded and t is not s:
                batch.append(t)
        self.fetch(batch)

    def fetch(self, candidates: Iterable[ScoredTool]) -> None:
        """Read the definitions of ``candidates`` not read yet, in one query."""
        todo = [s for s in candidates if not s.loaded]
        if not todo:
            return
        records = self._records
        records.prefetch([s.id for s in todo])
        for s in todo:
            st = records[s.id]
            s.attach(st, *self._complete(st, self._analysis))

    def seal(self, candidates: Iterable[ScoredTool], analyses: EffectiveAnalyses,
             complete: Callable[[StoredTool, Callable[[StoredTool], ToolAnalysis | None]],
                                tuple[Callable[[], str], Callable[[], dict]]]) -> None:
        """The compile is done: keep the unread ``candidates``' records alone, ``analyses``' way of
        computing one and a ``complete`` that holds no snapshot (not the snapshot's states or
        remembered analyses: a tool set keeps no snapshot alive)."""
        self._order = [s for s in candidates if not s.loaded]
        self._records = self._records.narrowed(s.id for s in self._order)
        self._analysis: Callable[[StoredTool], ToolAnalysis | None] = analyses.effective
        self._complete = complete
        self._sealed = True

    def _load_late(self, asked: ScoredTool) -> None:
        """After the compile: every unread candidate at once (one who asks for one asks for more)."""
        records = self._records
        try:
            records.prefetch([s.id for s in self._order if not s.loaded])
        except StaleSnapshot:
            pass  # read one by one below
        for s in self._order:
            if s.loaded:
                continue
            newer = False
            try:
                st = records[s.id]
            except StaleSnapshot:  # changed or left since the compile: the catalog's definition now
                found = records.current(s.id)
                if found is None:
                    if s is asked:
                        raise ToolNotFoundError(
                            f"{s.server}/{s.tool_name} left the catalog after the tool set was compiled; "
                            "compile again", server=s.server, tool=s.tool_name) from None
                    continue  # raised when it is asked for
                st, newer = found, True
            s.attach(st, *self._complete(st, self._analysis), newer=newer)


def heads_of(records: Iterable[StoredTool]) -> dict[int, tuple[str, str]]:
    """``id -> (server, name)``: what a snapshot keeps of every tool without its definition."""
    return {st.id: (st.tool.server, st.tool.name) for st in records}
