"""The Full tier's caps and the token budget: the tiers a compile's candidates end at.

After scoring, a candidate wants a tier (:mod:`jit.selection.policy`); two limits then take
tiers back, best first (:func:`~jit.selection.scored_tool.best_first`) so the least relevant
lose first. :func:`cap_full` applies ``max_full_tools`` (a count) and ``max_full_share`` (a
share of the budget for Full definitions), each with room past it for the tools the task wants
most (``strong_threshold``); :func:`fit_budget` gives every tool the best tier
that fits the token budget on per-tool estimates (:class:`Estimates`), then measures the real
rendering (:mod:`jit.selection.render`) and demotes the least relevant until it fits.

Around the budget, a tool Full by its score takes the tool of its server that hands out the
identifier it requires into Full with it (:func:`fed`), and gives it back its tier when the
budget takes the tool itself out of Full (:func:`unfed`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from .render import (
    META_AVAILABLE,
    META_INTRO,
    META_TOOL,
    also_line,
    by_tier,
    condensed_line,
    full_definition,
    meta_tool,
    meta_tool_definition,
    render_markdown,
    render_tools,
)
from .scored_tool import ScoredTool, best_first
from .steps import Feeds
from .tiers import Tier
from .tokens import EstimateCounter, TokenCounter, compact_json

__all__ = ["Estimates", "Fed", "cap_full", "fed", "fit_budget", "measure", "tier_cost", "unfed"]


def cap_full(tools: list[ScoredTool], max_tools: int, room: float, estimates: Estimates, warnings: list[str], *,
             strong: int = 101, strong_tools: int = 0, strong_room: float = 0,
             unsaid: Callable[[ScoredTool], str | None] | None = None) -> None:
    """The Full tier's two caps, in one pass over it: the skeleton's tools first, then the tool of
    a task step (the policy made it Full for the step), then best first. ``max_full_tools``
    counts tools: past it a tool is Condensed. ``max_full_share`` (``room`` tokens) counts
    definitions: a tool within the count whose definition would take the tier past it is
    Condensed too (a cheaper one after it may still fit), except a step's tool. A tool whose
    final score reaches ``strong`` (``strong_threshold``) may pass both: up to ``strong_tools``
    tools past the count (none when ``max_tools`` is 0: no Full by score at all), and
    definitions up to ``strong_room`` tokens (``strong_full_share``; never less than ``room``),
    unless ``unsaid`` says why the task does not ask for what it does (:meth:`Policy.unsaid`)."""
    skeleton = [s for s in tools if s.skeleton and s.tier is Tier.FULL]
    if len(skeleton) > max_tools:
        warnings.append(f"{len(skeleton)} skeleton tools are Full, more than max_full_tools={max_tools}")
    places = max(0, max_tools - len(skeleton))
    extra = strong_tools if max_tools else 0
    strong_room = max(room, strong_room)
    spent = sum(estimates.cost(s, Tier.FULL) for s in skeleton)
    for s in sorted((s for s in tools if not s.skeleton and s.tier is Tier.FULL), key=best_first):
        if s.step:  # a step's tool keeps its place: the extras after it make room
            places = max(0, places - 1)
            spent += estimates.cost(s, Tier.FULL)
            continue
        strong_one = s.final >= strong
        unasked = unsaid(s) if strong_one and unsaid is not None else None
        if unasked:  # past the caps only for what the task says it wants done
            strong_one = False
        if places == 0:
            if strong_one and extra and spent + (need := estimates.cost(s, Tier.FULL)) <= strong_room:
                extra -= 1
                spent += need
                past = " and max_full_share" if spent > room else ""
                s.reasons.append(f"full past max_full_tools={max_tools}{past}: its final score {s.final} reaches "
                                 f"strong_threshold {strong}")
                continue
            why = _past_count(s, max_tools, strong, strong_tools, extra, unasked, spent, strong_room, room, estimates)
            s.reasons.append(f"demoted full -> condensed: {why}")
            s.tier = Tier.CONDENSED
            continue
        places -= 1  # the count is by rank: a tool the share sends down keeps its place taken
        need = estimates.cost(s, Tier.FULL)
        if spent + need <= room:
            spent += need
        elif strong_one and spent + need <= strong_room:
            spent += need
            s.reasons.append(f"full past max_full_share ({round(room)} tokens): its final score {s.final} reaches "
                             f"strong_threshold {strong}")
        else:
            cap = (f"strong_full_share ({round(strong_room)} tokens)" if strong_one and strong_room > room
                   else f"max_full_share ({round(room)} tokens)")
            # The task's words are why only when the room past the share would have held it.
            beyond = f", and no room past it: {unasked}" if unasked and spent + need <= strong_room else ""
            s.reasons.append(f"demoted full -> condensed: its {need} tokens would take the Full tier past "
                             f"{cap}{beyond}")
            s.tier = Tier.CONDENSED


def _past_count(s: ScoredTool, max_tools: int, strong: int, strong_tools: int, extra: int, unasked: str | None,
                spent: int, strong_room: float, room: float, estimates: Estimates) -> str:
    """Why a Full tool past ``max_full_tools`` takes none of the places past it (:func:`cap_full`): its score, the
    places spent, the share past the count, or, only where nothing else kept it out, the task's words (``unasked``)."""
    if not (s.final >= strong and strong_tools and max_tools):
        return f"max_full_tools={max_tools}"
    if not extra:
        places_past = "the place past it" if strong_tools == 1 else f"the {strong_tools} places past it"
        return (f"max_full_tools={max_tools}, and {places_past} for a final score of strong_threshold {strong} or "
                f"more {'is' if strong_tools == 1 else 'are'} taken (its score: {s.final})")
    need = estimates.cost(s, Tier.FULL)
    if spent + need > strong_room:
        share = "strong_full_share" if strong_room > room else "max_full_share"
        return (f"max_full_tools={max_tools}, and its {need} tokens would take the Full tier past {share} "
                f"({round(strong_room)} tokens)")
    return f"max_full_tools={max_tools}, and no place past it: {unasked}"


