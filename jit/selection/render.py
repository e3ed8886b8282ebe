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
from .scored_tool import ScoredTool, merit
from .tiers import Tier
from .tokens import compact_json

__all__ = [
    "ACCESS",
    "FORMATS",
    "META_AVAILABLE",
    "META_INTRO",
    "META_TOOL",
    "also_line",
    "by_tier",
    "condensed_line",
    "full_definition",
    "meta_tool",
    "meta_tool_definition",
    "namespaced",
    "order_key",
    "render_markdown",
    "render_tools",
    "rendered_names",
    "safe_name",
    "summary_line",
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
    clean = safe_name(raw)
    if clean == raw and len(clean) <= MAX_NAME:
        return clean
    return with_hash(clean, server, tool)


def safe_name(text: str) -> str:
    """``text`` with every character a name may not hold (outside ``[A-Za-z0-9_-]``) made ``_``."""
    return _INVALID.sub("_", text)


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
    """Skeleton first (by name), then tier, then best first (:func:`~jit.selection.scored_tool.merit`)."""
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


def condensed_line(st: ScoredTool) -> str:
    """A Condensed tool's line in the meta-tool's list: ``- name: summary``."""
    return f"- {st.name}: {st.summary}" + (" (offline)" if st.offline else "")


META_INTRO = ("More tools are available but not loaded. Call this with the names you need; "
          "their full definitions are added and you can call them next turn.")
META_AVAILABLE = "Available (name: what it does):"


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


def also_line(minimal: Sequence[ScoredTool]) -> str:
    """The Minimal tools' names, after the Condensed lines."""
    return "Also available: " + ", ".join(s.name + (" (offline)" if s.offline else "") for s in minimal)


def meta_tool_definition(description: str, fmt: str) -> dict[str, Any]:
    """:data:`META_TOOL` with ``description``, in the ``anthropic`` or ``openai`` shape."""
    schema = _names_schema()
    if fmt == "openai":
        return {"type": "function", "function": {"name": META_TOOL, "description": description, "parameters": schema}}
    return {"name": META_TOOL, "description": description, "input_schema": schema}


def meta_tool(condensed: Sequence[ScoredTool], minimal: Sequence[ScoredTool], fmt: str) -> dict[str, Any] | None:
    """:data:`META_TOOL` listing the Condensed lines and the Minimal names (None when both are empty)."""
    if not condensed and not minimal:
        return None
    parts = [META_INTRO]
    if condensed:
        parts.append(META_AVAILABLE)
        parts.extend(condensed_line(s) for s in condensed)
    if minimal:
        parts.append(also_line(minimal))
    return meta_tool_definition("\n".join(parts), fmt)


def by_tier(tools: Sequence[ScoredTool]) -> tuple[list[ScoredTool], list[ScoredTool], list[ScoredTool]]:
    """The Full, Condensed and Minimal tools of ``tools``, each in rendering order (:func:`order_key`)."""
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
    full, condensed, minimal = by_tier(tools)
    if access == "call_tool":
        return _served_json(full, condensed, minimal, shard) if fmt == "json" else \
            _served_markdown(full, condensed, minimal, shard)
    if fmt in ("anthropic", "openai"):
        out = [full_definition(s, fmt) for s in full]
        meta = meta_tool(condensed, minimal, fmt)
        return out + [meta] if meta else out
    if fmt == "json":
        return {
            "shard": shard,
            "full": [full_definition(s) | {"offline": s.offline} for s in full],
            "condensed": [{"name": s.name, "summary": s.summary, "offline": s.offline} for s in condensed],
            "minimal": [s.name for s in minimal],
            "meta_tool": META_TOOL if (condensed or minimal) else None,
        }
    return render_markdown(full, condensed, minimal, shard)


def render_markdown(full: list[ScoredTool], condensed: list[ScoredTool], minimal: list[ScoredTool], shard: str) -> str:
    """The ``markdown`` rendering of the tiers (for a harness, which offers :data:`META_TOOL`)."""
    lines = [f"# Tools for shard `{shard}`" if shard else "# Tools", ""]
    if full:
        lines += ["## Full", ""]
        for s in full:
            lines += [f"### `{s.name}`" + (" (offline)" if s.offline else ""), "", _description(s), ""]
            lines += ["```json", compact_json(_schema(s)[0]), "```", ""]
    if condensed:
        lines += [f"## Condensed (call `{META_TOOL}` with names for full definitions)", ""]
        lines += [condensed_line(s) for s in condensed] + [""]
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
        lines += [f"{condensed_line(s)} {_call(s)}" for s in condensed] + [""]
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
