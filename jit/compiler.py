"""compile(TaskContext) -> ToolSet: the heart of jit.

A compile runs in four steps:

1. **Catalog view** (once per catalog version, shared by every thread): the
   tools, their effective analyses, the retrieval index, and the catalog facts
   asserted into the Datalog engine. When ``Store.catalog_version()`` moves,
   only tools whose state changed are reloaded, their facts diffed (retract /
   assert) and their per-tool derived facts (``blocked``, ``offline``,
   ``tier_cap``, ``usage_points``, and per shard ``shard_points`` and
   ``skeleton``) asked again with the tool bound; the rest is kept. Per-tool
   derived facts are assumed to depend on the tool's own facts and on
   ``server_status`` of its server (true of any rule that joins through
   ``tool(T, Server, Name)``). Tool calls move ``Store.usage_version()``
   instead: the called tools' usage facts are diffed and only the predicates
   that read ``usage`` (``RuleSet.dependents``) asked again.
2. **Task tables** (per compile): the task facts (shard, intent, language and
   the task's capabilities, categories and domains from ``analyze_task``) are
   asserted, the ``*_points`` tables are asked, and the facts retracted: a
   handful of facts, a few milliseconds, whatever the catalog size.
3. **Scores**: retrieval gives each candidate a vector score (0–100) and a rank;
   logic = shard + usage + task + relevance points, clamped to 0–100, each part
   read from the rules' tables; final = logic_weight × logic + vector_weight × vector.
4. **Tiers**: thresholds, the rules' tier caps, ``max_full_tools`` and the token
   budget, measured on the rendering (see :func:`jit.render.fit_budget`).

Every pyDatalog call runs on the :class:`~jit.logic.LogicEngine`'s own thread,
so compile() and rank() may be called from any number of threads at once.
"""

from __future__ import annotations

import gc
import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from .approval import CHANGED_FLAG, PIN_REASON
from .config import Config
from .embed import Embedder, QueryVectorCache
from .errors import SelectionError
from .logic import Fact, LogicEngine, RuleSet
from .models import HARNESS_SERVER, ServerRecord, ServerStatus, StoredTool, ToolAnalysis
from .render import fit_budget, namespaced, order_key, summary_line, tier_cost, with_hash
from .retrieve import RetrievalIndex, split_task
from .selection import ScoredTool, TaskContext, Tier, ToolSet
from .store import Store
from .tokens import EstimateCounter, TokenCounter, default_counter

__all__ = ["Compiler"]

#: A clause's retrieval score counts this much of the whole task's.
CLAUSE_WEIGHT = 0.9
#: Share of a server's best vector score given to its other tools.
SERVER_SHARE = 0.15
#: Vector score floor for the tools of a server the task names.
SERVER_MENTION_FLOOR = 70
_TIER_BY_NAME = {t.value: t for t in Tier}
_POINT_RULES = {"shard": "shard_points", "usage": "usage_points", "capability": "capability_points",
                "category": "category_points", "domain": "domain_points", "relevance": "relevance_points"}
_TASK_TABLES = ("capability_points", "category_points", "domain_points", "relevance_points")
_LABEL_KINDS = ("capability", "category", "domain")
#: Derived per tool (asked with the tool bound when it changes), and per shard and tool.
_TOOL_PREDICATES = ("blocked", "offline", "tier_cap", "usage_points")
_SHARD_PREDICATES = ("shard_points", "skeleton")


@dataclass
class _View:
    """One catalog version as the compiler sees it. Never mutated once published,
    except for the caches, which only gain entries (a view after tool calls shares
    with the one before it the caches that do not depend on usage)."""

    version: int  # Store.catalog_version()
    usage_version: int  # Store.usage_version()
    states: dict[int, tuple]
    by_id: dict[int, StoredTool]
    rows: list[int]  # tool ids in row order
    row_of: dict[int, int]
    index: RetrievalIndex
    index_key: int
    analyses: dict[int, ToolAnalysis]
    names: dict[int, str]
    facts: dict[int, frozenset]
    global_facts: frozenset
    blocked: dict[int, str]
    offline: frozenset[int]
    tier_cap: dict[int, Tier]
    usage_points: dict[int, int]
    shard_points: dict[str, dict[int, int]] = field(default_factory=dict)
    skeleton: dict[str, dict[int, tuple[str, ...]]] = field(default_factory=dict)
    summaries: dict[int, str] = field(default_factory=dict)
    #: Estimated tokens of a tool at a tier in a format: (id, tier, format, offline) -> tokens.
    costs: dict[tuple, int] = field(default_factory=dict)
    explain_facts: dict[int, dict[str, Any]] = field(default_factory=dict)
    #: Kind ("capability", "category", "domain") -> label -> ids of the tools with it; built on
    #: first use, and kept by a view that only usage changed (analyses do not depend on usage).
    labels: dict[str, dict[str, set[int]]] | None = None


