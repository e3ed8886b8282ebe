"""The catalog as the compiler sees it: one snapshot per catalog version, kept up to date incrementally.

A :class:`CatalogView` turns the store into :class:`CatalogSnapshot` s: the
tools' states and names (their definitions and effective analyses read on first use,
:mod:`jit.selection.records`), the label index, the retrieval index (dense matrix +
BM25), the classes of tool facts asserted into the Datalog engine
(:mod:`jit.selection.classes`) and the per-tool facts the rules derive from them. :class:`~jit.selection.compiler.Compiler` asks for the current snapshot
on every compile and scores against it; this module is the only place that
knows when a snapshot is stale and what to redo.

- **Catalog changes** move ``Store.catalog_version()``: every tool's state is
  read, only tools whose state changed are reloaded, their facts diffed into
  the engine (retract / assert) and their per-tool derived facts (``blocked``,
  ``offline``, ``tier_cap``, ``usage_points``, ``penalty_points``, and per shard ``shard_points``
  and ``skeleton``) asked again with the tool bound; the rest is kept. The
  retrieval index is rebuilt only when a definition or a vector changed. Per-tool
  derived facts are assumed to depend on the tool's own facts and on
  ``server_status`` of its server (true of any rule that joins through
  ``tool(T, Server, Name)``).
- **Tool calls** move ``Store.usage_version()`` only: the called tools' usage
  facts are diffed and only the predicates that read ``usage``
  (``RuleSet.dependents``) asked again; the catalog is not scanned.
- **A new process** starts from the view file the last build wrote
  (:mod:`jit.selection.viewfile`) and its index file: the classes are asserted and their rows asked,
  no definition is read; a file older than the catalog is brought up to date as
  any older snapshot is. A definition read later that no longer matches its
  snapshot's state raises :class:`~jit.selection.records.StaleSnapshot`, and
  :meth:`CatalogView.invalidate` makes the next snapshot compare every state.

A published snapshot is immutable: a frozen dataclass whose containers are
built before it is published and never written afterwards. What a compile
computes lazily from it lives in its :class:`SnapshotMemo`: explicit memo
tables, pure functions of the snapshot, that only gain entries. They are lazy
because filling them up front would cost every build work most catalogs never
need (token costs per tool, tier and format; shard tables of shards no task
asks for). The engine holds exactly one snapshot's facts, the newest, so a
shard table is memoised only for the published snapshot.

The engine's facts and the snapshot change together under the view's lock;
every pyDatalog call runs on the :class:`~jit.selection.logic.LogicEngine`'s own thread,
so :meth:`CatalogView.snapshot` may be called from any number of threads.

The view and index files a build leaves for the next process are written by a
:class:`_FileWriter`, on a thread of its own: the compile that found the catalog
changed does not wait for them (at 100,000 tools that compile took 1.9 s with
them, 1.25 s without). What they hold is taken on the building thread;
:meth:`CatalogView.close` (and a process's exit) waits for them.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from .. import process
from ..analysis.analyze import effective_tool
from ..analysis.offline_analyzer import OfflineAnalyzer
from ..catalog.approval import PIN_REASON
from ..catalog.store import Store
from ..config import Config
from ..models import ServerStatus, StoredTool, ToolAnalysis, ToolState
from .classes import (
    DERIVED,
    SHARD_PREDICATES,
    TASK_TABLES,
    TOOL_PREDICATES,
    Classes,
    Globals,
    abstract,
    check_task_tables,
    class_arrays,
    server_marks,
    tool_facts,
)
from .indexcache import IndexCache, index_key
from .logic import Fact, LogicEngine, RuleSet
from .records import CACHE_SIZE, EffectiveAnalyses, ToolRecords
from .render import rendered_names, tool_summary
from .retrieve import RetrievalIndex, lexical_text
from .toolset import Tier
from .viewfile import SavedView, ViewFiles, view_key

__all__ = ["TASK_TABLES", "CatalogSnapshot", "CatalogView", "ShardTables", "SnapshotMemo", "merge_points"]

log = logging.getLogger(__name__)

LABEL_KINDS = ("capability", "category", "domain")
_TIER_BY_NAME = {t.value: t for t in Tier}
#: ``(ids, matrix)`` of a catalog whose vectors are not this view's model's: none to use.
_NO_VECTORS = (np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.float32))
#: One shard's derived tables: tool -> shard points, and tool -> the skeleton slots it may fill.
ShardTables = tuple[dict[int, int], dict[int, tuple[str, ...]], dict[int, tuple[str, ...]]]


@dataclass
class SnapshotMemo:
    """What compiles compute from one snapshot, kept for the next compile.

    Each table only gains entries, and each entry is a pure function of the
    snapshot, so two threads racing to fill one store equal values (plain dict
    writes: atomic). The two tables that are expensive to fill, ``shards`` and
    ``labels``, are filled once under the view's lock. A snapshot built after tool
    calls only shares with its predecessor the tables that do not depend on usage.
    """

    #: Shard -> its derived tables (:meth:`CatalogView.shard_tables`).
    shards: dict[str, ShardTables] = field(default_factory=dict)
    #: Tool id -> its one-line summary (depends on the definition and analysis).
    summaries: dict[int, str] = field(default_factory=dict)
    #: (id, tier, format, offline) -> estimated tokens (depends on the definition and the tool's name).
    costs: dict[tuple, int] = field(default_factory=dict)
    #: Tool id -> the facts an explanation shows (depends on the tool's state, usage included).
    explain_facts: dict[int, dict[str, Any]] = field(default_factory=dict)
    #: ``class_of`` as arrays (:func:`class_arrays`), for passes over every tool.
    class_arrays: tuple[np.ndarray, np.ndarray] | None = None
    #: Shard -> rows its policy denies (:meth:`CatalogView.denied_rows`), None when none are.
    denied_rows: dict[str, np.ndarray | None] = field(default_factory=dict)
    #: Name as the model sees it -> tool id (:meth:`CatalogView.tool_named`).
    by_name: dict[str, int] | None = None
    #: ``(server, tool)`` -> tool id (:meth:`CatalogView.tool_id`).
    by_head: dict[tuple[str, str], int] | None = None
    #: A policy ``file_step`` -> the rows of the tools that may do it, nearest to its text first
    #: (:meth:`jit.selection.compiler.Compiler._file_step_tools`; depends on labels and tier caps).
    file_steps: dict[tuple[str, str, str, str], np.ndarray] = field(default_factory=dict)


@dataclass(frozen=True, eq=False)
class CatalogSnapshot:
    """One catalog version as the compiler sees it. Immutable once published, except ``memo``."""

    version: int  # Store.catalog_version()
    usage_version: int  # Store.usage_version()
    states: dict[int, ToolState]
    #: Tool id -> its definition, read on first use (jit.selection.records).
    by_id: ToolRecords
    #: Tool id -> (server, name): what the build needs of every tool.
    heads: dict[int, tuple[str, str]]
    rows: list[int]  # tool ids in row order
    row_of: dict[int, int]
    index: RetrievalIndex
    index_key: str  # jit.selection.indexcache.index_key: what the retrieval index is built from
    #: Tool id -> its effective analysis, computed on first use.
    analyses: EffectiveAnalyses
    #: Kind ("capability", "category", "domain") -> label -> ids of the tools with it.
    labels: dict[str, dict[str, frozenset[int]]]
    names: dict[int, str]
    #: Tool id -> the class it derives with, one per derived predicate (``DERIVED`` order).
    class_of: dict[int, tuple[int, ...]]
    globals: Globals
    blocked: dict[int, str]
    offline: frozenset[int]
    tier_cap: dict[int, Tier]
    usage_points: dict[int, int]
    #: Tool id -> the logic points the rules take off it (``penalty_points``, e.g. deprecated tools).
    penalty_points: dict[int, int]
    memo: SnapshotMemo
    #: How many tools have no analysis yet (an interrupted sync; the compile warns): their hostile-text
    #: flags are found when they are read (:func:`~jit.analysis.analyze.effective_tool`).
    unanalyzed: int = 0
    #: Tool awaiting approval -> the class its last approved definition derives ``denied`` with,
    #: where that differs from its own: a role is denied the tool if either definition is denied
    #: (:meth:`CatalogView._twins`).
    twins: dict[int, int] = field(default_factory=dict)


@dataclass
class _Derived:
    """Per-tool derived facts of a snapshot being built."""

    blocked: dict[int, str]
    offline: frozenset[int]
    tier_cap: dict[int, Tier]
    usage_points: dict[int, int]
    penalty_points: dict[int, int]
    shards: dict[str, ShardTables]


class _FileWriter:
    """Writes files for the next process, in order, on one thread started on first use.

    Its thread is not a daemon: a process that ends without :meth:`close` still finishes
    the writes it queued (``concurrent.futures`` joins its threads at exit). A write is
    atomic and a failed one costs the next process a build (the writers log ``OSError``);
    anything else a write raises is logged here, since nobody waits for its result."""

    def __init__(self) -> None:
        self._pool: ThreadPoolExecutor | None = None
        self._last: Future[None] | None = None
        self._lock = threading.Lock()

    def submit(self, write: Callable[[], None]) -> None:
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="jit-view-files")
            self._last = self._pool.submit(self._run, write)

    @staticmethod
    def _run(write: Callable[[], None]) -> None:
        try:
            write()
        except Exception:  # noqa: BLE001 - a file for the next process: never worth a compile
            log.exception("could not write the compiled view's files for the next process")

    def flush(self) -> None:
        """Wait for every write queued so far."""
        with self._lock:
            last = self._last
        if last is not None:
            last.result()

    def close(self) -> None:
        with self._lock:
            pool, self._pool, self._last = self._pool, None, None
        if pool is not None:
            pool.shutdown(wait=True)


class CatalogView:
    """Keeps one store's catalog, seen through one config and rule set, as snapshots.

    Owns the Datalog engine: the config's shard facts, the catalog's facts and the
    per-tool derived facts are asserted here; the compiler only adds a task's facts
    for the length of one query (``engine.with_facts``).
    """

    def __init__(self, store: Store, config: Config, rules: RuleSet, *, model_name: str) -> None:
        self.store = store
        self.config = config
        self.rules = rules
        #: Vectors of another embedding model are not used (the query would not match them).
        self.model_name = model_name
        self.engine = LogicEngine(rules)
        #: What a tool call can change: the derived predicates that read usage.
        self.usage_dependents = rules.dependents("usage")
        self._published: CatalogSnapshot | None = None
        self._lock = threading.RLock()
        self._index_files = IndexCache(store.path)
        self._view_files = ViewFiles(store.path)
        self._view_key = view_key(store.catalog_id(), store.scope, rules.fingerprint, config, model_name)
        #: A view file is tried once, for the first snapshot; a compile that found its snapshot
        #: stale (records.StaleSnapshot) has the next one built with every tool's state compared.
        self._try_saved = True
        self._stale = False
        self._writes = _FileWriter()
        self._view_writes = 0  # view files queued: a queued one that a newer one follows is skipped
        check_task_tables(rules)
        #: Values the rules or the config's shard facts name.
        selectors = [(shard, *sel) for shard, sc in config.shards.items() for sel in sc.selectors()]
        #: The config's ``tool:`` selectors as ``(shard, effect, glob)``, matched per tool (classes.tool_facts).
        self._globs = tuple((shard, effect, value) for shard, effect, kind, value in selectors if kind == "tool")
        rule_facts = [("shard_rule", shard, effect, kind, value) for shard, effect, kind, value in selectors
                      if kind != "tool"]
        self._constants = rules.constants | {*config.shards, *(c for sc in config.shards.values() for c in sc.categories)} \
            | {f[4] for f in rule_facts}
        #: The classes the engine holds: tools that derive alike share one (jit.selection.classes).
        self.classes = Classes(self.engine, rules)
        self.engine.change([("shard", s) for s in config.shards]
                           + [("shard_category", s, c) for s, sc in config.shards.items() for c in sc.categories]
                           + rule_facts)

    def close(self) -> None:
        """Finish writing the files for the next process, stop the engine's thread and let go of the
        snapshot (see :func:`jit.process.snapshot_released`)."""
        self._writes.close()
        self.engine.close()
        self._published = None
        process.snapshot_released()

    @property
    def published(self) -> CatalogSnapshot | None:
        """The newest snapshot built, if any (None: the next :meth:`snapshot` builds one from scratch)."""
        return self._published

    # ------------------------------------------------------------------ snapshots

    def snapshot(self) -> CatalogSnapshot:
        """The snapshot of the store's current versions, built or refreshed if they moved."""
        # Versions are read before the catalog: a change racing a build moves them past the snapshot.
        versions = self.store.versions()
        snap = self._published
        if snap is not None and not self._stale and (snap.version, snap.usage_version) == versions:
            return snap
        with self._lock:
            if self._published is None and self._try_saved:
                self._try_saved = False
                self.store.server_statuses()  # settles the statuses of servers whose holder died: may move the version
                with process.building_snapshot():
                    self._published = self._load_saved()
            versions = self.store.versions()
            snap = self._published
            if snap is None or snap.version != versions[0] or self._stale:
                with process.building_snapshot():
                    self._published = self._build(snap, *versions)
                self._stale = False
                self._save(self._published)
                del snap
                process.snapshot_built()
            elif snap.usage_version != versions[1]:
                self._published = self._with_usage(snap, versions[1])
            return self._published

    def prepare(self, shards: Sequence[str]) -> None:
        """The newest snapshot with the tables of ``shards`` asked, kept in the view file for the
        next process (``jit sync``: a new process then asks the rules nothing for those shards)."""
        snap = self.snapshot()
        missing = [s for s in shards if s not in snap.memo.shards]
        for shard in missing:
            self.shard_tables(snap, shard)
        if missing and snap is self._published:
            with self._lock:
                if snap is self._published:
                    self._save(snap)
        self.flush()  # `jit sync` ends with the files written

    def invalidate(self, records: ToolRecords) -> None:
        """The snapshot of ``records`` met a tool that changed after it was taken
        (records.StaleSnapshot): if it is still the newest, the next snapshot is built with
        every tool's state compared, whatever the versions say."""
        with self._lock:
            if self._published is not None and self._published.by_id is records:
                self._stale = True

    def flush(self) -> None:
        """Wait until the view and index files queued so far for the next process are written."""
        self._writes.flush()

    def _load_saved(self) -> CatalogSnapshot | None:
        """The snapshot a view file holds (:mod:`jit.selection.viewfile`), its classes asserted into
        the engine and its derived facts asked; None without a usable file or its index file."""
        saved = self._view_files.load(self._view_key)
        if saved is None:
            return None
        rows = saved.ids.tolist()
        classes = saved.classes
        if classes.shape != (len(rows), len(DERIVED)):  # another build of jit wrote it: not ours to read
            return None
        index = self._index_files.load(saved.index_key, [saved.heads[i] for i in rows])
        if index is None:
            return None
        world = self._globals(saved.global_facts)
        # One class per distinct projection, its references counted per derived predicate.
        lut = np.zeros(len(saved.projections), dtype=np.int64)
        add: list[Fact] = []
        for k in range(len(DERIVED)):
            used, counts = np.unique(classes[:, k], return_counts=True)
            for p, n in zip(used.tolist(), counts.tolist(), strict=True):
                cid = lut[p] = self.classes.acquire(saved.projections[p], k, add)
                self.classes.refs[cid] += n - 1
        arrays = (saved.ids, lut[classes])
        class_of = dict(zip(rows, map(tuple, arrays[1].tolist()), strict=True))
        awaiting = self.store.tool_records([i for i, state in saved.states.items() if not state.approved])
        twins = self._twins([st for st, _state in awaiting.values()], class_of, world, add)
        self.engine.change(add=add + list(world.engine), remove=[])
        derived = self._derive(None, saved.heads, class_of, set(), set(), arrays=arrays, twins=twins)
        if self.config.security.pin_definitions:
            for i, state in saved.states.items():
                if not state.approved:
                    derived.blocked.setdefault(i, PIN_REASON)
        records = ToolRecords(self.store, saved.states)
        return CatalogSnapshot(
            version=saved.version, usage_version=saved.usage_version, states=saved.states, by_id=records,
            heads=saved.heads, rows=rows, row_of={i: r for r, i in enumerate(rows)}, index=index,
            index_key=saved.index_key, analyses=EffectiveAnalyses(records, self._effective), labels=saved.labels,
            names=saved.names, class_of=class_of, globals=world, blocked=derived.blocked, offline=derived.offline,
            tier_cap=derived.tier_cap, usage_points=derived.usage_points, penalty_points=derived.penalty_points,
            memo=SnapshotMemo(shards={**saved.shards, **derived.shards}, summaries=saved.summaries,
                              class_arrays=arrays),
            unanalyzed=_unanalyzed(saved.states), twins=twins,
        )

    def _save(self, snap: CatalogSnapshot) -> None:
        """Keep what ``snap`` derived per tool in the view file, for the next process: taken now (a
        later build reuses class ids), written by the file writer. Called under the view's lock."""
        if self._view_files.directory is None:
            return
        if snap.memo.class_arrays is None:
            snap.memo.class_arrays = class_arrays(snap.class_of)
        ids, cids = snap.memo.class_arrays
        used, classes = np.unique(cids, return_inverse=True)  # class ids -> 0..n-1, into projections
        self._view_writes += 1
        seq = self._view_writes
        saved = SavedView(
            version=snap.version, usage_version=snap.usage_version, index_key=snap.index_key, states=snap.states,
            heads=snap.heads, names=snap.names, projections=[self.classes.projection[c] for c in used.tolist()],
            ids=ids, classes=classes.reshape(cids.shape), global_facts=snap.globals.facts, labels=snap.labels,
            shards=dict(snap.memo.shards), summaries=snap.memo.summaries)

        def write() -> None:
            if seq == self._view_writes:  # else a newer snapshot's file is queued behind this one
                self._view_files.save(self._view_key, saved)
                process.snapshot_built()  # the encoding's pages too, once written

        self._writes.submit(write)

    def _save_index(self, key: str, index: RetrievalIndex) -> None:
        """Keep ``index`` in its index file for the next process (by the file writer)."""
        if self._index_files.directory is not None:  # an in-memory catalog keeps no files
            self._writes.submit(lambda: self._index_files.save(key, index))

    def _build(self, prev: CatalogSnapshot | None, version: int, usage_version: int) -> CatalogSnapshot:
        """The snapshot of a catalog version: from nothing, every tool read a batch at a time and
        let go once derived; from ``prev``, every tool's state read and the changed ones reloaded."""
        model = self.store.embedding_model()
        usable = model if model is not None and model[0] == self.model_name else None
        world = self._globals(frozenset(("server_status", name, self._status_of(name, *status))
                                        for name, status in self.store.server_statuses().items()))
        if prev is None:
            return self._first_build(version, usage_version, usable, world)
        states = self.store.tool_states()
        read = self.store.tool_records([i for i, s in states.items() if prev.states.get(i) != s])
        states = {i: s for i, s in states.items() if i in read or prev.states.get(i) == s}
        states.update((i, state) for i, (_st, state) in read.items())
        heads = {i: h for i, h in prev.heads.items() if i in states}
        heads.update((i, (st.tool.server, st.tool.name)) for i, (st, _state) in read.items())
        rows = sorted(states)
        key = index_key(usable, rows, states)
        index = prev.index if prev.index_key == key else self._index_files.load(key, [heads[i] for i in rows])
        if index is None and prev.index.model == usable:
            # Patched, not built again: only the tools read (added or changed) are tokenised and
            # have their vectors read, so a change of one tool among 100,000 costs its own work.
            index = prev.index.patched(
                prev.rows, rows, [heads[i] for i in rows], {i: lexical_text(st) for i, (st, _state) in read.items()},
                *(self.store.vector_matrix(read) if usable is not None else _NO_VECTORS))
            if index is not None:
                self._save_index(key, index)
        if index is None:
            # An index is built from every tool's text. Read them all, a batch at a time and each
            # with its state, but keep only the definitions of the tools that changed: a process
            # holding 100,000 tools would otherwise hold all their definitions at once for it.
            states, heads, texts = {}, {}, {}
            read = {i: (st, state) for i, st, state in self._read_every_tool(states, heads, texts)
                    if prev.states.get(i) != state}
            rows = sorted(states)
            key = index_key(usable, rows, states)
            index = self._new_index(rows, heads, texts, usable)
            self._save_index(key, index)
        changed = {i for i, s in states.items() if prev.states.get(i) != s}
        removed = set(prev.states) - set(states)
        names = prev.names if set(prev.names) == set(rows) else _names(heads, rows)
        marks, old = world.marks, prev.globals.marks  # a server whose stand-in changed: its tools derive again
        moved = {sv for sv in set(marks) | set(old) if marks.get(sv) != old.get(sv)}
        if moved:
            changed |= {i for i, (server, _name) in heads.items() if server in moved}
        fresh = {i: read[i] for i in changed if i in read}
        records = prev.by_id.evolve(states, changed | removed, fresh if len(fresh) <= CACHE_SIZE // 2 else None)

        def tool_of(i: int) -> StoredTool:
            found = read.get(i)
            return found[0] if found is not None else records[i]

        kept = _Kept()
        class_of, twins, derived = self._apply(prev, ((i, tool_of(i)) for i in changed), heads, changed, removed,
                                               world, kept)
        stale = changed | removed
        memo = SnapshotMemo(shards=derived.shards)
        # The memos of tools that did not change carry over.
        memo.summaries = {i: v for i, v in prev.memo.summaries.items() if i not in stale}
        memo.explain_facts = {i: v for i, v in prev.memo.explain_facts.items() if i not in stale}
        if names is prev.names:  # a tool's rendered size depends on its name
            memo.costs = {k: v for k, v in prev.memo.costs.items() if k[0] not in stale}
        memo.summaries.update(kept.summaries)
        return CatalogSnapshot(
            version=version, usage_version=usage_version, states=states, by_id=records, heads=heads, rows=rows,
            row_of={i: r for r, i in enumerate(rows)}, index=index, index_key=key,
            analyses=prev.analyses.evolve(records, stale, kept.analyses),
            labels=_labels(prev.labels, kept.labels, stale), names=names, class_of=class_of, globals=world,
            blocked=derived.blocked, offline=derived.offline,
            tier_cap=derived.tier_cap, usage_points=derived.usage_points, penalty_points=derived.penalty_points,
            memo=memo, unanalyzed=_unanalyzed(states), twins=twins,
        )

    def _first_build(self, version: int, usage_version: int, usable: tuple[str, int] | None,
                     world: Globals) -> CatalogSnapshot:
        """The snapshot built from nothing. Every tool is read a batch at a time (each with its
        state) and derived as it comes; what the snapshot keeps of it (state, head, Condensed line,
        labels, class) stays, its definition does not: 100,000 definitions held at once were
        ~540 MB, and the heap they left pinned kept a process that had built its view ~350 MB
        larger than one that loaded it."""
        states: dict[int, ToolState] = {}
        heads: dict[int, tuple[str, str]] = {}
        texts: dict[int, str] = {}
        kept = _Kept()
        tools = ((i, st) for i, st, _state in self._read_every_tool(states, heads, texts))
        class_of, twins, derived = self._apply(None, tools, heads, states.keys(), set(), world, kept)
        rows = sorted(states)
        key = index_key(usable, rows, states)
        index = self._index_files.load(key, [heads[i] for i in rows])
        if index is None:
            index = self._new_index(rows, heads, texts, usable)
            self._save_index(key, index)
        records = ToolRecords(self.store, states)
        return CatalogSnapshot(
            version=version, usage_version=usage_version, states=states, by_id=records, heads=heads, rows=rows,
            row_of={i: r for r, i in enumerate(rows)}, index=index, index_key=key,
            analyses=EffectiveAnalyses(records, self._effective, kept.analyses),
            labels=_labels(None, kept.labels, set()), names=_names(heads, rows), class_of=class_of, globals=world,
            blocked=derived.blocked, offline=derived.offline, tier_cap=derived.tier_cap,
            usage_points=derived.usage_points, penalty_points=derived.penalty_points,
            memo=SnapshotMemo(shards=derived.shards, summaries=kept.summaries), unanalyzed=_unanalyzed(states),
            twins=twins,
        )

    def _read_every_tool(self, states: dict[int, ToolState], heads: dict[int, tuple[str, str]],
                         texts: dict[int, str]) -> Iterator[tuple[int, StoredTool, ToolState]]:
        """Every tool with its state, read a batch at a time (``Store.tool_record_batches``), its
        state, head and :func:`lexical_text` put in ``states``, ``heads`` and ``texts`` as it
        comes: what a snapshot keeps of every tool, for a reader that lets the definition go."""
        for batch in self.store.tool_record_batches():
            for i, (st, state) in batch.items():
                states[i], heads[i], texts[i] = state, (st.tool.server, st.tool.name), lexical_text(st)
                yield i, st, state

    def _effective(self, st: StoredTool) -> ToolAnalysis:
        return effective_tool(st, self.config.available_tools, shards=self.config.shards).analysis

    def _new_index(self, rows: list[int], heads: dict[int, tuple[str, str]], texts: dict[int, str],
                   model: tuple[str, int] | None) -> RetrievalIndex:
        """A retrieval index built over the tools ``rows`` (row order) from their heads and lexical
        texts. ``model``: the catalog's embedding model, None when its vectors are not this view's
        model's."""
        vectors = self.store.vector_matrix() if model is not None else _NO_VECTORS
        return RetrievalIndex(rows, [heads[i] for i in rows], [texts[i] for i in rows], *vectors, model=model)

    def _globals(self, facts: frozenset) -> Globals:
        marks, mark_facts = server_marks(facts, self._constants)
        return Globals(facts, marks, facts | mark_facts, self._constants | {v for f in facts for v in f[1:]})

    def _status_of(self, server: str, status: ServerStatus, last_seen: float | None) -> str:
        """The status the rules see. Statuses are shared by the configs of a catalog, but
        ``enabled`` is each config's own: disabled here is disabled, and a server this
        config enables is not blocked because another config disabled it (Config.server_status)."""
        return self.config.server_status(server, status, last_seen).value

    def _with_usage(self, prev: CatalogSnapshot, usage_version: int) -> CatalogSnapshot:
        """The snapshot after tool calls only: the called tools' usage changes, nothing else is read.

        A proxied call must not cost the next compile a scan of the catalog."""
        states = dict(prev.states)
        changed: set[int] = set()
        for i, (calls, errors) in self.store.usage_since(prev.usage_version).items():
            state = states.get(i)
            if state is None or (state.calls, state.errors) == (calls, errors):
                continue
            states[i] = state.with_usage(calls, errors)
            changed.add(i)
        records = prev.by_id.evolve(states)  # the definitions are the same; the records give the new counts
        class_of, twins, derived = self._apply(prev, ((i, records[i]) for i in changed), prev.heads, changed,
                                               set(), prev.globals, None, only=self.usage_dependents)
        # Summaries, token costs, analyses and labels do not depend on usage: shared with prev.
        memo = SnapshotMemo(shards=derived.shards, summaries=prev.memo.summaries, costs=prev.memo.costs,
                            explain_facts={i: v for i, v in prev.memo.explain_facts.items() if i not in changed},
                            by_name=prev.memo.by_name, by_head=prev.memo.by_head,
                            denied_rows={} if "denied" in self.usage_dependents else prev.memo.denied_rows)
        return replace(prev, usage_version=usage_version, states=states, by_id=records,
                       analyses=prev.analyses.evolve(records), class_of=class_of, twins=twins, blocked=derived.blocked,
                       offline=derived.offline, tier_cap=derived.tier_cap, usage_points=derived.usage_points,
                       penalty_points=derived.penalty_points, memo=memo)

    def _apply(self, prev: CatalogSnapshot | None, tools: Iterable[tuple[int, StoredTool]],
               heads: dict[int, tuple[str, str]], changed: Collection[int], removed: set[int], world: Globals,
               kept: _Kept | None, *, only: frozenset[str] | None = None
               ) -> tuple[dict[int, tuple[int, ...]], dict[int, int], _Derived]:
        """The classes (their facts diffed into the engine, with ``world``'s), the twins (:meth:`_twins`)
        and derived facts of a snapshot from ``prev`` and the ``changed`` tools, given as ``tools``
        (``(id, definition)``, read once, in any order; ``heads`` and ``changed`` hold all of them
        once ``tools`` is exhausted). Each tool's effective analysis goes to ``kept``."""
        class_of = dict(prev.class_of) if prev else {}
        twins = dict(prev.twins) if prev else {}
        redo = [k for k, p in enumerate(DERIVED) if only is None or p in only]
        judged = only is None or "denied" in only  # the twins serve the denial only
        add: list[Fact] = []
        released: list[int] = []
        for i in removed:
            released.extend(class_of.pop(i, ()))
            if i in twins:
                released.append(twins.pop(i))
        projections: dict[frozenset, tuple[frozenset, ...]] = {}  # most tools share their abstract facts
        unapproved: list[StoredTool] = []
        for i, st in tools:
            if judged and i in twins:
                released.append(twins.pop(i))
            if not st.approved:
                unapproved.append(st)
            effective = effective_tool(st, self.config.available_tools, shards=self.config.shards)
            if kept is not None:
                kept.add(i, st, effective.analysis)
            sig = abstract(st, tool_facts(st, effective, self._globs), world.marks, world.fixed)
            parts = projections.get(sig)
            if parts is None:
                parts = projections[sig] = tuple(frozenset(f for f in sig if f[0] in reads) for reads in self.classes.reads)
            old = class_of.get(i)
            new = list(old) if old is not None else [0] * len(DERIVED)
            for k in (redo if old is not None else range(len(DERIVED))):
                new[k] = self.classes.acquire(parts[k], k, add)
                if old is not None:
                    released.append(old[k])
            class_of[i] = tuple(new)
        if judged and unapproved:
            twins.update(self._twins(unapproved, class_of, world, add))
        drop = self.classes.release(released)
        old_global = prev.globals.engine if prev else frozenset()
        engine_globals = world.engine
        if engine_globals != old_global:
            # A class's rows depend on the global facts too (a server named by a rule or the config
            # keeps its own name, so its tools' classes survive a change of its status).
            self.classes.rows.clear()
        self.engine.change(add=add + list(engine_globals - old_global), remove=drop + list(old_global - engine_globals))
        derived = self._derive(prev, heads, class_of, set(changed), removed, only=only, twins=twins)
        if self.config.security.pin_definitions:
            # Not a rule: what pinning withholds must not depend on an editable policy file.
            for st in unapproved:
                derived.blocked.setdefault(st.id, PIN_REASON)
        return class_of, twins, derived

    def _twins(self, awaiting: Sequence[StoredTool], class_of: dict[int, tuple[int, ...]], world: Globals,
               add: list[Fact]) -> dict[int, int]:
        """Tool awaiting approval -> the class of its last approved definition for ``denied`` (its facts
        appended to ``add``), for those whose approved definition the policy reads otherwise.

        Whatever a change awaits, it must not widen what a role may see or call: an upstream that
        turns a destructive tool's annotations into ``readOnlyHint: true`` would otherwise hand it to
        read-only roles. So the role policy judges both definitions and a tool is denied if either
        is (:meth:`Classes.fold`). A tool with no approved definition on record (a change held
        since it came back under another server's name) is judged as it is."""
        kd = DERIVED.index("denied")
        found = self.store.approved_definitions((st.tool.server, st.tool.name) for st in awaiting)
        twins: dict[int, int] = {}
        for st in awaiting:
            approved = found.get((st.tool.server, st.tool.name))
            if approved is None:
                continue
            tdef, dhash = approved
            analysis = self.store.cached_analysis(dhash) or self._offline().analyze_one(tdef)
            twin = replace(st, tool=tdef, definition_hash=dhash, analysis=analysis, approved=True, calls=0, errors=0)
            effective = effective_tool(twin, self.config.available_tools, shards=self.config.shards)
            sig = abstract(twin, tool_facts(twin, effective, self._globs), world.marks, world.fixed)
            part = frozenset(f for f in sig if f[0] in self.classes.reads[kd])
            if part != self.classes.projection[class_of[st.id][kd]]:
                twins[st.id] = self.classes.acquire(part, kd, add)
        return twins

    def _offline(self) -> OfflineAnalyzer:
        """The offline analyzer, for an approved definition whose analysis is no longer kept."""
        return OfflineAnalyzer(self.config.shards)

    def _derive(self, prev: CatalogSnapshot | None, heads: dict[int, tuple[str, str]],
                class_of: dict[int, tuple[int, ...]], changed: set[int], removed: set[int], *,
                only: frozenset[str] | None = None, arrays: tuple[np.ndarray, np.ndarray] | None = None,
                twins: dict[int, int] | None = None) -> _Derived:
        """Per-tool derived facts: all of them the first time, then only for changed tools, and
        of those only the predicates in ``only`` (default: all; after tool calls, the ones the
        rules make depend on ``usage``). Shard tables are kept for the shards ``prev`` knew."""
        prev_shards = prev.memo.shards if prev else {}
        shards = list(prev_shards)
        tool_preds = [p for p in TOOL_PREDICATES if only is None or p in only]
        shard_preds = [p for p in SHARD_PREDICATES if only is None or p in only]
        todo = sorted(heads) if prev is None else sorted(changed)
        blocked = dict(prev.blocked) if prev else {}
        offline = set(prev.offline) if prev else set()
        caps = dict(prev.tier_cap) if prev else {}
        usage = dict(prev.usage_points) if prev else {}
        penalty = dict(prev.penalty_points) if prev else {}
        # Per shard, one table per shard predicate (SHARD_PREDICATES order, as ShardTables).
        tables = {s: [dict(t) for t in prev_shards[s]] for s in shards}
        asked = set(tool_preds + shard_preds)  # what a changed tool loses; a removed one loses all
        for i in removed | changed:
            redo = asked if i in changed else set(TOOL_PREDICATES + SHARD_PREDICATES)
            if "blocked" in redo:
                blocked.pop(i, None)
            if "offline" in redo:
                offline.discard(i)
            if "tier_cap" in redo:
                caps.pop(i, None)
            if "usage_points" in redo:
                usage.pop(i, None)
            if "penalty_points" in redo:
                penalty.pop(i, None)
            for s in shards:
                for j, p in enumerate(SHARD_PREDICATES):
                    if p in redo:
                        tables[s][j].pop(i, None)
        full = prev is None
        if full and arrays is None:
            arrays = class_arrays(class_of)
        for p in tool_preds:
            for t, _cid, rows in self.classes.rows_of(DERIVED.index(p), None, todo, class_of, heads, full, arrays):
                if p == "blocked":
                    blocked.setdefault(t, str(rows[0][1]))
                elif p == "offline":
                    offline.add(t)
                elif p == "tier_cap":
                    for _t, tier in rows:
                        cap = _TIER_BY_NAME.get(str(tier), Tier.EXCLUDED)
                        caps[t] = max(cap, caps.get(t, Tier.FULL), key=lambda x: x.rank)
                else:
                    merge_points(usage if p == "usage_points" else penalty, [(t, points) for _t, points in rows])
        for s in shards:
            for p in shard_preds:
                self.classes.fold(DERIVED.index(p), s, todo, class_of, heads, full,
                                  tables[s][SHARD_PREDICATES.index(p)], arrays,
                                  twins=_only(twins, todo, full) if p == "denied" else None)
        if removed:
            blocked = {t: r for t, r in blocked.items() if t in heads}
            offline = {t for t in offline if t in heads}
            caps = {t: c for t, c in caps.items() if t in heads}
            usage = {t: p for t, p in usage.items() if t in heads}
            penalty = {t: p for t, p in penalty.items() if t in heads}
        return _Derived(blocked=blocked, offline=frozenset(offline), tier_cap=caps, usage_points=usage,
                        penalty_points=penalty,
                        shards={s: tuple(tables[s]) for s in shards})  # type: ignore[misc]

    # ------------------------------------------------------------------ memo tables

    def shard_tables(self, snap: CatalogSnapshot, shard: str) -> ShardTables:
        """A shard's points, skeleton slots and denial reasons per tool, asked once per shard
        and kept up to date by later builds (only for the changed tools)."""
        tables = snap.memo.shards.get(shard)
        if tables is not None:
            return tables
        with self._lock:  # the engine holds the published snapshot's classes while the lock is held
            tables = snap.memo.shards.get(shard)
            if tables is None:
                # A compile still on an older snapshot gets the newest classes, for its tools
                # that are still in the catalog, but they are not that snapshot's to keep.
                newest = self._published or snap
                if newest.memo.class_arrays is None:
                    newest.memo.class_arrays = class_arrays(newest.class_of)
                ids, cids = newest.memo.class_arrays
                if newest is not snap:
                    keep = np.isin(ids, np.array(snap.rows, dtype=np.int64))
                    ids, cids = ids[keep], cids[keep]
                live = ids.tolist()
                twins = newest.twins if newest is snap else {t: c for t, c in newest.twins.items() if t in snap.row_of}
                found: list[dict[int, Any]] = []
                for p in SHARD_PREDICATES:
                    found.append({})
                    self.classes.fold(DERIVED.index(p), shard, live, newest.class_of, snap.heads, True, found[-1],
                                      (ids, cids), twins=twins if p == "denied" else None)
                tables = tuple(found)  # type: ignore[assignment]
                if snap is self._published:
                    snap.memo.shards[shard] = tables
            return tables

    def denied_rows(self, snap: CatalogSnapshot, shard: str) -> np.ndarray | None:
        """A mask over ``snap``'s rows of the tools ``shard`` may not have (the policy's
        ``denied``), None when it may have them all."""
        if shard in snap.memo.denied_rows:
            return snap.memo.denied_rows[shard]
        denied = self.shard_tables(snap, shard)[2]
        mask = None
        if denied:
            mask = np.zeros(len(snap.rows), dtype=bool)
            mask[[snap.row_of[t] for t in denied if t in snap.row_of]] = True
        snap.memo.denied_rows[shard] = mask
        return mask

    @staticmethod
    def tool_named(snap: CatalogSnapshot, name: str) -> int | None:
        """The tool ``name`` (as the model sees it, ``server__tool``) stands for in ``snap``."""
        if snap.memo.by_name is None:
            snap.memo.by_name = {n: i for i, n in snap.names.items()}
        return snap.memo.by_name.get(name)

    @staticmethod
    def tool_id(snap: CatalogSnapshot, server: str, tool: str) -> int | None:
        """The id of ``server``'s tool ``tool`` in ``snap``."""
        if snap.memo.by_head is None:
            snap.memo.by_head = {h: i for i, h in snap.heads.items()}
        return snap.memo.by_head.get((server, tool))

    @staticmethod
    def labels(snap: CatalogSnapshot) -> dict[str, dict[str, frozenset[int]]]:
        """Kind -> label -> ids of the tools whose effective analysis has it."""
        return snap.labels


def _only(twins: dict[int, int] | None, todo: list[int], full: bool) -> dict[int, int] | None:
    """The ``twins`` of the tools a derivation visits: all of them, or those of ``todo``."""
    if not twins or full:
        return twins
    return {t: twins[t] for t in todo if t in twins}


def _unanalyzed(states: dict[int, ToolState]) -> int:
    """How many of ``states`` have no analysis yet."""
    return sum(1 for state in states.values() if state.analyzed_at is None)


def _names(heads: dict[int, tuple[str, str]], rows: list[int]) -> dict[int, str]:
    """Each tool's name as the model sees it: ``server__tool``, with a hash where two collide."""
    by_head = rendered_names(heads[i] for i in rows)
    return {i: by_head[heads[i]] for i in rows}


class _Kept:
    """What a build keeps of each tool it derives once the definition is let go: its Condensed
    line (the token budget measures a candidate's line without reading its definition, and the
    view file keeps them), its labels, and the newest analyses, a cache's worth."""

    def __init__(self) -> None:
        self.summaries: dict[int, str] = {}
        self.labels: dict[str, dict[str, set[int]]] = {kind: {} for kind in LABEL_KINDS}
        self.analyses: dict[int, ToolAnalysis] = {}

    def add(self, i: int, st: StoredTool, a: ToolAnalysis) -> None:
        self.summaries[i] = tool_summary(st, a)
        for kind, values in zip(LABEL_KINDS, (a.capabilities, a.categories, a.domains), strict=True):
            for label in values:
                self.labels[kind].setdefault(label, set()).add(i)
        self.analyses[i] = a
        if len(self.analyses) > CACHE_SIZE // 2:
            del self.analyses[next(iter(self.analyses))]


def _labels(prev: dict[str, dict[str, frozenset[int]]] | None, added: dict[str, dict[str, set[int]]],
            stale: set[int]) -> dict[str, dict[str, frozenset[int]]]:
    """Kind -> label -> tool ids: ``prev``'s without the ``stale`` tools, plus the labels
    ``added`` (those of the changed tools, :class:`_Kept`)."""
    out: dict[str, dict[str, frozenset[int]]] = {}
    for kind in LABEL_KINDS:
        old = prev[kind] if prev else {}
        fresh = added[kind]
        merged: dict[str, frozenset[int]] = {}
        for label in old.keys() | fresh.keys():
            ids = old.get(label, frozenset())
            if stale and ids:
                ids = ids - stale
            if label in fresh:
                ids = ids | fresh[label]
            if ids:
                merged[label] = frozenset(ids)
        out[kind] = merged
    return out


def merge_points(table: dict[Any, int], rows: Sequence[tuple]) -> None:
    """One number per key: the largest Points of the rows (schema.dl's rule)."""
    for key, p in rows:
        table[key] = max(int(p), table.get(key, -10**6))
