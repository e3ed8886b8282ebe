"""The four tiers a selected tool is rendered at, best first: Full, Condensed, Minimal, Excluded."""

from __future__ import annotations

import enum

__all__ = ["Tier"]


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