def measure(rendered: Any, fmt: str, counter: TokenCounter) -> int:
    """Tokens of a rendering as it is sent: a tools list, or text."""
    if fmt == "anthropic":
        return counter.count_tools(rendered)
    if fmt == "markdown":
        return counter.count_text(rendered)
    return counter.count_text(compact_json(rendered))


def tier_cost(st: ScoredTool, tier: Tier, fmt: str, estimate: TokenCounter) -> int:
    """Estimated tokens one tool adds at ``tier`` (its line in the meta-tool, or its definition)."""
    if tier is Tier.FULL:
        if fmt == "markdown":
            return estimate.count_text(render_markdown([st], [], [], "")) - 3
        return estimate.count_tools([full_definition(st, "openai" if fmt == "openai" else "anthropic")]) + 1
    if tier is Tier.CONDENSED:
        return estimate.count_text(condensed_line(st)) + 1
    if tier is Tier.MINIMAL:
        return estimate.count_text(st.name) + 1
    return 0


#: Formats whose rendering is a list of tool definitions (counted as its compact JSON).
_TOOL_LISTS = ("anthropic", "openai")
#: A line that JSON escapes, or whose last character is whitespace (see :class:`Estimates`).
_NOT_PLAIN = re.compile(r'[\x00-\x1f"\\]|\s\Z')
#: The names :func:`~jit.selection.render.namespaced` makes (see :meth:`Estimates.condensed_dearer`).
_PLAIN_NAME = re.compile(r"[A-Za-z0-9_-]+")


#: Remaining tokens below which a Condensed tool's Minimal cost (a name: short, cheap to count) is
#: asked first: once the budget is nearly spent, most tools fit in neither tier, and the first
#: answer spares counting their lines. Any value gives the same selection.
_TIGHT = 32


def _escaped(text: str) -> str:
    """``text`` as it stands inside a JSON string of :func:`~jit.selection.tokens.compact_json`."""
    return compact_json(text)[1:-1]


