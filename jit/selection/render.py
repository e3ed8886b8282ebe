"""Rendering a tool set: Anthropic and OpenAI ``tools`` lists, Markdown, JSON.

Full tools are sent as complete, valid definitions (never truncated; each
input schema in JSON Schema 2020-12, and one that fails the checks of
:mod:`jit.schemas` replaced by an open object schema with a note, so one
broken schema cannot make a model API refuse the whole request). The
Condensed (name + one line) and Minimal (name only) tiers are listed in the
description of one meta-tool, :data:`META_TOOL`, which the harness offers so
the model can ask for their full definitions; Excluded tools are not sent.

Order is deterministic: skeleton tools first (by name, so a shard's prefix is
the same for every task), then Full, Condensed and Minimal tools by final
score and name. Names are namespaced ``server__tool`` (harness tools keep
their own name: the harness runs them) and limited to ``[A-Za-z0-9_-]{1,64}``,
which both APIs accept; :func:`namespaced` documents the mapping.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from typing import Any

from ..analysis.offline_analyzer import condense
from ..errors import SelectionError
from ..models import HARNESS_SERVER, ServerStatus
from ..schemas import api_schema
from .tiers import ScoredTool, Tier
from .tokens import EstimateCounter, TokenCounter, compact_json

__all__ = [
    "FORMATS",
    "META_TOOL",
    "fit_budget",
    "full_definition",
    "measure",
    "namespaced",
    "order_key",
    "render_tools",
    "summary_line",
    "tier_cost",
]

FORMATS = ("anthropic", "openai", "markdown", "json")
#: The meta-tool through which the model asks for Condensed and Minimal tools.
META_TOOL = "jit_expand_tools"
SEPARATOR = "__"
MAX_NAME = 64
_INVALID = re.compile(r"[^A-Za-z0-9_-]")
_SUMMARY_CHARS = 120


def namespaced(server: str, tool: str) -> str:
    """The rendered name of a tool: ``server__tool`` (harness tools: ``tool``).

    Characters outside ``[A-Za-z0-9_-]`` become ``_``; a name that had to be
    changed or is longer than 64 characters gets a hash of the original
    ``server/tool`` appended, so two different tools never share a name.
    """
    raw = tool if server == HARNESS_SERVER else f"{server}{SEPARATOR}{tool}"
    clean = _INVALID.sub("_", raw)
    if clean == raw and len(clean) <= MAX_NAME:
        return clean
    return with_hash(clean, server, tool)


def with_hash(name: str, server: str, tool: str) -> str:
    digest = hashlib.sha256(f"{server}/{tool}".encode()).hexdigest()[:8]
    return f"{name[: MAX_NAME - 9]}_{digest}"


def order_key(st: ScoredTool) -> tuple:
    """Skeleton first (by name), then tier, then final score (high first), then name."""
    if st.skeleton:
        return (0, 0, 0, st.name)
    return (1, st.tier.rank, -st.final, st.name)


#: C0 (but tab and newline), DEL and C1 controls: they carry nothing a model can use, and a
#: description holding terminal escapes must not reach a prompt or a log that prints it.
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def model_text(text: str) -> str:
    """``text`` as a prompt may carry it: control characters removed."""
    return _CONTROLS.sub("", text)


def summary_line(description: str, condensed: str = "", flags: Sequence[str] = ()) -> str:
    """The one line shown for a Condensed tool: the analyzer's summary, else the
    description condensed by the analyzers' own rule
    (:func:`~jit.analysis.offline_analyzer.condense`: first sentence, markup and hidden
    characters removed), at most ~120 characters either way."""
    if flags:
        return f"(description withheld: flagged {', '.join(sorted(flags))})"
    if not condensed:
        return condense(model_text(description), limit=_SUMMARY_CHARS + 1)
    text = " ".join(model_text(condensed).split())
    if len(text) > _SUMMARY_CHARS:
        cut = text[:_SUMMARY_CHARS].rsplit(" ", 1)[0] if " " in text[:_SUMMARY_CHARS] else text[:_SUMMARY_CHARS]
        text = cut.rstrip(",;:") + "…"
    return text


def _description(st: ScoredTool) -> str:
    desc = model_text(st.tool.tool.description)
    if st.offline:
        status = st.tool.server_status
        # A server still on its first connection attempt: jit serve holds a call until it connects.
        then = "a call waits for it" if status is ServerStatus.CONNECTING else "calls fail until it is back"
        return f"[offline: server {st.server!r} is {status.value}; {then}] {desc}"
    return desc


def _schema(st: ScoredTool) -> tuple[dict[str, Any], str | None]:
    """The tool's input schema as the APIs accept it (JSON Schema 2020-12), or an open one and why.

    One broken schema must not make the API refuse the whole request, nor the
    rendering raise: :func:`jit.schemas.api_schema` never raises, and caches its verdict.
    """
    schema = st.tool.tool.input_schema or {"type": "object", "properties": {}}
    return api_schema(schema)


def full_definition(st: ScoredTool, fmt: str = "anthropic") -> dict[str, Any]:
    """One tool's complete definition in the ``anthropic`` or ``openai`` shape."""
    schema, withheld = _schema(st)
    description = _description(st)
    if withheld:
        description = f"[jit: the server's input schema was withheld: {withheld}] {description}"
    if fmt == "openai":
        function = {"name": st.name, "description": description, "parameters": schema}
        return {"type": "function", "function": function}
    return {"name": st.name, "description": description, "input_schema": schema}


