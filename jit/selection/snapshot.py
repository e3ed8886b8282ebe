"""One catalog version as the compiler sees it: :class:`CatalogSnapshot` and what hangs off it.

A snapshot holds what a compile reads of every tool without its definition: its state, its
server and name and its name as the model sees it, its labels, its row in the retrieval
index, its class per derived predicate (:mod:`jit.selection.fact_classes`) and the per-tool
facts the rules derive (blocked, offline, tier caps, points). Definitions and effective
analyses are read on first use (:mod:`jit.selection.records`).

A published snapshot is immutable: a frozen dataclass whose containers are built before it
is published and never written afterwards. What a compile computes lazily from it lives in
its :class:`SnapshotMemo`: explicit memo tables, pure functions of the snapshot, that only
gain entries. They are lazy because filling them up front would cost every build work most
catalogs never need (token costs per tool, tier and format; shard tables of shards no task
asks for). :class:`~jit.selection.catalog_view.CatalogView` builds snapshots.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from ..models import StoredTool, ToolAnalysis, ToolState
from .fact_classes import Globals
from .records import CACHE_SIZE, EffectiveAnalyses, ToolRecords
from .render import rendered_names, tool_summary
from .retrieve import RetrievalIndex
from .tiers import Tier

__all__ = ["LABEL_KINDS", "SCANS_KEPT", "SCAN_BYTES_KEPT", "CatalogSnapshot", "Derived", "Kept", "Scan", "ShardTables", "SnapshotMemo",
           "analysis_warning", "embedding_warning", "label_rows", "merged_labels", "model_names", "unanalyzed"]

LABEL_KINDS = ("capability", "category", "domain")


class ShardTables(NamedTuple):
    """One shard's derived tables, per tool (:meth:`~jit.selection.catalog_view.CatalogView.shard_tables`)."""

    #: Per-shard points predicate (``shard_points``) -> tool -> its points.
    points: dict[str, dict[int, int]]
    #: Tool -> the skeleton slots it may fill for the shard.
    skeleton: dict[int, tuple[str, ...]]
    #: Tool -> why the shard may not have it (``denied``); a tool not here is not denied.
    denied: dict[int, tuple[str, ...]]


#: Scans (:class:`Scan`) a snapshot keeps: those of the last few tasks (at 100,000 tools a scan
#: holds ~4 MB: the cosines, and the normalised dense and lexical columns retrieval reads).
SCANS_KEPT = 4
#: The most bytes of cosines a kept scan may hold: a task of hundreds of steps (a 32 KiB text) has
#: as many columns, and is scanned again by each of its shards rather than held.
SCAN_BYTES_KEPT = 16 << 20


class Scan(NamedTuple):
    """One pass over a snapshot's vectors for a task's texts (read-only arrays): the task's query
    vectors, every tool's cosine with each of them and with each step's text, and what retrieval
    and the steps made of those columns whatever the role (:meth:`RetrievalIndex.score`,
    :func:`jit.selection.steps.plan`), kept for the next shard of the task."""

    vecs: np.ndarray
    sims: np.ndarray
    kept: dict[tuple, tuple[Any, ...]]


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
    #: ``class_of`` as arrays (:func:`~jit.selection.fact_classes.class_arrays`), for passes over every tool.
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
    #: Server -> its tool ids, and server -> whether it is a demonstration server
    #: (:func:`jit.selection.naming.demo_servers`), for the tools of a task's steps.
    server_tools: dict[str, list[int]] | None = None
    demo: dict[str, bool] = field(default_factory=dict)
    #: The servers by the first word of their name, for the servers a task names: a
    #: :class:`jit.selection.steps.ServerNames` (:func:`jit.selection.steps.server_names`).
    server_names: Any = None
    #: ``(kind, label)`` -> the rows of the tools with it (:func:`label_rows`).
    label_rows: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)
    #: A task's texts (its queries, then its steps') -> their :class:`Scan`, for the shards spawned
    #: for it; the newest :data:`SCANS_KEPT`, none of over :data:`SCAN_BYTES_KEPT` (vectors and texts
    #: only: a snapshot built after tool calls shares them with its predecessor).
    scans: dict[tuple[tuple[str, ...], tuple[str, ...]], Scan] = field(default_factory=dict)
    #: ``(tool id, ids_only, optional_ids)`` -> the tools of its server that hand out the identifiers it requires
    #: (:func:`jit.selection.producers.producers`; depends on its definition and its siblings' names and lines,
    #: not on usage).
    producers: dict[tuple[int, bool, bool], list[int]] = field(default_factory=dict)
    #: tool id -> the tool of its server that turns a place's name into the coordinates it requires
    #: (:func:`jit.selection.producers.coordinate_producers`; the same dependencies).
    points: dict[int, list[int]] = field(default_factory=dict)


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
    #: Per-tool points predicate (``usage_points``, ``penalty_points``: ``TOOL_POINTS``) -> tool -> its points.
    points: dict[str, dict[int, int]]
    memo: SnapshotMemo
    #: How many tools have no analysis yet (an interrupted sync; the compile warns): their hostile-text
    #: flags are found when they are read (:func:`~jit.analysis.analyze.effective_tool`).
    unanalyzed: int = 0
    #: Tool awaiting approval -> the class its last approved definition derives ``denied`` with,
    #: where that differs from its own: a role is denied the tool if either definition is denied
    #: (:meth:`~jit.selection.derivation.Derivation.twins`).
    twins: dict[int, int] = field(default_factory=dict)


