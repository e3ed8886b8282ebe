"""What selection learns from what agents called: evidence per tool from similar past tasks.

The catalog keeps, per recorded task, its vector and the tools called for it
(:mod:`jit.catalog.store_learning`). For a new task of a shard, :class:`Experience` finds the
shard's nearest past tasks by cosine (``learning.neighbours`` of them, each at least the
policy's ``learned_match`` alike) and measures, per tool:

- ``weight``: 100 × the sum over those tasks it was called for successfully of their similarity
  times their decay (``0.5 ** (age / learning.half_life_days)``): the integer the rules'
  ``learned_points`` table reads;
- ``tasks``: how many of them (what ``--explain`` says: "called for 7 similar tasks");
- ``unused``: those tasks, weighed by their decay, that showed it in Full and never called it
  (``unused_points``).

A task counts once per tool however many calls its session made, and a failed call counts
for nothing. Which tools may gain at all (not flagged, not awaiting approval, not denied) is
the compiler's to say: it knows the snapshot. The shard's tasks are read into memory once per
``learning_version`` of the catalog: a compile with nothing new recorded reads one counter.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ..catalog.store import Store
from ..config import LearningConfig

__all__ = ["Evidence", "Experience", "SECONDS_PER_DAY"]

SECONDS_PER_DAY = 86_400.0


@dataclass(frozen=True)
class Evidence:
    """What similar past tasks say of one tool (see the module docstring)."""

    weight: int = 0
    tasks: int = 0
    unused: int = 0


class _Memory:
    """One shard's recorded tasks, in the shape the evidence is computed on."""

    def __init__(self, tasks: list) -> None:
        dims = {len(t.vector) for t in tasks}
        # Vectors of another dimension than the most common (a model re-exported) are left out.
        dim = max(dims, key=lambda d: sum(len(t.vector) == d for t in tasks)) if dims else 0
        kept = [t for t in tasks if len(t.vector) == dim]
        self.matrix = np.stack([t.vector for t in kept]).astype(np.float32) if kept else np.zeros((0, 0), np.float32)
        self.created = np.array([t.created_at for t in kept], dtype=np.float64)
        self.ok = [[tool for tool, ok in t.called.items() if ok] for t in kept]
        self.unused = [[tool for tool in t.shown if tool not in t.called] for t in kept]


class Experience:
    """The compiler's memory of recorded tasks: per (shard, model), reread when the catalog's
    ``learning_version`` moves. Thread-safe."""

    def __init__(self, store: Store, config: LearningConfig) -> None:
        self.store = store
        self.config = config
        self._lock = threading.Lock()
        self._version = -1
        self._memory: dict[tuple[str, str], _Memory] = {}

    def _of(self, shard: str, model: str) -> _Memory | None:
        version = self.store.learning_version()
        if not version:
            return None  # nothing was ever recorded: the common case costs one read
        with self._lock:
            if version != self._version:
                self._memory, self._version = {}, version
            memory = self._memory.get((shard, model))
            if memory is None:
                memory = self._memory[(shard, model)] = _Memory(self.store.learned_tasks(shard, model))
            return memory

    def evidence(self, shard: str, model: str, query: np.ndarray, min_match: int,
                 now: float | None = None) -> dict[tuple[str, str], Evidence]:
        """``(server, tool) -> Evidence`` for a task of ``shard`` whose unit vector is ``query``;
        past tasks less than ``min_match`` percent alike do not count."""
        memory = self._of(shard, model)
        if memory is None or not len(memory.matrix) or memory.matrix.shape[1] != len(query):
            return {}
        sims = memory.matrix @ np.asarray(query, dtype=np.float32)
        k = min(self.config.neighbours, len(sims))
        nearest = np.argpartition(-sims, k - 1)[:k] if k < len(sims) else np.arange(len(sims))
        nearest = nearest[sims[nearest] * 100 >= min_match]
        if not len(nearest):
            return {}
        age_days = np.maximum(0.0, (time.time() if now is None else now) - memory.created[nearest]) / SECONDS_PER_DAY
        decay = 0.5 ** (age_days / self.config.half_life_days)
        weight: dict[tuple[str, str], float] = {}
        tasks: dict[tuple[str, str], int] = {}
        unused: dict[tuple[str, str], float] = {}
        for i, d in zip(nearest.tolist(), decay.tolist(), strict=True):
            w = float(sims[i]) * d
            for tool in memory.ok[i]:
                weight[tool] = weight.get(tool, 0.0) + w
                tasks[tool] = tasks.get(tool, 0) + 1
            for tool in memory.unused[i]:
                unused[tool] = unused.get(tool, 0.0) + d
        return {tool: Evidence(int(round(100 * weight.get(tool, 0.0))), tasks.get(tool, 0),
                               int(round(unused.get(tool, 0.0))))
                for tool in weight.keys() | unused.keys()}


def evidence_columns(found: Mapping[int, Evidence]) -> dict[str, dict[int, int]]:
    """The evidence the policy's :data:`~jit.selection.policy.BY_EVIDENCE` tables read, per predicate."""
    return {"learned_points": {t: e.weight for t, e in found.items() if e.weight},
            "unused_points": {t: e.unused for t, e in found.items() if e.unused}}
