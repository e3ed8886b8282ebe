"""ClientManager: a live, truthful view of every configured MCP server.

Each enabled server gets one *upstream*: a supervisor task that owns its own
cancel scope, transport, :class:`~mcp.client.session.ClientSession` and (for
stdio) child process. Nothing is shared between upstreams, so one server that
hangs, crashes or takes its HTTP transport down with an ``ExceptionGroup``
cannot delay or cancel another beyond its own timeout.

Status transitions (persisted in the catalog with timestamps and the last error)::

    unknown/disconnected/error ──► connecting ──► connected ──► disconnected ──► connecting …
                                        │                             (backoff with jitter,
                                        └──► error (never connected)   reconnect_attempts)
                                                                      └──► error (gave up)

Discovery lists tools (following ``nextCursor``), resources and prompts where
the server offers them, and writes them to the :class:`~jit.catalog.store.Store`.
``notifications/tools/list_changed`` (and the resource/prompt ones) re-run it.
A malformed tool is dropped with a recorded reason, never the whole listing.

Offline fallback: when a server goes away its tools stay in the catalog with
the server's status, so selection still sees them; :meth:`ClientManager.call_tool`
refuses a call to them at once with :class:`~jit.errors.ServerUnavailableError`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import logging
import math
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import anyio
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from pydantic import ValidationError

from ..catalog.ownership import config_identity
from ..catalog.store import Store
from ..config import Config
from ..errors import (
    ServerConnectError,
    ServerDisconnectedError,
    ServerNotRegisteredError,
    ServerTimeoutError,
    ServerUnavailableError,
    StoreError,
    ToolCallError,
    ToolNotApprovedError,
    ToolNotFoundError,
    bounded,
)
from ..models import ServerRecord, ServerStatus, SyncResult
from ..schemas import structured_content_error
from ..servers_config import UnresolvedServerConfig
from .calls import BadResult, CallResult, bounded_data, check_sendable, send_call
from .delivery import NotSent, connection_closed, timed_out
from .listings import wire
from .peer import ClientPeer
from .transports import describe_error
from .upstream import ServerConfig, Upstream

__all__ = ["ClientManager", "raise_catalog_error"]

log = logging.getLogger(__name__)


# --------------------------------------------------------------------------- the manager


class ClientManager:
    """Connects to every configured MCP server and keeps the catalog true to them.

    Use as ``async with ClientManager(config, store) as mgr:`` (or :meth:`start` /
    :meth:`close`). Needs the asyncio backend (each server runs in its own task).

    ``on_tools_changed(server, result)`` is called after every discovery that
    added, changed or removed tools; a coroutine function is awaited. It runs in
    the server's own task: keep it short, or hand heavy work elsewhere.
    """

    def __init__(
        self,
        config: Config,
        store: Store,
        *,
        on_tools_changed: Callable[[str, SyncResult], Any] | None = None,
        peer: ClientPeer | None = None,
        on_listing_changed: Callable[[str, frozenset[str]], Awaitable[None]] | None = None,
    ) -> None:
        self.config = config
        self.store = store
        self.on_tools_changed = on_tools_changed
        #: The client jit relays for (``jit serve``): what upstreams may ask of it, and their logs.
        self.peer = peer
        #: Called with a server's name and which of its listings changed (resources, resource_templates, prompts).
        self.on_listing_changed = on_listing_changed
        #: The ``logging/setLevel`` a client asked for, sent to each upstream that logs (None: never asked).
        self.log_level: types.LoggingLevel | None = None
        self._upstreams: dict[str, Upstream] = {}
        self._started = False

    async def __aenter__(self) -> ClientManager:
        try:
            await self.start()
        except BaseException:
            await self.close()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ---------------------------------------------------------------- lifecycle

    async def start(self) -> None:
        """Connect every enabled server concurrently.

        Returns once each one is connected and discovered, or has failed or timed
        out (each bounded by its own ``timeout``). Failed servers keep retrying in
        the background per the ``connection`` settings. A catalog that could not take
        a server's discovery (a full disk, a damaged file) raises its
        :class:`~jit.errors.StoreError` once every server has settled: no server is
        blamed for it (:attr:`Upstream.catalog_error`).
        """
        if self._started:
            return
        launched = self.launch()
        for up in launched:
            await up.settled.wait()
        raise_catalog_error(launched)

    def launch(self) -> list[Upstream]:
        """Start connecting every enabled server and return at once, for a caller that serves
        meanwhile (``jit serve``): each connection goes on in its own task, and a call to a
        server still on its first attempt waits for it (:meth:`call_tool`). Returns the
        upstreams started (none if already started)."""
        if self._started:
            return []
        self._started = True
        return self._begin(self.config.servers.items())

    def _upstream(self, name: str, cfg: ServerConfig) -> Upstream:
        def register() -> None:
            self.store.ensure_server(name, cfg.transport, owner=config_identity(self.config))

        return Upstream(name, cfg, self.store, lambda: self.config.connection, self._notify, peer=self.peer,
                        on_listing_changed=self.on_listing_changed, log_level=lambda: self.log_level,
                        register=register)

    def _begin(self, servers: Iterable[tuple[str, ServerConfig]]) -> list[Upstream]:
        started: list[Upstream] = []
        owner = config_identity(self.config)
        for name, cfg in servers:
            self.store.ensure_server(name, cfg.transport, owner=owner)
            if not cfg.enabled:
                # Not connected, and nothing written: the catalog's status is shared by the configs of
                # a catalog, and "disabled" is this config's own view (Config.server_status).
                continue
            if isinstance(cfg, UnresolvedServerConfig):
                # An unset environment variable: never started, the reason recorded as a failed
                # attempt's would be (a live connection another process holds still wins).
                self._set_status(name, ServerStatus.ERROR, error=cfg.problem)
                continue
            up = self._upstreams[name] = self._upstream(name, cfg)
            up.start()
            started.append(up)
        return started

    async def _launch(self, servers: Iterable[tuple[str, ServerConfig]]) -> None:
        for up in self._begin(servers):
            await up.settled.wait()

    async def close(self) -> None:
        """Stop every connection and child process.

        A server this process held connected is left ``idle`` (closed by jit,
        reachable at the last contact), so a one-shot CLI run does not make its
        tools look offline; a server another live process (``jit serve``) also
        holds keeps that process's status (see :mod:`jit.catalog.store_servers`).
        """
        ups = list(self._upstreams.values())
        self._upstreams.clear()
        self._started = False
        await asyncio.gather(*(self._stop(up) for up in ups))
        try:
            self.store.release_holder()
        except StoreError as exc:  # readers correct a dead holder's statuses (jit/catalog/store_servers.py)
            log.warning("the statuses this process held could not be released: %s", exc.message)

    async def _stop(self, up: Upstream) -> None:
        await up.stop()
        try:
            self._release(up)
        except StoreError as exc:  # a catalog that cannot be written: every other server still stops
            log.warning("server %s: its status could not be recorded: %s", up.name, exc.message)

    def _release(self, up: Upstream) -> None:
        own = self.store.held_status(up.name)  # this process's hold, not whatever the summary shows
        if own is ServerStatus.CONNECTED:
            self._set_status(up.name, ServerStatus.IDLE)
        elif own is ServerStatus.CONNECTING:
            # Stopped mid-attempt (this process is closing, e.g. Ctrl-C during a sync): "error" if it
            # never connected and has failed before; "idle" if it has answered before and nothing says
            # it is down now (its tools must not read as offline because the sync was interrupted);
            # "unknown" if it has never answered nor failed (it was never connected, so not "disconnected").
            record = self.store.server(up.name, everything=True)
            self._set_status(up.name, _interrupted_status(record, up.ever_connected))

    async def apply_config(self, config: Config) -> None:
        """Reload: connect added servers, stop removed ones, restart changed ones.

        ``connection`` settings apply at once to every server's next backoff and ping.
        """
        old, self.config = self.config, config
        if old.connection != config.connection:
            for up in self._upstreams.values():
                up.wake()
        stale = [n for n in old.servers if n not in config.servers]
        changed = [n for n, c in config.servers.items() if n in old.servers and old.servers[n] != c]
        await asyncio.gather(*(self._stop(self._upstreams.pop(n)) for n in stale + changed if n in self._upstreams))
        fresh = [(n, c) for n, c in config.servers.items() if n not in old.servers or n in changed]
        if self._started:
            await self._launch(fresh)

    # ---------------------------------------------------------------- status

    def _set_status(self, name: str, status: ServerStatus, **kw: Any) -> None:
        try:
            self.store.set_server_status(name, status, **kw)
        except ServerNotRegisteredError:
            # Forgotten by another process meanwhile (a server this config no longer names, synced
            # away while it was served): no row, nothing to record. A server still served registers
            # itself again at its next write (Upstream._registered).
            log.info("server %s: not in the catalog any more; its %s status is not recorded", name, status.value)

    def statuses(self) -> dict[str, ServerRecord]:
        """Every configured server as the catalog records it (status, timestamps, last error), its
        status as this config sees it (``disabled`` here is this config's own: Config.server_status)."""
        records = {r.name: r for r in self.store.servers()}
        return {n: dataclasses.replace(records[n], status=self.config.server_status(n, records[n].status,
                                                                                   records[n].last_seen))
                for n in self.config.servers if n in records}

    def warnings(self, server: str) -> list[str]:
        """What the last discovery of ``server`` dropped or could not list."""
        up = self._upstreams.get(server)
        return list(up.warnings) if up is not None else []

    def session(self, server: str) -> ClientSession | None:
        """The live SDK session of ``server``, or None while it is not connected.

        For requests jit does not wrap (``resources/read``, ``prompts/get``, …). The
        manager owns it: do not close it, and expect it to be replaced on reconnect.
        """
        up = self._upstreams.get(server)
        return up.session if up is not None and up.connected else None

    def listings(self) -> list[tuple[str, dict[str, list[dict[str, Any]]]]]:
        """Each connected server's resources, resource templates and prompts as it listed them
        (wire dicts), in the config's order."""
        return [(name, up.listing) for name, up in self._upstreams.items() if up.connected]

    async def settled_listings(self) -> list[tuple[str, dict[str, list[dict[str, Any]]]]]:
        """:meth:`listings` once every server is past its first connection attempt (each bounded
        by its own ``timeout``, all at once), as a plain proxy answers a listing only after
        connecting its upstream: a client that lists once, right after starting jit (the MCP
        Inspector's CLI, a client's start-up), sees the upstreams' resources and prompts rather
        than none. Later listings, and servers that settled, return at once."""
        await self.settle()
        return self.listings()

    async def settle(self, within: float | None = None) -> dict[str, float]:
        """Wait until every server is past its first connection attempt: each bounded by its own
        ``timeout``, all at once, and the whole by ``within`` seconds when given. Returns the
        servers still on their first attempt, each with the seconds since it began."""
        pending = [name for name, up in self._upstreams.items() if not up.settled.is_set()]
        if pending:
            with anyio.move_on_after(math.inf if within is None else within):
                async with anyio.create_task_group() as tg:
                    for name in pending:
                        tg.start_soon(self._settled, name)
        now = time.monotonic()
        return {name: now - up.began for name, up in self._upstreams.items() if not up.settled.is_set()}

    async def request(self, server: str, method: str, params: dict[str, Any], result: type[Any], *,
                      subject: str, on_progress: Any = None) -> dict[str, Any]:
        """Send ``method`` (``resources/read``, ``prompts/get``, ...) to ``server`` and return its
        result as the server sent it, once ``result`` (an SDK model) accepts it.

        ``subject`` names what is asked for in errors. A JSON-RPC error from the server is
        raised as it came (an :class:`~mcp.shared.exceptions.MCPError`, the server's own code),
        so a proxy passes it on; jit's own failures are the usual errors:
        :class:`ServerUnavailableError` (not connected; nothing sent), :class:`ServerTimeoutError`
        (after the server's ``call_timeout``), :class:`ServerDisconnectedError`,
        :class:`ToolCallError` (a result that breaks the MCP schema)."""
        up = await self._settled(server)
        if up is None or not up.connected or up.dispatcher is None:
            record = self.store.server(server)
            raise ServerUnavailableError(server=server,
                                         status=record.status.value if record else ServerStatus.UNKNOWN.value,
                                         last_error=record.last_error if record else None)
        limit = up.config.call_timeout
        opts: dict[str, Any] = {"timeout": limit, "headers": {MCP_PROTOCOL_VERSION_HEADER: up.protocol_version}}
        if on_progress is not None:
            opts["on_progress"] = on_progress
        try:
            raw = await up.dispatcher.send_raw_request(method, params, opts)  # type: ignore[arg-type]
            result.model_validate(raw, by_name=False)
        except MCPError as exc:
            if timed_out(exc, method):
                raise ServerTimeoutError(f"{subject} on server {server!r} did not answer within {limit:g}s",
                                         server=server, timeout=limit) from None
            if connection_closed(exc):
                up.suspect()
                raise ServerDisconnectedError(f"server {server!r} went away while asked for {subject}",
                                              server=server) from None
            raise
        except ValidationError as exc:
            raise ToolCallError(f"server {server!r} answered {method} with an invalid result: "
                                f"{describe_error(exc)}", server=server) from None
        up.touch()
        return raw

    async def set_logging_level(self, level: types.LoggingLevel) -> None:
        """A client's ``logging/setLevel``: sent to every connected server that logs, and to each
        server that connects later."""
        self.log_level = level
        await asyncio.gather(*(up.send_log_level() for up in list(self._upstreams.values()) if up.connected))

    async def roots_changed(self) -> None:
        """A client's ``notifications/roots/list_changed``, passed to every connected server."""
        for up in list(self._upstreams.values()):
            if up.connected and up.session is not None:
                await up.session.send_roots_list_changed()

    async def _settled(self, server: str) -> Upstream | None:
        """``server``'s upstream once its first connection attempt is over (bounded by its ``timeout``)."""
        up = self._upstreams.get(server)
        if up is not None and not up.settled.is_set():
            with anyio.move_on_after(up.config.timeout):
                await up.settled.wait()
            up = self._upstreams.get(server)
        return up

    def stderr_tail(self, server: str, max_chars: int = 4000) -> str:
        """The last of a stdio server's stderr (empty for HTTP/SSE or unknown servers)."""
        up = self._upstreams.get(server)
        return up.stderr.text(max_chars) if up is not None and up.stderr is not None else ""

    async def _notify(self, server: str, result: SyncResult | None) -> None:
        if self.on_tools_changed is None or result is None or not result.touched:
            return
        try:
            value = self.on_tools_changed(server, result)
            if inspect.isawaitable(value):
                await value
        except Exception:
            log.exception("on_tools_changed callback failed for server %s", server)

    # ---------------------------------------------------------------- discovery on demand

    async def refresh(self, server: str | None = None) -> dict[str, SyncResult]:
        """Re-discover ``server`` (or every enabled server); returns what changed per server.

        A connected server is re-listed in place. A named server that is not
        connected gets a fresh connection attempt at once (with a fresh reconnect
        budget), and :class:`ServerConnectError` if that fails. With ``server=None``
        only servers that gave up reconnecting are restarted; those still retrying
        in the background are left to it. Servers not connected afterwards are left
        out of the result (their status says why). A server using an unset environment variable
        is never started (:class:`ServerConnectError` when named).
        """
        if server is not None and server not in self.config.servers:
            raise ToolNotFoundError.unconfigured(server)
        if server is not None and server in self.config.unresolved():
            raise ServerConnectError(f"cannot start server {server!r}: {self.config.unresolved()[server]}",
                                     server=server, last_error=self.config.unresolved()[server])
        names = [server] if server is not None else [n for n, c in self.config.servers.items() if c.enabled]
        results: dict[str, SyncResult] = {}

        async def one(name: str) -> None:
            up = self._upstreams.get(name)
            if up is None:
                return
            if up.connected:
                try:
                    with anyio.fail_after(up.config.timeout):
                        res = await up.discover({"tools", "resources", "prompts"})
                except (TimeoutError, MCPError) as exc:
                    if server is not None:
                        why = f"timed out after {up.config.timeout:g}s" if isinstance(exc, TimeoutError) \
                            else describe_error(exc)
                        raise ServerConnectError(f"re-discovery of {name!r} failed: {why}", server=name) from exc
                    return
                if res is not None:
                    self._set_status(name, ServerStatus.CONNECTED, error=up.warning_text())
                    await self._notify(name, res)
                    results[name] = res
                return
            if server is None and not up.gave_up:
                return
            await self._stop(up)
            fresh = self._upstreams[name] = self._upstream(name, up.config)
            fresh.start()
            await fresh.settled.wait()
            raise_catalog_error([fresh])
            if fresh.first_result is not None:
                results[name] = fresh.first_result
            elif server is not None:
                record = self.store.server(name)
                raise ServerConnectError(
                    f"cannot connect to server {name!r}: {record.last_error if record else 'unknown error'}",
                    server=name, last_error=record.last_error if record else None,
                )

        await asyncio.gather(*(one(n) for n in names))
        return results

    # ---------------------------------------------------------------- calls

    def _callable(self, up: Upstream | None, server: str, tool: str) -> Upstream:
        """``up`` if a call of ``tool`` may be sent on it now; else the error saying why nothing is sent."""
        if up is None or up.session is None or up.dispatcher is None or not up.connected:
            raise self._unavailable(server, tool)
        if tool not in up.tool_names:
            raise ToolNotFoundError.no_tool(server, tool)
        if self.config.security.pin_definitions and self.store.awaiting_approval(server, tool):
            raise ToolNotApprovedError(server=server, tool=tool)  # a rug pull until reviewed: nothing sent
        return up

    async def _replacement(self, up: Upstream, attempt: int) -> Upstream | None:
        """``up``'s server once the connection attempt after ``attempt`` (the one whose connection
        died) has connected or failed, bounded by a backoff and the server's own ``timeout``: its
        upstream, connected or not."""
        up.suspect()
        await up.next_attempt(attempt, self.config.connection.reconnect_max_delay + up.config.timeout)
        return self._upstreams.get(up.name)

    def _unavailable(self, server: str, tool: str) -> ServerUnavailableError:
        """Why a call to ``server`` (not connected) is refused: its status and last error, whether or
        not ``tool`` is among its cached tools. A server that never listed its tools (it hangs or
        crashes at start, its URL is dead, its config names an unset variable) has none to look
        ``tool`` up in, and what to fix is the server."""
        record = self.store.server(server)
        status = (self.config.server_status(server, record.status, record.last_seen) if record
                  else ServerStatus.UNKNOWN).value
        last_error = record.last_error if record else None
        cfg = self.config.servers.get(server)
        if isinstance(cfg, UnresolvedServerConfig) and cfg.enabled:
            last_error = cfg.problem  # this process's own reason, whatever another one recorded since
        note = None
        if self.store.tool(server, tool) is None:
            listed = (record is not None and record.last_seen is not None) or bool(self.store.tool_heads([server]))
            note = f"its last tool listing has no tool {tool!r}" if listed else "it never listed its tools"
        return ServerUnavailableError(server=server, tool=tool, status=status, last_error=last_error, note=note)

    async def call_tool(
        self, server: str, tool: str, arguments: dict[str, Any] | None = None, *, timeout: float | None = None,
        record: bool = True, on_progress: Any = None,
    ) -> CallResult:
        """Call ``tool`` on ``server`` with ``timeout`` (default: the server's ``call_timeout``).

        The call's usage is recorded in the catalog before returning; with
        ``record=False`` a returned result is left for the caller to pass to
        :meth:`record` (a proxy answers its client first). Failures are always
        recorded here.

        Raises :class:`ToolNotFoundError` (a server the config does not name, or a tool the
        connected server does not list), :class:`ServerUnavailableError` (not connected, whatever
        the tool: its status and last error; nothing was sent),
        :class:`ToolNotApprovedError` (``security.pin_definitions`` and the tool's
        definition changed since it was approved; nothing was sent),
        :class:`ServerTimeoutError`, :class:`ServerDisconnectedError` (the
        connection dropped mid-call: the tool may or may not have run, and the call is
        not sent again) or :class:`ToolCallError` (JSON-RPC error or malformed result).
        A call that finds the connection dead with none of it sent (a Streamable HTTP
        server gone while idle: its POST could not connect) is sent once more on the
        connection that replaces it, or raises :class:`ServerUnavailableError`. A result with ``isError`` is returned with
        ``is_error=True`` and counted as a failed call. ``on_progress(progress, total, message)``
        receives the server's progress notifications for the call (a progress token is sent).
        """
        if server not in self.config.servers:
            raise ToolNotFoundError.unconfigured(server, tool)
        # Still on its first connection attempt (started by launch()): wait for it, bounded by the
        # server's timeout as the attempt itself is, rather than refuse a call that would succeed a moment later.
        up = self._callable(await self._settled(server), server, tool)
        check_sendable(server, tool, arguments)
        limit = timeout if timeout is not None else up.config.call_timeout
        params: dict[str, Any] = {"name": tool}
        if arguments is not None:
            params["arguments"] = arguments
        opts: dict[str, Any] = {"timeout": limit}
        if on_progress is not None:
            opts["on_progress"] = on_progress
        started, attempt = time.perf_counter(), up.attempts
        try:
            try:
                raw = await send_call(up, params, opts)
            except NotSent:
                # The connection had died while idle (an HTTP server killed between calls is found by
                # the next request) and nothing of the call left jit: it is sent once more, on the
                # connection that replaces the dead one, or refused as never sent.
                up = self._callable(await self._replacement(up, attempt), server, tool)
                started = time.perf_counter()
                raw = await send_call(up, params, opts)
            result = types.CallToolResult.model_validate(raw)
            if not result.is_error:
                # Structured content against the tool's output schema as discovery kept it, by jit's
                # own check: the SDK's runs Python regexes on the event loop.
                problem = structured_content_error(up.output_schemas.get(tool), result.structured_content,
                                                   given="structured_content" in result.model_fields_set)
                if problem is not None:
                    raise BadResult(f"its structured content does not match its output schema: {problem}")
        except NotSent:
            raise self._unavailable(server, tool) from None
        except MCPError as exc:
            latency = (time.perf_counter() - started) * 1000
            message = bounded(exc.message)  # the server's own text: a line, not megabytes
            self.store.record_call(server, tool, ok=False, latency_ms=latency, error=message)
            if timed_out(exc, "tools/call"):
                raise ServerTimeoutError(f"tool {tool!r} on server {server!r} did not answer within {limit:g}s",
                                         server=server, tool=tool, timeout=limit) from None
            if connection_closed(exc):
                up.suspect()
                raise ServerDisconnectedError(
                    f"server {server!r} went away during a call to {tool!r}; the tool may or may not have run",
                    server=server, tool=tool) from None
            raise ToolCallError(f"tool {tool!r} on server {server!r} failed: {message}", server=server,
                                tool=tool, rpc_code=exc.code, data=bounded_data(exc.data)) from None
        except (ValidationError, RuntimeError, BadResult) as exc:
            # A result that breaks the MCP schema, or structured content that breaks the output schema.
            latency = (time.perf_counter() - started) * 1000
            message = str(exc) if isinstance(exc, BadResult) else describe_error(exc)
            self.store.record_call(server, tool, ok=False, latency_ms=latency, error=message)
            raise ToolCallError(f"tool {tool!r} on server {server!r} returned an invalid result: {message}",
                                server=server, tool=tool) from None
        latency = (time.perf_counter() - started) * 1000
        content = [wire(c) for c in result.content]
        call = CallResult(server=server, tool=tool, content=content, structured_content=result.structured_content,
                          is_error=bool(result.is_error), latency_ms=latency)
        up.touch()
        if record:
            self.record(call)
        return call

    def record(self, call: CallResult) -> None:
        """Count a returned call in the catalog's usage (what :meth:`call_tool` does unless told not to)."""
        self.store.record_call(call.server, call.tool, ok=not call.is_error, latency_ms=call.latency_ms,
                               error=(call.text()[:500] or "isError") if call.is_error else None)


def raise_catalog_error(upstreams: Iterable[Upstream]) -> None:
    """Raise the catalog error one of ``upstreams`` met (:attr:`Upstream.catalog_error`), if any:
    the catalog's failure, reported as such rather than as a server's status."""
    for up in upstreams:
        if up.catalog_error is not None:
            raise up.catalog_error


def _interrupted_status(record: ServerRecord | None, ever_connected: bool) -> ServerStatus:
    """What a server stopped mid-connection-attempt by its own process reads as, from what the
    catalog knew of it (``record``) and whether this process ever had it connected."""
    seen = record is not None and record.last_seen is not None
    error = record is not None and record.last_error is not None
    if error and not ever_connected:
        return ServerStatus.ERROR  # it has failed before and did not answer this time either
    if seen and not error:
        return ServerStatus.IDLE  # it answered before and nothing says it is down now
    if not seen and not error:
        return ServerStatus.UNKNOWN  # never answered nor failed: never connected, so not "disconnected"
    return ServerStatus.DISCONNECTED  # it answered, then failed, and was reconnecting
