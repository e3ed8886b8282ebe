"""``jit serve``: jit itself as an MCP server.

Any MCP client (Claude Code, Claude Desktop, an agent harness) connects to jit
once and gets selection over every server jit knows, through its meta-tools
in the spirit of search → describe → execute registries (``search_tools``,
``describe_tool``, ``call_tool``, ``compile_tools``, ``reload``: jit/serve/metatools.py)
and its resources (``jit://servers``, ``jit://selection``, ``jit://tools/{server}/{tool}``:
jit/serve/resources.py); the upstreams' resources and prompts pass through beside them
(jit/serve/passthrough.py). The server's ``instructions`` name the configured servers
(jit/serve/early.py builds them, for the early ``initialize`` answer and this server alike).

:class:`JitServer` here is the ``MCPServer`` that holds them: with ``--expose-shard SHARD
[--task TEXT]``, ``tools/list`` also returns that shard's compiled Full tier under
namespaced names (``server__tool``), each proxied on call, so a client's permission rules
apply per upstream tool; the meta-tool ``set_task(task)`` recompiles it for a new task; and
``notifications/tools/list_changed`` is sent whenever ``set_task``, a reload or an
upstream change alters that selection. A call by name of a tool the role's policy
denies is refused with ``tool_denied``, as ``call_tool`` refuses it.

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

import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.to_thread
from mcp.server.connection import Connection
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.subscriptions import InMemorySubscriptionBus
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ToolsListChanged
from mcp_types import INVALID_PARAMS, CallToolResult, ToolAnnotations
from mcp_types import Tool as MCPTool
from pydantic import ValidationError

from .. import __version__
from ..catalog.ownership import open_catalog
from ..client.manager import ClientManager
from ..client.tooldefs import clean_annotations
from ..config_files import check_store_path, load_config
from ..errors import JitError, jit_error_in
from ..jsonrpc import refused_params
from ..models import HARNESS_SERVER, MAX_NAME_CHARS
from ..process import tuned, until_stopped
from . import early
from .early import config_instructions
from .httpguard import http_access, serve_http
from .metatools import arguments_error, error_result, register_meta_tools
from .passthrough import Link, Passthrough, Relay
from .proxy import proxied_call
from .proxylane import ProxyLane, ProxyTarget
from .resources import register_resources
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
        register_meta_tools(self)
        register_resources(self)
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

    async def sdk_call(self, context: Any, server: str, tool: str, arguments: dict[str, Any]) -> CallToolResult:
        """The SDK path's adapter over :func:`~jit.serve.proxy.proxied_call`, for the client of
        ``context`` (an SDK ``Context``, or None): its progress token goes upstream and the progress
        comes back; the usage is recorded before the answer, as the SDK writes it after returning."""
        assert self.state is not None
        ctx = context.request_context if context is not None and context._request_context is not None else None
        token = ctx.meta.get("progressToken") if ctx is not None and ctx.meta else None
        call, record = await proxied_call(self.state, self.relay, server, tool, arguments,
                                          link=Link.of(ctx) if ctx is not None else None,
                                          on_progress=ctx.session.report_progress if token is not None else None)
        record()
        return _proxied(call)

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
                    return arguments_error(name, exc.__cause__)
                raise
        try:
            return await self.sdk_call(context, target.server, target.tool_name, arguments)
        except JitError as exc:
            return error_result(exc)


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
