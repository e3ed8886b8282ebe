"""The policy's judgements that act on a compile's candidates rather than on its scores.

Hosted systems (which servers a task points at), and the steps a task implies (their tool,
and a warning when nothing in reach can do one): rules/policy.dl states them as constants
(``hosted_system``, ``system_word``, ``full_match``, ``step_capability``), asked once per
compiler, and :class:`Judgement` applies them to a compile's candidates.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..analysis.offline_analyzer import target_format
from .catalog_view import CatalogSnapshot
from .logic import Fact, LogicEngine
from .tiers import ScoredTool, Tier

__all__ = ["CODE_EDIT", "COMPILER_FACTS", "FILE_TARGET", "IMPLIED", "Judgement", "PolicyConstants", "words"]

#: The task fact kind of an implied step (TaskProfile.implied): read by the compiler, never asserted.
IMPLIED = "task_implied"
#: The task fact kind of a local file the task writes (TaskProfile.file_targets): never asserted.
FILE_TARGET = "task_file_target"
#: The task fact kind of a change to code or a config in local files, no file named to write
#: (TaskProfile.edits_code): its step is the policy's ``file_step('edit', …)``. Never asserted.
CODE_EDIT = "task_code_edit"
#: What the reasons call that step's target.
CODE_EDIT_TARGET = "the code the task changes"
#: Task facts the compiler reads and the engine never sees.
COMPILER_FACTS = frozenset({IMPLIED, FILE_TARGET, CODE_EDIT})
_WORD = re.compile(r"[a-z0-9]+")
#: A step's capability as what a role may not do (the warning of :meth:`Judgement.missing_steps`).
_STEP_WORDS = {"/write": "change files or data", "/delete": "delete anything", "/execute": "run commands",
               "/send": "send messages"}


def words(text: str) -> list[str]:
    """Lowercase words of a name or a text: ``Google-Maps`` -> ``google``, ``maps``."""
    return _WORD.findall(text.lower())


@dataclass(frozen=True)
class PolicyConstants:
    """Constants of the policy (rules/policy.dl)."""

    hosted: frozenset[str]
    #: Every word a task_word fact may hold: the hosted systems and the system words.
    words: frozenset[str]
    full_match: int
    steps: tuple[str, ...]
    #: ``(format, capability, category, text)``: the steps on a local file of ``format`` the task
    #: names, done by the tool of ``category`` alone nearest to ``text`` (rules/policy.dl,
    #: ``file_step``; formats: :func:`~jit.analysis.offline_analyzer.target_format`).
    file_steps: tuple[tuple[str, str, str, str], ...] = ()


class Judgement:
    """The policy's constants, asked of the engine once (the rules do not change under a
    compiler), and what the compiler does with them."""

    def __init__(self, engine: LogicEngine) -> None:
        self._engine = engine
        self._constants: PolicyConstants | None = None
        #: Server name -> the hosted systems its name holds.
        self._systems: dict[str, tuple[str, ...]] = {}

    def constants(self) -> PolicyConstants:
        if self._constants is None:
            hosted, system_words, full, steps, file_steps, text_steps = self._engine.query_many([
                ("hosted_system", (None,)), ("system_word", (None, None)), ("full_match", (None,)),
                ("step_capability", (None,)), ("file_step", (None, None, None, None)),
                ("file_step", (None, None, None))])
            # A policy written before file formats (file_step(Capability, Category, Text)) names text files.
            rows = {tuple(str(v) for v in r) for r in file_steps} | {("text", *(str(v) for v in r)) for r in text_steps}
            systems = frozenset(str(r[0]) for r in hosted)
            self._constants = PolicyConstants(hosted=systems, words=systems | {str(r[1]) for r in system_words},
                                              full_match=min((int(r[0]) for r in full), default=0),
                                              steps=tuple(sorted(str(r[0]) for r in steps)),
                                              file_steps=tuple(sorted(rows)))
        return self._constants

    def task_words(self, text: str) -> list[Fact]:
        """``task_word`` facts: the task's words that the policy names (systems, system words)."""
        known = self.constants().words
        return [("task_word", w) for w in dict.fromkeys(words(text)) if w in known]

    def server_systems(self, server: str) -> tuple[str, ...]:
        """The hosted systems a server's name holds (``github-enterprise`` -> ``github``)."""
        found = self._systems.get(server)
        if found is None:
            hosted = self.constants().hosted
            found = self._systems[server] = tuple(w for w in dict.fromkeys(words(server)) if w in hosted)
        return found

    def steps(self, facts: list[Fact]) -> list[str]:
        """The task's capabilities, stated or implied, that the policy gives a tool of their own."""
        steps = self.constants().steps
        return list(dict.fromkeys(str(f[1]) for f in facts
                                  if f[0] in ("task_capability", IMPLIED) and f[1] in steps))

    def missing_steps(self, view: CatalogSnapshot, shard: str, facts: list[Fact],
                      holders: Mapping[str, frozenset[int]], allowed: np.ndarray, denied: np.ndarray | None,
                      reasons: Mapping[int, tuple[str, ...]], warnings: list[str]) -> None:
        """A warning for each step of the task (a ``step_capability`` it states or implies: it asks
        to change, run, delete or send) that the role cannot take: no tool in reach has it at all
        (not in the catalog, blocked, or filtered out by the servers the task allows), or every
        tool that has it is denied to the role (``reasons``: the policy's, per tool), which the
        warning says, so the agent is not left to find out."""
        steps = self.steps(facts)
        if not steps:
            return  # most tasks: no mask to build
        for cap in steps:
            rows = [(t, view.row_of[t]) for t in holders.get(cap, ()) if t in view.row_of]
            if any(allowed[r] for _t, r in rows):
                continue
            refused = sorted({why for t, r in rows if denied is not None and denied[r] for why in reasons.get(t, ())})
            if refused:
                warnings.append(f"{shard} may not {_STEP_WORDS.get(cap, f'do {cap}')}: the task asks for {cap}, "
                                f"and every tool in reach that does it is denied to {shard} ({'; '.join(refused)})")
            else:
                warnings.append(f"{shard}: the task asks for {cap} and no tool in reach does it")

    def step_tools(self, out: list[ScoredTool], facts: list[Fact], holders: Mapping[str, frozenset[int]],
                   tier_cap: Mapping[int, Tier],
                   file_tools: Mapping[str, Sequence[tuple[int, tuple[str, ...]]]] | None = None) -> None:
        """Give each step of the task its tool: the best-scored candidate with that capability is
        wanted Full, unless a Full tool has it already. ``file_tools``: capability -> the tools of
        that step on the local files the task names, one per file format, each with its files (the
        compiler's choice by the policy's ``file_step``): each is a tool of the step, held Full,
        when it is a candidate that may be Full."""
        by_id = {s.id: s for s in out} if file_tools else {}
        for cap in self.steps(facts):
            held = False
            for t, targets in (file_tools or {}).get(cap, ()):
                chosen = by_id.get(t)
                if chosen is not None and tier_cap.get(chosen.id, Tier.FULL) is Tier.FULL:
                    held = True
                    chosen.step = cap  # certain: the task names the file
                    if chosen.tier is not Tier.FULL:
                        chosen.wanted = chosen.tier = Tier.FULL
                    chosen.reasons.insert(0, f"tool of the step {cap} of {', '.join(targets)}")
            if held:
                continue
            have = holders.get(cap, frozenset())
            able = [s for s in out if s.id in have and tier_cap.get(s.id, Tier.FULL) is Tier.FULL]
            if not able or any(s.tier is Tier.FULL for s in able):
                continue
            best = min(able, key=lambda s: (-s.final, s.rank))
            best.wanted = best.tier = Tier.FULL
            best.reasons.insert(0, f"tool of the step {cap} the task implies")

    def file_steps(self, facts: list[Fact]) -> list[tuple[tuple[str, str, str, str], tuple[str, ...]]]:
        """The policy's ``file_step`` rows for the steps of a task that names local files to write,
        each with the files of its format."""
        by_format: dict[str, list[str]] = {}
        for f in facts:
            if f[0] == FILE_TARGET:
                by_format.setdefault(target_format(str(f[1])), []).append(str(f[1]))
            elif f[0] == CODE_EDIT:
                by_format.setdefault("edit", []).append(CODE_EDIT_TARGET)
        if not by_format:
            return []
        steps = set(self.steps(facts))
        return [(row, tuple(by_format[row[0]])) for row in self.constants().file_steps
                if row[0] in by_format and row[1] in steps]

    @staticmethod
    def sole_holders(labels: Mapping[str, Mapping[str, frozenset[int]]], capability: str, category: str) -> set[int]:
        """The tools with ``capability`` whose only category is ``category``."""
        found = set(labels["capability"].get(capability, frozenset()) & labels["category"].get(category, frozenset()))
        for label, ids in labels["category"].items():
            if not found:
                break
            if label != category:
                found = found - ids  # iterates over the (smaller) found set
        return found
