"""The catalog as the compiler sees it: one snapshot per catalog version, kept up to date incrementally.

A :class:`CatalogView` turns the store into :class:`~jit.selection.snapshot.CatalogSnapshot` s:
the tools' states and names (their definitions and effective analyses read on first use,
:mod:`jit.selection.records`), the label index, the retrieval index (dense matrix + BM25)
and what the rules derive per tool (:mod:`jit.selection.derivation`, through the classes
of :mod:`jit.selection.fact_classes`). :class:`~jit.selection.compiler.Compiler` asks for
the current snapshot on every compile and scores against it; this module is the only place
that knows when a snapshot is stale and what to redo.

- **Catalog changes** move ``Store.catalog_version()``: every tool's state is read, only
  tools whose state changed are reloaded and derived again (the rest is kept), and the
  retrieval index is patched only when a definition or a vector changed.
- **Tool calls** move ``Store.usage_version()`` only: the called tools' usage
  facts are diffed and only the predicates that read ``usage``
  (``RuleSet.dependents``) asked again; the catalog is not scanned.
- **A new process** starts from the view file the last build wrote
  (:mod:`jit.selection.viewfile`) and its index file: the classes are asserted and their rows asked,
  no definition is read; a file older than the catalog is brought up to date as
  any older snapshot is. A definition read later that no longer matches its
  snapshot's state raises :class:`~jit.selection.records.StaleSnapshot`, and
  :meth:`CatalogView.invalidate` makes the next snapshot compare every state.

The engine holds exactly one snapshot's facts, the newest, so a shard table is memoised
only for the published snapshot. The engine's facts and the snapshot change together
under the view's lock; every pyDatalog call runs on the
:class:`~jit.selection.logic.LogicEngine`'s own thread, so :meth:`CatalogView.snapshot`
may be called from any number of threads.

The view and index files a build leaves for the next process are written by a
:class:`~jit.selection.viewfile.FileWriter`, on a thread of its own: the compile that found
the catalog changed does not wait for them (at 100,000 tools that compile took 1.9 s with
them, 1.25 s without). What they hold is taken on the building thread;
:meth:`CatalogView.close` (and a process's exit) waits for them.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator, Sequence
from dataclasses import replace

import numpy as np

from .. import process
from ..analysis.analyze import effective_tool
from ..catalog.store import Store
from ..config import Config
from ..models import StoredTool, ToolAnalysis, ToolState
from .derivation import Derivation
from .fact_classes import Globals, class_arrays
from .indexcache import IndexCache, index_key
from .logic import RuleSet
from .policy import DERIVED
from .records import CACHE_SIZE, EffectiveAnalyses, ToolRecords
from .retrieve import RetrievalIndex, lexical_text
from .snapshot import CatalogSnapshot, Kept, ShardTables, SnapshotMemo, merged_labels, model_names, unanalyzed
from .viewfile import FileWriter, SavedView, ViewFiles, view_key

__all__ = ["CatalogView"]

log = logging.getLogger(__name__)

#: ``(ids, matrix)`` of a catalog whose vectors are not this view's model's: none to use.
_NO_VECTORS = (np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.float32))


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
        #: The engine and what the rules derive per tool (the engine holds the published snapshot's classes).
        self.derivation = Derivation(store, config, rules)
        self.engine = self.derivation.engine
        self._published: CatalogSnapshot | None = None
        self._lock = threading.RLock()
        self._index_files = IndexCache(store.path)
        self._view_files = ViewFiles(store.path)
        self._view_key = view_key(store.catalog_id(), store.scope, rules.fingerprint, config, model_name)
        #: A view file is tried once, for the first snapshot; a compile that found its snapshot
        #: stale (records.StaleSnapshot) has the next one built with every tool's state compared.
        self._try_saved = True
        self._stale = False
        self._writes = FileWriter()
        self._view_writes = 0  # view files queued: a queued one that a newer one follows is skipped

    def close(self) -> None:
        """Finish writing the files for the next process, stop the engine's thread and let go of the
        snapshot (see :func:`jit.process.snapshot_released`)."""
        self._writes.close()
        self.derivation.close()
        self._published = None
        process.snapshot_released()

    @property
    def view_file_kept(self) -> bool:
        """Whether a view file of this catalog, config and rules is on disk: the first snapshot
        then loads it (:meth:`_load_saved`) rather than building the view from the catalog."""
        path = self._view_files.path(self._view_key)
        return path is not None and path.is_file()

    @property
    def published(self) -> CatalogSnapshot | None:
        """The newest snapshot built, if any (None: the next :meth:`snapshot` builds one from scratch)."""
        return self._published

    # ------------------------------------------------------------------ snapshots

    def snapshot(self, *, usage: bool = True) -> CatalogSnapshot:
        """The snapshot of the store's current versions, built or refreshed if they moved.
        ``usage=False``: for a question whose answer no usage count changes, the newest snapshot of
        the current catalog version even if calls were recorded since (they are read by the next
        snapshot that needs them): a role check before each proxied call then costs no refresh."""
        # Versions are read before the catalog: a change racing a build moves them past the snapshot.
        versions = self.store.versions()
        snap = self._published
        if snap is not None and not self._stale and snap.version == versions[0] and \
                (not usage or snap.usage_version == versions[1]):
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
        derivation = self.derivation
        world = derivation.globals(saved.global_facts)
        class_of, arrays, add = derivation.load(saved.projections, classes, saved.ids, world)
        awaiting = [i for i, state in saved.states.items() if not state.approved]
        twins = derivation.twins([st for st, _state in self.store.tool_records(awaiting).values()], class_of, world,
                                 add)
        self.engine.change(add=add + list(world.engine), remove=[])
        derived = derivation.derive(None, saved.heads, class_of, set(), set(), arrays=arrays, twins=twins)
        derivation.pin(derived, awaiting)
        records = ToolRecords(self.store, saved.states)
        return CatalogSnapshot(
            version=saved.version, usage_version=saved.usage_version, states=saved.states, by_id=records,
            heads=saved.heads, rows=rows, row_of={i: r for r, i in enumerate(rows)}, index=index,
            index_key=saved.index_key, analyses=EffectiveAnalyses(records, self._effective), labels=saved.labels,
            names=saved.names, class_of=class_of, globals=world, blocked=derived.blocked, offline=derived.offline,
            tier_cap=derived.tier_cap, points=derived.points,
            memo=SnapshotMemo(shards={**saved.shards, **derived.shards}, summaries=saved.summaries,
                              class_arrays=arrays),
            unanalyzed=unanalyzed(saved.states), twins=twins,
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
            heads=snap.heads, names=snap.names,
            projections=[self.derivation.classes.projection[c] for c in used.tolist()],
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
        world = self.derivation.world(self.store.server_statuses())
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
        names = prev.names if set(prev.names) == set(rows) else model_names(heads, rows)
        marks, old = world.marks, prev.globals.marks  # a server whose stand-in changed: its tools derive again
        moved = {sv for sv in set(marks) | set(old) if marks.get(sv) != old.get(sv)}
        if moved:
            changed |= {i for i, (server, _name) in heads.items() if server in moved}
        fresh = {i: read[i] for i in changed if i in read}
        records = prev.by_id.evolve(states, changed | removed, fresh if len(fresh) <= CACHE_SIZE // 2 else None)

        def tool_of(i: int) -> StoredTool:
            found = read.get(i)
            return found[0] if found is not None else records[i]

        kept = Kept()
        class_of, twins, derived = self.derivation.apply(prev, ((i, tool_of(i)) for i in changed), heads, changed,
                                                         removed, world, kept)
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
            labels=merged_labels(prev.labels, kept.labels, stale), names=names, class_of=class_of, globals=world,
            blocked=derived.blocked, offline=derived.offline, tier_cap=derived.tier_cap, points=derived.points,
            memo=memo, unanalyzed=unanalyzed(states), twins=twins,
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
        kept = Kept()
        tools = ((i, st) for i, st, _state in self._read_every_tool(states, heads, texts))
        class_of, twins, derived = self.derivation.apply(None, tools, heads, states.keys(), set(), world, kept)
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
            labels=merged_labels(None, kept.labels, set()), names=model_names(heads, rows), class_of=class_of,
            globals=world,
            blocked=derived.blocked, offline=derived.offline, tier_cap=derived.tier_cap, points=derived.points,
            memo=SnapshotMemo(shards=derived.shards, summaries=kept.summaries), unanalyzed=unanalyzed(states),
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
        usage = self.derivation.usage_dependents
        class_of, twins, derived = self.derivation.apply(prev, ((i, records[i]) for i in changed), prev.heads, changed,
                                                          set(), prev.globals, None, only=usage)
        # Summaries, token costs, analyses, labels, the servers, the scans of the vectors and the
        # producers of identifiers do not depend on usage: shared with prev.
        memo = SnapshotMemo(shards=derived.shards, summaries=prev.memo.summaries, costs=prev.memo.costs,
                            explain_facts={i: v for i, v in prev.memo.explain_facts.items() if i not in changed},
                            by_name=prev.memo.by_name, by_head=prev.memo.by_head,
                            denied_rows={} if "denied" in usage else prev.memo.denied_rows,
                            server_tools=prev.memo.server_tools, demo=prev.memo.demo,
                            server_names=prev.memo.server_names, label_rows=prev.memo.label_rows,
                            scans=prev.memo.scans, producers=prev.memo.producers)
        return replace(prev, usage_version=usage_version, states=states, by_id=records,
                       analyses=prev.analyses.evolve(records), class_of=class_of, twins=twins, blocked=derived.blocked,
                       offline=derived.offline, tier_cap=derived.tier_cap, points=derived.points, memo=memo)

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
                tables = self.derivation.shard_tables(shard, live, newest.class_of, snap.heads, (ids, cids), twins)
                if snap is self._published:
                    snap.memo.shards[shard] = tables
            return tables

    def denied_rows(self, snap: CatalogSnapshot, shard: str) -> np.ndarray | None:
        """A mask over ``snap``'s rows of the tools ``shard`` may not have (the policy's
        ``denied``), None when it may have them all."""
        if shard in snap.memo.denied_rows:
            return snap.memo.denied_rows[shard]
        denied = self.shard_tables(snap, shard).denied
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