class Compiler:
    """Compiles tool sets for shards from one catalog, config and rule set."""

    def __init__(self, store: Store, config: Config, embedder: Embedder, *,
                 token_counter: TokenCounter | None = None, rules: RuleSet | None = None) -> None:
        self.store = store
        self.config = config
        # Query text only: shards spawned for one task share its vectors.
        self.embedder = QueryVectorCache(embedder)
        self.counter = token_counter or default_counter(api_key_env=config.analyzer.api_key_env)
        self._estimate = EstimateCounter()
        self.rules = rules or RuleSet.load(config.rules_dir)
        self.engine = LogicEngine(self.rules)
        self._view: _View | None = None
        self._lock = threading.RLock()
        #: For explanations: the rule lines behind each kind of logic points.
        self._fired = {kind: _where(self.rules, pred) for kind, pred in _POINT_RULES.items()}
        #: What a tool call can change: the derived predicates that read usage.
        self._usage_dependents = self.rules.dependents("usage")
        self.engine.change([("shard", s) for s in config.shards]
                           + [("shard_category", s, c) for s, sc in config.shards.items() for c in sc.categories])

    def close(self) -> None:
        """Stop the Datalog engine's thread and let go of the catalog view (with
        ``freeze_gc``, unfrozen for a collection to reclaim: see ``_FrozenGC``)."""
        self.engine.close()
        self._view = None
        if self.config.tool_selection.freeze_gc:
            _FrozenGC.release()

    def __enter__(self) -> Compiler:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ catalog view

    def _current(self) -> _View:
        # Versions are read before the catalog: a change racing a build moves them past the view.
        versions = self.store.versions()
        view = self._view
        if view is not None and (view.version, view.usage_version) == versions:
            return view
        with self._lock:
            versions = self.store.versions()
            view = self._view
            if view is None or view.version != versions[0]:
                with _FrozenGC.building(self.config.tool_selection.freeze_gc):
                    self._view = self._build(view, *versions)
            elif view.usage_version != versions[1]:
                self._view = self._with_usage(view, versions[1])
            return self._view

    def _build(self, prev: _View | None, version: int, usage_version: int) -> _View:
        """The view of a catalog version: every tool's state read, the changed ones reloaded."""
        states = self.store.tool_states()
        if prev is None:
            changed = set(states)
            by_id = {st.id: st for st in self.store.tools()}
        else:
            changed = {i for i, s in states.items() if prev.states.get(i) != s}
            by_id = {i: st for i, st in prev.by_id.items() if i in states and i not in changed}
            by_id.update(self.store.tools_by_id(changed))
        changed &= set(by_id)
        removed = set(prev.states) - set(states) if prev else set()
        rows = sorted(by_id)
        index_key = hash(tuple((i, states[i][1], states[i][2]) for i in rows))
        if prev is not None and prev.index_key == index_key:
            index = prev.index
        else:
            ids, matrix = self.store.vector_matrix()
            model = self.store.embedding_model()
            usable = model is not None and model[0] == self.embedder.model_name
            vectors = dict(zip(ids.tolist(), matrix, strict=True)) if usable else {}
            index = RetrievalIndex([by_id[i] for i in rows], vectors, matrix.shape[1] if usable else 0)
        servers = frozenset(("server_status", s.name, self._status_of(s)) for s in self.store.servers())
        if prev is None:
            names = self._names(by_id, rows)
        elif set(prev.names) == set(rows):
            names = prev.names
        else:
            names = self._names(by_id, rows)
        view = _View(
            version=version, usage_version=usage_version, states=states, by_id=by_id, rows=rows,
            row_of={i: r for r, i in enumerate(rows)}, index=index, index_key=index_key, analyses={}, names=names,
            facts={}, global_facts=servers, blocked={}, offline=frozenset(), tier_cap={}, usage_points={},
        )
        if prev is not None:  # the caches of tools that did not change carry over
            stale = changed | removed
            view.summaries = {i: v for i, v in prev.summaries.items() if i not in stale}
            view.explain_facts = {i: v for i, v in prev.explain_facts.items() if i not in stale}
            if names is prev.names:  # a tool's rendered size depends on its name
                view.costs = {k: v for k, v in prev.costs.items() if k[0] not in stale}
        self._apply(view, prev, changed, removed)
        return view

    def _status_of(self, server: ServerRecord) -> str:
        """The status the rules see. Statuses are shared by the configs of a catalog, but
        ``enabled`` is each config's own: disabled here is disabled, and a server this
        config enables is not blocked because another config disabled it."""
        cfg = self.config.servers.get(server.name)
        if cfg is not None and not cfg.enabled:
            return ServerStatus.DISABLED.value
        if cfg is not None and server.status is ServerStatus.DISABLED:
            return (ServerStatus.IDLE if server.last_seen is not None else ServerStatus.UNKNOWN).value
        return server.status.value

    def _with_usage(self, prev: _View, usage_version: int) -> _View:
        """The view after tool calls only: the called tools' usage changes, nothing else is read.

        A proxied call must not cost the next compile a scan of the catalog."""
        states = dict(prev.states)
        by_id = dict(prev.by_id)
        changed: set[int] = set()
        for i, (calls, errors) in self.store.usage_since(prev.usage_version).items():
            state = states.get(i)
            if state is None or state[-2:] == (calls, errors):
                continue
            states[i] = (*state[:-2], calls, errors)
            by_id[i] = replace(by_id[i], calls=calls, errors=errors)
            changed.add(i)
        # Summaries, token costs and the label index do not depend on usage: shared with prev.
        view = replace(prev, usage_version=usage_version, states=states, by_id=by_id, analyses={}, facts={},
                       blocked={}, offline=frozenset(), tier_cap={}, usage_points={}, shard_points={}, skeleton={},
                       explain_facts={i: v for i, v in prev.explain_facts.items() if i not in changed})
        self._apply(view, prev, changed, set(), only=self._usage_dependents)
        return view

    def _apply(self, view: _View, prev: _View | None, changed: set[int], removed: set[int], *,
               only: frozenset[str] | None = None) -> None:
        """Fill ``view`` from ``prev`` and the tools that changed: analyses, Datalog facts
        (diffed into the engine) and derived facts."""
        by_id = view.by_id
        analyses = dict(prev.analyses) if prev else {}
        for i in removed:
            analyses.pop(i, None)
        for i in changed:
            analyses[i] = self._effective(by_id[i])
        facts = dict(prev.facts) if prev else {}
        add: list[Fact] = []
        drop: list[Fact] = []
        for i in removed:
            drop.extend(facts.pop(i, ()))
        for i in changed:
            new = self._tool_facts(by_id[i], analyses[i])
            old = facts.get(i, frozenset())
            drop.extend(old - new)
            add.extend(new - old)
            facts[i] = new
        old_global = prev.global_facts if prev else frozenset()
        self.engine.change(add=add + list(view.global_facts - old_global),
                           remove=drop + list(old_global - view.global_facts))
        view.analyses, view.facts = analyses, facts
        self._derive(view, prev, changed, removed, only=only)
        if self.config.security.pin_definitions:
            # Not a rule: what pinning withholds must not depend on an editable policy file.
            for i in changed:
                if not by_id[i].approved:
                    view.blocked.setdefault(i, PIN_REASON)

    def _effective(self, st: StoredTool) -> ToolAnalysis:
        try:
            from .analyze import effective_analysis
        except ImportError:  # pragma: no cover - analyze.py ships with jit
            return st.analysis or ToolAnalysis(analyzer="none")
        return effective_analysis(st, self.config.available_tools, shards=self.config.shards)

    def _tool_facts(self, st: StoredTool, a: ToolAnalysis) -> frozenset:
        i, t = st.id, st.tool
        out: set[Fact] = {("tool", i, t.server, t.name)}
        if t.server == HARNESS_SERVER:
            out.add(("harness", i))
        if st.analysis is not None:
            out.add(("analyzed", i))
        out.update(("category", i, c) for c in a.categories)
        out.update(("capability", i, c) for c in a.capabilities)
        out.update(("domain", i, d) for d in a.domains)
        out.update(("affinity", i, s, int(p)) for s, p in a.shard_affinity.items())
        out.update(("flag", i, f) for f in a.flags)
        if not st.approved:  # a changed definition is capped like hostile text until approved
            out.add(("flag", i, CHANGED_FLAG))
        if st.calls:
            out.add(("usage", i, st.calls, st.errors))
        shards = list(self.config.shards)
        declared: list[str] = []
        available = self.config.available_tools
        if t.server == HARNESS_SERVER:
            for ht in available.tools:
                if ht.name == t.name:
                    declared.extend(ht.skeleton)
        ov = available.override_for(t.server, t.name)
        if ov is not None:
            if ov.skeleton is not None:
                declared = list(ov.skeleton)
            if ov.exclude:
                out.add(("override_excluded", i))
        for s in declared:
            out.update(("declared_skeleton", i, x) for x in (shards if s == "*" else [s]))
        return frozenset(out)

    @staticmethod
    def _names(by_id: dict[int, StoredTool], rows: list[int]) -> dict[int, str]:
        names: dict[int, str] = {}
        taken: set[str] = set()
        for i in sorted(rows, key=lambda i: (by_id[i].tool.server, by_id[i].tool.name)):
            t = by_id[i].tool
            name = namespaced(t.server, t.name)
            if name in taken:
                name = with_hash(name, t.server, t.name)
            taken.add(name)
            names[i] = name
        return names

    def _derive(self, view: _View, prev: _View | None, changed: set[int], removed: set[int], *,
                only: frozenset[str] | None = None) -> None:
        """Per-tool derived facts: all of them the first time, then only for changed tools, and
        of those only the predicates in ``only`` (default: all; after tool calls, the ones the
        rules make depend on ``usage``)."""
        shards = list(prev.shard_points) if prev else []
        tool_preds = [p for p in _TOOL_PREDICATES if only is None or p in only]
        shard_preds = [p for p in _SHARD_PREDICATES if only is None or p in only]
        todo: list[int | None] = [None] if prev is None else sorted(changed)
        queries: list[tuple[str, Sequence[Any]]] = []
        for i in todo:
            queries += [(p, (i,) if p == "offline" else (i, None)) for p in tool_preds]
            queries += [(p, (s, i, None)) for s in shards for p in shard_preds]
        answers = iter(self.engine.query_many(queries) if queries else [])
        blocked = dict(prev.blocked) if prev else {}
        offline = set(prev.offline) if prev else set()
        caps = dict(prev.tier_cap) if prev else {}
        usage = dict(prev.usage_points) if prev else {}
        shard_points = {s: dict(prev.shard_points[s]) for s in shards} if prev else {}
        skeleton = {s: dict(prev.skeleton[s]) for s in shards} if prev else {}
        asked = set(tool_preds + shard_preds)  # what a changed tool loses; a removed one loses all
        for i in removed | changed:
            redo = asked if i in changed else set(_TOOL_PREDICATES + _SHARD_PREDICATES)
            if "blocked" in redo:
                blocked.pop(i, None)
            if "offline" in redo:
                offline.discard(i)
            if "tier_cap" in redo:
                caps.pop(i, None)
            if "usage_points" in redo:
                usage.pop(i, None)
            for s in shards:
                if "shard_points" in redo:
                    shard_points[s].pop(i, None)
                if "skeleton" in redo:
                    skeleton[s].pop(i, None)
        for _ in todo:
            for p in tool_preds:
                rows = next(answers)
                if p == "blocked":
                    for t, reason in rows:
                        blocked.setdefault(t, str(reason))
                elif p == "offline":
                    offline.update(t for (t,) in rows)
                elif p == "tier_cap":
                    for t, tier in rows:
                        cap = _TIER_BY_NAME.get(str(tier), Tier.EXCLUDED)
                        caps[t] = max(cap, caps.get(t, Tier.FULL), key=lambda x: x.rank)
                else:
                    for t, points in rows:
                        usage[t] = max(int(points), usage.get(t, -10**6))
            for s in shards:
                for p in shard_preds:
                    rows = next(answers)
                    if p == "shard_points":
                        _merge_points(shard_points[s], [(t, points) for _s, t, points in rows])
                    else:
                        _merge_slots(skeleton[s], [(t, slot) for _s, t, slot in rows])
        if removed:
            live = set(view.by_id)
            blocked = {t: r for t, r in blocked.items() if t in live}
            offline &= live
            caps = {t: c for t, c in caps.items() if t in live}
            usage = {t: p for t, p in usage.items() if t in live}
        view.blocked, view.offline, view.tier_cap, view.usage_points = blocked, frozenset(offline), caps, usage
        view.shard_points = shard_points
        view.skeleton = skeleton

    def _shard_tables(self, view: _View, shard: str) -> tuple[dict[int, int], dict[int, tuple[str, ...]]]:
        if shard not in view.shard_points:
            with self._lock:
                if shard not in view.shard_points:
                    pts, slots = self.engine.query_many(
                        [("shard_points", (shard, None, None)), ("skeleton", (shard, None, None))]
                    )
                    points: dict[int, int] = {}
                    _merge_points(points, [(t, p) for _s, t, p in pts])
                    skel: dict[int, tuple[str, ...]] = {}
                    _merge_slots(skel, [(t, slot) for _s, t, slot in slots])
                    live = set(view.by_id)
                    view.skeleton[shard] = {t: v for t, v in skel.items() if t in live}
                    view.shard_points[shard] = {t: v for t, v in points.items() if t in live}
        return view.shard_points[shard], view.skeleton[shard]

    # ------------------------------------------------------------------ task facts

    def _task_facts(self, ctx: TaskContext, text: str) -> list[Fact]:
        from .analyze import analyze_task
        from .vocab import normalize_domain

        facts: list[Fact] = [("task_shard", ctx.shard)]
        if ctx.intent:
            facts.append(("task_intent", ctx.intent.strip().lower()))
        if ctx.language:
            lang = ctx.language.strip().lower()
            facts.append(("task_language", normalize_domain(lang) or "/" + lang.lstrip("/")))
        for f in ctx.files:
            dom = _EXTENSION_DOMAINS.get(os.path.splitext(f)[1].lower())
            if dom:
                facts.append(("task_domain", dom))
        if text.strip():
            profile = analyze_task(text, self.config.shards)
            facts += [("task_capability", c) for c in profile.capabilities]
            facts += [("task_category", c) for c in profile.categories]
            facts += [("task_domain", d) for d in profile.domains]
        return list(dict.fromkeys(facts))

    def _task_tables(self, facts: list[Fact]) -> dict[str, dict[Any, int]]:
        queries = [(name, (None, None, None) if name == "relevance_points" else (None, None)) for name in _TASK_TABLES]
        answers = self.engine.with_facts(facts, queries)
        tables: dict[str, dict[Any, int]] = {}
        for name, rows in zip(_TASK_TABLES, answers, strict=True):
            table: dict[Any, int] = {}
            _merge_points(table, [((r[0], r[1]), r[2]) for r in rows] if name == "relevance_points" else rows)
            tables[name] = table
        return tables

    # ------------------------------------------------------------------ scoring

    def _check(self, ctx: TaskContext) -> None:
        if not isinstance(ctx, TaskContext):
            raise SelectionError(f"compile() takes a TaskContext, not {type(ctx).__name__}")
        if ctx.shard not in self.config.shards:
            raise SelectionError(f"unknown shard {ctx.shard!r}; config defines {sorted(self.config.shards)}",
                                 shard=ctx.shard)
        if not isinstance(ctx.task, str):
            raise SelectionError("task must be a string")
        if ctx.budget is not None and (not isinstance(ctx.budget, int) or ctx.budget < 1):
            raise SelectionError(f"budget must be a positive number of tokens, got {ctx.budget!r}")
        for key in ("files", "include_servers", "exclude_servers"):
            value = getattr(ctx, key)
            if isinstance(value, str) or not all(isinstance(v, str) for v in value):
                raise SelectionError(f"{key} must be a sequence of strings, got {value!r}")

    def _allowed(self, view: _View, include: Sequence[str], exclude: Sequence[str]) -> np.ndarray:
        """Rows that may be candidates: not blocked by the rules, servers filtered."""
        ok = np.ones(len(view.rows), dtype=bool)
        for t in view.blocked:
            ok[view.row_of[t]] = False
        if include or exclude:
            names = view.index.server_names
            keep = np.array([(not include or s in include) and s not in exclude for s in names], dtype=bool)
            ok &= keep[view.index.server_of]
        return ok

    def _retrieve(self, view: _View, text: str, pool: int, extra: Sequence[int], allowed: np.ndarray,
                  warnings: list[str]) -> tuple[list[int], dict[int, float], set[int]]:
        """Candidate ids in vector order, their vector scores, and the ids the text names."""
        sel = self.config.tool_selection
        queries = [text, *split_task(text)] if text.strip() else []
        mentions = view.index.mentions(text)
        if not queries or not view.rows:
            ids = sorted({view.rows[r] for r in extra if allowed[r]}, key=lambda i: view.names[i])
            return ids, dict.fromkeys(ids, 0.0), set()
        if view.index.has_vector.any():
            # The model is most of a new task's compile time: clauses get their own vectors
            # only when the config asks (docs/selection.md, "Clauses").
            vecs = self.embedder.embed(queries if sel.dense_clauses else queries[:1])
        else:
            vecs = np.zeros((0, 0), dtype=np.float32)  # compile() warns (_embedding_warning)
        named = set(mentions.tools)
        scores = view.index.score(
            vecs, queries, lexical_weight=sel.lexical_weight, pool=pool, clause_weight=CLAUSE_WEIGHT,
            server_share=SERVER_SHARE, extra_rows=sorted(set(extra) | named | set(mentions.servers)),
        )
        vector: dict[int, float] = {}
        for r, v in zip(scores.rows.tolist(), scores.vector.tolist(), strict=True):
            if not allowed[r]:
                continue
            if r in named:
                v = 100.0
            elif r in mentions.servers:
                v = max(v, SERVER_MENTION_FLOOR)
            vector[view.rows[r]] = v
        named_ids = {view.rows[r] for r in named if allowed[r]}
        ids = sorted(vector, key=lambda i: (i not in named_ids, -vector[i], view.names[i]))
        return ids, vector, named_ids

    def _dedupe_skeleton(self, view: _View, slots: dict[int, tuple[str, ...]], allowed: np.ndarray
                         ) -> tuple[dict[int, list[str]], dict[int, int]]:
        """Best tool per skeleton slot: online, harness-declared, proven, then by name.
        Returns ``(winner -> slots, loser -> winner)``."""
        by_slot: dict[str, list[int]] = {}
        for t, names in slots.items():
            if allowed[view.row_of[t]]:
                for s in names:
                    by_slot.setdefault(s, []).append(t)
        winners: dict[int, list[str]] = {}
        losers: dict[int, int] = {}
        for slot in sorted(by_slot):
            ranked = sorted(by_slot[slot], key=lambda t: self._skeleton_key(view, t))
            winners.setdefault(ranked[0], []).append(slot)
            for t in ranked[1:]:
                losers.setdefault(t, ranked[0])
        for t in winners:
            losers.pop(t, None)
        return winners, losers

    @staticmethod
    def _skeleton_key(view: _View, t: int) -> tuple:
        st = view.by_id[t]
        return (t in view.offline, st.tool.server != HARNESS_SERVER, -view.usage_points.get(t, 0),
                -(st.calls - st.errors), st.errors, st.tool.server, st.tool.name)

    def _summary(self, view: _View, t: int) -> str:
        s = view.summaries.get(t)
        if s is None:
            a = view.analyses.get(t)
            st = view.by_id[t]
            s = summary_line(st.tool.description, a.condensed if a else "", a.flags if a else ())
            view.summaries[t] = s
        return s

    def _labels(self, view: _View) -> dict[str, dict[str, set[int]]]:
        if view.labels is None:
            with self._lock:
                if view.labels is None:
                    index: dict[str, dict[str, set[int]]] = {kind: {} for kind in _LABEL_KINDS}
                    for t, a in view.analyses.items():
                        for kind, values in zip(_LABEL_KINDS, (a.capabilities, a.categories, a.domains),
                                                strict=True):
                            for label in values:
                                index[kind].setdefault(label, set()).add(t)
                    view.labels = index
        return view.labels

    def _score(self, ctx: TaskContext, warnings: list[str], *, pool: int | None = None
               ) -> tuple[_View, list[ScoredTool], dict[str, list[str]]]:
        """Every candidate of a task with its points, scores and wanted tier (no budget yet)."""
        sel = self.config.tool_selection
        view = self._current()
        shard_points, slots = self._shard_tables(view, ctx.shard)
        text = " ".join([ctx.task, *(os.path.basename(f) for f in ctx.files)]).strip()
        facts = self._task_facts(ctx, text)
        tables = self._task_tables(facts)
        allowed = self._allowed(view, ctx.include_servers, ctx.exclude_servers)
        for s in (*ctx.include_servers, *ctx.exclude_servers):
            if s not in view.index.server_names:
                warnings.append(f"server {s!r} has no tools in the catalog")
        winners, losers = self._dedupe_skeleton(view, slots, allowed)
        extra = [view.row_of[t] for t in winners]
        ids, vector, named = self._retrieve(view, text, pool or sel.candidate_pool, extra, allowed, warnings)
        # Label points per candidate from the task's (small) tables: a set intersection per
        # label instead of a lookup per label of every candidate.
        candidates = set(ids)
        labels = self._labels(view)
        capability, category, domain = (_label_points(tables[f"{kind}_points"], labels[kind], candidates)
                                        for kind in _LABEL_KINDS)
        relevance = [(max_rank, min_vec, p) for (max_rank, min_vec), p in sorted(tables["relevance_points"].items())]
        usage_points, tier_cap, offline, names = view.usage_points, view.tier_cap, view.offline, view.names
        lw, vw = sel.logic_weight, sel.vector_weight
        thresholds = (sel.full_threshold, sel.condensed_threshold, sel.minimal_threshold)
        fired = self._fired
        out: list[ScoredTool] = []
        for rank, t in enumerate(ids, 1):
            v = vector[t]
            rel = None
            for max_rank, min_vec, p in relevance:
                if rank <= max_rank and v >= min_vec and (rel is None or p > rel):
                    rel = p
            points = {"shard": shard_points.get(t, 0), "usage": usage_points.get(t, 0),
                      "capability": capability.get(t, 0), "category": category.get(t, 0),
                      "domain": domain.get(t, 0), "relevance": rel or 0}
            logic = int(min(100, max(0, sum(points.values()))))
            vec = int(round(v))
            final = int(round(lw * logic + vw * vec))
            wanted = _tier_for(final, *thresholds)
            reasons = [f"{k} {p:+d} ({fired[k]})" for k, p in points.items() if p]
            if t in named:
                reasons.insert(0, "named in the task")
            skeleton = t in winners
            if skeleton:
                wanted = Tier.FULL
                reasons.insert(0, f"skeleton for {ctx.shard} (slot {', '.join(winners[t])})")
            tier = wanted
            cap = tier_cap.get(t)
            if cap is not None and cap.rank > tier.rank:
                reasons.append(f"capped at {cap.value} by rule tier_cap")
                tier = cap
            if t in losers:
                reasons.append(f"not skeleton: {names[losers[t]]} fills the same slot")
            out.append(ScoredTool(
                tool=view.by_id[t], name=names[t], tier=tier, skeleton=skeleton, logic=logic, vector=vec,
                final=final, offline=t in offline, tokens=0, reasons=reasons, points=points,
                facts=self._explain_facts(view, t), wanted=wanted, rank=rank, summary=self._summary(view, t),
            ))
        task_facts: dict[str, list[str]] = {}
        for f in facts:
            task_facts.setdefault(f[0].removeprefix("task_"), []).append(str(f[1]))
        return view, out, task_facts

    def _explain_facts(self, view: _View, t: int) -> dict[str, Any]:
        cached = view.explain_facts.get(t)
        if cached is not None:
            return cached
        st = view.by_id[t]
        a = view.analyses.get(t) or ToolAnalysis(analyzer="none")
        facts: dict[str, Any] = {
            "server_status": st.server_status.value,
            "analyzed": st.analysis is not None,
            "categories": list(a.categories),
            "capabilities": list(a.capabilities),
            "domains": list(a.domains),
            "affinity": dict(a.shard_affinity),
        }
        if st.calls:
            facts["usage"] = {"calls": st.calls, "errors": st.errors}
        if not st.approved:
            facts["definition"] = "changed since approved: awaiting `jit approve`"
        if a.flags:
            facts["flags"] = list(a.flags)
        if t in view.blocked:
            facts["blocked"] = view.blocked[t]
        view.explain_facts[t] = facts
        return facts

    def compile(self, ctx: TaskContext) -> ToolSet:
        """The tool set for one shard spawn. Thread-safe."""
        sel = self.config.tool_selection
        self._check(ctx)
        warnings: list[str] = []
        budget = ctx.budget if ctx.budget is not None else sel.token_budget
        view, tools, task_facts = self._score(ctx, warnings)
        missing = _embedding_warning(view.index)
        if missing:
            warnings.append(missing)
        skeleton_full = [s for s in tools if s.skeleton and s.tier is Tier.FULL]
        room = max(0, sel.max_full_tools - len(skeleton_full))
        if len(skeleton_full) > sel.max_full_tools:
            warnings.append(f"{len(skeleton_full)} skeleton tools are Full, more than max_full_tools="
                            f"{sel.max_full_tools}")
        for s in sorted((s for s in tools if not s.skeleton and s.tier is Tier.FULL), key=lambda s: (-s.final, s.name)):
            if room > 0:
                room -= 1
            else:
                s.reasons.append(f"demoted full -> condensed: max_full_tools={sel.max_full_tools}")
                s.tier = Tier.CONDENSED
        fmt = sel.budget_format
        costs = view.costs

        def cost(st: ScoredTool, tier: Tier) -> int:
            key = (st.tool.id, tier, fmt, st.offline)
            value = costs.get(key)
            if value is None:
                value = costs[key] = tier_cost(st, tier, fmt, self._estimate)
            return value

        used, budget_warnings = fit_budget(tools, budget, fmt, self.counter, estimate=self._estimate, cost=cost,
                                           shard=ctx.shard)
        warnings += budget_warnings
        if getattr(self.counter, "last_error", None):
            warnings.append(f"exact token count failed ({self.counter.last_error}); the estimate was used")
        for s in tools:
            if s.offline and s.tier is not Tier.EXCLUDED:
                s.reasons.append(f"offline: server {s.server!r} is {s.tool.server_status.value}")
        tools.sort(key=order_key)
        return ToolSet(
            shard=ctx.shard, task=ctx.task, budget=budget, tokens_used=used, warnings=warnings, tools=tools,
            budget_format=fmt, token_counter=self.counter.name, catalog_version=view.version,
            usage_version=view.usage_version,
            rules=self.rules.fingerprint, task_facts=task_facts,
        )

    def rank(self, query: str, k: int = 50, *, shard: str | None = None) -> list[tuple[StoredTool, float]]:
        """jit's retrieval ranking of the catalog for ``query``, scores 0..1, best first.

        Without a shard it is the vector score (dense + lexical over the task and
        its clauses); with a shard, the final score of compile() before tiers.
        """
        if k < 1:
            raise SelectionError(f"k must be at least 1, got {k}")
        sel = self.config.tool_selection
        pool = max(k, sel.candidate_pool)
        if shard is not None:
            ctx = TaskContext(shard=shard, task=query)
            self._check(ctx)
            _view, tools, _facts = self._score(ctx, [], pool=pool)
            ranked = sorted(tools, key=lambda s: (-s.final, -s.vector, s.name))
            return [(s.tool, s.final / 100.0) for s in ranked[:k]]
        view = self._current()
        allowed = self._allowed(view, (), ())
        ids, vector, _named = self._retrieve(view, query, pool, [], allowed, [])
        return [(view.by_id[t], vector[t] / 100.0) for t in ids[:k]]