@dataclass
class Derived:
    """Per-tool derived facts of a snapshot being built."""

    blocked: dict[int, str]
    offline: frozenset[int]
    tier_cap: dict[int, Tier]
    points: dict[str, dict[int, int]]
    shards: dict[str, ShardTables]


class Kept:
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


def merged_labels(prev: dict[str, dict[str, frozenset[int]]] | None, added: dict[str, dict[str, set[int]]],
                  stale: set[int]) -> dict[str, dict[str, frozenset[int]]]:
    """Kind -> label -> tool ids: ``prev``'s without the ``stale`` tools, plus the labels
    ``added`` (those of the changed tools, :class:`Kept`)."""
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


def model_names(heads: dict[int, tuple[str, str]], rows: list[int]) -> dict[int, str]:
    """Each tool's name as the model sees it: ``server__tool``, with a hash where two collide."""
    by_head = rendered_names(heads[i] for i in rows)
    return {i: by_head[heads[i]] for i in rows}


def unanalyzed(states: dict[int, ToolState]) -> int:
    """How many of ``states`` have no analysis yet."""
    return sum(1 for state in states.values() if state.analyzed_at is None)


def label_rows(snap: CatalogSnapshot, kind: str, label: str) -> np.ndarray:
    """The rows of ``snap``'s tools with ``label`` of ``kind`` (``snap.labels``), ascending, kept in
    its memo: a mask over the rows is asked of them at once (a 100k catalog has ~30k tools that write)."""
    key = (kind, label)
    found = snap.memo.label_rows.get(key)
    if found is None:
        row_of = snap.row_of
        found = np.array(sorted(row_of[t] for t in snap.labels.get(kind, {}).get(label, ()) if t in row_of),
                         dtype=np.int64)
        snap.memo.label_rows[key] = found
    return found


def embedding_warning(index: RetrievalIndex) -> str | None:
    """Say so when tools have no vector (an interrupted ``jit sync``, or another embedding model).

    Such a tool is not lost: its dense similarity reads as the lowest of the
    catalog's, so it is still found by the words of its name, description and
    parameters (``lexical_weight`` of the score) and by name mentions, never by
    meaning. Silently, it would just rank low."""
    have = index.vector_count
    if not index.n or index.all_vectors:
        return None
    if not have:
        return (f"none of the {index.n} tools has a vector for this embedding model: ranking is by their words "
                "only (lexical), not by meaning; run `jit sync` to embed them")
    missing = index.n - have
    return (f"{missing} of {index.n} tools have no embedding yet (an interrupted or unfinished `jit sync`?): "
            "they are found only by the words of their name and description (lexical), not by meaning; "
            "run `jit sync` to embed them")


def analysis_warning(missing: int, total: int) -> str:
    """Say so when tools have no analysis (an interrupted ``jit sync``, or ``jit serve`` between
    discovering tools and analysing them). Such a tool is not lost, nor trusted more: its text
    is checked for instructions to the model when it is read (flagged, it is kept out of Full as
    any flagged tool), but it has no labels or shard affinity, so the rules give it no points."""
    return (f"{missing} of {total} tools have no analysis yet (an interrupted or unfinished `jit sync`?): "
            "their text is checked for hostile instructions, but they get no points for labels or shard "
            "affinity; run `jit sync` to analyse them")
