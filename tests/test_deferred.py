"""Provider-native deferred rendering (jit/selection/deferred.py): the requests are valid for the
official SDK types, consecutive turns share a byte-identical ``tools`` prefix, and jit's search
answers with what each API loads (``tool_reference`` blocks, a ``tool_search_output`` item)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

import pytest
from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming
from pydantic import TypeAdapter
from test_render import sample, scored

from jit.errors import SelectionError
from jit.selection.deferred import DEFERRED_FORMATS, SEARCH_MODES, SEARCH_TOOL, DeferredTools, render_deferred
from jit.selection.render import render_tools
from jit.selection.tiers import Tier
from jit.selection.toolset import ToolSet

ANTHROPIC = TypeAdapter(MessageCreateParamsNonStreaming)
OPENAI = TypeAdapter(ResponseCreateParamsNonStreaming)


def plain(value: Any) -> Any:
    """Consume the lazy iterables pydantic returns for ``Iterable[...]`` fields (their items are
    validated then) into lists."""
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (str, bytes)):
        return value
    if isinstance(value, Iterable):
        return [plain(v) for v in value]
    return value


def valid(adapter: TypeAdapter, request: dict[str, Any]) -> None:
    """``request`` validates and survives validation unchanged (pydantic drops unknown keys of a
    TypedDict silently, so a misspelt field shows as a difference)."""
    assert plain(adapter.validate_python(request)) == request


def anthropic_request(tools: list[dict], messages: list[dict] | None = None) -> dict[str, Any]:
    return {"model": "claude-sonnet-4-6", "max_tokens": 512, "system": "You are a coder.", "tools": tools,
            "messages": messages or [{"role": "user", "content": "fix the bug"}]}


def openai_request(tools: list[dict], items: list[dict] | None = None) -> dict[str, Any]:
    return {"model": "gpt-5.4", "instructions": "You are a coder.", "tools": tools,
            "input": items or [{"role": "user", "content": "fix the bug"}]}


def toolset(tools=None) -> ToolSet:
    return ToolSet(shard="coder", task="fix the bug", budget=4000, tokens_used=0, warnings=[],
                   tools=tools if tools is not None else sample())


@pytest.mark.parametrize("search", SEARCH_MODES["anthropic_deferred"])
def test_anthropic_deferred_is_a_valid_messages_request(search):
    tools = render_deferred(sample(), "anthropic_deferred", search=search)
    valid(ANTHROPIC, anthropic_request(tools))
    names = [t["name"] for t in tools]
    search_name = SEARCH_TOOL if search == "client" else f"tool_search_tool_{search}"
    # Skeleton and Full first (the plain rendering's order), the search tool, then the rest deferred.
    assert names == ["read_file", "gh__create_issue", "web__fetch", search_name, "docs__search",
                     "gh__list_issues", "x__rare"]
    assert [t.get("defer_loading", False) for t in tools] == [False] * 4 + [True] * 3
    # One breakpoint, on the last tool of the stable prefix.
    assert [i for i, t in enumerate(tools) if "cache_control" in t] == [3]
    assert tools[3]["cache_control"] == {"type": "ephemeral"}
    # The eager tools are the plain rendering's Full tools, byte for byte.
    assert json.dumps(tools[:3]) == json.dumps(render_tools(sample(), "anthropic")[:3])


@pytest.mark.parametrize("search", SEARCH_MODES["openai_deferred"])
def test_openai_deferred_is_a_valid_responses_request(search):
    tools = render_deferred(sample(), "openai_deferred", search=search)
    valid(OPENAI, openai_request(tools))
    assert [t.get("name") for t in tools[:3]] == ["read_file", "gh__create_issue", "web__fetch"]
    assert tools[3]["type"] == "tool_search"
    if search == "server":
        assert tools[3] == {"type": "tool_search"}
        spaces = {ns["name"]: [f["name"] for f in ns["tools"]] for ns in tools[4:]}
        assert spaces == {"docs": ["docs__search"], "gh": ["gh__list_issues"], "x": ["x__rare"]}
        assert all(f["defer_loading"] for ns in tools[4:] for f in ns["tools"])
    else:  # jit searches: the answers carry the definitions, nothing deferred travels in the array
        assert len(tools) == 4 and tools[3]["execution"] == "client"
        assert "gh__list_issues" in tools[3]["description"] and "x__rare" in tools[3]["description"]


def test_two_turns_share_a_byte_identical_prefix_after_an_expansion():
    session = toolset().deferred("anthropic_deferred")
    first = session.tools
    breakpoint = session.breakpoint
    # The model asks for a tool the budget excluded: its definition is appended, deferred.
    expansion = session.expand(["x__never", "gh__list_issues", "nope__missing"])
    assert expansion.appended == ["x__never"] and expansion.unknown == ["nope__missing"]
    assert expansion.loaded == ["x__never", "gh__list_issues"]
    second = session.tools
    before, after = json.dumps(first), json.dumps(second)
    assert len(second) == len(first) + 1
    assert after.startswith(before[:-1]) and after != before  # the earlier array is a prefix of the next
    assert session.breakpoint == breakpoint == 3  # the cache breakpoint stays where it was
    assert second[-1]["name"] == "x__never" and second[-1]["defer_loading"] is True
    valid(ANTHROPIC, anthropic_request(second))
    # A later compile (the task moved on) only appends too; tools it dropped stay.
    later = sample() + [scored("web", "search", Tier.CONDENSED, 70)]
    later[0].tier = Tier.EXCLUDED
    assert session.update(later) == ["web__search"]
    third = json.dumps(session.tools)
    assert third.startswith(after[:-1]) and session.breakpoint == 3


@pytest.mark.parametrize("fmt", ["anthropic", "openai", "openai_deferred"])
def test_every_session_format_only_appends(fmt):
    session = toolset().deferred(fmt, search="server" if fmt == "openai_deferred" else "client")
    before = json.dumps(session.tools)
    assert session.expand(["x__never"]).appended == ["x__never"]
    assert json.dumps(session.tools).startswith(before[:-1])
    if fmt == "openai_deferred":
        assert session.tools[-1] == {**session.tools[-1], "type": "function", "defer_loading": True}
        valid(OPENAI, openai_request(session.tools))
    elif fmt == "anthropic":
        valid(ANTHROPIC, anthropic_request(session.tools))


def test_the_anthropic_search_answers_with_tool_reference_blocks():
    session = toolset().deferred("anthropic_deferred")
    named = session.answer("toolu_1", {"query": "gh__list_issues, x__rare"})
    assert named["content"] == [{"type": "tool_reference", "tool_name": "gh__list_issues"},
                                {"type": "tool_reference", "tool_name": "x__rare"}]
    tools = [scored("gh", "list_issues", Tier.CONDENSED, 60, description="List the issues of a repository."),
             scored("docs", "search", Tier.CONDENSED, 65, description="Search the documentation."),
             scored("gh", "create_issue", Tier.FULL, 90)]
    by_words = toolset(tools).deferred("anthropic_deferred").answer("toolu_2", {"query": "issues in the repository"})
    assert by_words["content"][0]["tool_name"] == "gh__list_issues"
    none = session.answer("toolu_3", {"query": "quantum teleportation"})
    assert isinstance(none["content"], str)
    messages = [
        {"role": "user", "content": "fix the bug"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": SEARCH_TOOL,
                                           "input": {"query": "gh__list_issues, x__rare"}}]},
        {"role": "user", "content": [named]},
    ]
    valid(ANTHROPIC, anthropic_request(session.tools, messages))


def test_the_openai_client_search_answers_with_a_tool_search_output():
    session = toolset().deferred("openai_deferred")
    out = session.answer("call_1", json.dumps({"query": "gh__list_issues x__never"}))
    assert out["type"] == "tool_search_output" and out["execution"] == "client" and out["call_id"] == "call_1"
    assert [(ns["name"], [f["name"] for f in ns["tools"]]) for ns in out["tools"]] == \
        [("gh", ["gh__list_issues"]), ("x", ["x__never"])]
    assert session.expand(["x__never"]).appended == []  # the output carries it: the array never changes
    items = [{"role": "user", "content": "fix the bug"},
             {"type": "tool_search_call", "call_id": "call_1", "execution": "client",
              "arguments": {"query": "gh__list_issues x__never"}}, out]
    valid(OPENAI, openai_request(session.tools, items))


def test_toolset_render_offers_the_deferred_formats_and_refuses_bad_options():
    ts = toolset()
    for fmt in DEFERRED_FORMATS:
        assert ts.render(fmt) == render_deferred(ts.tools, fmt)
    with pytest.raises(SelectionError):
        ts.render("anthropic_deferred", search="server")
    with pytest.raises(SelectionError):
        ts.render("openai_deferred", access="call_tool")
    with pytest.raises(SelectionError):
        render_deferred(ts.tools, "anthropic_deferred", cache_ttl="2h")
    with pytest.raises(SelectionError):
        DeferredTools(ts.tools, "anthropic", search="bm25")


def test_only_full_tools_means_no_search_tool_and_the_breakpoint_on_the_last():
    full = [s for s in sample() if s.tier is Tier.FULL]
    tools = render_deferred(full, "anthropic_deferred", cache_ttl="1h")
    assert [t["name"] for t in tools] == ["read_file", "gh__create_issue", "web__fetch"]
    assert tools[-1]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    valid(ANTHROPIC, anthropic_request(tools))
    assert render_deferred(full, "openai_deferred")[-1]["type"] == "function"


def test_a_misspelt_field_fails_the_check():
    tools = render_deferred(sample(), "anthropic_deferred")
    tools[-1] = {**tools[-1], "defer_load": True}
    with pytest.raises(AssertionError):
        valid(ANTHROPIC, anthropic_request(tools))
