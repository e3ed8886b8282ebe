"""jit's side of rules/policy.dl: what it reads of the rules and what it decides with their answers.

The rules say which tools are blocked, denied, capped, skeleton, and how many points each
part of the logic score gives; this module is the one place in Python that reads those
answers as a policy:

- :data:`POINTS`, the parts of the logic score: each part's derived predicate and where
  its table is read (per tool, per shard, or per task over labels, ranks or systems).
  The derived predicates a catalog view asks (:data:`DERIVED`) and the task tables a
  compile asks (:data:`TASK_TABLES`) follow from it. **A new points signal** is a
  ``derive`` line in rules/schema.dl, its rules in rules/policy.dl and one row here.
- :class:`Scoring`: a candidate's points by part, logic = their sum clamped to 0–100 (the parts
  learned from calls added after that clamp, and clamped again),
  final = ``logic_weight`` × logic + ``vector_weight`` × vector (the learned parts weighed in
  past the logic's clamp: ``logic_weight`` × (clamped sum + learned) + ``vector_weight`` ×
  vector, clamped to 0–100), the tier the thresholds
  give, and **Full needs evidence** (``full_match``, or points of a part marked
  ``evidence``); then the skeleton's Full and the rules' tier caps.
- :class:`Policy`: the policy's constants (``hosted_system``, ``system_word``,
  ``full_match``, ``step_capability``, ``file_step``), asked once per compiler, the task
  tables asked per compile, and the judgements that act on a compile's candidates:
  hosted systems, the skeleton's winner per slot, the tool of each step the task states or
  implies, and the warning for a step no tool in reach can do or the role may not take.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from ..analysis.capabilities import name_effects, name_reading
from ..analysis.offline_analyzer import target_format
from ..config import ToolSelectionConfig
from ..errors import RuleError
from ..models import HARNESS_SERVER, ToolState
from ..text import SEARCH_STOPWORDS, stem
from .explain import RuleCitations
from .logic import Fact, LogicEngine, RuleSet
from .scored_tool import ScoredTool
from .task import CODE_EDIT, COMPILER_FACTS, FILE_EDIT, FILE_TARGET, IMPLIED
from .tiers import Tier

__all__ = ["BY_EVIDENCE", "BY_LABEL", "BY_RANK", "BY_SYSTEM", "DERIVED", "EVIDENCE_TABLES", "PER_SHARD", "PER_TOOL", "POINTS", "SHARD_POINTS",
           "SHARD_PREDICATES", "TASK_TABLES", "TOOL_POINTS", "TOOL_PREDICATES", "Points", "Policy",
           "PolicyConstants", "Score", "Scoring", "asked_effects", "check_points", "label_points", "merge_points",
           "words"]

# ---------------------------------------------------------------------------- the points

#: ``Name(T, Points)``: asked per tool when its facts change (the catalog view's snapshot).
PER_TOOL = "tool"
#: ``Name(Shard, T, Points)``: asked per shard and tool, the first time the shard is compiled.
PER_SHARD = "shard"
#: ``Name(Label, Points)``: a task table; a tool gets the best Points of its labels of one kind.
BY_LABEL = "label"
#: ``Name(MaxRank, MinMatch, Points)``: a task table; a tool whose rank in the task's retrieval
#: is at most MaxRank and whose vector score is at least MinMatch gets the largest such Points.
BY_RANK = "rank"
#: ``Name(System, Points)``: a task table; the tools of a server whose name holds a hosted
#: System get its Points (the lowest of them), unless the task names the server.
BY_SYSTEM = "system"
#: ``Name(MinEvidence, Points)``: a table of the policy; a tool whose evidence of the part (an integer
#: the compiler measures from what agents called for similar past tasks: jit.selection.learning)
#: is at least MinEvidence gets the largest such Points.
BY_EVIDENCE = "evidence"


@dataclass(frozen=True)
class Points:
    """One part of the logic score: the derived predicate that gives it and how it is read."""

    #: The part's name in ``ScoredTool.points`` and in the reasons (``shard +8 (policy.dl:82)``).
    part: str
    predicate: str
    #: Where its table is read: :data:`PER_TOOL`, :data:`PER_SHARD`, :data:`BY_LABEL`,
    #: :data:`BY_RANK` or :data:`BY_SYSTEM`.
    source: str
    #: :data:`BY_LABEL`: the kind of label its table is keyed by (``capability``, ``category``, ``domain``).
    label: str = ""
    #: -1: the rules' points are taken off (``penalty_points(T, 30)``: the part is -30).
    sign: int = 1
    #: Points of this part are evidence enough for Full, whatever the tool's match (``full_match``).
    evidence: bool = False
    #: Added after the other parts' sum is clamped to 0-100 (the logic then clamped again), and into
    #: the final score past that second clamp: what agents called can lift a tool to the top, order
    #: tools whose other points all reach 100, or take a saturated one down, where inside the sum it
    #: would be lost.
    after_clamp: bool = False


#: The parts of the logic score, in the order reasons and explanations list them.
POINTS = (
    Points("shard", "shard_points", PER_SHARD),
    Points("usage", "usage_points", PER_TOOL),
    Points("learned", "learned_points", BY_EVIDENCE, evidence=True, after_clamp=True),
    Points("unused", "unused_points", BY_EVIDENCE, sign=-1, after_clamp=True),
    Points("capability", "capability_points", BY_LABEL, label="capability", evidence=True),
    Points("category", "category_points", BY_LABEL, label="category", evidence=True),
    Points("domain", "domain_points", BY_LABEL, label="domain"),
    Points("relevance", "relevance_points", BY_RANK),
    Points("system", "system_points", BY_SYSTEM),
    Points("penalty", "penalty_points", PER_TOOL, sign=-1),
)

#: The per-tool and per-shard points predicates, each a table ``tool -> points``.
TOOL_POINTS = tuple(p.predicate for p in POINTS if p.source == PER_TOOL)
SHARD_POINTS = tuple(p.predicate for p in POINTS if p.source == PER_SHARD)
#: Derived per tool (asked with the tool bound when it changes), and per shard and tool.
TOOL_PREDICATES = ("blocked", "offline", "tier_cap", *TOOL_POINTS)
SHARD_PREDICATES = (*SHARD_POINTS, "skeleton", "denied")
DERIVED = TOOL_PREDICATES + SHARD_PREDICATES
#: Read per compile from the task facts: tables keyed by labels, ranks or systems, never by tool.
TASK_TABLES = tuple(p.predicate for p in POINTS if p.source in (BY_LABEL, BY_RANK, BY_SYSTEM))
#: Read once per compiler: the tables that turn learned evidence into points.
EVIDENCE_TABLES = tuple(p.predicate for p in POINTS if p.source == BY_EVIDENCE)


def check_points(rules: RuleSet) -> None:
    """Every ``*_points`` predicate the schema declares is a part of :data:`POINTS`: points the
    rules give and jit never reads would be a silent no-op."""
    known = {p.predicate for p in POINTS}
    for d in rules.derived():
        if d.name.endswith("_points") and d.name not in known:
            raise RuleError(f"{d.name} gives points jit does not read: add it to POINTS in "
                            "jit/selection/policy.py (its part's name and where its table is read)",
                            path=d.path, line=d.line)


def merge_points(table: dict[Any, int], rows: Iterable[tuple]) -> None:
    """One number per key: the largest Points of the rows (schema.dl's rule)."""
    for key, p in rows:
        table[key] = max(int(p), table.get(key, -10**6))


def label_points(table: Mapping[str, int], tools_with: Mapping[str, frozenset[int]],
                 candidates: set[int]) -> dict[int, int]:
    """Per candidate, the best points of its labels in ``table`` (absent: none of them is in it)."""
    out: dict[int, int] = {}
    for label, p in table.items():
        for t in candidates.intersection(tools_with.get(label, ())):
            if p > out.get(t, p - 1):
                out[t] = p
    return out


def _ranked(table: Mapping[tuple[int, int], int], candidates: Sequence[int], vector: Mapping[int, float]
            ) -> dict[int, int]:
    """:data:`BY_RANK` points: per candidate (in rank order, the first rank 1), the largest points
    of the rows ``(max rank, min vector score) -> points`` it meets."""
    rows = [(max_rank, floor, p) for (max_rank, floor), p in sorted(table.items())]
    out: dict[int, int] = {}
    for rank, t in enumerate(candidates, 1):
        v = vector[t]
        best = None
        for max_rank, floor, p in rows:
            if rank <= max_rank and v >= floor and (best is None or p > best):
                best = p
        if best:
            out[t] = best
    return out


def _evidenced(table: Mapping[int, int], evidence: Mapping[int, int]) -> dict[int, int]:
    """:data:`BY_EVIDENCE` points: per tool with evidence, the largest points of the rows
    ``min evidence -> points`` it meets."""
    out: dict[int, int] = {}
    for t, e in evidence.items():
        met = [p for floor, p in table.items() if e >= floor]
        if met and max(met):
            out[t] = max(met)
    return out


class Score(NamedTuple):
    """What placed one candidate: its points by part, its scores, its tiers and why."""

    points: dict[str, int]
    logic: int
    vector: int
    final: int
    #: The tier its final score wants (after Full needs evidence; Full for the skeleton).
    wanted: Tier
    #: ``wanted`` within the rules' tier cap.
    tier: Tier
    reasons: list[str]


class Scoring:
    """One compile's scores: ``parts`` holds, per part of :data:`POINTS`, the points the rules
    give each candidate (``tool -> points``, before the part's sign)."""

    def __init__(self, policy: Policy, parts: Sequence[tuple[Points, Mapping[int, int]]], sel: ToolSelectionConfig,
                 shard: str) -> None:
        self._policy = policy
        #: Every part at 0, in order: a candidate's points start from it, and only the parts whose
        #: column holds anything are looked up (most columns are empty for most candidates).
        self._zero = {p.part: 0 for p, _column in parts}
        self._columns = [(p, column) for p, column in parts if column]
        self._evidence = tuple(p.part for p, _column in parts if p.evidence)
        self._sel = sel
        self._full_match = policy.constants().full_match
        self._shard = shard

    def score(self, t: int, vector: float, match: int, *, named: bool = False, slots: Sequence[str] = (),
              cap: Tier | None = None) -> Score:
        """Candidate ``t``, of ``vector`` score and ``match`` (its best cosine to the task or a clause,
        in percent), the task naming it or not; ``slots``: the skeleton slots it wins; ``cap``: the
        rules' tier cap."""
        sel, policy = self._sel, self._policy
        points = self._zero.copy()
        reasons: list[str] = []
        total = late = 0
        evidenced = False
        for p, column in self._columns:
            n = column.get(t)
            if not n:
                continue
            n *= p.sign
            points[p.part] = n
            reasons.append(policy.reason(p, n))
            if p.after_clamp:
                late += n
            else:
                total += n
            evidenced = evidenced or p.evidence
        logic = int(min(100, max(0, total)))
        vec = int(round(vector))
        if late:
            # Into the final score past the logic's clamp: among candidates whose other points
            # all reach 100, learning still decides the order.
            final = int(min(100, max(0, round(sel.logic_weight * (logic + late) + sel.vector_weight * vec))))
            logic = int(min(100, max(0, logic + late)))
        else:
            final = int(round(sel.logic_weight * logic + sel.vector_weight * vec))
        wanted = (Tier.FULL if final >= sel.full_threshold else Tier.CONDENSED if final >= sel.condensed_threshold
                  else Tier.MINIMAL if final >= sel.minimal_threshold else Tier.EXCLUDED)
        if named:
            reasons.insert(0, "named in the task")
        if wanted is Tier.FULL and match < self._full_match and not evidenced:
            # no evidence of its own: neither its match (named tools have 100) nor the task's labels
            wanted = Tier.CONDENSED
            reasons.append(f"condensed: match {match} is below full_match {self._full_match} and no "
                           f"{' or '.join(self._evidence)} of the task points at it")
        if slots:
            wanted = Tier.FULL
            reasons.insert(0, f"skeleton for {self._shard} (slot {', '.join(slots)})")
        tier = wanted
        if cap is not None and cap.rank > tier.rank:
            reasons.append(policy.citations.reason(f"capped at {cap.value} by tier_cap", "tier_cap", cap.value))
            tier = cap
        return Score(points, logic, vec, final, wanted, tier, reasons)


# ---------------------------------------------------------------------------- the constants and judgements

#: How the reason of :meth:`Policy.unasked` starts.
UNASKED = "condensed: its name says it does "
#: What the reasons call the target of a step on the code a task changes in place.
CODE_EDIT_TARGET = "the code the task changes"
_WORD = re.compile(r"[a-z0-9]+")
#: Where a camelCase name's words meet (``getRateLimitStatus``).
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
#: Verbs that make, fill in or edit the object they name (``add_comment``, ``create_index``, ``edit_file``): a task
#: that says the object and asks for a change asks for them (:meth:`Policy.unsaid`); archiving, pushing or merging
#: it must be said.
_MAKING = frozenset(stem(w) for w in
                    "create add insert append put set write save post upload edit update modify".split())
#: What a task calls the object a tool's name says: a bug or a ticket is an issue, a PR a pull request.
_SAME_OBJECT = {stem(w): tuple(stem(v) for v in same.split())
                for w, same in (("bug", "issue"), ("ticket", "issue"), ("pr", "pull request"), ("prs", "pull request"))}
#: A task's words that say nothing of a tool's object ("to", "many", "not"), before stemming (:meth:`Policy.unsaid`).
_FUNCTION_WORDS = frozenset((*SEARCH_STOPWORDS, "of", "for", "to", "on", "in", "at", "by", "via", "with", "from", "as",
                             "and", "or", "into", "onto", "many", "new", "all", "each", "other", "not", "no", "any",
                             "some", "every", "both", "more", "most"))
_TESTING = r"(?:smoke[\s-]*test|test|debug|exercise|verify|verifie|try\s+out|check\s+that)(?:s|ed|ing)?"
_AN_MCP = (r"(?:mcp|model\s+context\s+protocol)[\s-]+(?:servers?|clients?)"
           r"(?!\s+(?:docs?|documentation|lists?|examples?|repos?|repository|specs?|specification|registry|registries)\b)")
#: A task that tests an MCP server itself ("smoke-test the MCP server we built", "debug our MCP server", "I
#: built an MCP server, test it"), not one about MCP ("crates that implement MCP servers", "news about MCP"): a
#: demonstration server's tools may serve it (:meth:`Policy.demos`).
_TESTS_MCP = re.compile(
    rf"\b{_TESTING}\s+(?:(?:the|our|my|this|your|an?|new|local|['\"\u2018\u201c][\w-]+['\"\u2019\u201d])\s+){{0,4}}{_AN_MCP}"
    rf"|\b{_AN_MCP}[^.;!?]{{0,60}}\b(?:(?:we|i)\s+(?:just\s+)?(?:built|wrote|made)|{_TESTING}\s+it)\b", re.I)
#: A step's capability as what a role may not do (the warning of :meth:`Policy.missing_steps`).
_STEP_WORDS = {"/write": "change files or data", "/delete": "delete anything", "/execute": "run commands",
               "/send": "send messages"}


def words(text: str) -> list[str]:
    """Lowercase words of a name or a text: ``Google-Maps`` -> ``google``, ``maps``."""
    return _WORD.findall(text.lower())


def asked_effects(facts: Iterable[Fact]) -> frozenset[str]:
    """The capabilities a task states or implies (its ``task_capability`` and implied facts)."""
    return frozenset(str(f[1]) for f in facts if f[0] in ("task_capability", IMPLIED))


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
    #: Words of a tool's name and of its Condensed line that make it a probe of its server
    #: (``probe_word``: status, health; ``probe_subject``: server, job).
    probe_words: frozenset[str] = frozenset()
    probe_subjects: frozenset[str] = frozenset()
    #: Side effects whose tools take a Full place by their score only when the task asks for them
    #: (``asked_only``).
    asked_only: frozenset[str] = frozenset()
    #: The least cosine (in percent) a past task needs to the new one for what was called for it
    #: to count (``learned_match``; none: learning gives no points).
    learned_match: int | None = None
    #: :data:`EVIDENCE_TABLES`: predicate -> ``min evidence -> points``.
    evidence: Mapping[str, Mapping[int, int]] = field(default_factory=dict)


class Policy:
    """The policy's constants, asked of the engine once (the rules do not change under a
    compiler), the task tables asked per compile, and what the compiler does with them."""

    def __init__(self, engine: LogicEngine, citations: RuleCitations) -> None:
        self._engine = engine
        #: The rules behind each reason (``shard +8 (policy.dl:82,83)``).
        self.citations = citations
        self._constants: PolicyConstants | None = None
        #: Server name -> the hosted systems its name holds.
        self._systems: dict[str, tuple[str, ...]] = {}
        #: (part, points) -> its reason text: few distinct pairs, hundreds of candidates a compile.
        self._reasons: dict[tuple[str, int], str] = {}

    def constants(self) -> PolicyConstants:
        if self._constants is None:
            hosted, system_words, full, steps, file_steps, text_steps, learned, probes, subjects, asked, *tables = \
                self._engine.query_many([
                    ("hosted_system", (None,)), ("system_word", (None, None)), ("full_match", (None,)),
                    ("step_capability", (None,)), ("file_step", (None, None, None, None)),
                    ("file_step", (None, None, None)), ("learned_match", (None,)), ("probe_word", (None,)),
                    ("probe_subject", (None,)), ("asked_only", (None,)),
                    *((name, (None, None)) for name in EVIDENCE_TABLES)])
            evidence: dict[str, dict[int, int]] = {}
            for name, rows in zip(EVIDENCE_TABLES, tables, strict=True):
                merge_points(evidence.setdefault(name, {}), [(int(r[0]), r[1]) for r in rows])
            # A policy written before file formats (file_step(Capability, Category, Text)) names text files.
            rows = {tuple(str(v) for v in r) for r in file_steps} | {("text", *(str(v) for v in r)) for r in text_steps}
            systems = frozenset(str(r[0]) for r in hosted)
            self._constants = PolicyConstants(hosted=systems, words=systems | {str(r[1]) for r in system_words},
                                              full_match=min((int(r[0]) for r in full), default=0),
                                              steps=tuple(sorted(str(r[0]) for r in steps)),
                                              file_steps=tuple(sorted(rows)),
                                              learned_match=min((int(r[0]) for r in learned), default=None),
                                              probe_words=frozenset(str(r[0]) for r in probes),
                                              probe_subjects=frozenset(str(r[0]) for r in subjects),
                                              asked_only=frozenset(str(r[0]) for r in asked),
                                              evidence=evidence)
        return self._constants

    # ------------------------------------------------------------------ points

    def task_tables(self, facts: list[Fact]) -> dict[str, dict[Any, int]]:
        """Every task table (:data:`TASK_TABLES`) for a task's facts, asserted for this query only:
        ``key -> points`` (a label, a system, or ``(max rank, min match)``)."""
        queries = [(p.predicate, (None,) * (3 if p.source == BY_RANK else 2)) for p in POINTS
                   if p.predicate in TASK_TABLES]
        answers = self._engine.with_facts([f for f in facts if f[0] not in COMPILER_FACTS], queries)
        tables: dict[str, dict[Any, int]] = {}
        for (name, _args), rows in zip(queries, answers, strict=True):
            table: dict[Any, int] = {}
            merge_points(table, [(r[0] if len(r) == 2 else tuple(r[:-1]), r[-1]) for r in rows])
            tables[name] = table
        return tables

    def parts(self, candidates: Sequence[int], tables: Mapping[str, Mapping[Any, int]],
              tool_points: Mapping[str, Mapping[int, int]], shard_points: Mapping[str, Mapping[int, int]],
              labels: Mapping[str, Mapping[str, frozenset[int]]], vector: Mapping[int, float],
              heads: Mapping[int, tuple[str, str]], named_servers: frozenset[str],
              evidence: Mapping[str, Mapping[int, int]] | None = None) -> list[tuple[Points, Mapping[int, int]]]:
        """Per part of :data:`POINTS`, the points the rules give each of ``candidates`` (in rank order,
        best first, with their ``vector`` scores), from the snapshot's per-tool tables, the shard's
        and the task's (``tables``). ``named_servers``: the servers the task names, whose tools lose
        no system points. ``evidence``: per :data:`BY_EVIDENCE` predicate, tool -> its evidence."""
        pool = set(candidates)
        out: list[tuple[Points, Mapping[int, int]]] = []
        for p in POINTS:
            if p.source == PER_TOOL:
                column: Mapping[int, int] = tool_points.get(p.predicate, {})
            elif p.source == PER_SHARD:
                column = shard_points.get(p.predicate, {})
            elif p.source == BY_LABEL:
                column = label_points(tables[p.predicate], labels.get(p.label, {}), pool)
            elif p.source == BY_RANK:
                column = _ranked(tables[p.predicate], candidates, vector)
            elif p.source == BY_EVIDENCE:
                found = (evidence or {}).get(p.predicate, {})
                column = _evidenced(self.constants().evidence.get(p.predicate, {}), found) if found else {}
            else:
                column = self._hosted(tables[p.predicate], candidates, heads, named_servers)
            out.append((p, column))
        return out

    def _hosted(self, table: Mapping[str, int], candidates: Sequence[int], heads: Mapping[int, tuple[str, str]],
                named_servers: frozenset[str]) -> dict[int, int]:
        """:data:`BY_SYSTEM` points: the tools of a hosted system's server, unless the task names the
        server (the rules say whether it points at the system), get its points, once per server."""
        of_server: dict[str, int] = {}
        out: dict[int, int] = {}
        for t in candidates:
            server = heads[t][0]
            points = of_server.get(server)
            if points is None:
                points = of_server[server] = 0 if server in named_servers else \
                    min((table.get(w, 0) for w in self.server_systems(server)), default=0)
            if points:
                out[t] = points
        return out

    def reason(self, p: Points, points: int) -> str:
        """``shard +8 (policy.dl:82,83)``: the part's points and the rules that can give them."""
        text = self._reasons.get((p.part, points))
        if text is None:
            text = self._reasons[(p.part, points)] = self.citations.reason(f"{p.part} {points:+d}", p.predicate,
                                                                           points * p.sign)
        return text

    def scoring(self, parts: Sequence[tuple[Points, Mapping[int, int]]], sel: ToolSelectionConfig,
                shard: str) -> Scoring:
        return Scoring(self, parts, sel, shard)

    # ------------------------------------------------------------------ the skeleton

    def skeleton(self, slots: Mapping[int, tuple[str, ...]], heads: Mapping[int, tuple[str, str]],
                 states: Mapping[int, ToolState], offline: Collection[int],
                 tool_points: Mapping[str, Mapping[int, int]], shard_points: Mapping[str, Mapping[int, int]],
                 sizes: Callable[[Sequence[int]], Mapping[int, int]] | None = None, capped: Collection[int] = ()
                 ) -> tuple[dict[int, list[str]], dict[int, int]]:
        """The best tool per skeleton slot of the tools ``slots`` gives (the ones the role may have):
        ``(winner -> slots, loser -> winner)``. Ranked from the snapshot's tables (every tool a slot takes is
        ranked), and from the definitions only of the tools still tied at the end: online first, then one the
        rules let be Full (``capped``: the tools whose tier cap is below Full, a flagged text, a definition
        awaiting approval, a server in error, would put a Condensed line in the slot's place), then the rules'
        ``penalty_points`` (a deprecated tool loses its slot to a current one), then harness-declared, proven
        (``usage_points``, then calls that did not fail, then fewer errors), then a local tool before a hosted
        system's (the skeleton is every task's, and a hosted system needs the task to point at it), then the
        role's fit (``shard_points``: of two servers' ``fetch`` tools, the web fetcher wins the researcher's
        slot over a biomedical record fetcher), then, of the tools tied so far, the shorter definition
        (``sizes(ids)``: each tied tool's length in characters, asked once per slot that has a tie; the skeleton
        is in Full on every task: of two servers' ``brave_web_search``, the 175-token one before the 1,358-token
        one), by name last."""
        penalty, usage = tool_points.get("penalty_points", {}), tool_points.get("usage_points", {})
        fit = shard_points.get("shard_points", {})

        def order(t: int) -> tuple:
            server, name = heads[t]
            state = states[t]
            return (t in offline, t in capped, penalty.get(t, 0), server != HARNESS_SERVER, -usage.get(t, 0),
                    -(state.calls - state.errors), state.errors, bool(self.server_systems(server)), -fit.get(t, 0))

        by_slot: dict[str, list[int]] = {}
        for t, names in slots.items():
            for s in names:
                by_slot.setdefault(s, []).append(t)
        winners: dict[int, list[str]] = {}
        losers: dict[int, int] = {}
        for slot in sorted(by_slot):
            key = {t: order(t) for t in by_slot[slot]}
            ranked = sorted(by_slot[slot], key=lambda t: (key[t], heads[t]))
            tied = [t for t in ranked if key[t] == key[ranked[0]]]
            if sizes is not None and len(tied) > 1:
                length = sizes(tied)
                best = min(tied, key=lambda t: (length[t], heads[t]))
                ranked = [best, *(t for t in ranked if t != best)]
            winners.setdefault(ranked[0], []).append(slot)
            for t in ranked[1:]:
                losers.setdefault(t, ranked[0])
        for t in winners:
            losers.pop(t, None)
        return winners, losers

    # ------------------------------------------------------------------ hosted systems and steps

    def task_words(self, text: str, said: Iterable[str] = ()) -> list[Fact]:
        """``task_word`` facts: the task's words that the policy names (systems, system words), and
        ``said``: the words of what the task names in another way ("#deploys" names a ``channel``)."""
        known = self.constants().words
        return [("task_word", w) for w in dict.fromkeys([*words(text), *said]) if w in known]

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

    def missing_steps(self, shard: str, facts: list[Fact], holders: Callable[[str], np.ndarray], tools: Sequence[int],
                      allowed: np.ndarray, denied: np.ndarray | None, reasons: Mapping[int, tuple[str, ...]],
                      warnings: list[str]) -> None:
        """A warning for each step of the task (a ``step_capability`` it states or implies: it asks
        to change, run, delete or send) that the role cannot take: no tool in reach has it at all
        (not in the catalog, blocked, or filtered out by the servers the task allows), or every
        tool that has it is denied to the role (``reasons``: the policy's, per tool), which the
        warning says, so the agent is not left to find out. ``holders(capability)``: the rows of
        the tools with it, in ``allowed``, ``denied`` and ``tools`` (row -> tool id)."""
        steps = self.steps(facts)
        if not steps:
            return  # most tasks: no mask to build
        for cap in steps:
            rows = holders(cap)
            if allowed[rows].any():
                continue
            refused = sorted({why for r in (rows[denied[rows]].tolist() if denied is not None else ())
                              for why in reasons.get(tools[r], ())})
            if refused:
                warnings.append(f"{shard} may not {_STEP_WORDS.get(cap, f'do {cap}')}: the task asks for {cap}, "
                                f"and every tool in reach that does it is denied to {shard} ({'; '.join(refused)})")
            else:
                warnings.append(f"{shard}: the task asks for {cap} and no tool in reach does it")

    def step_tools(self, out: list[ScoredTool], facts: list[Fact], holders: Mapping[str, frozenset[int]],
                   tier_cap: Mapping[int, Tier],
                   file_tools: Mapping[str, Sequence[tuple[int, tuple[str, ...]]]] | None = None,
                   unasked: Collection[int] = (), demos: Collection[int] = ()) -> None:
        """Give each step of the task its tool: the best-scored candidate with that capability is
        wanted Full, unless a Full tool has it already. ``file_tools``: capability -> the tools of
        that step on the local files the task names, one per file format, each with its files (the
        compiler's choice by the policy's ``file_step``): each is a tool of the step, held Full,
        when it is a candidate that may be Full. When the best is a hosted system's tool the task does not point
        at (its system points taken off), the step has none: a database's ``query`` does not run a test suite, nor
        is the next best, a file's editor, the tool of "let the team on Slack know". ``unasked``: tools
        :meth:`unasked` sent to Condensed, taken for a step (stated or implied) only when no other tool that may
        be Full has its capability. ``demos``: a demonstration server's tools :meth:`demos` keeps out,
        never taken for a step."""
        by_id = {s.id: s for s in out} if file_tools else {}
        stated = {f[1] for f in facts if f[0] == "task_capability"}
        for cap in self.steps(facts):
            held = False
            for t, targets in (file_tools or {}).get(cap, ()):
                chosen = by_id.get(t)
                if chosen is not None and tier_cap.get(chosen.id, Tier.FULL) is Tier.FULL:
                    held = True
                    chosen.step = cap  # certain: the task names the file
                    _hold_for_step(chosen, f"tool of the step {cap} of {', '.join(targets)}")
            if held:
                continue
            have = holders.get(cap, frozenset())
            able = [s for s in out if s.id in have and s.id not in demos and tier_cap.get(s.id, Tier.FULL) is Tier.FULL]
            if not able or any(s.tier is Tier.FULL for s in able):
                continue
            best = min(able, key=lambda s: (s.id in unasked, -s.final, s.rank))
            if best.points.get("system", 0) < 0:
                continue  # a hosted system's tool the task does not point at: a database's query for "run the tests"
            _hold_for_step(best, f"tool of the step {cap} the task {'asks for' if cap in stated else 'implies'}")

    def probes(self, out: list[ScoredTool], named: Collection[str]) -> None:
        """A probe of its server (a ``probe_word`` among its name's words and a ``probe_subject``
        among its Condensed line's: ``get_health``, ``linear_getRateLimitStatus``, a job's
        ``check_crawl_status``; not ``git_status``, the working tree's) that its score made Full,
        not a step's, the skeleton's or named in the task, is Condensed unless the task points at
        its server: names it (``named``) or, for a hosted system, points at it (no system points
        taken off)."""
        probe, subjects = self.constants().probe_words, self.constants().probe_subjects
        if not probe:
            return
        for st in out:
            if st.tier is not Tier.FULL or st.step or st.skeleton or "named in the task" in st.reasons:
                continue
            server, name = st.server, st.tool_name
            found = probe.intersection(words(_CAMEL.sub(" ", name))) - set(words(server))
            if not found or not subjects.intersection(words(st.summary)):
                continue
            pointed = server in named or (bool(self.server_systems(server)) and st.points.get("system", 0) >= 0)
            if pointed:
                continue
            st.tier = st.wanted = Tier.CONDENSED
            st.reasons.append(self.citations.reason(
                f"condensed: a probe of {server} ({', '.join(sorted(found))}), a server the task does not point at",
                "probe_word", sorted(found)[0]))

    def demos(self, out: list[ScoredTool], task: str, named: Collection[str],
              demo: Callable[[str], bool]) -> frozenset[int]:
        """A demonstration server's tool (``demo(server)``: echo, a sum, its environment, the
        protocol's test server) that its score made Full, not a step's, the skeleton's or named in
        the task, is Condensed unless the task names its server or tests an MCP server ("smoke-test
        the MCP server we built"): it shows how MCP works and does none of a task's other work
        (``everything/get-env`` for a task about environment variables). Returns the ids of the
        demonstration server's tools it keeps out, in any tier (:meth:`step_tools` never takes them)."""
        if _TESTS_MCP.search(task):
            return frozenset()
        kept_out = set()
        for st in out:
            if st.step or st.skeleton or "named in the task" in st.reasons or st.server in named or not demo(st.server):
                continue
            kept_out.add(st.id)
            if st.tier is Tier.FULL:
                st.tier = st.wanted = Tier.CONDENSED
                st.reasons.append(f"condensed: {st.server} demonstrates the protocol, and the task does not name it")
        return frozenset(kept_out)

    def unasked(self, out: list[ScoredTool], facts: list[Fact]) -> frozenset[int]:
        """A tool whose name says it has a side effect of ``asked_only`` (``delete-many``,
        ``worker_delete``: :func:`~jit.analysis.capabilities.name_effects`) that its score made
        Full, not a step's, the skeleton's or named in the task, is Condensed unless the task
        asks for that side effect: a ``task_capability`` or implied fact ("delete", "drop", "prune",
        "flush", "wipe": the task analyzer's lexicon, which reads tools' words too). A name that
        also says an effect the task asks for keeps its place (``delete_or_update`` on a task that
        updates). Returns the ids it sent to Condensed (:meth:`step_tools` takes them last)."""
        if not self.constants().asked_only:
            return frozenset()
        asked = asked_effects(facts)
        demoted = set()
        for st in out:
            if st.tier is not Tier.FULL or st.step or st.skeleton or "named in the task" in st.reasons:
                continue
            unasked = self.unasked_effects(st.tool_name, asked)
            if not unasked:
                continue
            st.tier = st.wanted = Tier.CONDENSED
            st.reasons.append(self.citations.reason(
                f"{UNASKED}{', '.join(unasked)}, which the task does not ask for", "asked_only", unasked[0]))
            demoted.add(st.id)
        return frozenset(demoted)

    def unasked_effects(self, tool_name: str, asked: Collection[str]) -> list[str]:
        """The side effects of ``asked_only`` that a tool's name says and the task does not ask for
        (``asked``: :func:`asked_effects`; :meth:`unasked`); none when the name also says an effect
        the task asks for."""
        only = self.constants().asked_only
        if not only:
            return []
        effects = name_effects(tool_name)
        return [] if effects & asked else sorted((effects & only) - asked)

    @staticmethod
    def unsaid(task: str, asked: Collection[str], *, files: bool = False) -> Callable[[ScoredTool], str | None]:
        """Why the task does not ask for what a tool's name says it does, or None when it does: the
        Full tier's room past its caps for a strong score (``strong_full_tools``,
        ``strong_full_share``) is for what the task wants done. A name with no side effect
        (:func:`~jit.analysis.capabilities.name_effects`: ``browser_navigate``, ``list_indexes``)
        is asked for, and so is a tool named in the task; so is one a verb of whose name the task
        says ("push" for ``git_push``, "replace" for ``search_and_replace``; a reading verb of the
        name does not count), one that makes or edits an object the task names when the task asks
        for a write and for every other effect of the name but sending ("comment" for
        ``add_comment``, a bug for ``create_issue``, a file for ``edit_file`` when the task names
        one to write or changes code in place: ``files``), and one that runs, deletes or sends,
        each of those asked. Any other write must be said: "fix" asks for some write, not for
        ``git_push``, and "move the card" not for ``archive_card``. ``asked``: the capabilities the
        task states or implies."""
        told = [w for w in words(task) if len(w) > 1]  # not the "s" of "it's"
        said = {stem(w) for w in told}
        # The task's words that may name an object: no "to", "many" or "not" (whose stem is "note"'s).
        named = {stem(w) for w in told if w not in _FUNCTION_WORDS}
        named.update(*(_SAME_OBJECT.get(w, ()) for w in list(named)))
        if files:
            named.add(stem("file"))
        wanted = frozenset(asked)
        # A write asked; a made thing may be sent too (a comment is delivered), any other effect must be asked.
        writes = "/write" in wanted

        def why(s: ScoredTool) -> str | None:
            effects = name_effects(s.tool_name)
            if not effects or "named in the task" in s.reasons:
                return None
            verbs, obj = name_reading(s.tool_name)
            if not said.isdisjoint(verbs):
                return None
            if (writes and effects - {"/send"} <= wanted and not _MAKING.isdisjoint(verbs)
                    and not named.isdisjoint(obj)):
                return None
            if "/write" not in effects and effects <= wanted:
                return None
            return f"the task does not say what {s.tool_name} does ({', '.join(sorted(effects))})"
        return why

    def file_steps(self, facts: list[Fact]) -> list[tuple[tuple[str, str, str, str], tuple[str, ...]]]:
        """The policy's ``file_step`` rows for the steps of a task that names local files to write,
        each with the files of its format."""
        by_format: dict[str, list[str]] = {}
        edited = {str(f[1]) for f in facts if f[0] == FILE_EDIT}  # a file changed in place: its edit
        for f in facts:
            if f[0] == FILE_TARGET:
                by_format.setdefault("edit" if str(f[1]) in edited else target_format(str(f[1])), []).append(str(f[1]))
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


def _hold_for_step(st: ScoredTool, reason: str) -> None:
    """``st`` made Full as a step's tool (:meth:`Policy.step_tools`), with ``reason`` first: the
    unasked rule's reason against it no longer holds."""
    st.wanted = st.tier = Tier.FULL
    st.reasons[:] = [reason, *(r for r in st.reasons if not r.startswith(UNASKED))]
