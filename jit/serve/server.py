"""``jit serve``: jit itself as an MCP server.

Any MCP client (Claude Code, Claude Desktop, an agent harness) connects to jit
once and gets selection over every server jit knows, through five meta-tools
in the spirit of search → describe → execute registries:

``search_tools(query, shard?, limit?)``
    tools ranked for a query, each with a score in 0–1;
``describe_tool(server, tool)``
    one tool's full definition, analysis, status and usage;
``call_tool(server, tool, arguments)``
    proxied to the real server through the :class:`~jit.client.manager.ClientManager`;
    an offline server answers at once with a ``server_unavailable`` error;
``compile_tools(shard, task, budget?)``
    the tiered tool set of a shard spawn (what ``compile()`` returns);
``reload()``
    re-read the config, reconnect what changed, re-sync the catalog.

With ``--expose-shard SHARD --task TEXT``, ``tools/list`` also returns that
shard's compiled Full tier under namespaced names (``server__tool``), each
proxied on call, and ``notifications/tools/list_changed`` is sent whenever a
reload or an upstream change alters that selection.

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
"""

from __future__ import annotations

import functools
import json
import logging
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

import anyio
import anyio.to_thread
from mcp.server.connection import Connection
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError
from mcp.server.subscriptions import InMemorySubscriptionBus
from mcp.shared.subscriptions import ToolsListChanged
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from mcp_types import Tool as MCPTool
from pydantic import Field

from .. import __version__
from ..catalog.approval import approve_hint, pending_report
from ..catalog.embed import SentenceTransformerEmbedder
from ..catalog.ownership import config_scope
from ..catalog.store import Store
from ..client.manager import ClientManager
from ..config import Config, check_store_path, load_config
from ..errors import JitError, ToolNotApprovedError, ToolNotFoundError
from ..models import HARNESS_SERVER
from ..pipeline import refresh_catalog, sync
from ..process import tuned
from ..selection.compiler import Compiler
from ..selection.render import full_definition, namespaced, summary_line
from ..selection.toolset import TaskContext, Tier
from ..views import describe, server_rows, summarize, tool_counts
from .httpguard import http_access, serve_http
from .proxylane import ProxyLane, ProxyTarget
from .stdio import stdio_wire

__all__ = ["JitServer", "ServeOptions", "ServeState", "create_server", "run"]

log = logging.getLogger(__name__)

T = TypeVar("T")

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
PROXY = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=True)

INSTRUCTIONS = (
    "jit selects tools from many MCP servers. Use search_tools to find tools for a step, describe_tool "
    "for a tool's full schema, and call_tool to run it on its server. compile_tools gives a whole tool "
    "set for an agent role (shard) and task, in tiers. Tools of offline servers are listed but fail "
    "when called, with an error naming the server's status."
)


@dataclass(frozen=True)
class ServeOptions:
    """How ``jit serve`` runs. ``config_path`` None means ``$JIT_CONFIG`` or ``./config.json``."""

    config_path: Path | None = None
    transport: Literal["stdio", "http"] = "stdio"
    host: str = "127.0.0.1"
    port: int = 8000
    #: Expose this shard's compiled Full tier in ``tools/list`` (with ``task``).
    expose_shard: str | None = None
    task: str | None = None
    budget: int | None = None
    #: Serve HTTP on a host that is not loopback (then ``$JIT_SERVE_TOKEN`` is required; jit/serve/httpguard.py).
    allow_remote: bool = False
    #: Host names accepted in the Host/Origin headers besides loopback and the bound host.
    allowed_hosts: tuple[str, ...] = ()


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


def _wire_result(call: Any) -> dict[str, Any]:
    """A :class:`~jit.client.manager.CallResult` back into the wire result the upstream sent."""
    result: dict[str, Any] = {"content": call.content, "isError": call.is_error}
    if call.structured_content is not None:
        result["structuredContent"] = call.structured_content
    return result


def _proxied(call: Any) -> CallToolResult:
    """:func:`_wire_result` as the SDK's model (what a tool handler returns)."""
    return CallToolResult.model_validate(_wire_result(call), by_alias=True)


def _selection_key(toolset: Any) -> tuple[tuple[str, str], ...]:
    """What a client sees of an exposed selection: names and definitions of the Full tier."""
    return tuple((s.name, s.tool.definition_hash) for s in toolset.tier(Tier.FULL) if s.server != HARNESS_SERVER)