class Estimates:
    """Estimated token costs of tools at tiers in one format, kept in ``memo``, and the tokens of
    a whole rendering.

    The budget is fitted on per-tool estimates, then checked on the whole rendering, more than
    once if demotions follow. With the offline estimator (:class:`EstimateCounter`) and a
    tools-list format, that check does not count the rendering's text again: it adds the raw
    counts (:meth:`EstimateCounter.raw`) of its parts, which the tier costs computed already,
    and the sum equals the text's count exactly, because the estimator's pieces cross the cuts
    only in known ways:

    - Each element of the list is compact JSON starting with ``{"`` and a letter and ending with
      ``}``: the punctuation piece that ends one element runs on over ``,{"`` into the next, so
      the list counts its elements' raw counts minus one per comma (the brackets join the first
      and the last piece, and the raw count of ``[e]`` is that of ``e``).
    - In the meta-tool's description each Condensed line is followed by an escaped newline,
      ``\\n`` (a backslash and a letter), and the next line starts with ``-``: a piece ends there.
      So each line but the last counts as its own JSON-escaped text with ``\\n`` appended, which
      is the line's raw count plus one when nothing in it is escaped and it does not end in
      whitespace (after a letter or digit ``\\n`` is one more piece; after punctuation the
      backslash joins that piece and ``n`` is one more). The fixed text before the first line
      and the last line with what follows it are counted as text.

    tests/test_render.py checks the assembled count against the text's, hostile tools included.
    Any other counter (exact counts from an API) or format is counted on the rendering itself.
    """

    def __init__(self, fmt: str, estimate: TokenCounter | None = None, memo: dict[tuple, Any] | None = None) -> None:
        self.fmt = fmt
        self.estimate = estimate or EstimateCounter()
        #: (tool id, tier value, format, offline) -> tokens; with a fifth item, raw counts of parts.
        self.memo: dict[tuple, Any] = {} if memo is None else memo
        self._parts = fmt in _TOOL_LISTS and type(self.estimate) is EstimateCounter
        self._overhead: int | None = None

    def cost(self, st: ScoredTool, tier: Tier) -> int:
        """Tokens ``st`` adds at ``tier`` (:func:`tier_cost`), remembered."""
        key = (st.id, tier._value_, self.fmt, st.offline)  # a str hashes in C, an Enum member in Python
        value = self.memo.get(key)
        if value is None:
            if self._parts and tier is Tier.FULL:
                value = self.estimate.rounded(self._full(st)) + 1
            elif self._parts and tier is Tier.CONDENSED:
                line = condensed_line(st)
                raw = EstimateCounter.raw(line)
                if not _NOT_PLAIN.search(line):
                    self.memo[(*key, "line")] = raw + 1
                value = self.estimate.rounded(raw) + 1
            else:
                value = tier_cost(st, tier, self.fmt, self.estimate)
            self.memo[key] = value
        return value

    def condensed_dearer(self, st: ScoredTool) -> bool:
        """Whether ``st`` costs at least as much Condensed as Minimal, known without counting either.

        True of the offline estimate for any name :func:`namespaced` makes: the line
        ``- name: summary`` holds the name between a space and a colon, and its pieces cover the
        name's pieces (at most one of them split in two) after the piece ``-``; letters are counted
        alike. So when the Minimal tier does not fit, the Condensed one does not either."""
        return self._parts and _PLAIN_NAME.fullmatch(st.name) is not None

    def meta_overhead(self) -> int:
        """The meta-tool's own tokens, paid once if anything is Condensed or Minimal."""
        if self._overhead is None:
            self._overhead = _meta_overhead(self.fmt, self.estimate)
        return self._overhead

    def measure(self, tools: Sequence[ScoredTool], counter: TokenCounter, *, shard: str = "") -> int:
        """Tokens of the rendering of ``tools`` as ``counter`` counts it (:func:`measure`)."""
        if not (self._parts and type(counter) is EstimateCounter):
            return measure(render_tools(tools, self.fmt, shard=shard), self.fmt, counter)
        full, condensed, minimal = by_tier(tools)
        raws = [self._full(s) for s in full]
        if condensed or minimal:
            raws.append(self._meta(condensed, minimal))
        if not raws:
            return counter.count_tools([])
        return counter.rounded(sum(raws) - (len(raws) - 1))

    def _full(self, st: ScoredTool) -> float:
        key = (st.id, "full", self.fmt, st.offline, "raw")
        raw = self.memo.get(key)
        if raw is None:
            raw = self.memo[key] = EstimateCounter.raw(compact_json([full_definition(st, self.fmt)]))
        return raw

    def _line_raw(self, st: ScoredTool) -> float:
        key = (st.id, "condensed", self.fmt, st.offline, "line")
        raw = self.memo.get(key)
        if raw is None:
            raw = self.memo[key] = EstimateCounter.raw(_escaped(condensed_line(st) + "\n"))
        return raw

    def _meta(self, condensed: list[ScoredTool], minimal: list[ScoredTool]) -> float:
        if not condensed:
            return EstimateCounter.raw(compact_json(meta_tool(condensed, minimal, self.fmt)))
        lead, tail = _meta_frame(self.fmt)
        last = _escaped("\n".join([condensed_line(condensed[-1]), *([also_line(minimal)] if minimal else [])]))
        return lead + sum(self._line_raw(s) for s in condensed[:-1]) + EstimateCounter.raw(last + tail)


