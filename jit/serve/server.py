"""``jit serve``: jit itself as an MCP server.

Any MCP client (Claude Code, Claude Desktop, an agent harness) connects to jit
once and gets selection over every server jit knows, through its meta-tools
in the spirit of search → describe → execute registries:

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
    re-read the config, reconnect what changed, re-sync the catalog.

Every meta-tool carries ``_meta: {"anthropic/alwaysLoad": true}``: a client that defers
MCP tools behind its own tool search (Claude Code) keeps these loaded, since they are
the way to everything else. The server's ``instructions`` name the configured servers
(jit/serve/early.py builds them, for the early ``initialize`` answer and this server alike).

With ``--expose-shard SHARD [--task TEXT]``, ``tools/list`` also returns that
shard's compiled Full tier under namespaced names (``server__tool``), each
proxied on call, so a client's permission rules apply per upstream tool; the
meta-tool ``set_task(task)`` recompiles it for a new task; and
``notifications/tools/list_changed`` is sent whenever ``set_task``, a reload or an
upstream change alters that selection. A call by name of a tool the role's policy
denies is refused with ``tool_denied``, as ``call_tool`` refuses it.

Resources: ``jit://servers``, ``jit://selection`` and the template
``jit://tools/{server}/{tool}``.

Errors: a jit error inside a tool (offline server, unknown tool, bad shard,
timeout) is a tool result with ``isError`` and the error's structured
``to_dict()`` payload as ``structuredContent``, so a model can read and act
on it; an unknown resource is the JSON-RPC error ``-32602`` (invalid params).

The process holds one Store, one embedding model (loaded once), one Compiler
and one ClientManager for its whole life (the server's lifespan); blocking
work (compiling, ranking, embedding, analysis) runs in worker threads so
proxied calls keep flowing meanwhile.

Start-up: on stdio, ``initialize`` may already have been answered by the process
entry before this module loaded (jit/serve/early.py; :meth:`JitServer.run_stdio_async`
takes over what it read). The lifespan checks the config, the store and the rules,
opens the catalog and yields, so ``tools/list`` and the rest are answered at once;
the model, the compiler, the connections and the sync follow in the background
(jit/serve/state.py), and the exposed tools appear with a ``list_changed``.
"""

from __future__ import annotations

import functools
import json
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Annotated, Any

import anyio
import anyio.to_thread
from mcp.server.connection import Connection
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError, UnexpectedToolError
from mcp.server.subscriptions import InMemorySubscriptionBus
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ToolsListChanged
from mcp_types import INVALID_PARAMS, CallToolResult, TextContent, ToolAnnotations
from mcp_types import Tool as MCPTool
from pydantic import Field, ValidationError

from .. import __version__
from ..catalog.ownership import open_catalog
from ..client.manager import ClientManager
from ..client.tooldefs import clean_annotations
from ..config import check_store_path, load_config
from ..errors import JitError, jit_error_in
from ..jsonrpc import refused_params
from ..models import HARNESS_SERVER, MAX_NAME_CHARS
from ..process import tuned, until_stopped
from . import early
from .early import config_instructions
from .httpguard import http_access, serve_http
from .passthrough import Link, Passthrough, Relay
from .proxy import proxied_call
from .proxylane import ProxyLane, ProxyTarget
from .state import ServeOptions, ServeState
from .stdio import stdio_wire

# The selection wing (compiler, rendering, rules engine, numpy) and the payloads are imported
# where a request uses them: answering `initialize` and listing the meta-tools needs none.

__all__ = ["JitServer", "create_server", "run"]


def _annotations(raw: dict[str, Any] | None) -> ToolAnnotations | None:
    """A stored tool's annotations as the SDK's model; fields of the wrong type dropped (a catalog
    synced before discovery dropped them), so one tool cannot make the whole listing fail."""
    if not raw:
        return None
    try:
        return ToolAnnotations.model_validate(clean_annotations(raw)[0])
    except ValidationError:
        return None


READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
PROXY = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=True)
#: On every meta-tool: Claude Code (2.1.x: ``isDeferredTool`` returns false first thing for a tool whose
#: ``_meta["anthropic/alwaysLoad"]`` is ``true``) then sends it with every request instead of deferring it
#: behind its tool search, which would cost a turn before the model could even search jit. Other clients
#: ignore a ``_meta`` key they do not know. See docs/serve.md.
ALWAYS_LOAD = {"anthropic/alwaysLoad": True}
#: How long after ``jit serve`` began a ``jit://servers`` read waits for the first connection attempts
#: to settle: a local stdio server connects in a second or two, and a reader should get its answer
#: well inside any client's request timeout. A server still on its first attempt after it is shown
#: "connecting", with how long it has been trying.
SERVERS_SETTLE_WAIT = 5.0
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


def _arguments_error(tool: str, exc: ValidationError) -> CallToolResult:
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


def _wire_result(call: Any) -> dict[str, Any]:
    """A :class:`~jit.client.calls.CallResult` back into the wire result the upstream sent."""
    result: dict[str, Any] = {"content": call.content, "isError": call.is_error}
    if call.structured_content is not None:
        result["structuredContent"] = call.structured_content
    return result


def _proxied(call: Any) -> CallToolResult:
    """:func:`_wire_result` as the SDK's model (what a tool handler returns)."""
    return CallToolResult.model_validate(_wire_result(call), by_alias=True)


