"""Why a development step's tool is not in Full: each miss of a steps set's development part, classed.

    HF_HUB_OFFLINE=1 python -m bench.steps_diagnosis [--tasks bench/data/steps/unseen3/tasks.jsonl] [--list]

Compiles every development task of a steps set (``bench.eval_steps``; held-out tasks, whose number
is a multiple of 4, are neither compiled nor read) as ``bench.eval_steps`` does, and records what
the compile's step machinery saw on the way (:func:`jit.selection.steps.plan`, the per-step
rankings of :func:`jit.selection.steps.step_tools`, :func:`jit.selection.steps.settle`). Each
labelled step that has a tool, that the role may take and whose tools are none in Full is put in
the first class that holds, in this order:

* ``d-step``: a step chose one of its tools (:func:`settle`), and the budget, ``max_full_tools``
  or ``max_full_share`` took it out of Full (its reasons say which);
* ``c-sibling``: one of its tools was an option of a step (over the floor, fitting), and the step
  took another;
* ``d-score``: none of its tools was a step's option, but one was Full by the whole task's score
  and ``max_full_tools``, ``max_full_share`` or the budget cut it behind the steps' tools and
  better-scored extras (``--list`` says which class it would be otherwise, and Full's tools, each
  as the skeleton's, a step's or by score);
* ``b-floor``: one of its tools was in the pool (the best :data:`STEP_POOL` by its own text) of an
  extracted step no covered labelled step claims (an extracted step is claimed when the tool it
  chose is Full and of that labelled step), below the floor, its capability not fitting, or the
  options full;
* ``b-pool``: such a free extracted step is about it (its text's cosine with the labelled step's
  at least :data:`ABOUT`, by the compile's embedder), but none of its tools is in that step's pool;
* ``a-unread``: no free extracted step is about it: the task's clause reading did not make the
  step (an implied step not implied, a clause joined to another).

``--list`` prints every miss with its class and what the class rests on.
"""

from __future__ import annotations

import argparse
import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

import jit.selection.compiler as compiler_module
import jit.selection.steps as steps_module
from bench.eval_roles import compile_tasks, load_tools
from bench.eval_steps import CATALOGS, DATA, StepTask, held_out, load_tasks
from jit.config import AvailableTools, Config
from jit.embedding.factory import embedder_from_config
from jit.models import tool_key
from jit.selection.steps import STEP_POOL
from jit.selection.tiers import Tier
from jit.selection.toolset import ToolSet

#: The cosine at which an extracted step's text is taken to be about a labelled step.
ABOUT = 0.6

CLASSES = ("a-unread", "b-pool", "b-floor", "c-sibling", "d-step", "d-score")


class Recorder:
    """What the step machinery of the compile in progress saw (one compile at a time)."""

    def __init__(self) -> None:
        self.reset()
        self._plan, self._step_tools, self._settle = steps_module.plan, steps_module.step_tools, compiler_module.settle

    def reset(self) -> None:
        self.view: Any = None
        self.steps: list[Any] = []
        self.pools: list[tuple[str, set[int]]] = []  # extracted step's query, tool ids in its pool
        self.options: dict[str, tuple[int, ...]] = {}
        self.chosen: dict[int, str] = {}

    def __enter__(self) -> Recorder:
        rec = self

        def plan(view: Any, steps: Sequence[Any], *args: Any, **kwargs: Any) -> Any:
            rec.view, rec.steps = view, list(steps)
            planned, feeds = rec._plan(view, steps, *args, **kwargs)
            rec.options = {text: tuple(t for t, _v in options) for text, options in planned}
            return planned, feeds

        def step_tools(steps: Sequence[Any], score: Any, *args: Any, **kwargs: Any) -> Any:
            for i, step in enumerate(steps):
                rows = score(i, step.text)[0]
                rec.pools.append((step.query, {rec.view.rows[int(r)] for r in rows.tolist()}))
            return rec._step_tools(steps, score, *args, **kwargs)

        def settle(*args: Any, **kwargs: Any) -> dict[int, str]:
            rec.chosen = rec._settle(*args, **kwargs)
            return rec.chosen

        steps_module.plan, steps_module.step_tools, compiler_module.settle = plan, step_tools, settle
        compiler_module.plan = plan
        return self

    def __exit__(self, *exc: object) -> None:
        steps_module.plan, steps_module.step_tools = self._plan, self._step_tools
        compiler_module.plan, compiler_module.settle = self._plan, self._settle


def _role(st: Any) -> str:
    """How a Full tool got there: the skeleton's, a step's (or a producer's), or by its score."""
    return "skeleton" if st.skeleton else "step" if st.step else "score"