_FRAMES: dict[str, tuple[float, str]] = {}


def _meta_frame(fmt: str) -> tuple[float, str]:
    """The meta-tool's JSON around its Condensed lines: the raw count of what precedes the first
    line (up to its ``\\n``), and the text after the description."""
    frame = _FRAMES.get(fmt)
    if frame is None:
        head, tail = compact_json(meta_tool_definition("\x00", fmt)).split("\\u0000")
        lead = EstimateCounter.raw(head + _escaped(f"{META_INTRO}\n{META_AVAILABLE}\n"))
        frame = _FRAMES[fmt] = (lead, tail)
    return frame


def fit_budget(
    tools: Sequence[ScoredTool],
    budget: int,
    fmt: str,
    counter: TokenCounter,
    *,
    estimate: TokenCounter | None = None,
    estimates: Estimates | None = None,
    shard: str = "",
    max_rounds: int = 25,
) -> tuple[int, list[str]]:
    """Give every tool the best tier that fits, most relevant first; then check the
    real rendering with ``counter`` and demote the least relevant until it fits.

    Tiers are changed in place (``tier``, ``tokens``, ``reasons``). Skeleton tools
    keep their tier; if they alone exceed the budget the result says so in a
    warning and every other tool is excluded. One tool's share is estimated by
    ``estimates`` (default: :class:`Estimates` over ``estimate``; the compiler passes one
    whose memo outlives the compile). Returns ``(tokens used, warnings)``.
    """
    est = estimates or Estimates(fmt, estimate)
    cost = est.cost
    warnings: list[str] = []
    skeleton = [s for s in tools if s.skeleton and s.tier is not Tier.EXCLUDED]
    # Most relevant first; the tools of the task's steps before them (Full by the policy's word).
    flesh = sorted((s for s in tools if not s.skeleton and s.tier is not Tier.EXCLUDED), key=best_first)
    base = est.measure(skeleton, counter, shard=shard) if skeleton else 0
    for s in skeleton:
        s.tokens = cost(s, s.tier)
    if base > budget:
        warnings.append(
            f"skeleton tools alone take {base} tokens, over the budget of {budget}; they are sent anyway "
            "and every other tool is excluded"
        )
        for s in flesh:
            _demote(s, Tier.EXCLUDED, "skeleton alone exceeds the token budget")
        return base, warnings
    # The meta-tool's own text and schema, paid once if anything is Condensed or Minimal.
    meta_overhead = 0
    remaining = budget - base
    for s in flesh:
        tier = s.tier
        need = 0
        while tier is not Tier.EXCLUDED:
            extra = 0
            if tier is not Tier.FULL and not meta_overhead:
                extra = est.meta_overhead()
            if (tier is Tier.CONDENSED and remaining < _TIGHT and est.condensed_dearer(s)
                    and cost(s, Tier.MINIMAL) + extra > remaining):
                tier = Tier.EXCLUDED  # not even Minimal fits, so Condensed cannot
                break
            need = cost(s, tier)
            if need + extra <= remaining:
                remaining -= need + extra
                meta_overhead = meta_overhead or extra
                break
            tier = tier.demoted()
        if tier is not s.tier:
            _demote(s, tier, "token budget")
        s.tokens = need if tier is not Tier.EXCLUDED else 0
    # The estimate guided the packing; the budget is enforced on the real rendering.
    used = est.measure(tools, counter, shard=shard)
    rounds = 0
    while used > budget and rounds < max_rounds:
        rounds += 1
        over = used - budget
        freed = 0
        # Worst first: ``flesh`` is already best first (a demotion changes no part of the key).
        for s in (s for s in reversed(flesh) if s.tier is not Tier.EXCLUDED):
            before = s.tokens
            _demote(s, s.tier.demoted(), "token budget (measured)")
            s.tokens = cost(s, s.tier)
            freed += before - s.tokens
            if freed >= over:
                break
        else:
            if not any(s.tier is not Tier.EXCLUDED for s in flesh):
                break
        used = est.measure(tools, counter, shard=shard)
    if used > budget:
        warnings.append(f"the rendering takes {used} tokens, over the budget of {budget}")
    return used, warnings