class ServeState:
    """Everything ``jit serve`` holds for its lifetime; the lifespan context of the server."""

    def __init__(self, server: JitServer, options: ServeOptions, config: Config, store: Any, embedder: Any,
                 manager: Any, spawn: Callable[..., Any]) -> None:
        self.server = server
        #: Starts a background task in the server's lifespan task group.
        self.spawn = spawn
        self.options = options
        self.config = config
        self.store = store
        self.embedder = embedder
        self.manager = manager
        self.compiler: Any = None
        #: The compiled selection of ``--expose-shard`` (None without it).
        self.exposed: Any = None
        #: The latest selection: the exposed one, else the last ``compile_tools`` result.
        self.selection: Any = None
        self.ready = False
        self._lock = anyio.Lock()  # one reload / re-sync at a time
        #: While a reload runs, discoveries land here instead of starting a background re-sync.
        self._discovered: dict[str, Any] | None = None

    # ---------------------------------------------------------------- blocking work

    async def blocking(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn`` in a worker thread (compiling, ranking, embedding, analysis)."""
        return await anyio.to_thread.run_sync(lambda: fn(*args))

    def _new_compiler(self) -> Any:
        return Compiler(self.store, self.config, self.embedder)

    def close_compiler(self) -> None:
        """Release the compiler's resources (its Datalog engine thread)."""
        close = getattr(self.compiler, "close", None)
        if callable(close):
            close()

    # ---------------------------------------------------------------- catalog

    def tools_changed(self, server: str, result: Any) -> None:
        """The client manager's ``on_tools_changed``: runs in the upstream's task, so stays short."""
        if self._discovered is not None:
            self._discovered[server] = result  # reload() analyzes and embeds these itself
        elif self.ready:
            self.warn_changed(server, result)
            self.spawn(self.on_tools_changed, server, result)

    def warn_changed(self, server: str, result: Any) -> None:
        """A warning on stderr for each tool a discovery found with a changed definition (rug pulls)."""
        waiting = set(getattr(result, "awaiting_approval", ()))
        for name, fields in sorted(getattr(result, "changes", {}).items()):
            self._warn_definition(server, name, fields, name in waiting, approve_hint(server, name))

    def _warn_definition(self, server: str, tool: str, fields: list[str], waiting: bool, hint: str) -> None:
        what = ", ".join(fields) or "definition"
        if not waiting:
            log.warning("tool %s/%s changed its definition (%s) back to an approved one", server, tool, what)
            return
        effect = "not served (security.pin_definitions)" if self.config.security.pin_definitions else \
            "kept out of the Full tier"
        log.warning("tool %s/%s changed its definition (%s) and awaits approval: %s; %s",
                    server, tool, what, effect, hint)

    async def sync(self) -> dict[str, Any]:
        """The ``reload()`` body: :func:`jit.pipeline.sync` on the running manager, its catalog work in a
        worker thread; then a warning per changed definition, and the report as the tool returns it."""
        # Servers (re)connected by apply_config reported their first discovery through the callback.
        report = await sync(self.config, self.store, self.embedder, manager=self.manager,
                            discovered=self._discovered)
        for name, change in report.changes.items():
            self.warn_changed(name, change)
        return {
            "servers": [
                {"server": r.name, "status": r.status.value, "last_error": r.last_error}
                for r in report.servers
            ],
            "changes": {
                name: {"added": c.added, "changed": c.changed, "removed": c.removed,
                       "definition_changes": c.changes, "awaiting_approval": c.awaiting_approval}
                for name, c in report.changes.items()
                if c.touched
            },
            "removed_servers": report.removed_servers,
            "kept_servers": report.kept_servers,
            "embedded": report.embedding.embedded if report.embedding else 0,
            "analyzed": report.analysis.analyzed if report.analysis else 0,
        }

    async def start(self) -> None:
        """First sync and compiler; the exposed selection when asked for."""
        await self.sync()
        # Changes the manager's first discovery found, or an earlier `jit sync`: still unreviewed.
        for p in pending_report(self.store):
            self._warn_definition(p["server"], p["tool"], p["changed"], True, approve_hint(p["server"], p["tool"]))
        self.compiler = await self.blocking(self._new_compiler)
        if self.options.expose_shard is not None:
            self.exposed = self.selection = await self.compile(
                self.options.expose_shard, self.options.task or "", self.options.budget
            )
        self.ready = True

    async def reload(self) -> dict[str, Any]:
        """Re-read the config, apply it to the connections, re-sync, recompile the exposed selection."""
        async with self._lock:
            config = load_config(self.options.config_path)
            self._discovered = {}
            try:
                await self.manager.apply_config(config)
                self.config = config
                self.store.set_scope(config_scope(config))
                report = await self.sync()
            finally:
                self._discovered = None
            fresh = await self.blocking(self._new_compiler)
            await self.blocking(self.close_compiler)
            self.compiler = fresh
            report["selection_changed"] = await self._recompile_exposed()
            return report

    async def on_tools_changed(self, server: str, result: Any) -> None:
        """An upstream changed its tools mid-session: analyze and embed them, then recompile."""
        try:
            async with self._lock:
                await self.blocking(refresh_catalog, self.store, self.config, self.embedder)
                await self._recompile_exposed()
        except Exception:  # a background task: a failure here must not take the server down
            log.exception("re-sync after a tool change on server %s failed", server)

    async def _recompile_exposed(self) -> bool:
        if self.options.expose_shard is None:
            return False
        before = _selection_key(self.exposed) if self.exposed is not None else ()
        self.exposed = self.selection = await self.compile(
            self.options.expose_shard, self.options.task or "", self.options.budget
        )
        changed = _selection_key(self.exposed) != before
        if changed:
            await self.server.notify_tools_changed()
        return changed

    # ---------------------------------------------------------------- selection

    async def compile(self, shard: str, task: str, budget: int | None) -> Any:
        """``compile()`` in a worker thread (the compiler checks shard and budget)."""
        return await self.blocking(self.compiler.compile, TaskContext(shard=shard, task=task, budget=budget))

    async def rank(self, query: str, k: int, shard: str | None) -> list[tuple[Any, float]]:
        """The compiler's ranking in a worker thread: ``(tool, score 0..1)``, best first."""
        return await self.blocking(lambda: self.compiler.rank(query, k, shard=shard))

    def describe(self, server: str, tool: str) -> dict[str, Any]:
        """One tool's record (``describe_tool``, ``jit://tools/…``); unknown ones raise ToolNotFoundError."""
        stored = self.store.tool(server, tool)
        if stored is None:
            raise ToolNotFoundError.in_catalog(server, tool, server_known=self.store.server(server) is not None)
        if self.config.security.pin_definitions and not stored.approved:
            raise ToolNotApprovedError(server=server, tool=tool)  # its text is what awaits review
        return describe(self.config, self.store, stored)


class JitServer(MCPServer[ServeState]):
    """``MCPServer`` with jit's meta-tools, resources and (optionally) an exposed, proxied tool set."""

    def __init__(self, options: ServeOptions) -> None:
        self.options = options
        self.state: ServeState | None = None
        self.bus = InMemorySubscriptionBus()
        #: Client connections, for list_changed outside a request (handshake-era clients).
        self.connections: weakref.WeakSet[Connection] = weakref.WeakSet()
        #: The stdio fast path for proxied calls (None until serving stdio over pipes).
        self.lane: ProxyLane | None = None
        self._exposed_for: Any = None
        self._exposed_map: dict[str, Any] = {}
        super().__init__(
            "jit",
            version=__version__,
            instructions=INSTRUCTIONS,
            lifespan=_lifespan,
            log_level="WARNING",
            subscriptions=self.bus,
            middleware=[self._track_connection],
        )
        if options.expose_shard is not None:
            # MCPServer builds its initialize options without NotificationOptions, so it never
            # declares tools.listChanged (SDK TODO L53); the exposed tool list does change.
            low = self._lowlevel_server
            build = low.create_initialization_options

            def with_list_changed(notification_options: NotificationOptions | None = None, *a: Any, **kw: Any) -> Any:
                return build(notification_options or NotificationOptions(tools_changed=True), *a, **kw)

            low.create_initialization_options = with_list_changed  # type: ignore[method-assign]
        _register(self)

    async def run_stdio_async(self) -> None:
        """``MCPServer.run_stdio_async`` on jit's own stdio layer: the event loop's pipe transports
        when stdin/stdout are pipes (every MCP client), so no call waits on a worker thread
        (jit/serve/stdio.py), and a :class:`~jit.serve.proxylane.ProxyLane` as the transport, which answers
        malformed lines and proxied calls itself and writes every outgoing line."""
        low = self._lowlevel_server
        async with stdio_wire() as (stdin, stdout), anyio.create_task_group() as lane_tasks:
            self.lane = ProxyLane(self, stdout, lane_tasks.start_soon)
            async with self.lane.streams(stdin) as (read_stream, write_stream):
                await low.run(read_stream, write_stream, low.create_initialization_options())
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
        if not (isinstance(server, str) and server and isinstance(tool, str) and tool):
            return None
        if inner is not None and not isinstance(inner, dict):
            return None
        return server, tool, inner or {}

    async def proxy_call(self, server: str, tool: str, arguments: dict[str, Any]
                         ) -> tuple[dict[str, Any], Callable[[], None] | None]:
        """A proxied call's ``tools/call`` result as a wire dict (as the SDK path returns it), and
        what records its usage, to run once the client has its answer (None: nothing left to do)."""
        state = self.state
        if state is None:
            raise RuntimeError("jit serve is shutting down")
        manager = state.manager
        try:
            call = await manager.call_tool(server, tool, arguments, record=False)
        except JitError as exc:
            return error_result(exc).model_dump(by_alias=True, mode="json", exclude_none=True), None
        return _wire_result(call), functools.partial(manager.record, call)

    async def _track_connection(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        # ctx.session is built per request; the connection behind it is what outlives the request.
        # The SDK has no public handle on it from a request context (mcp/server/session.py).
        self.connections.add(ctx.session._connection)
        return await call_next(ctx)

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
        """The exposed selection's Full tier (``--expose-shard``), harness tools left out: the harness runs them."""
        state = self.state
        if state is None or state.exposed is None:
            return []
        return [s for s in state.exposed.tier(Tier.FULL) if s.server != HARNESS_SERVER]

    async def list_tools(self) -> list[MCPTool]:
        """The exposed shard's Full tier (namespaced, when ``--expose-shard`` is on), then the meta-tools."""
        exposed = []
        for s in self._exposed():
            definition = full_definition(s)  # the rendering compile() gives a harness (offline note included)
            exposed.append(MCPTool(
                name=definition["name"],
                title=s.tool.tool.title,
                description=definition["description"],
                input_schema=definition["input_schema"],
                output_schema=s.tool.tool.output_schema,
                annotations=ToolAnnotations.model_validate(s.tool.tool.annotations) if s.tool.tool.annotations
                else None,
            ))
        return exposed + await super().list_tools()

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        """Proxy an exposed tool to its server; anything else is a meta-tool."""
        target = self._exposed_by_name().get(name)
        if target is None or self.state is None:
            return await super().call_tool(name, arguments, context)
        try:
            return _proxied(await self.state.manager.call_tool(target.server, target.tool_name, arguments))
        except JitError as exc:
            return error_result(exc)


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


def _register(app: JitServer) -> None:
    """The meta-tools and resources."""

    @app.tool(annotations=READ_ONLY)
    @_reporting_errors
    async def search_tools(
        query: Annotated[str, Field(min_length=1, description="What the tool should do, in plain words")],
        ctx: Context,
        shard: Annotated[str | None, Field(description="Rank for this agent role (coder, researcher, ...)")] = None,
        limit: Annotated[int, Field(ge=1, le=100, description="How many tools to return")] = 10,
    ) -> CallToolResult:
        """Find tools across every server jit knows, ranked by relevance (score 0-1, best first)."""
        ranked = await _state(ctx).rank(query, limit, shard)
        hits = [
            {
                "server": st.tool.server,
                "tool": st.tool.name,
                "name": namespaced(st.tool.server, st.tool.name),
                "score": round(float(score), 4),
                "online": st.online,
                # Flagged (hostile) text is withheld here as in a compiled tool set.
                "summary": summary_line(st.tool.description, st.analysis.condensed if st.analysis else "",
                                        st.analysis.flags if st.analysis else ()),
            }
            for st, score in ranked
        ]
        return _result({"query": query, "shard": shard, "tools": hits})

    @app.tool(annotations=READ_ONLY)
    @_reporting_errors
    async def describe_tool(
        server: Annotated[str, Field(min_length=1, description="The server's name, as search_tools returns it")],
        tool: Annotated[str, Field(min_length=1, description="The tool's name on that server")],
        ctx: Context,
    ) -> CallToolResult:
        """The full definition of one tool (JSON schema), its analysis, server status and usage."""
        return _result(_state(ctx).describe(server, tool))

    @app.tool(name="call_tool", annotations=PROXY)
    @_reporting_errors
    async def call_tool_meta(
        server: Annotated[str, Field(min_length=1, description="The server's name")],
        tool: Annotated[str, Field(min_length=1, description="The tool's name on that server")],
        ctx: Context,
        arguments: Annotated[dict[str, Any] | None, Field(description="The tool's arguments")] = None,
    ) -> CallToolResult:
        """Call a tool on its server and return its result; fails at once if the server is offline."""
        return _proxied(await _state(ctx).manager.call_tool(server, tool, arguments or {}))

    @app.tool(annotations=READ_ONLY)
    @_reporting_errors
    async def compile_tools(
        shard: Annotated[str, Field(min_length=1, description="The agent role, e.g. coder, tester, researcher")],
        task: Annotated[str, Field(min_length=1, description="What the agent is spawned to do")],
        ctx: Context,
        budget: Annotated[int | None, Field(ge=1, description="Token budget (default from config)")] = None,
    ) -> CallToolResult:
        """The tool set for an agent role and task, by tier (full, condensed, minimal) within a token budget."""
        state = _state(ctx)
        toolset = await state.compile(shard, task, budget)
        if state.exposed is None:
            state.selection = toolset
        data = summarize(toolset)
        data["rendering"] = toolset.render("json")
        return _result(data, text=toolset.render("markdown"))

    @app.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True))
    @_reporting_errors
    async def reload(ctx: Context) -> CallToolResult:
        """Re-read jit's config, reconnect changed servers and re-sync the tool catalog."""
        return _result(await _state(ctx).reload())

    @app.resource("jit://servers", name="servers", mime_type="application/json",
                  description="Every server jit knows: status, tool count, last error")
    def servers_resource() -> str:
        state = app.state
        assert state is not None  # resources are read inside the lifespan
        return json.dumps(server_rows(state.config, state.store.servers(), tool_counts(state.store)), default=str)

    @app.resource("jit://selection", name="selection", mime_type="application/json",
                  description="The current selection: the exposed shard's tool set, else the last compile_tools")
    def selection_resource() -> str:
        state = app.state
        assert state is not None
        if state.selection is None:
            return json.dumps({"selection": None, "message": "nothing compiled yet: call compile_tools"})
        return json.dumps(summarize(state.selection) | {"rendering": state.selection.render("json")}, default=str)

    @app.resource("jit://tools/{server}/{tool}", name="tool", mime_type="application/json",
                  description="One tool's definition, analysis, status and usage")
    def tool_resource(server: str, tool: str) -> str:
        state = app.state
        assert state is not None
        try:
            return json.dumps(state.describe(server, tool), default=str)
        except JitError as exc:
            raise ResourceNotFoundError(exc.message) from None