def classify(task: StepTask, ts: ToolSet, rec: Recorder, embed: Any) -> list[dict[str, Any]]:
    """The class of each development miss of one compiled task."""
    full = {tool_key(s.server, s.tool_name) for s in ts.tools if s.tier is Tier.FULL}
    by_key = {tool_key(*rec.view.heads[t]): t for t in rec.view.heads} if rec.view is not None else {}
    scored = {st.id: st for st in ts.tools}
    # An extracted step is claimed by a covered labelled step when the tool it chose is one of that step's.
    texts = {s.text: s.query for s in rec.steps}
    claimed = {texts.get(of, of) for t, of in rec.chosen.items()
               if any(tool_key(*rec.view.heads[t]) in s.tools and full.intersection(s.tools) for s in task.steps)}
    out = []
    for step in task.steps:
        if not step.scored or full.intersection(step.tools):
            continue
        ids = {by_key[k] for k in step.tools if k in by_key}
        why = ""
        if chosen := ids & set(rec.chosen):
            t = min(chosen)
            st = scored.get(t)
            why = f"{rec.view.names[t]} chosen for {rec.chosen[t]!r}; " + (
                f"tier {st.tier.value}: {'; '.join(r for r in st.reasons if 'Full' in r or 'budget' in r)[:160]}"
                if st else "not a candidate")
            cls = "d-step"
        elif took := [(text, opts) for text, opts in rec.options.items() if ids & set(opts)]:
            text, opts = took[0]
            taken = [rec.view.names[t] for t in opts if t in rec.chosen]
            cls, why = "c-sibling", f"option of {text!r}; taken: {', '.join(taken) or 'none'}"
        else:
            # The extracted steps no covered labelled step claims (one whose tool is this step's choice).
            free = [(q, pool) for q, pool in rec.pools if q not in claimed]
            cos = [float(c) for c in (embed([step.step])[0] @ embed([q for q, _ in free]).T)] if free else []
            best = int(np.argmax(cos)) if cos else -1
            near = f"nearest free step {free[best][0]!r} ({cos[best]:.2f})" if cos else "no free step"
            pooled = [q for q, pool in free if ids & pool]
            if pooled:
                cls, why = "b-floor", f"in the pool of {pooled[0]!r}, no option"
            elif cos and cos[best] >= ABOUT:
                cls, why = "b-pool", near
            else:
                cls, why = "a-unread", near
            wanted = [st for t in ids if (st := scored.get(t)) is not None and st.wanted is Tier.FULL]
            if wanted:
                demoted = [r for r in wanted[0].reasons if r.startswith("demoted")]
                cls, why = "d-score", (f"else {cls}: "
                                       f"{wanted[0].name} wanted Full by score, tier {wanted[0].tier.value} "
                                       f"({'; '.join(demoted) or 'no demotion'}); " + why
                                       + "; Full: " + ", ".join(f"{st.name}[{_role(st)}]" for st in ts.tools
                                                                if st.tier is Tier.FULL))
        out.append({"task": task.id, "step": step.step, "capability": step.capability, "class": cls, "why": why})
    return out


def run(tasks_path: Path, cache: Path, budget: int) -> list[dict[str, Any]]:
    config = replace(Config.default(), available_tools=AvailableTools())
    embedder = embedder_from_config(config.embedding)
    tools_path = CATALOGS / "tools.jsonl"
    tasks = [t for t in load_tasks(tasks_path) if not held_out(t.id)]

    def embed(texts: list[str]) -> np.ndarray:
        v = np.asarray(embedder.embed(texts), dtype=np.float32)
        return v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-9)

    with Recorder() as rec:
        def score(task: StepTask, ts: ToolSet) -> list[dict[str, Any]]:
            found = classify(task, ts, rec, embed)
            rec.reset()
            return found

        rows = compile_tasks(config, embedder, load_tools(tools_path), tools_path, tasks, score, budget=budget,
                             cache=cache)
    return [m for r in rows for m in r]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.steps_diagnosis", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=Path, default=DATA / "tasks.jsonl")
    parser.add_argument("--cache", type=Path, default=Path(".jit/eval/steps.db"))
    parser.add_argument("--budget", type=int, default=4000)
    parser.add_argument("--list", action="store_true", help="print every miss with its class and why")
    args = parser.parse_args(argv)
    logging.getLogger("jit").setLevel(logging.WARNING)
    misses = run(args.tasks, args.cache, args.budget)
    if args.list:
        for m in misses:
            print(f"{m['class']:9} {m['task']} /{m['capability']}: {m['step']}\n          {m['why']}")
    counts = Counter(m["class"] for m in misses)
    print(f"{args.tasks}: {len(misses)} development misses; "
          + ", ".join(f"{c} {counts.get(c, 0)}" for c in CLASSES))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