def _line(st: ScoredTool) -> str:
    return f"- {st.name}: {st.summary}" + (" (offline)" if st.offline else "")


def _meta_tool(condensed: Sequence[ScoredTool], minimal: Sequence[ScoredTool], fmt: str) -> dict[str, Any] | None:
    if not condensed and not minimal:
        return None
    parts = [
        "More tools are available but not loaded. Call this with the names you need; "
        "their full definitions are added and you can call them next turn."
    ]
    if condensed:
        parts.append("Available (name: what it does):")
        parts.extend(_line(s) for s in condensed)
    if minimal:
        parts.append("Also available: " + ", ".join(s.name + (" (offline)" if s.offline else "") for s in minimal))
    schema = {
        "type": "object",
        "properties": {
            "names": {
                "type": "array",
                "items": {"type": "string"},
                "minItems": 1,
                "description": "Tool names from the lists in this description",
            }
        },
        "required": ["names"],
    }
    desc = "\n".join(parts)
    if fmt == "openai":
        return {"type": "function", "function": {"name": META_TOOL, "description": desc, "parameters": schema}}
    return {"name": META_TOOL, "description": desc, "input_schema": schema}


def _split(tools: Sequence[ScoredTool]) -> tuple[list[ScoredTool], list[ScoredTool], list[ScoredTool]]:
    ordered = sorted(tools, key=order_key)
    full = [s for s in ordered if s.tier is Tier.FULL]
    condensed = [s for s in ordered if s.tier is Tier.CONDENSED]
    minimal = [s for s in ordered if s.tier is Tier.MINIMAL]
    return full, condensed, minimal


def render_tools(tools: Sequence[ScoredTool], fmt: str = "anthropic", *, shard: str = "") -> Any:
    """Render ``tools`` at their current tiers in one of :data:`FORMATS` (what
    :meth:`jit.selection.toolset.ToolSet.render` returns)."""
    if fmt not in FORMATS:
        raise SelectionError(f"unknown render format {fmt!r}; expected one of {', '.join(FORMATS)}")
    full, condensed, minimal = _split(tools)
    if fmt in ("anthropic", "openai"):
        out = [full_definition(s, fmt) for s in full]
        meta = _meta_tool(condensed, minimal, fmt)
        return out + [meta] if meta else out
    if fmt == "json":
        return {
            "shard": shard,
            "full": [full_definition(s) | {"offline": s.offline} for s in full],
            "condensed": [{"name": s.name, "summary": s.summary, "offline": s.offline} for s in condensed],
            "minimal": [s.name for s in minimal],
            "meta_tool": META_TOOL if (condensed or minimal) else None,
        }
    return _markdown(full, condensed, minimal, shard)


def _markdown(full: list[ScoredTool], condensed: list[ScoredTool], minimal: list[ScoredTool], shard: str) -> str:
    lines = [f"# Tools for shard `{shard}`" if shard else "# Tools", ""]
    if full:
        lines += ["## Full", ""]
        for s in full:
            lines += [f"### `{s.name}`" + (" (offline)" if s.offline else ""), "", _description(s), ""]
            lines += ["```json", compact_json(_schema(s)[0]), "```", ""]
    if condensed:
        lines += [f"## Condensed (call `{META_TOOL}` with names for full definitions)", ""]
        lines += [_line(s) for s in condensed] + [""]
    if minimal:
        lines += [f"## On request (via `{META_TOOL}`)", ""]
        lines += [", ".join(f"`{s.name}`" for s in minimal), ""]
    return "\n".join(lines).rstrip() + "\n"


