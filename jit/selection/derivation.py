"""What the rules derive of a catalog, tool by tool, through the classes the engine holds.

:class:`Derivation` owns the Datalog engine of a :class:`~jit.selection.catalog_view.CatalogView`:
the config's shard facts, the catalog's classes (:mod:`jit.selection.fact_classes`) and the
global facts (server statuses and their stand-ins). Given the tools that changed, it gives
each its class per derived predicate (:data:`~jit.selection.policy.DERIVED`), diffs the
classes' facts into the engine (retract / assert) and asks the rules again for the changed
tools' per-tool facts: ``blocked``, ``offline``, ``tier_cap``, the per-tool points
(:data:`~jit.selection.policy.TOOL_POINTS`) and, per shard the snapshot knows, the shard
tables (:data:`~jit.selection.policy.SHARD_PREDICATES`). The rest is kept. Per-tool derived
facts are assumed to depend on the tool's own facts and on ``server_status`` of its server
(true of any rule that joins through ``tool(T, Server, Name)``).

A tool awaiting approval is also judged as its last approved definition for ``denied``
(:meth:`Derivation.twins`): whatever a change awaits, it must not widen what a role may see.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from ..analysis.analyze import effective_tool
from ..analysis.offline_analyzer import OfflineAnalyzer
from ..catalog.approval import PIN_REASON
from ..catalog.store import Store
from ..config import Config
from ..models import ServerStatus, StoredTool
from .fact_classes import Classes, Globals, abstract, check_task_tables, class_arrays, server_marks, tool_facts
from .logic import Fact, LogicEngine, RuleSet
from .policy import DERIVED, SHARD_POINTS, SHARD_PREDICATES, TOOL_POINTS, TOOL_PREDICATES, check_points, merge_points
from .snapshot import CatalogSnapshot, Derived, Kept, ShardTables
from .tiers import Tier

__all__ = ["Derivation"]

_TIER_BY_NAME = {t.value: t for t in Tier}


class Derivation:
    """The engine's facts of one catalog, seen through one config and rule set, and what the
    rules derive from them per tool. The compiler only adds a task's facts to the engine for
    the length of one query (``engine.with_facts``)."""

    def __init__(self, store: Store, config: Config, rules: RuleSet) -> None:
        self.store = store
        self.config = config
        check_task_tables(rules)
        check_points(rules)
        self.engine = LogicEngine(rules)
        #: What a tool call can change: the derived predicates that read usage.
        self.usage_dependents = rules.dependents("usage")
        selectors = [(shard, *sel) for shard, sc in config.shards.items() for sel in sc.selectors()]
        #: The config's ``tool:`` selectors as ``(shard, effect, glob)``, matched per tool (fact_classes.tool_facts).
        self.globs = tuple((shard, effect, value) for shard, effect, kind, value in selectors if kind == "tool")
        rule_facts = [("shard_rule", shard, effect, kind, value) for shard, effect, kind, value in selectors
                      if kind != "tool"]
        #: Values the rules or the config's shard facts name.
        categories = {c for sc in config.shards.values() for c in sc.categories}
        self._constants = rules.constants | {*config.shards, *categories} | {f[4] for f in rule_facts}
        #: The classes the engine holds: tools that derive alike share one.
        self.classes = Classes(self.engine, rules)
        self.engine.change([("shard", s) for s in config.shards]
                           + [("shard_category", s, c) for s, sc in config.shards.items() for c in sc.categories]
                           + rule_facts)

    def close(self) -> None:
        self.engine.close()

    # ------------------------------------------------------------------ global facts

    def world(self, statuses: dict[str, tuple[ServerStatus, float | None]]) -> Globals:
        """The global facts of the servers' statuses (``Store.server_statuses``)."""
        return self.globals(frozenset(("server_status", name, self.status_of(name, *status))
                                      for name, status in statuses.items()))

    def globals(self, facts: frozenset) -> Globals:
        marks, mark_facts = server_marks(facts, self._constants)
        return Globals(facts, marks, facts | mark_facts, self._constants | {v for f in facts for v in f[1:]})

    def status_of(self, server: str, status: ServerStatus, last_seen: float | None) -> str:
        """The status the rules see. Statuses are shared by the configs of a catalog, but
        ``enabled`` is each config's own: disabled here is disabled, and a server this
        config enables is not blocked because another config disabled it (Config.server_status)."""
        return self.config.server_status(server, status, last_seen).value

    # ------------------------------------------------------------------ classes and derived facts

    def apply(self, prev: CatalogSnapshot | None, tools: Iterable[tuple[int, StoredTool]],
              heads: dict[int, tuple[str, str]], changed: Collection[int], removed: set[int], world: Globals,
              kept: Kept | None, *, only: frozenset[str] | None = None
              ) -> tuple[dict[int, tuple[int, ...]], dict[int, int], Derived]:
        """The classes (their facts diffed into the engine, with ``world``'s), the twins (:meth:`twins`)
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
            sig = abstract(st, tool_facts(st, effective, self.globs), world.marks, world.fixed)
            parts = projections.get(sig)
            if parts is None:
                parts = projections[sig] = tuple(frozenset(f for f in sig if f[0] in reads)
                                                 for reads in self.classes.reads)
            old = class_of.get(i)
            new = list(old) if old is not None else [0] * len(DERIVED)
            for k in (redo if old is not None else range(len(DERIVED))):
                new[k] = self.classes.acquire(parts[k], k, add)
                if old is not None:
                    released.append(old[k])
            class_of[i] = tuple(new)
        if judged and unapproved:
            twins.update(self.twins(unapproved, class_of, world, add))
        drop = self.classes.release(released)
        old_global = prev.globals.engine if prev else frozenset()
        engine_globals = world.engine
        if engine_globals != old_global:
            # A class's rows depend on the global facts too (a server named by a rule or the config
            # keeps its own name, so its tools' classes survive a change of its status).
            self.classes.rows.clear()
        self.engine.change(add=add + list(engine_globals - old_global), remove=drop + list(old_global - engine_globals))
        derived = self.derive(prev, heads, class_of, set(changed), removed, only=only, twins=twins)
        self.pin(derived, (st.id for st in unapproved))
        return class_of, twins, derived

    def load(self, projections: Sequence[frozenset], classes: np.ndarray, ids: np.ndarray, world: Globals
             ) -> tuple[dict[int, tuple[int, ...]], tuple[np.ndarray, np.ndarray], list[Fact]]:
        """The classes of a view file (:mod:`jit.selection.viewfile`): ``projections`` and, per tool of
        ``ids``, the index of its class per derived predicate, acquired with their references
        counted. Returns ``class_of``, it as arrays, and the facts to assert (with ``world``'s)."""
        lut = np.zeros(len(projections), dtype=np.int64)
        add: list[Fact] = []
        for k in range(len(DERIVED)):
            used, counts = np.unique(classes[:, k], return_counts=True)
            for p, n in zip(used.tolist(), counts.tolist(), strict=True):
                cid = lut[p] = self.classes.acquire(projections[p], k, add)
                self.classes.refs[cid] += n - 1
        arrays = (ids, lut[classes])
        class_of = dict(zip(ids.tolist(), map(tuple, arrays[1].tolist()), strict=True))
        return class_of, arrays, add

    def pin(self, derived: Derived, awaiting: Iterable[int]) -> None:
        """With ``security.pin_definitions``, the tools awaiting approval are blocked. Not a rule: what
        pinning withholds must not depend on an editable policy file."""
        if self.config.security.pin_definitions:
            for i in awaiting:
                derived.blocked.setdefault(i, PIN_REASON)

    def twins(self, awaiting: Sequence[StoredTool], class_of: dict[int, tuple[int, ...]], world: Globals,
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
            analysis = self.store.cached_analysis(dhash) or OfflineAnalyzer(self.config.shards).analyze_one(tdef)
            twin = replace(st, tool=tdef, definition_hash=dhash, analysis=analysis, approved=True, calls=0, errors=0)
            effective = effective_tool(twin, self.config.available_tools, shards=self.config.shards)
            sig = abstract(twin, tool_facts(twin, effective, self.globs), world.marks, world.fixed)
            part = frozenset(f for f in sig if f[0] in self.classes.reads[kd])
            if part != self.classes.projection[class_of[st.id][kd]]:
                twins[st.id] = self.classes.acquire(part, kd, add)
        return twins

    def derive(self, prev: CatalogSnapshot | None, heads: dict[int, tuple[str, str]],
               class_of: dict[int, tuple[int, ...]], changed: set[int], removed: set[int], *,
               only: frozenset[str] | None = None, arrays: tuple[np.ndarray, np.ndarray] | None = None,
               twins: dict[int, int] | None = None) -> Derived:
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
        points = {p: dict(prev.points.get(p, {})) if prev else {} for p in TOOL_POINTS}
        # Per shard, one table per shard predicate (SHARD_PREDICATES order).
        tables = {s: [dict(t) for t in _flat(prev_shards[s])] for s in shards}
        asked = set(tool_preds + shard_preds)  # what a changed tool loses; a removed one loses all
        for i in removed | changed:
            redo = asked if i in changed else set(DERIVED)
            if "blocked" in redo:
                blocked.pop(i, None)
            if "offline" in redo:
                offline.discard(i)
            if "tier_cap" in redo:
                caps.pop(i, None)
            for p, table in points.items():
                if p in redo:
                    table.pop(i, None)
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
                    merge_points(points[p], [(t, n) for _t, n in rows])
        for s in shards:
            for p in shard_preds:
                self.classes.fold(DERIVED.index(p), s, todo, class_of, heads, full,
                                  tables[s][SHARD_PREDICATES.index(p)], arrays,
                                  twins=_only(twins, todo, full) if p == "denied" else None)
        if removed:
            blocked = {t: r for t, r in blocked.items() if t in heads}
            offline = {t for t in offline if t in heads}
            caps = {t: c for t, c in caps.items() if t in heads}
            points = {p: {t: n for t, n in table.items() if t in heads} for p, table in points.items()}
        return Derived(blocked=blocked, offline=frozenset(offline), tier_cap=caps, points=points,
                       shards={s: shard_tables(tables[s]) for s in shards})

    def shard_tables(self, shard: str, live: list[int], class_of: dict[int, tuple[int, ...]],
                     heads: dict[int, tuple[str, str]], arrays: tuple[np.ndarray, np.ndarray],
                     twins: dict[int, int]) -> ShardTables:
        """A shard's tables for the tools ``live`` (every tool of the engine's newest classes, or
        those of them still in an older snapshot), asked of every class at once."""
        found: list[dict[int, Any]] = []
        for p in SHARD_PREDICATES:
            found.append({})
            self.classes.fold(DERIVED.index(p), shard, live, class_of, heads, True, found[-1], arrays,
                              twins=twins if p == "denied" else None)
        return shard_tables(found)


def shard_tables(tables: Sequence[dict[int, Any]]) -> ShardTables:
    """:class:`ShardTables` of one table per shard predicate, in ``SHARD_PREDICATES`` order."""
    by_predicate = dict(zip(SHARD_PREDICATES, tables, strict=True))
    return ShardTables(points={p: by_predicate[p] for p in SHARD_POINTS}, skeleton=by_predicate["skeleton"],
                       denied=by_predicate["denied"])


def _flat(tables: ShardTables) -> list[dict[int, Any]]:
    """One table per shard predicate, in ``SHARD_PREDICATES`` order (the inverse of :func:`shard_tables`)."""
    by_predicate = {**tables.points, "skeleton": tables.skeleton, "denied": tables.denied}
    return [by_predicate.get(p, {}) for p in SHARD_PREDICATES]


def _only(twins: dict[int, int] | None, todo: list[int], full: bool) -> dict[int, int] | None:
    """The ``twins`` of the tools a derivation visits: all of them, or those of ``todo``."""
    if not twins or full:
        return twins
    return {t: twins[t] for t in todo if t in twins}
