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
from collections.abc import Iterable, Sequence
from typing import Any

from ..analysis.offline_analyzer import condense
from ..errors import SelectionError
from ..models import HARNESS_SERVER, ServerStatus, StoredTool, ToolAnalysis
from ..schemas import api_schema
from .tiers import ScoredTool, Tier, best_first, merit
from .tokens import EstimateCounter, TokenCounter, compact_json

__all__ = [
    "ACCESS",
    "FORMATS",
    "META_TOOL",
    "Estimates",
    "fit_budget",
    "full_definition",
    "measure",
    "namespaced",
    "order_key",
    "render_tools",
    "rendered_names",
    "summary_line",
    "tier_cost",
    "tool_summary",
]

FORMATS = ("anthropic", "openai", "markdown", "json")
#: The meta-tool through which the model asks for Condensed and Minimal tools.
META_TOOL = "jit_expand_tools"
#: How the model reaches tools it was not sent in full, which the text renderings (Markdown, JSON)
#: tell it: ``expand``, through :data:`META_TOOL`, which a harness offers beside the Full tools it
#: sends; ``call_tool``, through ``jit serve``'s meta-tools (``describe_tool`` for a definition,
#: ``call_tool`` to run any tool by server and tool name), where no tool list is sent and no
#: ``jit_expand_tools`` exists.
ACCESS = ("expand", "call_tool")
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


