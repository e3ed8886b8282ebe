"""compile(TaskContext) -> ToolSet: the heart of jit.

A compile runs in four steps:

1. **Catalog snapshot** (once per catalog version, shared by every thread): the
   tools, their effective analyses, the retrieval index and the rules' per-tool
   facts, kept up to date incrementally by :class:`~jit.selection.catalog_view.CatalogView`
   (which owns every question of what changed and what to redo).
2. **Task tables** (per compile): the task facts (shard, intent, language and
   the task's capabilities, categories and domains from ``analyze_task``) are
   asserted, the ``*_points`` tables are asked, and the facts retracted: a
   handful of facts, a few milliseconds, whatever the catalog size.
3. **Scores**: retrieval gives each candidate a vector score (0–100) and a rank; the
   policy (:mod:`jit.selection.policy`) adds the points of each part of ``POINTS`` (shard,
   usage, task labels, relevance, system, penalty), read from the rules' tables, into a
   logic score clamped to 0–100; final = logic_weight × logic + vector_weight × vector.
4. **Tiers**: thresholds, the rules' tier caps, ``max_full_tools`` and ``max_full_share``
   with their room for the tools the task wants most (``strong_threshold``), and the token
   budget, measured on the rendering (:mod:`jit.selection.budget`).

Every pyDatalog call runs on the :class:`~jit.selection.logic.LogicEngine`'s own thread,
so compile() and rank() may be called from any number of threads at once. A
compiler changes no process-wide state (the garbage collector, BLAS threads)
unless the process owner opted in with :func:`jit.process.tuned`.
"""

from __future__ import annotations

import logging
import os
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, NamedTuple, TypeVar

import numpy as np

from ..analysis.offline_analyzer import edits_remotely
from ..catalog.store import Store
from ..catalog.store_learning import TaskRecord
from ..config import Config
from ..embedding.protocol import Embedder
from ..embedding.query_cache import QueryVectorCache
from ..errors import SelectionError, ToolDeniedError
from ..models import StoredTool, ToolAnalysis
from ..text import remove_hidden
from .budget import Estimates, cap_full, fed, fit_budget, unfed
from .catalog_view import CatalogView
from .explain import RuleCitations, explained_facts
from .learning import Evidence, Experience, evidence_columns
from .logic import Fact, RuleSet
from .naming import named_servers, server_names
from .policy import Policy, asked_effects
from .records import CandidateReader, StaleSnapshot
from .render import order_key, tool_summary
from .rerank import load_reranker
from .retrieve import split_task
from .scored_tool import ScoredTool, best_first, learned
from .snapshot import (
    SCAN_BYTES_KEPT,
    SCANS_KEPT,
    CatalogSnapshot,
    Scan,
    ShardTables,
    analysis_warning,
    embedding_warning,
    label_rows,
)
from .steps import (FILE_STEP, FIND_CHANNEL, REPOSITORY_WORD, Feeds, Step, asked, demo_server, embedded,
                    names_repository, plan, says_change_request, says_sql, settle, task_steps)
from .task import TaskContext, task_facts
from .tiers import Tier
from .tokens import EstimateCounter, TokenCounter, compact_json, default_counter
from .toolset import ToolSet

__all__ = ["Compiler"]

#: Vector score floor for the tools of a server the task names.
SERVER_MENTION_FLOOR = 70
log = logging.getLogger(__name__)
#: Compiles of one task before a catalog that keeps changing under it is reported.
_ATTEMPTS = 4
#: Tasks whose text-only reading (:meth:`Compiler._task`) a compiler keeps: the shards a harness
#: spawns for one task compile it one after another.
_TASKS_KEPT = 64
_T = TypeVar("_T")


def _queries(text: str) -> list[str]:
    """What a task is scored with: the whole text, then its clauses (:func:`split_task`)."""
    return [text, *split_task(text)] if text.strip() else []


