"""Replay: how much selection gains from what agents called (``jit eval --replay``).

For one set, the queries are cut into ``folds`` folds. For each fold held out, the other
queries are compiled in a fixed random order as an agent's tasks would be, and the gold tools
of each are reported as successful calls against its tool set (``ToolSet.record_call``: the
same path a harness or ``jit serve`` takes; the task's vector is the query's, as compile()
embeds it). At each point of the curve (a share of the whole set recorded: 0, 10 %, 25 %,
50 % by default, recorded cumulatively) the held-out fold is measured: the gold groups
recalled in Full by compile(), and Hit@1 of the shard's ranking (``Compiler.rank`` with the
shard: the final score, learning included). The learning record is cleared before each fold
and after the run, so the cached catalog keeps none of it.

A gold group is a list of alternatives: the first member is the one reported called.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..catalog.store import Store
from ..config import Config
from ..errors import EvaluationError
from ..models import ToolDef
from ..selection.compiler import Compiler
from ..selection.task import TaskContext
from ..selection.tiers import Tier
from .datasets import EvalQuery, Pool

__all__ = ["CURVE", "ReplayPoint", "forget_all", "replay", "replay_folds", "replay_markdown"]

#: The shares of a set recorded, in order (cumulative within a fold).
CURVE = (0.0, 0.10, 0.25, 0.50)


@dataclass
class ReplayPoint:
    """One point of the learning curve: a share recorded, measured on the held-out folds."""

    recorded: float
    #: Per held-out query: the share of its gold groups in Full, and whether the shard's first-ranked
    #: tool is gold.
    full: list[float] = field(default_factory=list)
    hit1: list[float] = field(default_factory=list)
    calls: int = 0

    def summary(self) -> dict[str, Any]:
        return {"recorded": self.recorded, "recall_full": statistics.fmean(self.full) if self.full else 0.0,
                "hit_at_1": statistics.fmean(self.hit1) if self.hit1 else 0.0, "queries": len(self.full),
                "calls_recorded": self.calls}


def forget_all(store: Store) -> None:
    """Clear the learning record (every task recorded until now)."""
    store.forget_learned(before=time.time() + 1)


def replay_folds(n: int, folds: int, seed: int = 0) -> list[tuple[list[int], list[int]]]:
    """Per fold held out: the other queries in the order they are recorded, and the held-out ones
    (indices into the set's ``n`` queries)."""
    order = list(range(n))
    random.Random(seed).shuffle(order)
    out = []
    for fold in range(folds):
        test = order[fold::folds]
        held = set(test)
        out.append(([i for i in order if i not in held], test))
    return out


def _gold_called(q: EvalQuery, pool: Pool) -> list[ToolDef]:
    return [pool.tools[g[0]] for g in q.groups if g]


def _measure(compiler: Compiler, shard: str, q: EvalQuery, pool: Pool, point: ReplayPoint) -> None:
    ts = compiler.compile(TaskContext(shard=shard, task=q.text))
    full = {pool.index.get((s.server, s.tool_name)) for s in ts.tools if s.tier is Tier.FULL}
    point.full.append(sum(any(m in full for m in g) for g in q.groups) / len(q.groups))
    ranked = compiler.rank(q.text, k=1, shard=shard)
    first = pool.index.get((ranked[0][0].tool.server, ranked[0][0].tool.name)) if ranked else None
    point.hit1.append(float(any(first in g for g in q.groups)))


def replay(store: Store, config: Config, embedder: Any, pool: Pool, queries: Sequence[EvalQuery], *,
           shard: str | Sequence[str], folds: int = 4, curve: Sequence[float] = CURVE, seed: int = 0,
           advance: Callable[[], None] | None = None) -> list[dict[str, Any]]:
    """The learning curve of one set for ``shard`` (see the module docstring): one summary per point.
    ``shard`` is one shard for every query, or one per query (a set whose tasks are of several
    roles: each learns from its own shard's recorded tasks)."""
    if folds < 2:
        raise EvaluationError(f"replay needs at least 2 folds, got {folds}")
    if any(not 0 <= c < 1 for c in curve) or list(curve) != sorted(curve):
        raise EvaluationError(f"the curve's shares must rise from 0 and stay below 1, got {list(curve)}")
    shard_of = [shard] * len(queries) if isinstance(shard, str) else list(shard)
    if len(shard_of) != len(queries):
        raise EvaluationError(f"replay needs one shard per query: {len(shard_of)} for {len(queries)} queries")
    if not config.learning.enabled:
        raise EvaluationError("replay measures learning: learning.enabled is off in this config")
    points = [ReplayPoint(c) for c in curve]
    compiler = Compiler(store, config, embedder)
    try:
        for train, test in replay_folds(len(queries), folds, seed):
            forget_all(store)
            done = 0
            for point in points:
                want = min(len(train), int(round(point.recorded * len(queries))))
                for i in train[done:want]:  # the agent's tasks, one compile each, its gold tools called
                    q = queries[i]
                    ts = compiler.compile(TaskContext(shard=shard_of[i], task=q.text))
                    for tool in _gold_called(q, pool):
                        point.calls += ts.record_call(tool.name, server=tool.server, ok=True)
                done = want
                for i in test:
                    _measure(compiler, shard_of[i], queries[i], pool, point)
                    if advance is not None:
                        advance()
    finally:
        compiler.close()
        forget_all(store)
    rows = [p.summary() for p in points]
    total = 0
    for row in rows:  # each point's calls were its own share's: the curve says how many by then
        total = row["calls_recorded"] = total + row["calls_recorded"]
    return rows


def replay_markdown(dataset: str, shard: str, folds: int, rows: Sequence[dict[str, Any]]) -> str:
    """The curve as a Markdown table."""
    lines = [f"#### {dataset}, shard {shard}, {folds}-fold", "",
             "| recorded | Full recall | Hit@1 (shard ranking) | calls recorded by then (all folds) |", "|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['recorded']:.0%} | {r['recall_full']:.3f} | {r['hit_at_1']:.3f} | {r['calls_recorded']} |")
    return "\n".join(lines)