class JitServer(MCPServer[ServeState]):
    """``MCPServer`` with jit's meta-tools, resources and (optionally) an exposed, proxied tool set."""

    def __init__(self, options: ServeOptions) -> None:
        self.options = options
        self.state: ServeState | None = None
        #: The lifespan has opened the config, catalog and rules and serves (it never did if they failed).
        self.serving = False
        self.bus = InMemorySubscriptionBus()
        #: Client connections, for list_changed outside a request (handshake-era clients).
        self.connections: weakref.WeakSet[Connection] = weakref.WeakSet()
        #: The stdio fast path for proxied calls (None until serving stdio over pipes).
        self.lane: ProxyLane | None = None
        self._exposed_for: Any = None
        self._exposed_map: dict[str, Any] = {}
        #: Requests and logs from upstream servers to jit's clients (jit/serve/passthrough.py).
        self.relay = Relay(self.connections)
        super().__init__(
            "jit",
            version=__version__,
            instructions=config_instructions(options.config_path, expose_shard=options.expose_shard),
            lifespan=_lifespan,
            log_level="WARNING",
            subscriptions=self.bus,
            middleware=[self._track_connection, self._name_refused_params],
        )
        # MCPServer builds its initialize options without NotificationOptions, so it never declares
        # listChanged (SDK TODO L53). The upstreams' resources and prompts come and go; the exposed
        # tool list (--expose-shard) changes too. jit/serve/early.py declares the same.
        low = self._lowlevel_server
        build = low.create_initialization_options
        changes = NotificationOptions(prompts_changed=True, resources_changed=True,
                                      tools_changed=options.expose_shard is not None)

        def with_list_changed(notification_options: NotificationOptions | None = None, *a: Any, **kw: Any) -> Any:
            return build(notification_options or changes, *a, **kw)

        low.create_initialization_options = with_list_changed  # type: ignore[method-assign]
        _register(self)
        self.passthrough = Passthrough(self)
        self.passthrough.install()

    async def run_stdio_async(self) -> None:
        """``MCPServer.run_stdio_async`` on jit's own stdio layer: the event loop's pipe transports
        when stdin/stdout are pipes (every MCP client), so no call waits on a worker thread
        (jit/serve/stdio.py), and a :class:`~jit.serve.proxylane.ProxyLane` as the transport, which answers
        malformed lines and proxied calls itself and writes every outgoing line."""
        low = self._lowlevel_server
        # What the process entry read and answered before the SDK had loaded (jit/serve/early.py).
        taken = early.handover()
        self.relay.single = True  # one client: upstreams are offered what it declares (jit/serve/passthrough.py)
        async with stdio_wire(prefix=taken.pending if taken else b"") as (stdin, stdout), \
                anyio.create_task_group() as lane_tasks:
            self.lane = ProxyLane(self, stdout, lane_tasks.start_soon, answered=taken.answered if taken else None)
            async with self.lane.streams(stdin) as (read_stream, write_stream):
                try:
                    await low.run(read_stream, write_stream, low.create_initialization_options())
                except BaseException as exc:
                    # The start-up failed (the lifespan raised before serving): the requests the client
                    # sent meanwhile get that error as their answer, and the process then exits with it.
                    failure = jit_error_in(exc) if not self.serving else None
                    if failure is not None:
                        await self.lane.refuse_unserved(read_stream, failure)
                    raise
            lane_tasks.cancel_scope.cancel()

    def proxy_target(self, name: Any, arguments: Any) -> ProxyTarget | None:
        """``(server, tool, arguments)`` when a ``tools/call`` is a plain proxied call: an exposed
        tool, or the ``call_tool`` meta-tool with well-formed arguments. None leaves it to the SDK
        (which validates it and answers any error)."""
        if self.state is None or not isinstance(name, str):
            return None
        if arguments is not None and not isinstance(arguments, dict):
            return None
        target = self._exposed_by_name().get(name)
        if target is not None:
            return target.server, target.tool_name, arguments or {}
        if name != "call_tool" or arguments is None or set(arguments) - {"server", "tool", "arguments"}:
            return None
        server, tool, inner = arguments.get("server"), arguments.get("tool"), arguments.get("arguments")
        if not (isinstance(server, str) and 0 < len(server) <= MAX_NAME_CHARS
                and isinstance(tool, str) and 0 < len(tool) <= MAX_NAME_CHARS):
            return None  # the SDK refuses it by the schema
        if inner is not None and not isinstance(inner, dict):
            return None
        return server, tool, inner or {}

    async def proxy_call(self, server: str, tool: str, arguments: dict[str, Any],
                         on_progress: Callable[..., Awaitable[None]] | None = None
                         ) -> tuple[dict[str, Any], Callable[[], None] | None]:
        """The stdio lane's adapter over :func:`~jit.serve.proxy.proxied_call`: the ``tools/call``
        result as a wire dict (as the SDK path returns it), and what records its usage, to run once
        the client has its answer (None: nothing left to do). ``on_progress`` receives the
        upstream's progress (the client sent a progress token)."""
        state = self.state
        if state is None:
            raise RuntimeError("jit serve is shutting down")
        try:
            call, record = await proxied_call(state, self.relay, server, tool, arguments, link=self.relay.link(),
                                              on_progress=on_progress)
        except JitError as exc:
            return error_result(exc).model_dump(by_alias=True, mode="json", exclude_none=True), None
        return _wire_result(call), record

    async def _track_connection(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        # ctx.session is built per request; the connection behind it is what outlives the request.
        # The SDK has no public handle on it from a request context (mcp/server/session.py).
        self.connections.add(ctx.session._connection)
        self.relay.seen(ctx)
        return await call_next(ctx)

    async def _name_refused_params(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        """A request whose params the SDK's models refuse gets -32602 naming the field and why
        (``params.level is refused: Input should be 'alert', …``), where the SDK says only "Invalid
        request parameters" with empty data (``logging/setLevel``, ``prompts/get`` with a number as an
        argument, ``resources/read`` with a numeric ``uri``, a ``cursor`` that is not a string …)."""
        try:
            return await call_next(ctx)
        except ValidationError:
            if ctx.request_id is None:
                raise  # a notification: the SDK drops it with a log line
            entry = self._lowlevel_server.get_request_handler(ctx.method)
            refused = refused_params(ctx.method, ctx.protocol_version, ctx.params,
                                     entry.params_type if entry is not None else None)
            if refused is None:
                raise  # not the params (the SDK's own answer stands)
            where, problem = refused
            raise MCPError(code=INVALID_PARAMS, message=f"Invalid params: {where} {problem}",
                           data={"path": where}) from None

    async def notify_tools_changed(self) -> None:
        """Tell every client the tool list changed: on each connection (handshake era) and on the
        subscription bus (2026-07-28 ``subscriptions/listen`` streams)."""
        for connection in list(self.connections):
            await connection.send_tool_list_changed()
        await self.bus.publish(ToolsListChanged())

    def _exposed_by_name(self) -> dict[str, Any]:
        state = self.state
        exposed = state.exposed if state is not None else None
        if exposed is not self._exposed_for:
            self._exposed_for, self._exposed_map = exposed, {s.name: s for s in self._exposed()}
        return self._exposed_map

    def _exposed(self) -> list[Any]:
        """The exposed selection's Full tier (``--expose-shard``), harness tools left out: the harness runs them.
        Empty until the background start-up has compiled it (then ``tools/list_changed`` is sent)."""
        state = self.state
        if state is None or state.exposed is None:
            return []
        from ..selection.tiers import Tier

        return [s for s in state.exposed.tier(Tier.FULL) if s.server != HARNESS_SERVER]

    async def _refused(self, name: str) -> JitError | None:
        """Why a call of ``name`` (``server__tool``), neither exposed nor a meta-tool, is refused: the
        role check every proxied call takes (:meth:`ServeState.check_allowed`) when ``name`` stands
        for a catalog tool; None when it does not, or the role may have it (the SDK then answers
        ``Unknown tool``: a tool a later ``set_task`` dropped)."""
        state = self.state
        head = state.tool_named(name) if state is not None and self.options.expose_shard is not None else None
        if head is None or self._tool_manager.get_tool(name) is not None:
            return None
        try:
            await state.check_allowed(*head)  # type: ignore[union-attr]
        except JitError as exc:
            return exc
        return None

    async def list_tools(self) -> list[MCPTool]:
        """The exposed shard's Full tier (namespaced, when ``--expose-shard`` is on), then the meta-tools."""
        from ..selection.render import full_definition

        exposed = []
        for s in self._exposed():
            definition = full_definition(s)  # the rendering compile() gives a harness (offline note included)
            exposed.append(MCPTool(
                name=definition["name"],
                title=s.tool.tool.title,
                description=definition["description"],
                input_schema=definition["input_schema"],
                output_schema=s.tool.tool.output_schema,
                annotations=_annotations(s.tool.tool.annotations),
            ))
        return exposed + await super().list_tools()

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        """Proxy an exposed tool to its server; anything else is a meta-tool. A name that is neither
        but stands for a tool the exposed role's policy denies is refused with ``tool_denied``
        (not the SDK's ``Unknown tool``), so the model learns why and does not try again."""
        target = self._exposed_by_name().get(name)
        if target is None or self.state is None:
            refused = await self._refused(name)
            if refused is not None:
                return error_result(refused)
            try:
                return await super().call_tool(name, arguments, context)
            except ToolError as exc:
                if isinstance(exc.__cause__, ValidationError) and not isinstance(exc, UnexpectedToolError):
                    return _arguments_error(name, exc.__cause__)
                raise
        try:
            return await _sdk_call(self, context, target.server, target.tool_name, arguments)
        except JitError as exc:
            return error_result(exc)


async def _sdk_call(app: JitServer, context: Any, server: str, tool: str, arguments: dict[str, Any]) -> CallToolResult:
    """The SDK path's adapter over :func:`~jit.serve.proxy.proxied_call`, for the client of
    ``context`` (an SDK ``Context``, or None): its progress token goes upstream and the progress
    comes back; the usage is recorded before the answer, as the SDK writes it after returning."""
    assert app.state is not None
    ctx = context.request_context if context is not None and context._request_context is not None else None
    token = ctx.meta.get("progressToken") if ctx is not None and ctx.meta else None
    call, record = await proxied_call(app.state, app.relay, server, tool, arguments,
                                      link=Link.of(ctx) if ctx is not None else None,
                                      on_progress=ctx.session.report_progress if token is not None else None)
    record()
    return _proxied(call)


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


def _add_schemas(hits: list[dict[str, Any]], tools: list[Any], flags: list[tuple[str, ...]], bounds: Any) -> None:
    """Give the first hits their ``input_schema`` (as ``describe_tool`` gives it), in rank order, while
    at most ``bounds.search_schemas`` hits and ``bounds.search_schema_tokens`` tokens of schema are
    given; a schema that would pass the token bound is skipped, a smaller one after it may fit.

    With the schema in hand the model calls ``call_tool`` next, without a ``describe_tool`` turn.
    No schema is given for text flagged as hostile (``flags``, per tool: the analyzer's, or for a
    tool not analysed yet what :func:`~jit.analysis.analyze.hostile_flags` finds now), nor for a
    definition awaiting approval: those are withheld from the summary too, and ``describe_tool``
    shows them with why."""
    from ..selection.tokens import EstimateCounter, compact_json

    count = EstimateCounter().count_text
    given = spent = 0
    for hit, st, flagged in zip(hits, tools, flags, strict=True):
        if given >= bounds.search_schemas:
            return
        if not st.approved or flagged:
            continue
        schema = st.tool.input_schema or {"type": "object", "properties": {}}
        tokens = count(compact_json(schema))
        if spent + tokens > bounds.search_schema_tokens:
            continue
        hit["input_schema"] = schema
        given += 1
        spent += tokens


def _register(app: JitServer) -> None:
    """The meta-tools and resources."""

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
        _add_schemas(hits, [st for st, _score, _name in ranked], flags, state.config.serve)
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
        return await _sdk_call(app, ctx, server, tool, arguments or {})

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

    @app.resource("jit://servers", name="servers", mime_type="application/json",
                  description="Every server jit knows: status, tool count, last error")
    async def servers_resource() -> str:
        """The servers as ``jit servers --json`` gives them, once their first connection attempts
        have settled, or :data:`SERVERS_SETTLE_WAIT` seconds after jit began serving.

        A client that connects, reads this and leaves (a one-shot script, an inspector) reads it
        right after jit started, when every server is "connecting" though most are a second or
        two from connected or failed: what that reader wants is whether each server works, so
        the read waits for that answer, as ``resources/list`` waits to list the upstreams'
        resources. A server that takes longer (a slow ``npx`` download, an unreachable URL: an
        attempt may last the server's ``timeout``) is not waited for past that first window: it
        reads "connecting", with a ``status_note`` saying how long its first attempt has run and
        when it gives up. Reads after the window, and servers that settled, answer at once."""
        from ..payloads import server_rows, tool_counts

        state = app.state
        assert state is not None  # resources are read inside the lifespan
        pending = await state.manager.settle(max(0.0, state.began + SERVERS_SETTLE_WAIT - time.monotonic()))
        rows = server_rows(state.config, state.store.servers(), tool_counts(state.store))
        for row in rows:
            if row["server"] in pending and row["status"] == "connecting":
                timeout = state.config.servers[row["server"]].timeout
                row["status_note"] = (f"first connection attempt under way for {pending[row['server']]:.0f} s "
                                      f"(it gives up after {timeout:g} s)")
        return json.dumps(rows, default=str)

    @app.resource("jit://selection", name="selection", mime_type="application/json",
                  description="The current selection: the exposed shard's tool set, else the last compile_tools")
    def selection_resource() -> str:
        from ..payloads import summarize

        state = app.state
        assert state is not None
        if state.selection is None:
            return json.dumps({"selection": None, "message": "nothing compiled yet: call compile_tools"})
        rendering = state.selection.render("json", access="call_tool")  # as compile_tools gives it
        return json.dumps(summarize(state.selection) | {"rendering": rendering}, default=str)

    @app.resource("jit://tools/{server}/{tool}", name="tool", mime_type="application/json",
                  description="One tool's definition, analysis, status and usage")
    async def tool_resource(server: str, tool: str) -> str:
        state = app.state
        assert state is not None
        try:
            return json.dumps(await state.describe(server, tool), default=str)
        except JitError as exc:
            raise ResourceNotFoundError(exc.message) from None


@asynccontextmanager
async def _lifespan(server: MCPServer[ServeState]) -> AsyncIterator[ServeState]:
    """Open what answering needs and serve at once; the rest starts in the background.

    Up front, because a mistake in them is the user's to fix and must stop ``jit serve``
    with its exit code: the config, the store path, the catalog (opened, migrated) and the
    rules. Everything slow (the model, the compiler's view of the catalog, the upstream
    connections, the sync) is :meth:`ServeState.start`, in the lifespan's task group."""
    from ..selection.logic import RuleSet

    assert isinstance(server, JitServer)
    options = server.options
    config = load_config(options.config_path)
    check_store_path(config)  # an unusable `store` is a ConfigError naming the key, not an OS traceback
    rules = RuleSet.load(config.rules_dir)  # a bad rule file is a RuleError now, not in the background
    # This config's servers and the harness only; an error names the catalog and its key (jit/catalog/ownership.py).
    store = open_catalog(config)
    try:
        holder: dict[str, ServeState] = {}

        def changed(name: str, result: Any) -> None:
            holder["state"].tools_changed(name, result)

        manager = ClientManager(config, store, on_tools_changed=changed, peer=server.relay,
                                on_listing_changed=server.passthrough.listing_changed)
        try:
            async with anyio.create_task_group() as tasks:
                state = holder["state"] = ServeState(server, options, config, store, manager, tasks.start_soon,
                                                     rules=rules)
                tasks.start_soon(state.start)
                server.state = state
                server.serving = True
                try:
                    yield state
                finally:
                    server.state = None
                    tasks.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await manager.close()
                if "state" in holder:
                    await anyio.to_thread.run_sync(holder["state"].close_compiler)
    finally:
        store.close()


def create_server(options: ServeOptions) -> JitServer:
    """A ``jit serve`` server; nothing is loaded or connected until it runs."""
    return JitServer(options)


def run(options: ServeOptions) -> None:
    """Run ``jit serve`` until the client disconnects (stdio) or the process is stopped.

    SIGTERM or SIGHUP ends a stdio server as the end of its input does: the upstream
    servers are closed (their processes end), their statuses written, and the process exits
    0, as a stdio MCP server stopped by its client should (the MCP spec's shutdown: close
    stdin, then SIGTERM). Over HTTP uvicorn handles SIGINT and SIGTERM (a graceful shutdown,
    then the process ends by that signal) and SIGHUP ends it as SIGTERM does, exit 0.

    An HTTP bind on a host that is not loopback without ``allow_remote``, or ``allow_remote``
    without ``$JIT_SERVE_TOKEN``, raises :class:`~jit.serve.httpguard.RemoteBindRefused` before
    anything loads or binds.

    ``run`` owns the process, so it opts into :func:`jit.process.tuned` (snapshots frozen
    out of the GC, one BLAS thread for the scan); :func:`create_server` alone does not."""
    server = create_server(options)
    try:
        with tuned():
            if options.transport == "http":
                access = http_access(options.host, allow_remote=options.allow_remote,
                                     allowed_hosts=options.allowed_hosts)
                # The HTTP settings apply before the app is made; the lifespan reads the config again.
                settings = load_config(options.config_path).serve
                anyio.run(serve_http, server, options.host, options.port, access, settings)
            else:
                # MCPServer.run("stdio") is anyio.run(run_stdio_async), with no stop signal handled.
                anyio.run(until_stopped, server.run_stdio_async)
    except BaseExceptionGroup as group:
        # A failed start-up (bad rules, unreadable catalog) arrives wrapped in the SDK's task
        # groups; surface the jit error itself so the CLI prints it and exits with its code.
        found = jit_error_in(group)
        if found is None:
            raise
        raise found from None