def _meta_overhead(fmt: str, estimate: TokenCounter) -> int:
    if fmt == "markdown":
        return estimate.count_text(f"## On request (via `{META_TOOL}`)\n\n") + 2
    probe = meta_tool([], [_Probe()], fmt)  # type: ignore[list-item]
    return estimate.count_text(compact_json(probe)) + 1


class _Probe:
    """Stands for one listed tool when measuring the meta-tool's fixed cost."""

    name = ""
    offline = False
    summary = ""


def _demote(st: ScoredTool, tier: Tier, why: str) -> None:
    if tier is st.tier:
        return
    st.reasons.append(f"demoted {st.tier._value_} -> {tier._value_}: {why}")
    st.tier = tier


#: A producer :func:`fed` made Full: it, the Full tool it feeds, and its tier and wanted tier before.
Fed = tuple[ScoredTool, ScoredTool, Tier, Tier]


def fed(tools: Sequence[ScoredTool], feeds: Feeds, least: float) -> list[Fed]:
    """A tool Full by its score (at least ``least``, ``full_threshold``) that requires an
    identifier, a parameter named as one, that another rendered candidate of its server hands out
    (``query-docs`` the ``libraryId`` of ``resolve-library-id``), or a place's coordinates that
    one finds (``maps_elevation``'s of ``maps_geocode``): that producer is Full too, as a
    step's tool is (it keeps its place past the caps), since the Full tool cannot be called
    without it. A step's tools brought theirs already (:func:`~jit.selection.steps.settle`).
    Returns the producers made Full, for :func:`unfed` once the budget has had its say."""
    by_id = {s.id: s for s in tools}
    promoted: list[Fed] = []
    for s in [s for s in tools if s.tier is Tier.FULL and not s.step and not s.skeleton and s.final >= least]:
        for p in feeds(s.id, True):
            producer = by_id.get(p)
            if producer is not None and producer.tier in (Tier.CONDENSED, Tier.MINIMAL):
                promoted.append((producer, s, producer.tier, producer.wanted))
                producer.step, producer.wanted, producer.tier = f"the identifier {s.name} needs", Tier.FULL, Tier.FULL
                # A reason it was kept out of Full no longer says where it is.
                producer.reasons[:] = [f"tool of the step {producer.step!r}", *(
                    r for r in producer.reasons if not r.startswith(("demoted full -> ", "condensed: ")))]
    return promoted


def unfed(promoted: Sequence[Fed], cost: Callable[[ScoredTool, Tier], int]) -> list[ScoredTool]:
    """A producer :func:`fed` made Full whose consumer the budget took out of Full: the producer
    goes back to the tier it had (a Full definition for a tool that is no longer Full would take
    the place of a better one's). Returns those moved back (``cost``: a tool's tokens at a tier)."""
    back = []
    for producer, consumer, tier, wanted in promoted:
        if consumer.tier is not Tier.FULL and producer.tier is Tier.FULL:
            producer.reasons.remove(f"tool of the step {producer.step!r}")
            producer.reasons.append(f"demoted full -> {tier.value}: {consumer.name}, whose identifier it hands out, "
                                    "is no longer Full")
            producer.step, producer.wanted, producer.tier, producer.tokens = "", wanted, tier, cost(producer, tier)
            back.append(producer)
    return back