# --------------------------------------------------------------------------- budget


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
            return estimate.count_text(_markdown([st], [], [], "")) - 3
        return estimate.count_tools([full_definition(st, "openai" if fmt == "openai" else "anthropic")]) + 1
    if tier is Tier.CONDENSED:
        return estimate.count_text(_line(st)) + 1
    if tier is Tier.MINIMAL:
        return estimate.count_text(st.name) + 1
    return 0


def fit_budget(
    tools: Sequence[ScoredTool],
    budget: int,
    fmt: str,
    counter: TokenCounter,
    *,
    estimate: TokenCounter | None = None,
    cost: Callable[[ScoredTool, Tier], int] | None = None,
    shard: str = "",
    max_rounds: int = 25,
) -> tuple[int, list[str]]:
    """Give every tool the best tier that fits, most relevant first; then check the
    real rendering with ``counter`` and demote the least relevant until it fits.

    Tiers are changed in place (``tier``, ``tokens``, ``reasons``). Skeleton tools
    keep their tier; if they alone exceed the budget the result says so in a
    warning and every other tool is excluded. ``cost(tool, tier)`` estimates one
    tool's share (default: :func:`tier_cost` with ``estimate``; the compiler passes a
    cached one). Returns ``(tokens used, warnings)``.
    """
    estimate = estimate or EstimateCounter()
    if cost is None:
        def cost(st: ScoredTool, tier: Tier) -> int:
            return tier_cost(st, tier, fmt, estimate)
    warnings: list[str] = []
    skeleton = [s for s in tools if s.skeleton and s.tier is not Tier.EXCLUDED]
    flesh = sorted((s for s in tools if not s.skeleton and s.tier is not Tier.EXCLUDED),
                   key=lambda s: (-s.final, s.name))
    base = measure(render_tools(skeleton, fmt, shard=shard), fmt, counter) if skeleton else 0
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
        while tier is not Tier.EXCLUDED:
            need = cost(s, tier)
            extra = 0
            if tier is not Tier.FULL and not meta_overhead:
                extra = _meta_overhead(fmt, estimate)
            if need + extra <= remaining:
                remaining -= need + extra
                meta_overhead = meta_overhead or extra
                break
            tier = tier.demoted()
        if tier is not s.tier:
            _demote(s, tier, "token budget")
        s.tokens = cost(s, s.tier)
    # The estimate guided the packing; the budget is enforced on the real rendering.
    used = measure(render_tools(tools, fmt, shard=shard), fmt, counter)
    rounds = 0
    while used > budget and rounds < max_rounds:
        rounds += 1
        over = used - budget
        freed = 0
        for s in sorted((s for s in flesh if s.tier is not Tier.EXCLUDED), key=lambda s: (s.final, s.name)):
            before = s.tokens
            _demote(s, s.tier.demoted(), "token budget (measured)")
            s.tokens = cost(s, s.tier)
            freed += before - s.tokens
            if freed >= over:
                break
        else:
            if not any(s.tier is not Tier.EXCLUDED for s in flesh):
                break
        used = measure(render_tools(tools, fmt, shard=shard), fmt, counter)
    if used > budget:
        warnings.append(f"the rendering takes {used} tokens, over the budget of {budget}")
    return used, warnings


def _meta_overhead(fmt: str, estimate: TokenCounter) -> int:
    if fmt == "markdown":
        return estimate.count_text(f"## On request (via `{META_TOOL}`)\n\n") + 2
    probe = _meta_tool([], [_Probe()], fmt)  # type: ignore[list-item]
    return estimate.count_text(compact_json(probe)) + 1


class _Probe:
    """Stands for one listed tool when measuring the meta-tool's fixed cost."""

    name = ""
    offline = False
    summary = ""


def _demote(st: ScoredTool, tier: Tier, why: str) -> None:
    if tier is st.tier:
        return
    st.reasons.append(f"demoted {st.tier.value} -> {tier.value}: {why}")
    st.tier = tier
