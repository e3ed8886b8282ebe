"""What selection learns from what agents called: evidence per tool from similar past tasks.

The catalog keeps, per recorded task, its vector and the tools called for it
(:mod:`jit.catalog.store_learning`). Per tool, its *usage vector* is the mean of the vectors of
the shard's tasks it was called for successfully, each weighed by its decay (``0.5 ** (age /
learning.half_life_days)``): what the tool is used for, in the words of the tasks that used it
(Tool2Vec). For a new task of the shard, :class:`Experience` measures per tool:

- ``weight``: 100 × the cosine of its usage vector to the task, times the decayed number of
  tasks behind it over :data:`TASKS_FOR_FULL_WEIGHT` while that is below one (one task, or
  old calls, weigh little), and 0 unless the tool
  is the one of its server whose usage vector is most like the task (the other endpoints of an
  API called for the same tasks share that vector: they are no evidence that this task wants
  them), and 0 past the :data:`MOST_LIFTED` strongest: the integer the rules'
  ``learned_points`` table reads;
- ``called``: how many of the shard's past tasks it was called for;
- of the shard's nearest past tasks by cosine (``learning.neighbours`` of them, each at least the
  policy's ``learned_match`` alike): ``tasks``, how many it was called for (what ``--explain``
  says: "called for 7 similar tasks"), and ``unused``, those tasks, weighed by their decay, that
  showed it in Full and never called it (``unused_points``).

A usage vector is much steadier than single neighbours when the wording of tasks varies: a new
task need not be close to any one past task, only to what the tool's tasks have in common.
A task counts once per tool however many calls its session made, and a failed call counts
for nothing. Which tools may gain at all (not flagged, not awaiting approval, not denied) is
the compiler's to say: it knows the snapshot. The shard's tasks are read into memory once, and
then only what the catalog recorded since (a compile with nothing new recorded reads two
counters). The usage vectors are summed as calls are read; a compile does one float32
matrix-vector product over the shard's task vectors, and the usage likeness and the rest are
sums per tool with numpy over the calls.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ..catalog.store import Store
from ..catalog.store_learning import LearnedTask
from ..config import LearningConfig
from ..process import matrix_product

__all__ = ["Evidence", "Experience", "MOST_LIFTED", "SECONDS_PER_DAY", "TASKS_FOR_FULL_WEIGHT"]

SECONDS_PER_DAY = 86_400.0
#: A tool's usage likeness counts in full once this many tasks (decayed) are behind it, and in
#: proportion below: one session's task, however many calls it made, gives a third of it.
TASKS_FOR_FULL_WEIGHT = 3.0
#: At most this many tools gain from learning for one task, the strongest evidence first: once many
#: tools were called, many have some likeness to any task, and each tool with evidence joins the
#: compile's candidates.
MOST_LIFTED = 20
#: Calls summed into the usage vectors at a time, when the record is read.
_CHUNK = 4096


@dataclass(frozen=True)
class Evidence:
    """What similar past tasks say of one tool (see the module docstring)."""

    weight: int = 0
    tasks: int = 0
    unused: int = 0
    #: How many past tasks of the shard it was called for successfully, like this one or not.
    called: int = 0


class _Grown:
    """A numpy array that grows at its end (capacity doubled): rows appended in amortised O(1)."""

    def __init__(self, dtype: type, width: int = 0) -> None:
        self._data = np.zeros((16, width) if width else 16, dtype=dtype)
        self.size = 0

    def append(self, values: np.ndarray | list) -> None:
        values = np.asarray(values, dtype=self._data.dtype)
        end = self.size + len(values)
        if end > len(self._data):
            grown = np.zeros((max(end, 2 * len(self._data)), *self._data.shape[1:]), dtype=self._data.dtype)
            grown[: self.size] = self._data[: self.size]
            self._data = grown
        self._data[self.size:end] = values
        self.size = end

    @property
    def values(self) -> np.ndarray:
        return self._data[: self.size]


class _Memory:
    """One shard's recorded tasks of one vector dimension, in the shape the evidence is computed
    on, grown by what the catalog recorded since it last read (:meth:`add`):

    - ``matrix``: the tasks' unit vectors (float32), one row each, in the order first read;
    - per successful ``(task, tool)``: the task's row and the tool's column (``ok_task``, ``ok_tool``);
    - per ``(task, tool)`` the task's compile showed in Full: the same, and whether it was called.
    """

    def __init__(self, dim: int, half_life_days: float) -> None:
        self.dim = dim
        self.half_life = half_life_days * SECONDS_PER_DAY
        self.origin: float | None = None  # the first task's time: the usage sums' weights are relative to it
        self.seen = -1  # the learning_version read up to
        self.rows: dict[str, int] = {}
        self.matrix = _Grown(np.float32, dim)
        self.created = _Grown(np.float64)
        self.columns: dict[tuple[str, str], int] = {}
        self.tools: list[tuple[str, str]] = []
        self.ok_task, self.ok_tool = _Grown(np.int64), _Grown(np.int64)
        self._ok: set[tuple[int, int]] = set()
        self.shown_task, self.shown_tool = _Grown(np.int64), _Grown(np.int64)
        self.shown_called = _Grown(np.bool_)
        self._shown: dict[tuple[int, int], int] = {}
        # Per tool (column): the sum of the vectors of the tasks it was called for successfully, each
        # weighed by 2 ** (its age relative to ``origin`` in half-lives), and its server's number.
        self.usage = _Grown(np.float64, dim)
        self.server = _Grown(np.int64)
        self._servers: dict[str, int] = {}
        self.ok_weight = _Grown(np.float64)  # per successful (task, tool): the task's weight in that sum
        self._norm: np.ndarray | None = None  # the sums' lengths, made when first needed after a change

    def _column(self, tool: tuple[str, str]) -> int:
        col = self.columns.get(tool)
        if col is None:
            col = self.columns[tool] = len(self.tools)
            self.tools.append(tool)
        return col

    def add(self, tasks: list[LearnedTask]) -> None:
        """Take in tasks read from the catalog: new ones, and calls newly made for known ones."""
        vectors: list[np.ndarray] = []
        created: list[float] = []
        shown: list[tuple[int, int]] = []
        ok: list[tuple[int, int]] = []
        called: list[tuple[int, int]] = []
        for t in tasks:
            if len(t.vector) != self.dim:
                continue  # another model of the same name (re-exported at another dimension)
            row = self.rows.get(t.id)
            if row is None:
                row = self.rows[t.id] = self.matrix.size + len(vectors)
                vectors.append(t.vector)
                created.append(t.created_at)
                shown.extend((row, self._column(tool)) for tool in t.shown)
            for tool, succeeded in t.called.items():
                key = (row, self._column(tool))
                called.append(key)
                if succeeded and key not in self._ok:
                    self._ok.add(key)
                    ok.append(key)
        if vectors:
            self.matrix.append(np.stack(vectors))
            self.created.append(created)
            if self.origin is None:
                self.origin = created[0]
        if shown:
            self._shown.update((key, self.shown_task.size + i) for i, key in enumerate(shown))
            self.shown_task.append([r for r, _ in shown])
            self.shown_tool.append([c for _, c in shown])
            self.shown_called.append(np.zeros(len(shown), dtype=bool))
        at = [i for i in map(self._shown.get, called) if i is not None]
        self.shown_called.values[at] = True
        if len(self.tools) > self.server.size:  # tools first seen: their usage sums start at zero
            fresh = self.tools[self.server.size:]
            self.usage.append(np.zeros((len(fresh), self.dim)))
            self.server.append([self._servers.setdefault(server, len(self._servers)) for server, _ in fresh])
        if ok:
            rows, cols = np.array([r for r, _ in ok]), np.array([c for _, c in ok])
            self.ok_task.append(rows)
            self.ok_tool.append(cols)
            # A later task weighs more: the same ratio as their decays at any time, so the direction
            # of a tool's sum is that of its decayed mean whenever it is read.
            ahead = (self.created.values[rows] - self.origin) / self.half_life
            if ahead.max() > 512:  # keep the weights finite: measure them from a later origin
                later = float(self.created.values[rows][ahead.argmax()])
                self.usage.values[:] *= np.exp2((self.origin - later) / self.half_life)
                self.ok_weight.values[:] *= np.exp2((self.origin - later) / self.half_life)
                self.origin, ahead = later, (self.created.values[rows] - later) / self.half_life
            self.ok_weight.append(np.exp2(ahead))
            weight = np.exp2(ahead).astype(np.float32)
            for at in range(0, len(rows), _CHUNK):  # per chunk: a modest temporary (rows x dim)
                r, c, w = rows[at:at + _CHUNK], cols[at:at + _CHUNK], weight[at:at + _CHUNK]
                order = np.argsort(c, kind="stable")
                c, first = np.unique(c[order], return_index=True)
                self.usage.values[c] += np.add.reduceat(w[order, None] * self.matrix.values[r[order]], first, axis=0)
            self._norm = None

    def likeness(self, sims: np.ndarray) -> np.ndarray:
        """Per tool (column): the cosine of its usage vector to the task whose cosine to each
        recorded task is ``sims``; 0 for a tool never called successfully. The usage vector is a
        weighted sum of task vectors, so its dot product with the task is the same weighted sum
        of ``sims``: no second product over the vectors."""
        if self._norm is None:
            self._norm = np.linalg.norm(self.usage.values, axis=1)
        dot = np.bincount(self.ok_tool.values, weights=self.ok_weight.values * sims[self.ok_task.values],
                          minlength=len(self.tools))
        return np.divide(dot, self._norm, out=np.zeros(len(self.tools)), where=self._norm > 0)

    def evidence(self, query: np.ndarray, neighbours: int, min_match: int, half_life_days: float,
                 now: float, min_weight: int) -> dict[tuple[str, str], Evidence]:
        n = self.matrix.size
        if not n:
            return {}
        width = len(self.tools)
        decay = 0.5 ** (np.maximum(0.0, now - self.created.values) / SECONDS_PER_DAY / half_life_days)
        ok_task, ok_tool = self.ok_task.values, self.ok_tool.values
        called = np.bincount(ok_tool, minlength=width)
        # The usage vector's likeness to the task, in proportion to the decayed number of tasks behind
        # it up to TASKS_FOR_FULL_WEIGHT (one task, or old calls, weigh little), and only for the tool of its server most
        # like the task: the other tools of an API called for the same tasks share its vector, and
        # are no evidence that this task wants them rather than the tool its words point at.
        sims = matrix_product(self.matrix.values, np.asarray(query, dtype=np.float32)[:, None])[:, 0]
        like = np.maximum(self.likeness(sims), 0.0)
        server = self.server.values
        best = np.full(len(self._servers), -1.0)
        np.maximum.at(best, server[called > 0], like[called > 0])
        strength = np.minimum(1.0, np.bincount(ok_tool, weights=decay[ok_task], minlength=width) / TASKS_FOR_FULL_WEIGHT)
        weight = np.where((called > 0) & (like >= best[server] - 1e-6), np.rint(100 * like * strength), 0)
        weight[weight < min_weight] = 0
        if np.count_nonzero(weight) > MOST_LIFTED:  # only the strongest: each is a candidate the compile scores
            weight[np.argsort(-(weight + like), kind="stable")[MOST_LIFTED:]] = 0
        # The shard's nearest past tasks, at least ``min_match`` alike: which of them called each tool
        # (what --explain counts), and which showed it in Full and never called it (unused).
        k = min(neighbours, n)
        nearest = np.argpartition(sims, n - k)[n - k:] if k < n else np.arange(n)
        near = np.zeros(n, dtype=bool)
        near[nearest[sims[nearest] * 100 >= min_match]] = True
        tasks = np.bincount(ok_tool[near[ok_task]], minlength=width)
        idle = near[self.shown_task.values] & ~self.shown_called.values
        idle_task, idle_tool = self.shown_task.values[idle], self.shown_tool.values[idle]
        unused = np.bincount(idle_tool, weights=decay[idle_task], minlength=width)
        return {self.tools[c]: Evidence(int(weight[c]), int(tasks[c]), int(round(unused[c])), int(called[c]))
                for c in np.flatnonzero(weight + tasks + np.rint(unused)).tolist()}


class Experience:
    """The compiler's memory of recorded tasks, per (shard, model, dimension): it reads what the
    catalog recorded since it last read whenever the catalog's ``learning_version`` moves, and
    drops what it holds when ``learning_forgotten`` does (a forget, by any host). Thread-safe."""

    def __init__(self, store: Store, config: LearningConfig) -> None:
        self.store = store
        self.config = config
        self._lock = threading.Lock()
        self._forgotten = -1
        self._memory: dict[tuple[str, str, int], _Memory] = {}

    def _of(self, shard: str, model: str, dim: int, version: int, forgotten: int) -> _Memory:
        """The memory of ``shard``'s tasks, brought to ``version`` (the caller holds the lock)."""
        if forgotten != self._forgotten:
            self._memory, self._forgotten = {}, forgotten
        memory = self._memory.get((shard, model, dim))
        if memory is None or version < memory.seen:  # new, or the record was replaced (a catalog restored)
            memory = self._memory[(shard, model, dim)] = _Memory(dim, self.config.half_life_days)
        if version > memory.seen:
            # Every call up to ``version`` is committed (store_learning's docstring): from there
            # on only calls recorded later are read.
            tasks, last = self.store.learned_since(shard, model, memory.seen)
            memory.add(tasks)
            memory.seen = max(version, last)
        return memory

    def evidence(self, shard: str, model: str, query: np.ndarray, min_match: int,
                 now: float | None = None, min_weight: int = 1) -> dict[tuple[str, str], Evidence]:
        """``(server, tool) -> Evidence`` for a task of ``shard`` whose unit vector is ``query``;
        past tasks less than ``min_match`` percent alike are not its similar tasks, and a weight
        below ``min_weight`` is none (a tool with no other evidence is left out)."""
        version, forgotten = self.store.learning_versions()
        if not version:
            return {}  # nothing was ever recorded: the common case costs one read
        with self._lock:  # a memory is read and grown under it
            memory = self._of(shard, model, len(query), version, forgotten)
            return memory.evidence(query, self.config.neighbours, min_match, self.config.half_life_days,
                                   time.time() if now is None else now, min_weight)


def evidence_columns(found: Mapping[int, Evidence]) -> dict[str, dict[int, int]]:
    """The evidence the policy's :data:`~jit.selection.policy.BY_EVIDENCE` tables read, per predicate."""
    return {"learned_points": {t: e.weight for t, e in found.items() if e.weight},
            "unused_points": {t: e.unused for t, e in found.items() if e.unused}}
