"""ScoredTool: one candidate of a compile, every number that placed it, and the order candidates are given places in.

The type both the rendering (:mod:`jit.selection.render`) and the selection's result
(:mod:`jit.selection.toolset`) are built on, kept apart so that rendering can read it while
:meth:`~jit.selection.toolset.ToolSet.render` calls the rendering, with no import cycle.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..models import StoredTool
from .tiers import Tier

__all__ = ["ScoredTool", "best_first", "learned", "merit"]


class ScoredTool:
    """One candidate of a compile, with every number that placed it. (Slots: a compile makes
    hundreds and reads their fields thousands of times.)

    A compile scores a few hundred candidates from what its catalog snapshot holds (names,
    labels, states) and renders a third of them; the definition (``tool``), its ``summary`` and
    the ``facts`` an explanation shows are read when first asked for, by ``load`` (the compile's
    reader, which reads a batch of candidates at once). A candidate built with its ``tool`` has
    no ``load``. ``id`` and ``server`` / ``tool_name`` are known without the definition."""

    __slots__ = ("_facts", "_head", "_load", "_summary", "_tool", "final", "hedge", "id", "logic", "match", "name",
                 "offline", "points", "rank", "reasons", "skeleton", "step", "tier", "tokens", "vector", "wanted")

    def __init__(self, tool: StoredTool | None, name: str, tier: Tier, skeleton: bool, logic: int, vector: int,
                 final: int, offline: bool, tokens: int, reasons: list[str] | None = None,
                 points: dict[str, int] | None = None, facts: dict[str, Any] | None = None,
                 wanted: Tier = Tier.EXCLUDED, rank: int = 0, match: int = 0, summary: str | None = None, *,
                 id: int | None = None, head: tuple[str, str] | None = None,  # the tool's id
                 load: Callable[[ScoredTool], None] | None = None) -> None:
        if tool is None and (load is None or id is None or head is None):
            raise TypeError("a ScoredTool without its tool needs its id, head and a load")
        self.id = tool.id if tool is not None else id
        self.name = name  # namespaced as rendered, e.g. "github__create_issue"
        self.tier = tier
        self.skeleton = skeleton
        self.logic = logic
        self.vector = vector
        self.final = final
        self.offline = offline
        #: Tokens this tool adds to the rendering at its tier (0 when excluded).
        self.tokens = tokens
        self.reasons = [] if reasons is None else reasons
        #: Logic points by part (``POINTS`` of jit.selection.policy: shard, usage, capability, …).
        self.points = {} if points is None else points
        #: Tier from the thresholds, before caps, max_full_tools and the budget.
        self.wanted = wanted
        #: 1-based rank by vector score among the candidates (0 for a tool outside the ranking).
        self.rank = rank
        #: Evidence: the best cosine of the tool's embedding to the task or one of its clauses, in
        #: percent (100 for a tool the task names); the policy's relevance_points and full_match read it.
        self.match = match
        #: The step of the task this tool was made Full for ("" for none): the capability of a step
        #: on a file the task names ("/write" for "save it to notes/x.md"; certain, not read from a
        #: verb), or the text of a step the task states or implies (:mod:`jit.selection.steps`). A
        #: step's tool keeps Full ahead of max_full_tools and of the budget's best-first order.
        self.step = ""
        #: A step's second tool, taken beside its first because the two do the step about as well, or a
        #: producer only it needs (:func:`~jit.selection.steps.settle`): the budget's tokens go to the
        #: first tool of every step before it (:func:`best_first`).
        self.hedge = False
        self._tool = tool
        self._head = head if head is not None else (tool.tool.server, tool.tool.name)  # type: ignore[union-attr]
        self._load = load if tool is None or facts is None or summary is None else None
        # Built with its tool and nothing to load: the old defaults (no facts, no summary).
        self._summary = summary if summary is not None or self._load is not None else ""
        self._facts = facts if facts is not None or self._load is not None else {}

    def attach(self, tool: StoredTool, summary: Callable[[], str], facts: Callable[[], dict[str, Any]], *,
               newer: bool = False) -> None:
        """Give a candidate its definition, and its summary and facts where they are not known yet.
        ``newer``: the definition is newer than the snapshot the candidate was scored on (read after
        the tool changed), so its own summary and facts replace the snapshot's."""
        self._tool = tool
        if newer or self._summary is None:
            self._summary = summary()
        if newer or self._facts is None:
            self._facts = facts()
        self._load = None

    @property
    def loaded(self) -> bool:
        """Whether the definition is here (read, or given)."""
        return self._tool is not None

    def _fill(self) -> None:
        load = self._load
        if load is not None:
            load(self)

    @property
    def tool(self) -> StoredTool:
        """The definition and what jit knows of it (read on first use)."""
        if self._tool is None:
            self._fill()
        return self._tool  # type: ignore[return-value]

    @tool.setter
    def tool(self, value: StoredTool) -> None:
        self._tool = value

    @property
    def summary(self) -> str:
        """The one line shown in the Condensed tier."""
        if self._summary is None:
            self._fill()
        return self._summary  # type: ignore[return-value]

    @summary.setter
    def summary(self, value: str) -> None:
        self._summary = value

    @property
    def facts(self) -> dict[str, Any]:
        """The facts the rules saw for this tool."""
        if self._facts is None:
            self._fill()
        return self._facts  # type: ignore[return-value]

    @facts.setter
    def facts(self, value: dict[str, Any]) -> None:
        self._facts = value

    @property
    def server(self) -> str:
        return self._head[0]

    @property
    def tool_name(self) -> str:
        return self._head[1]

    def _values(self) -> tuple:
        return (self.tool, self.name, self.tier, self.skeleton, self.logic, self.vector, self.final, self.offline,
                self.tokens, self.reasons, self.points, self.facts, self.wanted, self.rank, self.match, self.summary)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ScoredTool):
            return NotImplemented
        return self._values() == other._values()

    __hash__ = None  # type: ignore[assignment]  # mutable, as the dataclass it replaces

    def __repr__(self) -> str:
        return (f"ScoredTool(name={self.name!r}, tier={self.tier.value}, skeleton={self.skeleton}, logic={self.logic},"
                f" vector={self.vector}, final={self.final}, rank={self.rank}, tokens={self.tokens})")


#: The rank of a candidate outside the task's ranking (``rank`` 0): after every ranked one.
_UNRANKED = 1 << 30


def learned(st: ScoredTool) -> int:
    """The points a tool learned from the calls agents made (0 with nothing recorded)."""
    return st.points.get("learned", 0)


def merit(st: ScoredTool) -> tuple[int, int, int, str]:
    """Best first: the final score, then the points learned from calls, then the task's retrieval
    ranking, then the name.

    Final scores are whole numbers and tie often at the top (logic saturates at 100, and the
    final score too), so the order among equals decides who takes the Full tier's last places and
    the budget's last tokens. Of two tools at 100, the one called for tasks like this one comes
    first, then the task's match decides it, not the alphabet."""
    return (-st.final, -learned(st), st.rank or _UNRANKED, st.name)


def best_first(st: ScoredTool) -> tuple[bool, bool, bool, int, int, int, str]:
    """The order the Full tier's places and the budget's tokens are given in: the tool of a task
    step first (Full by the policy's word), a file's step (named by its capability: certain)
    before a clause's, a step's first tool before a second one (:attr:`ScoredTool.hedge`; a file's
    step is no second, whatever settle took it for), then :func:`merit`. Reversed, the order they are
    taken back in."""
    file_step = st.step.startswith("/")
    return (not st.step, not file_step, st.hedge and not file_step, *merit(st))