def _embedding_warning(index: RetrievalIndex) -> str | None:
    """Say so when tools have no vector (an interrupted ``jit sync``, or another embedding model).

    Such a tool is not lost: its dense similarity reads as the lowest of the
    catalog's, so it is still found by the words of its name, description and
    parameters (``lexical_weight`` of the score) and by name mentions, never by
    meaning. Silently, it would just rank low."""
    have = int(index.has_vector.sum())
    if not index.n or have == index.n:
        return None
    if not have:
        return (f"none of the {index.n} tools has a vector for this embedding model: ranking is by their words "
                "only (lexical), not by meaning; run `jit sync` to embed them")
    missing = index.n - have
    return (f"{missing} of {index.n} tools have no embedding yet (an interrupted or unfinished `jit sync`?): "
            "they are found only by the words of their name and description (lexical), not by meaning; "
            "run `jit sync` to embed them")


def _where(rules: RuleSet, predicate: str) -> str:
    """``predicate @ policy.dl:12,13`` for explanations."""
    by_file: dict[str, list[str]] = {}
    for r in rules.rules_for(predicate):
        by_file.setdefault(Path(r.path).name, []).append(str(r.line))
    where = "; ".join(f"{f}:{','.join(lines)}" for f, lines in by_file.items())
    return f"{predicate} @ {where}" if where else predicate


