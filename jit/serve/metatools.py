"""``jit serve``'s meta-tools, in the spirit of search → describe → execute registries.

``search_tools(query, shard?, limit?)``
    tools ranked for a query, each with a score in 0–1; the best few carry their input
    schema (``serve.search_schemas``, ``serve.search_schema_tokens``), so the common case
    is two model turns, search then ``call_tool``, not three;
``describe_tool(server, tool)``
    one tool's full definition, analysis, status and usage;
``call_tool(server, tool, arguments)``
    proxied to the real server through the :class:`~jit.client.manager.ClientManager`;
    an offline server answers at once with a ``server_unavailable`` error;
``compile_tools(shard, task, budget?)``
    the tiered tool set of a shard spawn (what ``compile()`` returns);
``reload()``
    re-read the config, reconnect what changed, re-sync the catalog;
``set_task(task)``
    with ``--expose-shard``: recompile the exposed tools for a new task.

Every meta-tool carries ``_meta: {"anthropic/alwaysLoad": true}``: a client that defers
MCP tools behind its own tool search (Claude Code) keeps these loaded, since they are
the way to everything else.

:func:`register_meta_tools` declares them on the server (their input schemas come from the
signatures); each answers from the :class:`~jit.serve.state.ServeState` of the request. A jit
error inside one is an ``isError`` result carrying the error's ``to_dict()`` payload as
structured content (:func:`error_result`), so a model can read it and act; arguments that fail
a meta-tool's schema are said in the tool's and the fields' names (:func:`arguments_error`).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field, ValidationError

from ..errors import JitError
from ..models import MAX_NAME_CHARS
from .state import ServeState

# The selection wing (ranking, rendering, tokens), the analysis and the payloads are imported by the
# meta-tool that uses them: declaring the meta-tools needs none of them.

__all__ = ["ALWAYS_LOAD", "MAX_TEXT_CHARS", "META_TOOLS", "PROXY", "READ_ONLY", "arguments_error", "error_result",
           "register_meta_tools"]

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
PROXY = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=True)
#: On every meta-tool: Claude Code (2.1.x: ``isDeferredTool`` returns false first thing for a tool whose
#: ``_meta["anthropic/alwaysLoad"]`` is ``true``) then sends it with every request instead of deferring it
#: behind its tool search, which would cost a turn before the model could even search jit. Other clients
#: ignore a ``_meta`` key they do not know. See docs/serve.md.
ALWAYS_LOAD = {"anthropic/alwaysLoad": True}
#: The meta-tools every ``jit serve`` offers (``set_task`` comes with ``--expose-shard``).
META_TOOLS = ("search_tools", "describe_tool", "call_tool", "compile_tools", "reload")
#: The longest query or task a meta-tool takes: ~8,000 tokens of plain words. A longer one is refused
#: rather than ranked: 10 MB of query took 19 s to rank and delayed every other call meanwhile.
MAX_TEXT_CHARS = 32_768


def _result(data: dict[str, Any], text: str | None = None) -> CallToolResult:
    """A tool result carrying ``data`` as structured content and as JSON text."""
    body = text if text is not None else json.dumps(data, ensure_ascii=False, default=str)
    return CallToolResult(content=[TextContent(type="text", text=body)], structured_content=data)


def error_result(exc: JitError) -> CallToolResult:
    """A jit error as an ``isError`` tool result: the message as text, ``to_dict()`` as structured content."""
    return CallToolResult(
        content=[TextContent(type="text", text=exc.message)],
        structured_content=exc.to_dict(),
        is_error=True,
    )


def arguments_error(tool: str, exc: ValidationError) -> CallToolResult:
    """A meta-tool's arguments that fail its input schema, said in the tool's and the fields' names.

    The SDK's own text names the pydantic model it builds from the signature
    (``call_tool_metaArguments``) and links pydantic's documentation: neither is anything
    the model that called the tool can act on."""
    problems = []
    for err in exc.errors(include_url=False):
        field = ".".join(str(part) for part in err["loc"]) or "arguments"
        msg = err["msg"][:1].lower() + err["msg"][1:]  # "Field required" reads as a sentence's end
        problems.append(f"{field!r} is required" if err["type"] == "missing" else f"{field!r}: {msg}")
    text = f"invalid arguments for {tool}: {'; '.join(problems)} (its input schema is in tools/list)"
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


def _state(ctx: Context) -> ServeState:
    return ctx.request_context.lifespan_context


def _reporting_errors(fn: Callable[..., Awaitable[CallToolResult]]) -> Callable[..., Awaitable[CallToolResult]]:
    """A meta-tool whose jit errors become ``isError`` results carrying the error's payload."""

    @functools.wraps(fn)  # MCPServer reads the signature (through __wrapped__) for the input schema
    async def wrapper(*args: Any, **kwargs: Any) -> CallToolResult:
        try:
            return await fn(*args, **kwargs)
        except JitError as exc:
            return error_result(exc)

    return wrapper


