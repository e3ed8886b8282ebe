"""Tier and ScoredTool: one candidate of a compile and the tier it is rendered at.

The types both the rendering (:mod:`jit.selection.render`) and the selection's result
(:mod:`jit.selection.toolset`, which re-exports them) are built on, kept apart so that
rendering can read them while :meth:`~jit.selection.toolset.ToolSet.render` calls the
rendering, with no import cycle.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from ..models import StoredTool

__all__ = ["ScoredTool", "Tier"]


class Tier(str, enum.Enum):
    """How much of a tool the shard sees, best first."""

    FULL = "full"  # name, description, complete JSON schema
    CONDENSED = "condensed"  # name + one line, full definition on request
    MINIMAL = "minimal"  # name only, on request
    EXCLUDED = "excluded"  # not sent

    @property
    def rank(self) -> int:
        """0 for Full … 3 for Excluded."""
        return _RANK[self._value_]  # a str key: an Enum member hashes in Python, a str in C

    def demoted(self) -> Tier:
        """The next tier down (Excluded stays Excluded)."""
        return _DEMOTED[self._value_]


_TIER_ORDER = (Tier.FULL, Tier.CONDENSED, Tier.MINIMAL, Tier.EXCLUDED)
_RANK = {t.value: i for i, t in enumerate(_TIER_ORDER)}
_DEMOTED = {t.value: _TIER_ORDER[min(i + 1, len(_TIER_ORDER) - 1)] for i, t in enumerate(_TIER_ORDER)}


@dataclass(slots=True)
class ScoredTool:
    """One candidate of a compile, with every number that placed it. (Slots: a compile makes
    hundreds and reads their fields thousands of times.)"""

    tool: StoredTool
    name: str  # namespaced as rendered, e.g. "github__create_issue"
    tier: Tier
    skeleton: bool
    logic: int
    vector: int
    final: int
    offline: bool
    tokens: int  # tokens this tool adds to the rendering at its tier (0 when excluded)
    reasons: list[str] = field(default_factory=list)
    #: Logic points by source (shard, usage, capability, category, domain, relevance, penalty).
    points: dict[str, int] = field(default_factory=dict)
    #: The facts the rules saw for this tool.
    facts: dict[str, Any] = field(default_factory=dict)
    #: Tier from the thresholds, before caps, max_full_tools and the budget.
    wanted: Tier = Tier.EXCLUDED
    #: 1-based rank by vector score among the candidates (0 for a tool outside the ranking).
    rank: int = 0
    #: Evidence: the best cosine of the tool's embedding to the task or one of its clauses, in
    #: percent (100 for a tool the task names); the policy's relevance_points and full_match read it.
    match: int = 0
    summary: str = ""  # the one line shown in the Condensed tier

    @property
    def server(self) -> str:
        return self.tool.tool.server

    @property
    def tool_name(self) -> str:
        return self.tool.tool.name