def _label_points(table: dict[str, int], tools_with: dict[str, set[int]], candidates: set[int]) -> dict[int, int]:
    """Per candidate, the best points of its labels in ``table`` (absent: none of them is in it)."""
    out: dict[int, int] = {}
    for label, p in table.items():
        for t in candidates.intersection(tools_with.get(label, ())):
            if p > out.get(t, p - 1):
                out[t] = p
    return out


class _FrozenGC:
    """Catalog views kept out of Python's cyclic garbage collector (``tool_selection.freeze_gc``).

    A 10,000-tool view is about a million objects (tools, analyses, Datalog facts,
    the lexical index). Each full collection walks all of them: ~0.75 s on this
    VM, several times during a build and then every ~100 compiles. So a build runs
    with the collector paused (10k tools: ~4.5 s instead of ~8 s) and ends with
    ``gc.freeze()``, after which collections skip the view (GC time per compile:
    ~0.2 ms instead of ~8 ms on average). Freezing is process-wide and keeps the
    cyclic garbage of that moment (about 500 objects per full build here).

    A closed compiler's Datalog facts are cyclic: :meth:`release` unfreezes
    everything (the GC keeps no owner), and the next build collects once before
    freezing again, so a harness that re-creates compilers does not accumulate them.
    """

    released = False
    _lock = threading.Lock()

    @classmethod
    @contextmanager
    def building(cls, enabled: bool) -> Iterator[None]:
        if not enabled:
            yield
            return
        with cls._lock:
            if cls.released:
                cls.released = False
                gc.collect()
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            yield
        finally:
            if was_enabled:
                gc.enable()
        gc.freeze()

    @classmethod
    def release(cls) -> None:
        with cls._lock:
            gc.unfreeze()
            cls.released = True


