"""How much a tool serves each configured shard, offline: the shards as the offline scorer sees
them (:class:`ShardProfile`), the lexicon extended by a config's own categories, and the
affinity score 0–100 of :class:`~jit.analysis.offline_analyzer.OfflineAnalyzer`."""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..config import ShardConfig
from ..text import prose_stems, stem
from .vocab import (
    CAPABILITY_VERBS,
    CATEGORIES,
    CATEGORY_LEXICON,
    CATEGORY_RELATED,
    STOPWORDS,
    Evidence,
    normalize_category,
    with_bigrams,
)

__all__ = [
    "ShardProfile",
    "affinity_score",
    "clamp_score",
    "extended_lexicon",
    "extra_categories",
    "shard_profiles",
]

@dataclass(frozen=True, slots=True)
class ShardProfile:
    """A shard as the offline scorer sees it.

    ``reach`` maps every tool category to how much it serves the shard (0–1): the shard's
    own categories by their order, related ones partly (``CATEGORY_RELATED``).
    """

    name: str
    reach: dict[str, float]
    capabilities: frozenset[str]


def shard_profiles(shards: Mapping[str, ShardConfig], extra: frozenset[str]) -> list[ShardProfile]:
    lexicon = extended_lexicon(extra)
    out = []
    for name, shard in shards.items():
        weights: dict[str, float] = {}
        ev = Evidence()
        ev.add(with_bigrams(prose_stems(shard.description)), 1.0)
        for cat, score in ev.score(lexicon, STOPWORDS).items():
            if score >= 2.0:
                weights[cat] = 0.5  # named by the role's description only
        for j, raw in enumerate(shard.categories):
            cat = normalize_category(raw, extra)
            if cat is not None:
                weights[cat] = max(weights.get(cat, 0.0), max(0.5, 1.0 - 0.1 * j))
        reach: dict[str, float] = {}
        for cat in (*CATEGORIES, *sorted(extra)):
            related = CATEGORY_RELATED.get(cat, {})
            best = max((w * (1.0 if sc == cat else related.get(sc, 0.0)) for sc, w in weights.items()), default=0.0)
            if best:
                reach[cat] = best
        caps = frozenset(c for c, s in ev.score(CAPABILITY_VERBS).items() if s >= 1.0)
        out.append(ShardProfile(name, reach, caps))
    return out


def extra_categories(shards: Mapping[str, ShardConfig]) -> tuple[str, ...]:
    """Categories the config's shards name that the vocabulary lacks (a deployment may define its own)."""
    out: list[str] = []
    for shard in shards.values():
        for raw in shard.categories:
            c = re.sub(r"[^a-z0-9_]+", "_", raw.strip().lower().lstrip("/")).strip("_")
            if c and normalize_category(c) is None and c not in out:
                out.append(c)
    return tuple(out)


def extended_lexicon(extra: frozenset[str]) -> Mapping[str, Mapping[str, float]]:
    """The category lexicon plus user categories, each matched by its own name."""
    return _user_lexicon(extra) if extra else CATEGORY_LEXICON


# Keyed by a config's extra categories: a process sees a handful of configs, so a small
# bound keeps a long-lived process (``jit serve``, a harness) from growing without limit.
@functools.lru_cache(maxsize=16)
def _user_lexicon(extra: frozenset[str]) -> Mapping[str, Mapping[str, float]]:
    lex = {k: dict(v) for k, v in CATEGORY_LEXICON.items()}
    for cat in extra:
        key = "_".join(stem(p) for p in cat.split("_"))
        # Its own name is the most specific cue there is: weigh it above a strong keyword.
        lex.setdefault(key, {})[cat] = 3.0
    return lex


def affinity_score(profile: ShardProfile, categories: Sequence[tuple[str, float]], capabilities: Sequence[str]) -> int:
    """Offline shard affinity 0–100: 75 from the best category match, 25 from capabilities.

    ``categories`` are the tool's, strongest first, each with a confidence 0–1.
    The capability part is scaled by the category match so that a weather tool
    that reads does not look like a coder's file reader.
    """
    cat_match = 0.0
    for weight, (cat, confidence) in zip((1.0, 0.8, 0.65), categories, strict=False):
        cat_match = max(cat_match, weight * confidence * profile.reach.get(cat, 0.0))
    cap_match = 0.0
    if capabilities:
        if capabilities[0] in profile.capabilities:
            cap_match = 1.0
        elif any(c in profile.capabilities for c in capabilities[1:]):
            cap_match = 0.6
    return clamp_score(75 * cat_match + 25 * cap_match * (0.3 + 0.7 * cat_match))


def clamp_score(value: Any) -> int:
    """Any number (or numeric text) as an int score 0–100; anything else is 0."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        return 0
    if math.isnan(v):
        return 0
    return round(min(100.0, max(0.0, v)))
