"""Provider-native deferred rendering: the tiers a compile chose, sent so a cached prompt survives.

The plain ``anthropic`` / ``openai`` renderings list Condensed and Minimal tools in the description
of :data:`~jit.selection.render.META_TOOL`; loading one means rewriting the request's ``tools``
array, which invalidates the provider's prompt cache from the tools onwards (system prompt and
conversation included). Both providers now let a request carry definitions the model does not see
until a search loads them, so loading a tool leaves the prompt prefix as it was:

``anthropic_deferred`` (Messages API)
    Skeleton and Full tools as usual, then a search tool carrying a ``cache_control`` breakpoint
    (the end of the stable prefix), then every Condensed and Minimal tool as its full definition
    with ``defer_loading: true``. The search tool is jit's own client-side tool
    (:data:`SEARCH_TOOL`, ``search="client"``), whose answer is a ``tool_result`` of
    ``tool_reference`` blocks (:meth:`DeferredTools.answer`), or Anthropic's server-side search
    (``search="bm25"`` or ``"regex"``), which needs nothing from the harness.
``openai_deferred`` (Responses API)
    Skeleton and Full tools as Responses function tools, then ``tool_search``. With
    ``search="server"`` (OpenAI's hosted search) the Condensed and Minimal tools follow as
    deferred functions grouped in one ``namespace`` per server; with ``search="client"``
    (jit searches) nothing else is sent: the answer, a ``tool_search_output`` item, carries the
    definitions it loads.

Expansions only ever append (:class:`DeferredTools`): a tool the tool set holds but the array does
not yet carry (an Excluded candidate the search found, or a tool a later compile added, see
:meth:`DeferredTools.update`) is appended as a deferred definition, so each turn's ``tools``
array begins with the previous turn's, byte for byte, and the breakpoint stays on the same tool.

The budget is fitted on the eager rendering (``tool_selection.budget_format``, ``anthropic`` or
``openai``), and the deferred formats reuse its tiers: what the model sees up front is the Full
tools plus a search tool whose description lists the same lines as the meta-tool (client search)
or nothing (provider search), so the budget bounds it as well.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import SelectionError
from ..models import HARNESS_SERVER
from ..text import search_tokens
from .render import (
    META_AVAILABLE,
    also_line,
    by_tier,
    condensed_line,
    full_definition,
    order_key,
    render_tools,
    safe_name,
)
from .scored_tool import ScoredTool
from .tiers import Tier

__all__ = [
    "DEFERRED_FORMATS",
    "SEARCH_MODES",
    "SEARCH_TOOL",
    "DeferredTools",
    "Expansion",
    "render_deferred",
]

DEFERRED_FORMATS = ("anthropic_deferred", "openai_deferred")
#: The search modes of each deferred format: ``client`` is jit's search, answered by the harness
#: through :meth:`DeferredTools.answer`; the others are the provider's own.
SEARCH_MODES: Mapping[str, tuple[str, ...]] = {
    "anthropic_deferred": ("client", "bm25", "regex"),
    "openai_deferred": ("client", "server"),
}
#: The name of jit's client-side search tool (Anthropic); OpenAI's client search is ``tool_search``.
SEARCH_TOOL = "jit_search_tools"
#: Anthropic's server-side tool search tools: ``search`` mode -> (type, name).
_ANTHROPIC_SEARCH = {
    "bm25": ("tool_search_tool_bm25_20251119", "tool_search_tool_bm25"),
    "regex": ("tool_search_tool_regex_20251119", "tool_search_tool_regex"),
}
#: At most this many tools are loaded by one search (a search may name more tools explicitly).
DEFAULT_LIMIT = 5

_INTRO = ("Loads tools that are available but not loaded yet. Give the names you need from the list below, "
          "or words for what the tool should do; the matching tools are loaded and you can call them directly.")


def _search_schema() -> dict[str, Any]:
    """The input schema of jit's search tool (a new dict each time: a rendering is the caller's)."""
    return {
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "minLength": 1,
                "description": "Tool names from this tool's list (separated by spaces or commas), "
                               "or words for what the tool should do",
            }
        },
        "required": ["query"],
    }


def _search_text(condensed: Sequence[ScoredTool], minimal: Sequence[ScoredTool]) -> str:
    parts = [_INTRO]
    if condensed:
        parts.append(META_AVAILABLE)
        parts.extend(condensed_line(s) for s in condensed)
    if minimal:
        parts.append(also_line(minimal))
    return "\n".join(parts)


def _responses_function(st: ScoredTool, *, deferred: bool) -> dict[str, Any]:
    """``st`` as a Responses API function tool (flat, unlike Chat Completions' nested ``function``).
    ``strict`` is off: an MCP server's schema is rarely in the strict subset."""
    chat = full_definition(st, "openai")["function"]
    out = {"type": "function", "name": chat["name"], "description": chat["description"],
           "parameters": chat["parameters"], "strict": False}
    if deferred:
        out["defer_loading"] = True
    return out


def _anthropic_deferred(st: ScoredTool) -> dict[str, Any]:
    return full_definition(st) | {"defer_loading": True}


def _namespace_name(server: str) -> str:
    """A Responses namespace name for ``server`` (names are ``[A-Za-z0-9_-]``, like the tools')."""
    return safe_name(server)[:64] or "tools"


def _namespaces(tools: Sequence[ScoredTool], *, deferred: bool) -> list[dict[str, Any]]:
    """One Responses ``namespace`` per server, in the order of their first tool; each function keeps
    its rendered name (``server__tool``), so :meth:`~jit.selection.toolset.ToolSet.resolve` maps a
    call back whatever namespace it came through."""
    groups: dict[str, list[ScoredTool]] = {}
    for st in tools:
        groups.setdefault(_namespace_name(st.server), []).append(st)
    out = []
    for name, members in groups.items():
        servers = sorted({st.server for st in members})
        what = ("the harness's own tools" if servers == [HARNESS_SERVER]
                else f"Tools of the MCP server{'s' if len(servers) > 1 else ''} {', '.join(map(repr, servers))}, "
                     "through jit")
        out.append({"type": "namespace", "name": name, "description": what,
                    "tools": [_responses_function(st, deferred=deferred) for st in members]})
    return out


def _check(fmt: str, search: str) -> None:
    if fmt not in DEFERRED_FORMATS:
        raise SelectionError(f"unknown deferred format {fmt!r}; expected one of {', '.join(DEFERRED_FORMATS)}")
    if search not in SEARCH_MODES[fmt]:
        raise SelectionError(f"unknown search {search!r} for {fmt}; expected one of {', '.join(SEARCH_MODES[fmt])}")


def _search_tool(fmt: str, search: str, condensed: Sequence[ScoredTool], minimal: Sequence[ScoredTool],
                 cache: dict[str, Any] | None) -> dict[str, Any]:
    if fmt == "openai_deferred":
        if search == "server":
            return {"type": "tool_search"}
        return {"type": "tool_search", "execution": "client", "description": _search_text(condensed, minimal),
                "parameters": _search_schema()}
    if search == "client":
        tool = {"name": SEARCH_TOOL, "description": _search_text(condensed, minimal), "input_schema": _search_schema()}
    else:
        kind, name = _ANTHROPIC_SEARCH[search]
        tool = {"type": kind, "name": name}
    if cache is not None:
        tool["cache_control"] = dict(cache)
    return tool


def render_deferred(tools: Sequence[ScoredTool], fmt: str = "anthropic_deferred", *, search: str = "client",
                    cache_ttl: str | None = None) -> list[dict[str, Any]]:
    """The ``tools`` array of ``fmt`` (:data:`DEFERRED_FORMATS`) for ``tools`` at their tiers.

    ``search`` is one of :data:`SEARCH_MODES` for ``fmt``. ``cache_ttl`` (``"5m"``, ``"1h"`` or
    None for Anthropic's default) is the lifetime of the ``cache_control`` breakpoint the Anthropic
    rendering puts on its search tool, the last tool of the stable prefix. A tool set with nothing
    but Full tools is rendered without a search tool, the breakpoint then on its last tool.
    """
    _check(fmt, search)
    if cache_ttl not in (None, "5m", "1h"):
        raise SelectionError(f"cache_ttl must be '5m', '1h' or None, got {cache_ttl!r}")
    cache = {"type": "ephemeral"} | ({"ttl": cache_ttl} if cache_ttl else {})
    full, condensed, minimal = by_tier(tools)
    if fmt == "openai_deferred":
        out = [_responses_function(st, deferred=False) for st in full]
        if condensed or minimal:
            out.append(_search_tool(fmt, search, condensed, minimal, None))
            if search == "server":
                out.extend(_namespaces([*condensed, *minimal], deferred=True))
        return out
    out = [full_definition(st) for st in full]
    if not (condensed or minimal):
        if out:
            out[-1]["cache_control"] = cache
        return out
    out.append(_search_tool(fmt, search, condensed, minimal, cache))
    out.extend(_anthropic_deferred(st) for st in (*condensed, *minimal))
    return out


@dataclass(frozen=True)
class Expansion:
    """What :meth:`DeferredTools.expand` did: the names the model can now call (``loaded``: already
    sent or just appended), the names the tool set does not hold (``unknown``), and the names whose
    definitions were appended to the ``tools`` array this time (``appended``)."""

    loaded: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    appended: list[str] = field(default_factory=list)


class DeferredTools:
    """One conversation's ``tools`` array, which only ever grows at its end.

    ``tools`` holds the candidates of a compile (a :class:`~jit.selection.toolset.ToolSet`'s
    ``tools``, Excluded ones included: they can be found and loaded, a role's denied tools are never
    candidates). The formats are the deferred ones and the plain ``anthropic`` / ``openai`` tool
    lists, where an expansion appends a tool's full definition after the meta-tool instead of
    loading it through a search.
    """

    def __init__(self, tools: Sequence[ScoredTool], fmt: str = "anthropic_deferred", *, search: str = "client",
                 cache_ttl: str | None = None) -> None:
        self.fmt = fmt
        self.search_mode = search
        self._candidates: dict[str, ScoredTool] = {}
        if fmt in ("anthropic", "openai"):
            if search != "client":
                raise SelectionError(f"the {fmt} rendering has no provider search; search must be 'client'")
            self._tools: list[dict[str, Any]] = render_tools(tools, fmt)
        else:
            self._tools = render_deferred(tools, fmt, search=search, cache_ttl=cache_ttl)
        #: Names the request's ``tools`` array carries (eagerly or deferred), and with client search
        #: on OpenAI, the names a ``tool_search_output`` loaded.
        self._sent: set[str] = set()
        for st in tools:
            self._candidates.setdefault(st.name, st)
            if st.tier is Tier.FULL or (st.tier is not Tier.EXCLUDED and self._defers_in_array()):
                self._sent.add(st.name)

    def _defers_in_array(self) -> bool:
        """Whether Condensed and Minimal tools travel in the ``tools`` array as deferred definitions."""
        return self.fmt == "anthropic_deferred" or (self.fmt == "openai_deferred" and self.search_mode == "server")

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The ``tools`` array for the next request (a new list; its dicts are never changed)."""
        return list(self._tools)

    @property
    def breakpoint(self) -> int | None:
        """The index of the tool carrying the ``cache_control`` breakpoint (Anthropic), else None."""
        return next((i for i, t in enumerate(self._tools) if "cache_control" in t), None)

    def expand(self, names: Iterable[str]) -> Expansion:
        """Make ``names`` callable: each candidate not in the array yet has its definition appended
        (deferred in a deferred format, in full after the meta-tool in a plain one)."""
        out = Expansion()
        for name in dict.fromkeys(names):
            st = self._candidates.get(name)
            if st is None:
                out.unknown.append(name)
                continue
            if name not in self._sent and self._append(st):
                out.appended.append(name)
            out.loaded.append(name)
        return out

    def _append(self, st: ScoredTool) -> bool:
        """Append ``st``'s definition if the format carries it in the array; whether it did."""
        if self.fmt == "openai_deferred" and self.search_mode == "client":
            return False  # the tool_search_output that loads it carries the definition
        self._sent.add(st.name)
        if self.fmt == "anthropic_deferred":
            self._tools.append(_anthropic_deferred(st))
        elif self.fmt == "openai_deferred":
            self._tools.append(_responses_function(st, deferred=True))
        else:
            self._tools.append(full_definition(st, self.fmt))
        return True

    def update(self, tools: Sequence[ScoredTool]) -> list[str]:
        """Take a later compile's candidates (the task moved on, a server came back): tools it sends
        that the array lacks are appended as deferred definitions (a plain format: in full), nothing
        is removed or reordered. Returns the names appended."""
        for st in tools:
            self._candidates[st.name] = st
        fresh = sorted((s for s in tools if s.tier is not Tier.EXCLUDED and s.name not in self._sent), key=order_key)
        return self.expand([s.name for s in fresh]).appended

    def search(self, query: str, limit: int = DEFAULT_LIMIT) -> list[str]:
        """The candidates ``query`` asks for, best first: every name it spells out (any number),
        else at most ``limit`` tools by the words of their name, summary and description that the
        query shares, sent tiers before Excluded, then by the compile's final score."""
        if limit < 1:
            raise SelectionError(f"limit must be at least 1, got {limit}")
        words = query.replace(",", " ").split()
        named = [w for w in dict.fromkeys(words) if w in self._candidates]
        if named:
            return named
        wanted = set(search_tokens(query, drop_stopwords=True))
        if not wanted:
            return []
        scored = []
        for st in self._candidates.values():
            name_words = set(search_tokens(st.name))
            text_words = set(search_tokens(f"{st.summary} {st.tool.tool.description}"))
            hits = 2 * len(wanted & name_words) + len(wanted & text_words)
            if hits:
                scored.append((-hits, st.tier is Tier.EXCLUDED, -st.final, st.name))
        return [name for *_, name in sorted(scored)[:limit]]

    def answer(self, call_id: str, arguments: Mapping[str, Any] | str, *, limit: int = DEFAULT_LIMIT,
               names: Sequence[str] | None = None) -> dict[str, Any]:
        """Answer one call of the client-side search tool: the found tools are loaded
        (:meth:`expand`) and returned as the format's result item — Anthropic: a ``tool_result``
        block of ``tool_reference`` blocks; OpenAI: a ``tool_search_output`` input item carrying
        their definitions. ``arguments`` is the call's input (a dict, or the JSON string OpenAI
        sends); ``names`` overrides the search (a harness's own ranking, e.g. ``Compiler.rank``)."""
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments or "{}")
            except ValueError:
                arguments = {}
        query = str(arguments.get("query") or "") if isinstance(arguments, Mapping) else ""
        found = self.expand(self.search(query, limit) if names is None else names).loaded
        if self.fmt == "openai_deferred":
            chosen = sorted((self._candidates[n] for n in found), key=order_key)
            return {"type": "tool_search_output", "call_id": call_id, "execution": "client",
                    "tools": _namespaces(chosen, deferred=False)}
        if self.fmt != "anthropic_deferred":
            text = f"loaded: {', '.join(found)}" if found else "no tool in this tool set matches"
            return {"type": "tool_result", "tool_use_id": call_id, "content": text}
        if not found:
            return {"type": "tool_result", "tool_use_id": call_id,
                    "content": f"no tool matches {query!r}; try other words or a name from the list"}
        return {"type": "tool_result", "tool_use_id": call_id,
                "content": [{"type": "tool_reference", "tool_name": name} for name in found]}