@asynccontextmanager
async def _lifespan(server: MCPServer[ServeState]) -> AsyncIterator[ServeState]:
    assert isinstance(server, JitServer)
    options = server.options
    config = load_config(options.config_path)
    check_store_path(config)  # an unusable `store` is a ConfigError naming the key, not an OS traceback
    store = Store(config.store_path)
    store.set_scope(config_scope(config))  # this config's servers and the harness only (jit/catalog/ownership.py)
    try:
        embedder = SentenceTransformerEmbedder.from_config(config.embedding)
        # Load the model before the first request rather than inside it.
        await anyio.to_thread.run_sync(lambda: embedder.dimension)
        holder: dict[str, ServeState] = {}

        def changed(name: str, result: Any) -> None:
            # Discoveries made while the manager starts are covered by state.start().
            if "state" in holder:
                holder["state"].tools_changed(name, result)

        async with ClientManager(config, store, on_tools_changed=changed) as manager, \
                anyio.create_task_group() as tasks:
            state = holder["state"] = ServeState(server, options, config, store, embedder, manager, tasks.start_soon)
            await state.start()
            server.state = state
            try:
                yield state
            finally:
                server.state = None
                tasks.cancel_scope.cancel()
                await anyio.to_thread.run_sync(state.close_compiler)
    finally:
        store.close()


def create_server(options: ServeOptions) -> JitServer:
    """A ``jit serve`` server; nothing is loaded or connected until it runs."""
    return JitServer(options)


def run(options: ServeOptions) -> None:
    """Run ``jit serve`` until the client disconnects (stdio) or the process is stopped (HTTP).

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
                anyio.run(serve_http, server, options.host, options.port, access)
            else:
                server.run("stdio")
    except BaseExceptionGroup as group:
        # A failed start-up (bad rules, unreadable catalog) arrives wrapped in the SDK's task
        # groups; surface the jit error itself so the CLI prints it and exits with its code.
        found = group.subgroup(lambda e: isinstance(e, JitError))
        if found is None:
            raise
        leaf: BaseException = found
        while isinstance(leaf, BaseExceptionGroup):
            leaf = leaf.exceptions[0]
        raise leaf from None