def _tier_for(final: int, full: int, condensed: int, minimal: int) -> Tier:
    if final >= full:
        return Tier.FULL
    if final >= condensed:
        return Tier.CONDENSED
    if final >= minimal:
        return Tier.MINIMAL
    return Tier.EXCLUDED


def _merge_points(table: dict[Any, int], rows: Sequence[tuple]) -> None:
    """One number per key: the largest Points of the rows (schema.dl's rule)."""
    for key, p in rows:
        table[key] = max(int(p), table.get(key, -10**6))


def _merge_slots(table: dict[int, tuple[str, ...]], rows: Sequence[tuple]) -> None:
    for t, slot in rows:
        table[t] = tuple(sorted(set(table.get(t, ())) | {str(slot)}))


_EXTENSION_DOMAINS = {
    ".py": "/python", ".js": "/javascript", ".mjs": "/javascript", ".jsx": "/javascript", ".ts": "/typescript",
    ".tsx": "/typescript", ".go": "/go", ".rs": "/rust", ".java": "/java", ".cs": "/csharp", ".c": "/cpp",
    ".cc": "/cpp", ".cpp": "/cpp", ".h": "/cpp", ".hpp": "/cpp", ".rb": "/ruby", ".php": "/php",
    ".swift": "/swift", ".kt": "/kotlin", ".sql": "/sql", ".sh": "/shell", ".bash": "/shell",
    ".html": "/web", ".css": "/web", ".vue": "/web", ".ipynb": "/data_science", ".tf": "/devops",
    ".dockerfile": "/devops",
}