def rendered_names(heads: Iterable[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """Each ``(server, tool)`` of a catalog's tools -> its rendered name: :func:`namespaced`, with a
    hash where two would collide (a tool literally named ``a_b_8132f2cb`` beside the ``a.b`` that
    renders so), in one order, so every path that names a tool (a tool set, ``search_tools``, the
    CLI) maps a rendered name to the same tool."""
    names: dict[tuple[str, str], str] = {}
    taken: set[str] = set()
    for server, tool in sorted(heads):
        name = namespaced(server, tool)
        if name in taken:
            name = with_hash(name, server, tool)
        taken.add(name)
        names[(server, tool)] = name
    return names


def with_hash(name: str, server: str, tool: str) -> str:
    digest = hashlib.sha256(f"{server}/{tool}".encode()).hexdigest()[:8]
    return f"{name[: MAX_NAME - 9]}_{digest}"


def order_key(st: ScoredTool) -> tuple:
    """Skeleton first (by name), then tier, then best first (:func:`~jit.selection.tiers.merit`)."""
    if st.skeleton:
        return (0, 0, 0, 0, st.name)
    return (1, st.tier.rank, *merit(st))


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


def tool_summary(st: StoredTool, a: ToolAnalysis | None) -> str:
    """A tool's Condensed line (:func:`summary_line`) from its definition and effective analysis."""
    return summary_line(st.tool.description, a.condensed if a else "", a.flags if a else ())


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


#: Combinators the Anthropic API refuses at the top level of an input_schema.
_TOP_COMBINATORS = ("oneOf", "anyOf", "allOf")


def full_definition(st: ScoredTool, fmt: str = "anthropic") -> dict[str, Any]:
    """One tool's complete definition in the ``anthropic`` or ``openai`` shape."""
    schema, withheld = _schema(st)
    description = _description(st)
    if withheld:
        description = f"[jit: the server's input schema was withheld: {withheld}] {description}"
    combined = [k for k in _TOP_COMBINATORS if k in schema]
    if combined and fmt != "openai":
        # Anthropic refuses the whole request when one input_schema has oneOf/anyOf/allOf at the top level.
        schema = {k: v for k, v in schema.items() if k not in _TOP_COMBINATORS}
        description = f"[jit: the server's input schema also required {'/'.join(combined)}, not sent] {description}"
    if fmt == "openai":
        function = {"name": st.name, "description": description, "parameters": schema}
        return {"type": "function", "function": function}
    return {"name": st.name, "description": description, "input_schema": schema}


def _line(st: ScoredTool) -> str:
    return f"- {st.name}: {st.summary}" + (" (offline)" if st.offline else "")


_INTRO = ("More tools are available but not loaded. Call this with the names you need; "
          "their full definitions are added and you can call them next turn.")
_AVAILABLE = "Available (name: what it does):"


def _names_schema() -> dict[str, Any]:
    """The meta-tool's input schema (a new dict each time: a rendering is the caller's to change)."""
    return {
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


def _also(minimal: Sequence[ScoredTool]) -> str:
    return "Also available: " + ", ".join(s.name + (" (offline)" if s.offline else "") for s in minimal)


def _meta_dict(description: str, fmt: str) -> dict[str, Any]:
    schema = _names_schema()
    if fmt == "openai":
        return {"type": "function", "function": {"name": META_TOOL, "description": description, "parameters": schema}}
    return {"name": META_TOOL, "description": description, "input_schema": schema}


def _meta_tool(condensed: Sequence[ScoredTool], minimal: Sequence[ScoredTool], fmt: str) -> dict[str, Any] | None:
    if not condensed and not minimal:
        return None
    parts = [_INTRO]
    if condensed:
        parts.append(_AVAILABLE)
        parts.extend(_line(s) for s in condensed)
    if minimal:
        parts.append(_also(minimal))
    return _meta_dict("\n".join(parts), fmt)


def _split(tools: Sequence[ScoredTool]) -> tuple[list[ScoredTool], list[ScoredTool], list[ScoredTool]]:
    ordered = sorted((s for s in tools if s.tier is not Tier.EXCLUDED), key=order_key)
    full = [s for s in ordered if s.tier is Tier.FULL]
    condensed = [s for s in ordered if s.tier is Tier.CONDENSED]
    minimal = [s for s in ordered if s.tier is Tier.MINIMAL]
    return full, condensed, minimal


def render_tools(tools: Sequence[ScoredTool], fmt: str = "anthropic", *, shard: str = "",
                 access: str = "expand") -> Any:
    """Render ``tools`` at their current tiers in one of :data:`FORMATS` (what
    :meth:`jit.selection.toolset.ToolSet.render` returns). ``access`` (:data:`ACCESS`) is how
    the text renderings tell the model to reach the tools; the tool lists (``anthropic``,
    ``openai``) are for a harness, which offers :data:`META_TOOL` itself."""
    if fmt not in FORMATS:
        raise SelectionError(f"unknown render format {fmt!r}; expected one of {', '.join(FORMATS)}")
    if access not in ACCESS:
        raise SelectionError(f"unknown access {access!r}; expected one of {', '.join(ACCESS)}")
    if access != "expand" and fmt in ("anthropic", "openai"):
        raise SelectionError(f"the {fmt} rendering is a harness's tool list: its access is 'expand'")
    full, condensed, minimal = _split(tools)
    if access == "call_tool":
        return _served_json(full, condensed, minimal, shard) if fmt == "json" else \
            _served_markdown(full, condensed, minimal, shard)
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


def _call(st: ScoredTool) -> str:
    """How a ``jit serve`` client names ``st``: the ``server``/``tool`` pair ``call_tool`` and
    ``describe_tool`` take (JSON-escaped), or, for a harness tool, that the client runs it itself."""
    if st.server == HARNESS_SERVER:
        return "(your own tool: call it by its name)"
    return f"`{compact_json({'server': st.server, 'tool': st.tool_name})}`"


def _served_markdown(full: list[ScoredTool], condensed: list[ScoredTool], minimal: list[ScoredTool],
                     shard: str) -> str:
    """The Markdown of a tool set a ``jit serve`` client reads (``compile_tools``): each tool named
    by the ``server``/``tool`` pair ``call_tool`` and ``describe_tool`` take, since the client has
    no tool of the rendered name (unless exposed) and no ``jit_expand_tools``."""
    lines = [f"# Tools for shard `{shard}`" if shard else "# Tools", ""]
    if full:
        lines += ["## Full (run with `call_tool`: the server and tool below, and `arguments` per the schema)", ""]
        for s in full:
            lines += [f"### `{s.name}`" + (" (offline)" if s.offline else ""), "", f"call_tool {_call(s)}", "",
                      _description(s), ""]
            lines += ["```json", compact_json(_schema(s)[0]), "```", ""]
    if condensed:
        lines += ["## Condensed (`describe_tool` with the server and tool gives the schema; then `call_tool`)", ""]
        lines += [f"{_line(s)} {_call(s)}" for s in condensed] + [""]
    if minimal:
        lines += ["## On request (`describe_tool`, then `call_tool`)", ""]
        lines += [", ".join(f"`{s.name}` {_call(s)}" for s in minimal), ""]
    return "\n".join(lines).rstrip() + "\n"


def _served_json(full: list[ScoredTool], condensed: list[ScoredTool], minimal: list[ScoredTool],
                 shard: str) -> dict[str, Any]:
    """The JSON rendering for a ``jit serve`` client: as for a harness, each tool with its server and
    tool, and ``describe_tool`` as the way to the definitions not given."""
    def where(s: ScoredTool) -> dict[str, Any]:
        return {"server": s.server, "tool": s.tool_name}

    return {
        "shard": shard,
        "full": [full_definition(s) | where(s) | {"offline": s.offline} for s in full],
        "condensed": [{"name": s.name, **where(s), "summary": s.summary, "offline": s.offline} for s in condensed],
        "minimal": [{"name": s.name, **where(s)} for s in minimal],
        "meta_tool": "describe_tool" if (condensed or minimal) else None,
    }


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


#: Formats whose rendering is a list of tool definitions (counted as its compact JSON).
_TOOL_LISTS = ("anthropic", "openai")
#: A line that JSON escapes, or whose last character is whitespace (see :class:`Estimates`).
_NOT_PLAIN = re.compile(r'[\x00-\x1f"\\]|\s\Z')
#: The names :func:`namespaced` makes (see :meth:`Estimates.condensed_dearer`).
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
                line = _line(st)
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
        full, condensed, minimal = _split(tools)
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

    def _line(self, st: ScoredTool) -> float:
        key = (st.id, "condensed", self.fmt, st.offline, "line")
        raw = self.memo.get(key)
        if raw is None:
            raw = self.memo[key] = EstimateCounter.raw(_escaped(_line(st) + "\n"))
        return raw

    def _meta(self, condensed: list[ScoredTool], minimal: list[ScoredTool]) -> float:
        if not condensed:
            return EstimateCounter.raw(compact_json(_meta_tool(condensed, minimal, self.fmt)))
        lead, tail = _meta_frame(self.fmt)
        last = _escaped("\n".join([_line(condensed[-1]), *([_also(minimal)] if minimal else [])]))
        return lead + sum(self._line(s) for s in condensed[:-1]) + EstimateCounter.raw(last + tail)


_FRAMES: dict[str, tuple[float, str]] = {}


def _meta_frame(fmt: str) -> tuple[float, str]:
    """The meta-tool's JSON around its Condensed lines: the raw count of what precedes the first
    line (up to its ``\\n``), and the text after the description."""
    frame = _FRAMES.get(fmt)
    if frame is None:
        head, tail = compact_json(_meta_dict("\x00", fmt)).split("\\u0000")
        lead = EstimateCounter.raw(head + _escaped(f"{_INTRO}\n{_AVAILABLE}\n"))
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
    st.reasons.append(f"demoted {st.tier._value_} -> {tier._value_}: {why}")
    st.tier = tier