def register_meta_tools(app: Any) -> None:
    """Declare the meta-tools on ``app``, the :class:`~jit.serve.server.JitServer`."""

    @app.tool(annotations=READ_ONLY, meta={**ALWAYS_LOAD})
    @_reporting_errors
    async def search_tools(
        query: Annotated[str, Field(min_length=1, max_length=MAX_TEXT_CHARS,
                                    description="What the tool should do, in plain words")],
        ctx: Context,
        shard: Annotated[str | None, Field(max_length=MAX_NAME_CHARS,
                                           description="Rank for this agent role (coder, researcher, ...)")] = None,
        limit: Annotated[int, Field(ge=1, le=100, strict=True, description="How many tools to return")] = 10,
    ) -> CallToolResult:
        """Find tools across every server jit knows, ranked by relevance (score 0-1, best first).
        The best results carry their input_schema: call one with call_tool right away."""
        from ..analysis.analyze import hostile_flags
        from ..payloads import add_search_schemas
        from ..selection.render import summary_line

        state = _state(ctx)
        shard = state.acting_for(shard)
        ranked = await state.rank(query, limit, shard)
        # A tool not analysed yet has its text checked now (~1 ms a tool): off the event loop.
        available = state.config.available_tools
        flags = await state.blocking(lambda: [hostile_flags(st, available) for st, _score, _name in ranked])
        hits = [
            {
                "server": st.tool.server,
                "tool": st.tool.name,
                "name": name,
                "score": round(float(score), 4),
                "online": st.online,
                # Flagged (hostile) text is withheld here as in a compiled tool set, analysed or not yet.
                "summary": summary_line(st.tool.description, st.analysis.condensed if st.analysis else "", f),
            }
            for (st, score, name), f in zip(ranked, flags, strict=True)
        ]
        add_search_schemas(hits, [st for st, _score, _name in ranked], flags, state.config.serve)
        return _result({"query": query, "shard": shard, "tools": hits})

    @app.tool(annotations=READ_ONLY, meta={**ALWAYS_LOAD})
    @_reporting_errors
    async def describe_tool(
        server: Annotated[str, Field(min_length=1, max_length=MAX_NAME_CHARS,
                                     description="The server's name, as search_tools returns it")],
        tool: Annotated[str, Field(min_length=1, max_length=MAX_NAME_CHARS, description="The tool's name on that server")],
        ctx: Context,
    ) -> CallToolResult:
        """The full definition of one tool (JSON schema), its analysis, server status and usage."""
        return _result(await _state(ctx).describe(server, tool))

    @app.tool(name="call_tool", annotations=PROXY, meta={**ALWAYS_LOAD})
    @_reporting_errors
    async def call_tool_meta(
        server: Annotated[str, Field(min_length=1, max_length=MAX_NAME_CHARS, description="The server's name")],
        tool: Annotated[str, Field(min_length=1, max_length=MAX_NAME_CHARS, description="The tool's name on that server")],
        ctx: Context,
        arguments: Annotated[dict[str, Any] | None, Field(description="The tool's arguments")] = None,
    ) -> CallToolResult:
        """Call a tool on its server and return its result; fails with the reason if the server is offline."""
        return await app.sdk_call(ctx, server, tool, arguments or {})

    @app.tool(annotations=READ_ONLY, meta={**ALWAYS_LOAD})
    @_reporting_errors
    async def compile_tools(
        shard: Annotated[str, Field(min_length=1, max_length=MAX_NAME_CHARS,
                                    description="The agent role, e.g. coder, tester, researcher")],
        task: Annotated[str, Field(min_length=1, max_length=MAX_TEXT_CHARS, description="What the agent is spawned to do")],
        ctx: Context,
        budget: Annotated[int | None, Field(ge=1, strict=True, description="Token budget (default from config)")] = None,
    ) -> CallToolResult:
        """The tool set for an agent role and task, by tier (full, condensed, minimal) within a token budget."""
        from ..payloads import summarize

        state = _state(ctx)
        toolset = await state.compile(shard, task, budget)
        if state.exposed is None:
            state.selection = toolset
        data = summarize(toolset)
        # The client reaches these tools through describe_tool / call_tool: no jit_expand_tools here.
        data["rendering"] = toolset.render("json", access="call_tool")
        text = toolset.render("markdown", access="call_tool")
        if toolset.warnings:  # e.g. a skeleton slot no tool fills: the caller must not miss it
            text = text.rstrip("\n") + "\n\n## Warnings\n\n" + "\n".join(f"- {w}" for w in toolset.warnings) + "\n"
        return _result(data, text=text)

    if app.options.expose_shard is not None:
        shard = app.options.expose_shard

        @app.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True,
                                              open_world_hint=False), meta={**ALWAYS_LOAD},
                  description=f"Choose the tools listed for this session's {shard} role (named server__tool) for a "
                  "new task; the tool list changes to match (tools/list_changed). Call it when the work moves on "
                  "to something else.")
        @_reporting_errors
        async def set_task(
            task: Annotated[str, Field(min_length=1, max_length=MAX_TEXT_CHARS,
                                       description="What you are about to do, in plain words")],
            ctx: Context,
        ) -> CallToolResult:
            """Recompile the exposed shard for ``task``; the shard (the role the session acts for) stays."""
            from ..payloads import summarize

            toolset, changed = await _state(ctx).set_task(task)
            data = summarize(toolset)
            exposed = [s.name for s in app._exposed()]
            return _result({"shard": shard, "task": task, "changed": changed, "exposed": exposed,
                            "tokens_used": data["tokens_used"], "warnings": data["warnings"]})

    @app.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True),
              meta={**ALWAYS_LOAD})
    @_reporting_errors
    async def reload(ctx: Context) -> CallToolResult:
        """Re-read jit's config, reconnect changed servers and re-sync the tool catalog."""
        return _result(await _state(ctx).reload())