class Compiler:
    """Compiles tool sets for shards from one catalog, config and rule set.

    The catalog side (snapshots, invalidation, the Datalog engine's catalog facts)
    is :attr:`catalog`, a :class:`~jit.selection.catalog_view.CatalogView`; what jit decides
    with the rules' answers is :attr:`policy` (:mod:`jit.selection.policy`). This class runs a
    compile: the task's facts and tables, the candidates, their scores and tiers, the budget
    (:mod:`jit.selection.budget`) and the tool set."""

    def __init__(self, store: Store, config: Config, embedder: Embedder, *,
                 token_counter: TokenCounter | None = None, rules: RuleSet | None = None) -> None:
        self.store = store
        self.config = config
        # Query text only: shards spawned for one task share its vectors.
        self.embedder = QueryVectorCache(embedder)
        self.counter = token_counter or default_counter(api_key_env=config.analyzer.api_key_env)
        self._estimate = EstimateCounter()
        self.rules = rules or RuleSet.load(config.rules_dir)
        self.catalog = CatalogView(store, config, self.rules, model_name=self.embedder.model_name)
        #: For explanations: the rules behind each reason, named once in a tool set's legend.
        self.citations = RuleCitations(self.rules)
        #: Shard -> its skeleton slots (:meth:`_slots`; the rules do not change under a compiler).
        self._slot_names: dict[str, tuple[str, ...]] = {}
        #: What jit decides with the rules' answers: scores, tiers, the skeleton, hosted systems, steps.
        self.policy = Policy(self.catalog.engine, self.citations)
        #: A snapshot and, per shard, its skeleton winners and losers (:meth:`_skeleton`).
        self._skeletons: tuple[Callable[[], CatalogSnapshot | None],
                               dict[str, tuple[dict[int, list[str]], dict[int, int]]]] = (lambda: None, {})
        #: What agents called for past tasks (jit.selection.learning), when learning is on.
        self.experience = Experience(store, config.learning) if config.learning.enabled else None
        #: ``(task, text)`` -> :meth:`_task`'s reading of it, the newest last.
        self._tasks: OrderedDict[tuple[str, str], tuple[str, tuple[Step, ...]]] = OrderedDict()
        #: Guards ``_tasks`` and the snapshots' memo of scans (each bounded, the oldest dropped).
        self._memo_lock = threading.Lock()

    def close(self) -> None:
        """Stop the Datalog engine's thread and let go of the catalog snapshot."""
        self.catalog.close()

    def prepare(self) -> None:
        """Bring the catalog view up to date now rather than at the first compile: built, or
        loaded from the view file beside the catalog and refreshed, every configured shard's
        tables asked of the rules, and that file written for the next process (``jit sync``
        calls it; a harness may call it at start)."""
        self.catalog.prepare(sorted(self.config.shards))

    def __enter__(self) -> Compiler:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _embedding_meanwhile(self, text: str, texts: list[str]) -> Iterator[None]:
        """While the first snapshot is built, embed ``texts`` (the task's queries and its steps'
        texts) in another thread: loading the model and building the catalog view are a new
        process's two waits, and they overlap. The vectors land in the query cache, where
        :meth:`_retrieve` and the steps find them."""
        model = self.store.embedding_model() if text and self.catalog.published is None else None
        if model is None or model[0] != self.embedder.model_name:
            yield
            return
        worker = threading.Thread(target=self._embed_quietly, args=(texts,),
                                  name="jit-embed-task", daemon=True)
        worker.start()
        try:
            yield
        finally:
            worker.join()

    def _task(self, task: str, text: str) -> tuple[str, tuple[Step, ...]]:
        """What the text of a task gives whatever the catalog and the shard: the text retrieval
        scores (:func:`~jit.selection.steps.asked`: ``text``, the task with its files' names,
        without the clauses that forbid something) and the task's steps
        (:func:`~jit.selection.steps.task_steps`); kept for the next compile of the same task."""
        key = (task, text)
        with self._memo_lock:
            found = self._tasks.get(key)
            if found is not None:
                self._tasks.move_to_end(key)
                return found
        found = (asked(text), tuple(task_steps(task, self.config.shards)))
        with self._memo_lock:
            self._tasks[key] = found
            while len(self._tasks) > _TASKS_KEPT:
                self._tasks.popitem(last=False)
        return found

    def _embedded(self, queries: list[str]) -> list[str]:
        """Of a task's queries (:func:`_queries`: the whole task, then its clauses), what the model
        embeds (``tool_selection.task_vectors``; docs/selection.md, "Clauses"). The model is most
        of a new task's compile time; one batch of the clauses costs about what the whole task
        does, and ``clauses`` takes the task's vector as their mean."""
        mode = self.config.tool_selection.task_vectors
        if len(queries) <= 1 or mode == "whole":
            return queries[:1]
        return queries if mode == "both" else queries[1:]

    def _query_vectors(self, queries: list[str]) -> np.ndarray:
        """One unit vector per query from the first, at least the whole task's (as
        :meth:`~jit.selection.retrieve.RetrievalIndex.score` takes them)."""
        texts = self._embedded(queries)
        vecs = self.embedder.embed(texts)
        if texts[0] is queries[0]:
            return vecs
        whole = vecs.mean(axis=0)
        whole /= max(float(np.linalg.norm(whole)), 1e-9)
        return np.vstack([whole[None, :], vecs]).astype(np.float32, copy=False)

    def _embed_quietly(self, texts: list[str]) -> None:
        try:
            self.embedder.embed(texts)
        except Exception:  # the compile embeds again on its own thread and reports it there
            log.debug("embedding the task ahead of the first compile failed", exc_info=True)

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

    def _allowed(self, view: CatalogSnapshot, include: Sequence[str], exclude: Sequence[str],
                 denied: np.ndarray | None = None) -> np.ndarray:
        """Rows that may be candidates: not blocked by the rules, not ``denied`` to the shard,
        servers filtered."""
        ok = np.ones(len(view.rows), dtype=bool) if denied is None else ~denied
        for t in view.blocked:
            ok[view.row_of[t]] = False
        if include or exclude:
            names = view.index.server_names
            keep = np.array([(not include or s in include) and s not in exclude for s in names], dtype=bool)
            ok &= keep[view.index.server_of]
        return ok

    def _similarities(self, view: CatalogSnapshot, text: str, steps: Sequence[Step]) -> Scan:
        """The task's query vectors (:meth:`_query_vectors`) and the cosine of every tool with
        each of them and then with each step's text: one pass over the matrix per task and
        snapshot (:meth:`~jit.selection.retrieve.RetrievalIndex.similarities`), which retrieval and
        the steps share, kept in the snapshot's memo for the other shards spawned for the task.
        No vectors (none in the catalog, or no task): no columns."""
        queries = _queries(text)
        if not queries or not view.rows or not view.index.has_vector.any():
            return Scan(np.zeros((0, 0), dtype=np.float32), np.zeros((len(view.rows), 0), dtype=np.float32), {})
        key = (tuple(queries), tuple(s.query for s in steps))
        found = view.memo.scans.get(key)
        if found is not None:
            return found
        vecs = self._query_vectors(queries)
        both = np.vstack([vecs, self.embedder.embed([s.query for s in steps])]) if steps else vecs
        sims = view.index.similarities(both)
        vecs.flags.writeable = sims.flags.writeable = False
        found = Scan(vecs, sims, {})
        if sims.nbytes > SCAN_BYTES_KEPT:
            return found
        with self._memo_lock:
            scans = view.memo.scans
            scans[key] = found
            while len(scans) > SCANS_KEPT:
                del scans[next(iter(scans))]
        return found

    def _retrieve(self, view: CatalogSnapshot, text: str, pool: int, extra: Sequence[int], allowed: np.ndarray,
                  warnings: list[str], denied: tuple[str, Mapping[int, tuple[str, ...]]] | None = None,
                  dense: tuple[np.ndarray, np.ndarray, dict] | None = None) -> _Retrieved:
        """The candidates of a task (:class:`_Retrieved`).
        ``denied``: ``(shard, tool -> reasons)``; a named tool it holds is a warning. ``dense``:
        the task's query vectors, their similarities and what the index keeps of them when the
        compile has them (:meth:`_similarities`), else they are computed here."""
        sel = self.config.tool_selection
        queries = _queries(text)
        mentions = view.index.mentions(text)
        if denied is not None and denied[1]:  # named, but the role may not have it: say so
            shard, reasons = denied
            for r in sorted(mentions.tools):
                if view.rows[r] in reasons:
                    warnings.append(f"{view.names[view.rows[r]]} is denied for {shard}: "
                                    f"{'; '.join(reasons[view.rows[r]])}")
        if not queries or not view.rows:
            ids = sorted({view.rows[r] for r in extra if allowed[r]}, key=lambda i: view.names[i])
            return _Retrieved(ids, dict.fromkeys(ids, 0.0), dict.fromkeys(ids, 0), set(), frozenset())
        sims = kept = None
        if dense is not None:
            vecs, sims, kept = dense
        elif view.index.has_vector.any():
            vecs = self._query_vectors(queries)
        else:
            vecs = np.zeros((0, 0), dtype=np.float32)  # compile() warns (embedding_warning)
        named = set(mentions.tools)
        scores = view.index.score(
            vecs, queries, lexical_weight=sel.lexical_weight, pool=pool,
            extra_rows=sorted(set(extra) | named | set(mentions.servers)), sims=sims, kept=kept,
        )
        if sel.rerank == "model":
            scores = load_reranker().apply(scores, view.index)
        vector: dict[int, float] = {}
        match: dict[int, int] = {}
        rows, has_vector = scores.rows, view.index.has_vector
        for r, v, d, ok in zip(rows.tolist(), scores.vector.tolist(), scores.dense.tolist(), allowed[rows].tolist(),
                               strict=True):
            if not ok:
                continue
            t = view.rows[r]
            if not has_vector[r]:  # matched by its words only: the vector score is its match
                d = v / 100.0
            if r in named:
                v, d = 100.0, 1.0
            elif r in mentions.servers:
                v = max(v, SERVER_MENTION_FLOOR)
            vector[t] = v
            match[t] = max(0, int(d * 100))
        named_ids = {view.rows[r] for r in named if allowed[r]}
        ids = sorted(vector, key=lambda i: (i not in named_ids, -vector[i], view.names[i]))
        servers = frozenset(view.index.server_names[view.index.server_of[r]] for r in mentions.servers)
        return _Retrieved(ids, vector, match, named_ids, servers)

    def _file_step_tools(self, view: CatalogSnapshot, facts: list[Fact], allowed: np.ndarray
                         ) -> dict[str, list[tuple[int, tuple[str, ...]]]]:
        """Capability -> the tools of that step on the local files the task names, one per file
        format, each with its files (rules/policy.dl, ``file_step``): of the tools in reach with
        the capability and the category alone that may be Full, the one whose embedding is nearest
        to the policy's text. A candidate whatever the task's ranking."""
        steps = self.policy.file_steps(facts)
        if not steps or not view.rows:
            return {}
        chosen: dict[str, list[tuple[int, tuple[str, ...]]]] = {}
        for step, targets in steps:
            order = view.memo.file_steps.get(step)
            if order is None:  # the text is the policy's, not the task's: one order per snapshot
                _format, cap, category, text = step
                ids = sorted(self.policy.sole_holders(self.catalog.labels(view), cap, category),
                             key=view.names.__getitem__)
                # A tool the rules keep out of Full (a flag, an override) cannot be a step's tool.
                rows = np.array([view.row_of[t] for t in ids if t in view.row_of
                                 and view.tier_cap.get(t, Tier.FULL) is Tier.FULL], dtype=np.int64)
                rows = rows[view.index.has_vector[rows]]
                nearest = view.index.matrix[rows] @ self.embedder.embed([text])[0] if len(rows) else np.zeros(0)
                order = view.memo.file_steps[step] = rows[np.argsort(-nearest, kind="stable")]  # ties: by name
            ok = allowed[order]
            if ok.any():
                chosen.setdefault(step[1], []).append((view.rows[int(order[int(ok.argmax())])], targets))
        return chosen

    def _slots(self, shard: str) -> tuple[str, ...]:
        """The skeleton slots the policy gives ``shard`` (``skeleton_slot``), asked once per shard."""
        found = self._slot_names.get(shard)
        if found is None:
            found = self._slot_names[shard] = tuple(sorted(
                {str(slot) for _shard, slot in self.catalog.engine.query("skeleton_slot", shard, None)}))
        return found

    def _skeleton(self, view: CatalogSnapshot, ctx: TaskContext, shard: ShardTables,
                  allowed: np.ndarray) -> tuple[dict[int, list[str]], dict[int, int]]:
        """The skeleton's winner per slot and the tools they beat (:meth:`Policy.skeleton`), kept per
        shard for the snapshot last compiled on when no server filter applies: the same for every
        task, and it reads every tool with a slot."""
        if ctx.include_servers or ctx.exclude_servers:
            return self._skeleton_of(view, shard, allowed)
        kept = self._skeletons
        if kept[0]() is not view:  # a weak reference: a snapshot is not kept alive for this
            kept = self._skeletons = (weakref.ref(view), {})
        found = kept[1].get(ctx.shard)
        if found is None:
            found = kept[1][ctx.shard] = self._skeleton_of(view, shard, allowed)
        return found

    def _skeleton_of(self, view: CatalogSnapshot, shard: ShardTables, allowed: np.ndarray
                     ) -> tuple[dict[int, list[str]], dict[int, int]]:
        slots = {t: names for t, names in shard.skeleton.items() if allowed[view.row_of[t]]}

        def sizes(ids: Sequence[int]) -> dict[int, int]:
            """The definitions' lengths, what their Full renderings cost grows with: read in one batch, the
            only definitions a compile reads beside those it renders (once per snapshot and shard)."""
            view.by_id.prefetch(ids)
            return {t: len(compact_json({"description": (tool := view.by_id[t].tool).description,
                                         "input_schema": tool.input_schema})) for t in ids}

        capped = {t for t in slots if view.tier_cap.get(t, Tier.FULL) is not Tier.FULL}
        return self.policy.skeleton(slots, view.heads, view.states, view.offline, view.points, shard.points, sizes,
                                    capped)

    @staticmethod
    def _summary(view: CatalogSnapshot, st: StoredTool, a: Callable[[StoredTool], ToolAnalysis | None]) -> str:
        s = view.memo.summaries.get(st.id)
        if s is None:
            s = view.memo.summaries[st.id] = tool_summary(st, a(st))
        return s

    def _reader(self, view: CatalogSnapshot) -> CandidateReader:
        """The reader of a compile's candidates' definitions (the summaries and facts kept in the
        snapshot's memo)."""
        def complete(st: StoredTool, a: Callable[[StoredTool], ToolAnalysis | None]
                     ) -> tuple[Callable[[], str], Callable[[], dict]]:
            return (lambda: self._summary(view, st, a)), (lambda: self._explain_facts(view, st, a))

        return CandidateReader(view.by_id, view.analyses, complete)

    @staticmethod
    def _seal(reader: CandidateReader, view: CatalogSnapshot, tools: list[ScoredTool]) -> None:
        """After the compile: the unread candidates keep what reading them later takes, not ``view``."""
        unread = [s for s in tools if not s.loaded]
        blocked = {s.id: view.blocked[s.id] for s in unread if s.id in view.blocked}

        def complete(st: StoredTool, a: Callable[[StoredTool], ToolAnalysis | None]
                     ) -> tuple[Callable[[], str], Callable[[], dict]]:
            return (lambda: tool_summary(st, a(st))), (lambda: explained_facts(st, a(st), blocked.get(st.id)))

        reader.seal(unread, view.analyses, complete)

    def _score(self, ctx: TaskContext, warnings: list[str], *, pool: int | None = None
               ) -> tuple[CatalogSnapshot, list[ScoredTool], dict[str, list[str]], CandidateReader, np.ndarray | None,
                          Feeds]:
        """Every candidate of a task with its points, scores and wanted tier (no budget yet), the
        reader of their definitions, the task's vector (None: no text, or no tool vectors), and
        the producers of the identifiers a tool requires (:func:`~jit.selection.producers.producers`)."""
        text = " ".join([ctx.task, *(os.path.basename(f) for f in ctx.files)]).strip()
        query, steps = self._task(ctx.task, text)
        # One batch of the model: the task's queries and its steps' texts, but those of the steps
        # the policy's file tool does (jit.selection.steps).
        scanned = [s for s in steps if embedded(s)]
        texts = list(dict.fromkeys([*self._embedded(_queries(query)), *(s.query for s in scanned)]))
        with self._embedding_meanwhile(query, texts):
            view = self.catalog.snapshot()
        shard = self.catalog.shard_tables(view, ctx.shard)
        # A chat channel the task names by its #name is a channel, said so or not, a repository named by its owner
        # and name ("the issues in acme/shop") is a code host's (jit.selection.steps), and so is a pull request
        # said in words.
        words = ["channel"] if any(s.text == FIND_CHANNEL for s in steps) else []
        words += [REPOSITORY_WORD] if names_repository(text) else []
        words += ["pr"] if says_change_request(text) else []
        words += ["sql"] if says_sql(text) else []  # an SQL statement given is a database's
        facts = task_facts(ctx, text, self.config.shards, self.policy.task_words(text, words),
                           edits=any(s.by == FILE_STEP and not edits_remotely(s.clause or s.text) for s in steps))
        tables = self.policy.task_tables(facts)
        denied_rows = self.catalog.denied_rows(view, ctx.shard)
        allowed = self._allowed(view, ctx.include_servers, ctx.exclude_servers, denied_rows)
        for s in (*ctx.include_servers, *ctx.exclude_servers):
            if s not in view.index.server_names:
                warnings.append(f"server {s!r} has no tools in the catalog")
        winners, losers = self._skeleton(view, ctx, shard, allowed)
        filled = {slot for taken in winners.values() for slot in taken}
        slots = self._slots(ctx.shard)
        for slot in slots:
            if slot not in filled:  # the role expects it always: say that no tool can do it
                warnings.append(f"{ctx.shard}: no tool fills the skeleton slot {slot!r}")
        # The servers the task names (the steps' and the probes'), from one pass over the catalog's.
        said = server_names(view).within(ctx.task)
        if text and view.index.has_vector.any():
            self.embedder.embed(texts)  # one batch; the queries' and the steps' vectors are then cached
        vecs, sims, kept = self._similarities(view, query, scanned)
        file_tools = self._file_step_tools(view, facts, allowed)
        # The tool of each step of the task (jit.selection.steps): Full whatever its score.
        planned, feeds = plan(view, steps, sims[:, len(vecs):],
                              self.config.tool_selection.lexical_weight, allowed, denied_rows, ctx.shard, warnings,
                              {slot: slot in filled for slot in slots}, said, kept)
        stepped = [o for _text, options in planned for o, _v in options]
        task_vector = vecs[0] if len(vecs) else None
        learned = self._learned(view, ctx.shard, task_vector, shard.denied, allowed)
        extra = [view.row_of[t] for t in (*winners, *stepped, *(t for tools in file_tools.values() for t, _ in tools),
                                          *(t for t, e in learned.items() if e.weight))]
        found = self._retrieve(view, query, pool or self.config.tool_selection.candidate_pool, extra, allowed,
                               warnings, (ctx.shard, shard.denied), (vecs, sims[:, :len(vecs)], kept))
        labels = self.catalog.labels(view)
        # A step no tool in reach can take, or only tools the role is denied: a warning either way.
        self.policy.missing_steps(ctx.shard, facts, lambda cap: label_rows(view, "capability", cap),
                                  view.rows, allowed, denied_rows, shard.denied, warnings)
        parts = self.policy.parts(found.ids, tables, view.points, shard.points, labels, found.vector, view.heads,
                                  found.servers, evidence_columns(learned) if learned else None)
        scoring = self.policy.scoring(parts, self.config.tool_selection, ctx.shard)
        # Definitions are read when first needed (CandidateReader): most candidates are not rendered.
        reader = self._reader(view)
        out: list[ScoredTool] = []
        for rank, t in enumerate(found.ids, 1):
            match = found.match[t]
            score = scoring.score(t, found.vector[t], match, named=t in found.named, slots=winners.get(t, ()),
                                  cap=view.tier_cap.get(t))
            if t in losers:
                score.reasons.append(f"not skeleton: {view.names[losers[t]]} fills the same slot")
            if t in learned:
                score.reasons.extend(_learned_reasons(learned[t], score.points))
            out.append(ScoredTool(
                tool=None, name=view.names[t], tier=score.tier, skeleton=t in winners, logic=score.logic,
                vector=score.vector, final=score.final, offline=t in view.offline, tokens=0, reasons=score.reasons,
                points=score.points, facts=view.memo.explain_facts.get(t), wanted=score.wanted, rank=rank,
                match=match, summary=view.memo.summaries.get(t), id=t, head=view.heads[t], load=reader.load,
            ))
        effects_asked = asked_effects(facts)
        # A hosted system the task does not point at (system points) does no step of it.
        hedges: set[int] = set()
        planned = settle(planned, {st.id: st.final for st in out if st.points.get("system", 0) >= 0}, view.names,
                         feeds, view.heads, {st.id for st in out if st.skeleton},
                         self.config.tool_selection.max_full_tools, self.config.tool_selection.full_threshold,
                         {s.text for s in steps if s.implied}, sum(not s.implied for s in steps),
                         lambda t: bool(self.policy.unasked_effects(view.heads[t][1], effects_asked)), hedges)
        for st in out:
            if st.id in planned:
                st.step, st.wanted, st.tier = st.step or planned[st.id], Tier.FULL, Tier.FULL
                st.hedge = st.id in hedges
                st.reasons.insert(0, f"tool of the step {planned[st.id]!r}" + (
                    ", a second as near as its first (the budget's tokens go to every step's first before it)"
                    if st.hedge else ""))
        # A probe of a server (its health, a job's status) the task does not point at fills no Full place,
        # nor does a demonstration server's tool.
        named = named_servers(ctx.task, said)
        self.policy.probes(out, named)
        demos = self.policy.demos(out, ctx.task, named, lambda server: demo_server(view, server))
        # A tool whose name deletes, Full by its score, when the task asks to delete nothing: Condensed.
        unasked = self.policy.unasked(out, facts)
        self.policy.step_tools(out, facts, labels["capability"], view.tier_cap, file_tools, unasked, demos)
        # The budget measures the skeleton, then the rest best first: definitions are read in that order.
        reader.order(sorted(out, key=lambda s: (not s.skeleton, *best_first(s))))
        shown: dict[str, list[str]] = {}
        for f in facts:
            shown.setdefault(f[0].removeprefix("task_"), []).append(str(f[1]))
        return view, out, shown, reader, task_vector, feeds

    def _learned(self, view: CatalogSnapshot, shard: str, query: np.ndarray | None,
                 denied: Mapping[int, tuple[str, ...]], allowed: np.ndarray) -> dict[int, Evidence]:
        """Tool id -> what similar past tasks of ``shard`` say of it (jit.selection.learning), for the
        tools that may gain from it: in reach, not denied to the role, not flagged or otherwise kept
        below Full by the rules, not awaiting approval. Empty when nothing was ever recorded."""
        if self.experience is None or query is None:
            return {}
        constants = self.policy.constants()
        if constants.learned_match is None:
            return {}
        # Evidence below the rules' smallest learned_points row gives nothing, and its tool is not
        # made a candidate for it (once many tools were called, most have some usage likeness).
        found = self.experience.evidence(shard, self.embedder.model_name, query, constants.learned_match,
                                         min_weight=min(constants.evidence.get("learned_points", {}) or [1]))
        out: dict[int, Evidence] = {}
        for (server, name), e in found.items():
            t = self.catalog.tool_id(view, server, name)
            # The rules' tier cap keeps a flagged tool, one whose server is in error and one awaiting
            # approval below Full (with security.pin_definitions the last is blocked outright).
            if t is None or t in denied or not allowed[view.row_of[t]] or view.tier_cap.get(t, Tier.FULL) is not Tier.FULL:
                continue
            out[t] = e
        return out

    @staticmethod
    def _explain_facts(view: CatalogSnapshot, st: StoredTool, a: Callable[[StoredTool], ToolAnalysis | None]
                       ) -> dict[str, Any]:
        facts = view.memo.explain_facts.get(st.id)
        if facts is None:
            facts = view.memo.explain_facts[st.id] = explained_facts(st, a(st), view.blocked.get(st.id))
        return facts

    def compile(self, ctx: TaskContext) -> ToolSet:
        """The tool set for one shard spawn. Thread-safe.

        ``task=""`` means no task: the shard's rules alone choose (its skeleton tools; what
        ``jit serve --expose-shard`` lists before its client sets a task). A task of only
        whitespace or invisible characters is refused: it would "select" the same way and look
        like an answer, when the caller most likely lost the task on the way (a blank prompt)."""
        self._check(ctx)
        if ctx.task and not remove_hidden(ctx.task).strip():
            raise SelectionError("the task is empty: say what the shard is spawned to do", shard=ctx.shard)
        return self._fresh(lambda: self._compile(ctx))

    def _fresh(self, work: Callable[[], _T]) -> _T:
        """``work()``, done again on a newer snapshot when a definition it read changed after its
        snapshot was taken (a sync racing the compile; see jit.selection.records)."""
        for _ in range(_ATTEMPTS - 1):
            try:
                return work()
            except StaleSnapshot as exc:
                log.debug("%s; compiling again on a newer snapshot", exc)
                self.catalog.invalidate(exc.records)
        try:
            return work()
        except StaleSnapshot as exc:
            raise SelectionError(f"the catalog kept changing during the compile ({exc})") from None

    def _compile(self, ctx: TaskContext) -> ToolSet:
        sel = self.config.tool_selection
        warnings: list[str] = []
        budget = ctx.budget if ctx.budget is not None else sel.token_budget
        view, tools, task_facts, reader, query, feeds = self._score(ctx, warnings)
        missing = embedding_warning(view.index)
        if missing:
            warnings.append(missing)
        if view.unanalyzed:
            warnings.append(analysis_warning(view.unanalyzed, len(view.rows)))
        fmt = sel.budget_format
        # Token estimates are kept in the snapshot's memo: the next compile's candidates overlap.
        estimates = Estimates(fmt, self._estimate, view.memo.costs)
        cap_full(tools, sel.max_full_tools, sel.max_full_share * budget, estimates, warnings,
                 strong=sel.strong_threshold, strong_tools=sel.strong_full_tools,
                 strong_room=sel.strong_full_share * budget, unsaid=self.policy.unsaid(
                     ctx.task, {*task_facts.get("capability", ()), *task_facts.get("implied", ())},
                     files=bool(task_facts.get("file_target") or task_facts.get("code_edit"))))
        promoted = fed(tools, feeds, sel.full_threshold)
        used, budget_warnings = fit_budget(tools, budget, fmt, self.counter, estimates=estimates, shard=ctx.shard)
        back = unfed(promoted, estimates.cost)
        if back:
            used = estimates.measure(tools, self.counter, shard=ctx.shard)
            if used > budget:  # Condensed again, the meta-tool's overhead came back: out instead
                for s in back:
                    s.reasons.append("demoted -> excluded: token budget (measured)")
                    s.tier, s.tokens = Tier.EXCLUDED, 0
                used = estimates.measure(tools, self.counter, shard=ctx.shard)
        warnings += budget_warnings
        if getattr(self.counter, "last_error", None):
            warnings.append(f"exact token count failed ({self.counter.last_error}); the estimate was used")
        # What is rendered is read on this snapshot (a tool set's rendered definitions are the ones it
        # was compiled on); what is left Excluded is read only if someone asks for it.
        reader.fetch([s for s in tools if s.tier is not Tier.EXCLUDED])
        for s in tools:
            if s.offline and s.tier is not Tier.EXCLUDED:
                s.reasons.append(f"offline: server {s.server!r} is {s.tool.server_status.value}")
        tools.sort(key=order_key)
        self._seal(reader, view, tools)
        record = None
        if self.experience is not None and query is not None and ctx.task:
            record = TaskRecord(ctx.shard, self.embedder.model_name, query,
                                tuple((s.server, s.tool_name) for s in tools if s.tier is Tier.FULL),
                                ctx.task if self.config.learning.keep_task_text else None)
        return ToolSet(
            shard=ctx.shard, task=ctx.task, budget=budget, tokens_used=used, warnings=warnings, tools=tools,
            budget_format=fmt, token_counter=self.counter.name, catalog_version=view.version,
            usage_version=view.usage_version,
            rules=self.rules.fingerprint, task_facts=task_facts, denial=self._denial, citations=self.citations,
            learning=record, recorder=self.store.record_task_call if record is not None else None,
        )

    def denied(self, shard: str, server: str, tool: str) -> tuple[str, ...]:
        """Why the policy denies ``server``'s ``tool`` to ``shard`` (empty: it does not); for a
        caller about to run a tool on behalf of a role (``jit serve --expose-shard``)."""
        self._check(TaskContext(shard=shard, task="-"))
        # A call's usage record moves no denial unless the rules make one read usage: then it is read first.
        view = self.catalog.snapshot(usage="denied" in self.catalog.derivation.usage_dependents)
        t = self.catalog.tool_id(view, server, tool)
        return () if t is None else self.catalog.shard_tables(view, shard).denied.get(t, ())

    def check_allowed(self, shard: str, server: str, tool: str) -> None:
        """Raise :class:`~jit.errors.ToolDeniedError` if the policy denies the tool to ``shard``."""
        reasons = self.denied(shard, server, tool)
        if reasons:
            raise ToolDeniedError(server=server, tool=tool, shard=shard, reasons=reasons)

    def _denial(self, shard: str, name: str) -> ToolDeniedError | None:
        """For :meth:`ToolSet.resolve`: the denial of the tool the model calls ``name``, on the
        newest snapshot (a tool set keeps no snapshot alive), None if it is not denied or unknown."""
        view = self.catalog.published
        if view is None:  # the compiler was closed
            return None
        t = self.catalog.tool_named(view, name)
        reasons = self.catalog.shard_tables(view, shard).denied.get(t, ()) if t is not None else ()
        if not reasons:
            return None
        server, tool = view.heads[t]
        return ToolDeniedError(server=server, tool=tool, shard=shard, reasons=reasons)

    def rank(self, query: str, k: int = 50, *, shard: str | None = None) -> list[tuple[StoredTool, float]]:
        """jit's retrieval ranking of the catalog for ``query``, scores 0..1, best first.

        Without a shard it is the vector score (dense + lexical over the task and
        its clauses); with a shard, the final score of compile() before tiers.
        """
        return [(st, score) for st, score, _name in self.rank_named(query, k, shard=shard)]

    def rank_named(self, query: str, k: int = 50, *, shard: str | None = None) -> list[tuple[StoredTool, float, str]]:
        """:meth:`rank` with each tool's rendered name, the one a tool set gives it (a hash where two
        names collide), read from the snapshot the ranking was made on: a sync in between cannot
        give a tool another tool's name."""
        if k < 1:
            raise SelectionError(f"k must be at least 1, got {k}")
        sel = self.config.tool_selection
        pool = max(k, sel.candidate_pool)
        if shard is not None:
            ctx = TaskContext(shard=shard, task=query)
            self._check(ctx)

            def by_final() -> list[tuple[StoredTool, float, str]]:
                _view, tools, _facts, reader, _query, _feeds = self._score(ctx, [], pool=pool)
                ranked = sorted(tools, key=lambda s: (-s.final, -learned(s), -s.vector, s.name))[:k]
                reader.fetch(ranked)
                return [(s.tool, s.final / 100.0, s.name) for s in ranked]  # the snapshot's rendered name

            return self._fresh(by_final)

        def by_vector() -> list[tuple[StoredTool, float, str]]:
            view = self.catalog.snapshot()
            allowed = self._allowed(view, (), ())
            ids, vector = (found := self._retrieve(view, asked(query), pool, [], allowed, [])).ids, found.vector
            view.by_id.prefetch(ids[:k])
            return [(view.by_id[t], vector[t] / 100.0, view.names[t]) for t in ids[:k]]

        return self._fresh(by_vector)


class _Retrieved(NamedTuple):
    """The candidates of a task: ids in vector order, their vector scores, their match (the
    best cosine of the tool's vector to the task or one of its clauses, in percent; 100 for a
    tool the task names), the ids the text names, and the servers it names."""

    ids: list[int]
    vector: dict[int, float]
    match: dict[int, int]
    named: set[int]
    servers: frozenset[str]


def _learned_reasons(e: Evidence, points: Mapping[str, int]) -> list[str]:
    """What ``--explain`` says of a tool's learned evidence, beside the points it gave."""
    out = []
    if e.weight and points.get("learned"):
        out.append(f"called for {e.tasks} similar task{'s' if e.tasks != 1 else ''} of {e.called} "
                   f"(usage {e.weight} % like this task)")
    if e.unused and points.get("unused"):
        out.append(f"shown in Full for {e.unused} similar task{'s' if e.unused != 1 else ''} and never called")
    return out
