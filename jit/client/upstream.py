"""One upstream MCP server: its connection supervisor, one connection, and its discovery.

:class:`Upstream` is what :class:`~jit.client.manager.ClientManager` runs per enabled
server. Each one owns a task, a cancel scope, a transport, an SDK
:class:`~mcp.client.session.ClientSession` and (for stdio) a child process, and
shares none of them: one server's hang, crash or dying HTTP transport (which
raises an ``ExceptionGroup`` that cancels everything inside it) stays inside its
own scope. The catalog (:class:`~jit.catalog.store.Store`) is the only shared state.

The supervisor connects, discovers, serves (re-discovery on ``list_changed``, pings) and
reconnects with backoff. Discovery reads the server's listings through
:class:`~jit.client.listings.ListingReader`, turns its tools into definitions
(:func:`~jit.client.tooldefs.convert_tools`: one bad tool is dropped with its reason, sizes are
bounded) and writes them to the catalog.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import random
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher
from mcp_types.version import LATEST_HANDSHAKE_VERSION

from .. import __version__
from ..catalog.store import Store
from ..config import ConnectionConfig
from ..errors import CatalogDamagedError, ServerNotRegisteredError, StoreError, jit_error_in
from ..models import ServerStatus, SyncResult
from ..servers_config import HttpServerConfig, SseServerConfig, StdioServerConfig
from .delivery import NOT_CONNECTED, connection_closed
from .listings import ListingReader, wire
from .peer import ClientPeer, session_callbacks
from .tooldefs import (
    MAX_ANNOTATIONS_BYTES,
    MAX_NAME_CHARS,
    MAX_STORED_DESCRIPTION_CHARS,
    MAX_TITLE_CHARS,
    convert_tools,
    cut_text,
)
from .transports import InProcessServerConfig, StderrTail, describe_error, open_transport, root_cause

__all__ = ["CLIENT_INFO", "MAX_GARBAGE_MESSAGES", "ServerConfig", "Upstream", "backoff_delay"]

log = logging.getLogger("jit.client.manager")

#: What one upstream connects to: a config file's entry, or a server object in this process.
ServerConfig = StdioServerConfig | HttpServerConfig | SseServerConfig | InProcessServerConfig

#: How jit introduces itself in ``initialize``.
CLIENT_INFO = types.Implementation(name="jit", version=__version__)

#: Non-JSON-RPC messages (stdout noise, undecodable frames) tolerated per connection.
#: A server that prints a banner survives; one that floods its protocol stream is dropped.
MAX_GARBAGE_MESSAGES = 50
#: Re-discoveries a list_changed notification starts are at least this far apart (seconds): the
#: notifications that arrive meanwhile are answered by one listing. A server that announces a change
#: every few milliseconds would otherwise be listed, analysed and stored as fast as it can talk.
MIN_REDISCOVERY_INTERVAL = 1.0

#: Seconds between tries to write a re-discovered tool list the catalog could not take (unreachable).
CATALOG_RETRY_INTERVAL = 5.0

#: The listings kept besides tools: what a proxy re-lists to its own client.
LISTINGS = ("resources", "resource_templates", "prompts")

#: ``touch_server`` at most this often per server on the call path (one write per call is enough).
_TOUCH_EVERY = 1.0
_T = TypeVar("_T")


def backoff_delay(attempt: int, initial: float, maximum: float, rng: random.Random | None = None) -> float:
    """Delay before reconnect attempt ``attempt`` (0-based): exponential, capped, "equal jitter".

    Half the capped delay is fixed and half random, so servers restarted together
    are not all hit at the same instant, yet no retry comes sooner than half its step.
    """
    step = min(maximum, initial * (2 ** min(attempt, 32)))
    return step / 2 + (rng or random).uniform(0, step / 2)


# --------------------------------------------------------------------------- one upstream


class Upstream:
    """One configured server: its supervisor task, current session and discovery state.

    The supervisor connects, discovers, serves (list_changed, pings) and, when the
    connection ends, waits a backoff and tries again until the reconnect budget is
    spent. Everything it opens lives inside its own cancel scope, in its own task.
    ``settings`` is read live, so a reload's connection settings apply at once.
    """

    def __init__(
        self,
        name: str,
        config: ServerConfig,
        store: Store,
        settings: Callable[[], ConnectionConfig],
        on_tools_changed: Callable[[str, SyncResult | None], Awaitable[None]],
        *,
        peer: ClientPeer | None = None,
        on_listing_changed: Callable[[str, frozenset[str]], Awaitable[None]] | None = None,
        log_level: Callable[[], types.LoggingLevel | None] = lambda: None,
        register: Callable[[], None] | None = None,
    ) -> None:
        self.name = name
        #: Registers the server in the catalog again (``ensure_server`` for this config) when another
        #: process forgot it while this one serves it.
        self._register = register
        #: Where this server's requests to its client (sampling, elicitation, roots) and logs go.
        self.peer = peer
        self._on_listing_changed = on_listing_changed
        self._log_level = log_level
        #: The server's resources, resource templates and prompts as it last listed them (wire
        #: dicts; empty while not connected), for a proxy to list and route (jit serve).
        self.listing: dict[str, list[dict[str, Any]]] = {key: [] for key in LISTINGS}
        self._announced = dict(self.listing)
        self.config = config
        self.store = store
        self._settings = settings
        self._on_tools_changed = on_tools_changed
        #: The SDK session of the current connection attempt (set before discovery).
        self.session: ClientSession | None = None
        self.dispatcher: JSONRPCDispatcher | None = None
        #: Connected and discovered: calls may be sent.
        self.connected = False
        self.tool_names: frozenset[str] = frozenset()
        #: Output schemas of the listed tools that declare one (checked at discovery), by name.
        self.output_schemas: dict[str, dict[str, Any]] = {}
        #: The revision the handshake settled on (sent with each raw request, as the session does).
        self.protocol_version = LATEST_HANDSHAKE_VERSION
        self.warnings: list[str] = []
        self.stderr: StderrTail | None = None
        self.ever_connected = False
        #: The catalog failed this server's last attempt (a full disk, a damaged file, a PostgreSQL server
        #: down): not the server's error, so not written as its status; a sync raises it (:meth:`_catalog_failed`).
        self.catalog_error: StoreError | None = None
        self.settled = anyio.Event()
        self.first_result: SyncResult | None = None
        #: Connection attempts begun, and the last one that has settled (connected, or failed
        #: without connecting): what :meth:`next_attempt` waits on.
        self.attempts = 0
        self.settled_attempt = 0
        #: When :meth:`start` launched the supervisor (``time.monotonic()``).
        self.began = 0.0
        self._attempt_settled = anyio.Event()
        self._ended = False
        self._scope = anyio.CancelScope()
        self._task: asyncio.Task[None] | None = None
        self._wake = anyio.Event()
        self._pending: set[str] = set()
        self._closed = False
        self._check = False
        self._garbage = 0
        self._discover_lock = anyio.Lock()
        self._last_touch = 0.0
        self._last_rediscovery = -math.inf

    # ---------------------------------------------------------------- lifecycle

    def _status(self, status: ServerStatus, **kw: Any) -> None:
        self._registered(lambda: self.store.set_server_status(self.name, status, **kw))

    def _registered(self, write: Callable[[], _T]) -> _T:
        """``write()``; if the catalog forgot the server meanwhile (another process pruned it, or a
        sync of this config after it was removed from the file), register it again and write: this
        process still serves it, and its supervisor must not die of it."""
        try:
            return write()
        except ServerNotRegisteredError:
            if self._register is None:
                raise
            log.warning("server %s: it was forgotten in the catalog by another process while served here; "
                        "registered again", self.name)
            self._register()
            return write()

    def start(self) -> None:
        """Mark the server connecting and launch its supervisor task (asyncio backend)."""
        self.began = time.monotonic()
        self._status(ServerStatus.CONNECTING)
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"jit-upstream-{self.name}")

    async def stop(self) -> None:
        """Cancel the supervisor and wait for its transport and child process to be gone."""
        self._scope.cancel()
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)

    @property
    def gave_up(self) -> bool:
        """The supervisor has ended (reconnect budget spent); only a restart revives the server."""
        return self._task is not None and self._task.done()

    def wake(self) -> None:
        """Make the serving loop re-read its settings (ping interval) now."""
        self._wake.set()

    def suspect(self) -> None:
        """A call saw the connection fail: ping now rather than at the next interval.

        Streamable HTTP reports a dead server per request and may keep its streams
        open, so without this the server could read ``connected`` until the next ping.
        """
        self._check = True
        self._wake.set()

    async def _run(self) -> None:
        retries = 0
        try:
            with self._scope:
                while True:
                    began = anyio.current_time()
                    try:
                        was_connected, error = await self._attempt()
                        self.catalog_error = None
                    except StoreError as exc:
                        if not self._catalog_failed(exc):
                            return
                        was_connected, error = False, f"the catalog failed: {exc.message}"
                    conn = self._settings()
                    # Only a connection that stayed up a while restores the reconnect budget,
                    # so a server that connects and at once drops again ends in error.
                    if was_connected and anyio.current_time() - began >= conn.reconnect_max_delay:
                        retries = 0
                    if retries >= conn.reconnect_attempts:
                        if self.catalog_error is not None:  # the catalog's failure is no status of the server's
                            return
                        why = f"gave up after {retries} reconnect attempts" if retries else "reconnect_attempts is 0"
                        self._status(ServerStatus.ERROR, error=f"{error} ({why})")
                        return
                    delay = backoff_delay(retries, conn.reconnect_initial_delay, conn.reconnect_max_delay)
                    retries += 1
                    log.info("server %s: reconnecting in %.2fs (attempt %d): %s", self.name, delay, retries, error)
                    await anyio.sleep(delay)
        except Exception:  # a bug here must not take the manager (or the caller's loop) down
            log.exception("server %s: supervisor failed", self.name)
            self._status(ServerStatus.ERROR, error="internal error in jit's client")
        finally:
            self._ended = True
            self._attempt_settled.set()
            self.settled.set()

    def _settle_attempt(self) -> None:
        """The current attempt has connected, or failed without connecting: wake who waits for it."""
        self.settled_attempt = self.attempts
        self._attempt_settled.set()
        self._attempt_settled = anyio.Event()

    async def next_attempt(self, after: int, within: float) -> bool:
        """Wait, at most ``within`` seconds, for a connection attempt begun after attempt ``after``
        to connect or fail (or for the supervisor to end); True when such a connection is up."""
        with anyio.move_on_after(within):
            while self.settled_attempt <= after and not self._ended:
                await self._attempt_settled.wait()
        return self.connected and self.settled_attempt > after

    def _catalog_failed(self, exc: StoreError) -> bool:
        """The catalog failed a write or read while this server was connecting or served (a full
        disk, a damaged file, a read-only or unreachable PostgreSQL server): the catalog's fault, not
        the server's, so nothing is written as its status or last error (no write would take now),
        and the error is kept in :attr:`catalog_error` for whoever waits on the server: a sync raises
        it. One the catalog may take again soon (:meth:`Store.unreachable`) is tried again with the
        reconnect backoff (True); any other ends the supervisor (False)."""
        self.catalog_error = exc
        again = self.store.unreachable(exc)
        log.warning("server %s: not connected, the catalog failed%s: %s", self.name,
                    " (trying again)" if again else "", exc.message)
        self._settle_attempt()  # the attempt failed without connecting: a call waiting on it hears so
        self.settled.set()
        return again

    # ---------------------------------------------------------------- one connection

    async def _attempt(self) -> tuple[bool, str]:
        """Connect, discover, serve until the connection ends. Returns (was connected, why it ended)."""
        self.attempts += 1
        self._status(ServerStatus.CONNECTING)
        self._closed = False
        self._garbage = 0
        self._pending.clear()
        self._wake = anyio.Event()
        stderr = self.stderr = StderrTail() if isinstance(self.config, StdioServerConfig) else None
        timeout = self.config.timeout
        phase = "connect"
        connected = False
        error = "connection closed"
        catalog: StoreError | None = None
        # What this connection offers the server (jit serve: what its client offers; may wait for it).
        callbacks = await session_callbacks(self.name, self.peer)
        # One deadline over connect + initialize + discovery, lifted once connected. A scope
        # deadline (not fail_after around each await) because the transport and session
        # open task groups that must stay inside the scope that bounds them.
        deadline = anyio.CancelScope(deadline=anyio.current_time() + timeout)
        try:
            with deadline:
                async with anyio.create_task_group() as tg:
                    if stderr is not None:
                        tg.start_soon(stderr.pump)
                    try:
                        async with open_transport(self.config, stderr=stderr, on_close=self._on_close) as (read, write):
                            dispatcher = JSONRPCDispatcher(read, write)
                            async with ClientSession(
                                dispatcher=dispatcher, message_handler=self._on_message, client_info=CLIENT_INFO,
                                **callbacks,
                            ) as session:
                                phase = "initialize"
                                init = await session.initialize()
                                phase = "discovery"
                                self.session, self.dispatcher = session, dispatcher
                                result = await self.discover({"tools", "resources", "prompts"})
                                deadline.deadline = math.inf
                                connected = True
                                self._connected(init, result)
                                await self.send_log_level()
                                await self._announce()
                                await self._on_tools_changed(self.name, result)
                                error = await self._serve()
                    finally:
                        self.connected = False
                        self.session = self.dispatcher = None
                        tg.cancel_scope.cancel()
                        self.listing = {key: [] for key in LISTINGS}
                        with anyio.move_on_after(5, shield=True):  # a stuck client delays no reconnect
                            await self._announce()
        except Exception as exc:  # includes the ExceptionGroup a dying HTTP transport raises
            found = jit_error_in(exc)
            catalog = found if isinstance(found, StoreError) else None
            # The SDK's "Connection closed" before discovery ended: the server went away (a stdio
            # server that crashed at start; its stderr follows).
            error = f"connection closed during {phase}" if not connected and \
                connection_closed(root_cause(exc)) else describe_error(exc)
        finally:
            self.connected = False
            self.session = self.dispatcher = None
            if stderr is not None:
                stderr.close()
        if catalog is not None:
            raise catalog  # the catalog's error, not the server's (see _catalog_failed)
        if deadline.cancelled_caught:
            error = f"timed out after {timeout:g}s during {phase}"
        if stderr is not None and stderr.total_bytes and not connected:
            error += f"; stderr: {stderr.last_lines()}"
        if connected or self.ever_connected:
            error = f"connection lost: {error}"
            self._status(ServerStatus.DISCONNECTED, error=error)
        else:
            self._status(ServerStatus.ERROR, error=error)
        if not connected:
            self._settle_attempt()
        self.settled.set()
        log.info("server %s: %s", self.name, error)
        return connected, error

    def _connected(self, init: types.InitializeResult, result: SyncResult) -> None:
        self.connected = self.ever_connected = True
        self.protocol_version = init.protocol_version
        self.first_result = result
        # What the server says of itself is stored and shown (jit servers, jit://servers): bounded
        # like a tool's text, so one server cannot grow the catalog by megabytes per sync.
        notes: list[str] = []
        name = cut_text(init.server_info.name, MAX_TITLE_CHARS, "serverInfo.name", notes)
        version = cut_text(init.server_info.version, MAX_NAME_CHARS, "serverInfo.version", notes)
        instructions = None if init.instructions is None else \
            cut_text(init.instructions, MAX_STORED_DESCRIPTION_CHARS, "instructions", notes)
        capabilities = wire(init.capabilities)
        if len(json.dumps(capabilities, default=str)) > MAX_ANNOTATIONS_BYTES:
            notes.append(f"capabilities over {MAX_ANNOTATIONS_BYTES:,} bytes: only the ones MCP defines kept")
            capabilities = {k: v for k, v in capabilities.items() if k != "experimental"}
        for note in notes:
            self._warn(note)
        self._status(
            ServerStatus.CONNECTED,
            error=self.warning_text(),
            server_name=name,
            server_version=version,
            protocol_version=init.protocol_version,
            capabilities=capabilities,
            instructions=instructions,
        )
        self._settle_attempt()
        self.settled.set()

    def _on_close(self) -> None:
        self._closed = True
        self._wake.set()

    async def _on_message(self, message: Any) -> None:
        """The session's message handler: list-changed notifications and transport faults."""
        if isinstance(message, Exception):
            self._garbage += 1
            if self._garbage >= MAX_GARBAGE_MESSAGES:
                self._wake.set()
            return
        kind = {
            types.ToolListChangedNotification: "tools",
            types.ResourceListChangedNotification: "resources",
            types.PromptListChangedNotification: "prompts",
        }.get(type(message))
        if kind is not None:
            self._pending.add(kind)
            self._wake.set()

    async def _serve(self) -> str:
        """Stay connected: re-discover on list_changed, ping on schedule. Returns why it ended."""
        next_ping = math.inf
        retry_at = math.inf  # a re-discovery the catalog could not take, tried again then
        while True:
            interval = self._settings().ping_interval
            now = anyio.current_time()
            next_ping = min(next_ping, now + interval) if interval > 0 else math.inf
            with anyio.move_on_after(max(0.0, min(next_ping, retry_at) - now)):
                await self._wake.wait()
            self._wake = anyio.Event()  # re-armed before reading the flags it guards
            if self._closed:
                return "server closed the connection" + self._stderr_hint()
            if self._garbage >= MAX_GARBAGE_MESSAGES:
                return f"server sent {self._garbage} messages that are not valid JSON-RPC"
            if self._pending:
                # Coalesce: notifications that arrive while this waits join the same listing.
                await anyio.sleep(max(0.0, self._last_rediscovery + MIN_REDISCOVERY_INTERVAL - anyio.current_time()))
                self._last_rediscovery = anyio.current_time()
                pending, self._pending = set(self._pending), set()
                try:
                    with anyio.fail_after(self.config.timeout):
                        result = await self.discover(pending)
                except TimeoutError:
                    return f"re-discovery after list_changed timed out after {self.config.timeout:g}s"
                except MCPError as exc:
                    if connection_closed(exc):
                        return "server closed the connection" + self._stderr_hint()
                    self._warn(f"re-discovery failed: {describe_error(exc)}")
                    continue
                except StoreError as exc:
                    # The catalog, not the server: a PostgreSQL catalog down or restarting, a SQLite
                    # file locked past the busy timeout. The connection stays; the listing is asked
                    # for again until the catalog takes it (ending the connection would record the
                    # catalog's error as the server's last error and, with no reconnects, end it for good).
                    if not self.store.unreachable(exc):
                        raise
                    self._pending |= pending
                    retry_at = anyio.current_time() + CATALOG_RETRY_INTERVAL
                    log.warning("server %s: the catalog could not take its changed tool list (%s); asking again "
                                "in %g s", self.name, exc.message, CATALOG_RETRY_INTERVAL)
                    continue
                retry_at = math.inf
                self._status(ServerStatus.CONNECTED, error=self.warning_text())
                if result is not None:
                    await self._on_tools_changed(self.name, result)
            if self._check or anyio.current_time() >= next_ping:
                self._check, next_ping = False, math.inf
                why = await self._ping()
                if why:
                    return why

    async def _ping(self) -> str | None:
        assert self.session is not None
        try:
            with anyio.fail_after(self.config.timeout):
                await self.session.send_ping()
        except TimeoutError:
            return f"ping timed out after {self.config.timeout:g}s"
        except MCPError as exc:
            # Any JSON-RPC answer (even "method not found") proves the peer alive.
            if connection_closed(exc):
                return "server closed the connection" + self._stderr_hint()
        self.store.touch_server(self.name)
        self._last_touch = time.monotonic()
        return None

    def _stderr_hint(self) -> str:
        return f"; stderr: {self.stderr.last_lines()}" if self.stderr is not None and self.stderr.total_bytes else ""

    def _warn(self, text: str) -> None:
        log.warning("server %s: %s", self.name, text)
        self.warnings.append(text)

    def warning_text(self) -> str | None:
        """The discovery warnings as one line for ``last_error`` (None when there are none)."""
        if not self.warnings:
            return None
        text = "; ".join(self.warnings[:10])
        more = f" (and {len(self.warnings) - 10} more)" if len(self.warnings) > 10 else ""
        return f"discovery warnings: {text}{more}"

    def touch(self) -> None:
        """Record that the server answered (a call), at most once per second. A catalog that cannot
        be written just now (unreachable), or found damaged (which takes no more writes), skips it:
        the call has run, and its answer must not be lost for a timestamp (the next call after the
        catalog is back records it)."""
        now = time.monotonic()
        if now - self._last_touch >= _TOUCH_EVERY:
            try:
                self.store.touch_server(self.name)
            except StoreError as exc:
                if not (self.store.unreachable(exc) or isinstance(exc, CatalogDamagedError)):
                    raise
                log.debug("server %s: not marked as seen: %s", self.name, exc.message)
                return
            self._last_touch = now

    # ---------------------------------------------------------------- discovery

    async def discover(self, what: set[str]) -> SyncResult | None:
        """Re-list ``what`` (tools/resources/prompts) and write it to the catalog.

        Returns the tools' :class:`SyncResult`, or None when tools were not re-listed.
        """
        session = self.session
        if session is None:
            raise MCPError(types.CONNECTION_CLOSED, NOT_CONNECTED)
        async with self._discover_lock:
            caps = session.server_capabilities or types.ServerCapabilities()
            reader = ListingReader(self.dispatcher, self.protocol_version, self._warn)
            result = None
            if "tools" in what:
                self.warnings = []
                raw = await reader.tools() if caps.tools is not None else []
                tools, problems = convert_tools(self.name, raw)
                for p in problems:
                    self._warn(p)
                result = self._registered(lambda: self.store.sync_tools(self.name, tools))
                self.tool_names = frozenset(t.name for t in tools)
                self.output_schemas = {t.name: t.output_schema for t in tools if t.output_schema is not None}
            listing = dict(self.listing)
            if "resources" in what and caps.resources is not None:
                items = await reader.items(session.list_resources, "resources")
                if items is not None:
                    listing["resources"] = items
                    self.store.replace_resources(
                        self.name,
                        [{"uri": r["uri"], "name": r.get("name"), "description": r.get("description"),
                          "mime_type": r.get("mimeType")} for r in items],
                    )
                items = await reader.items(session.list_resource_templates, "resource_templates")
                if items is not None:
                    listing["resource_templates"] = items
            if "prompts" in what and caps.prompts is not None:
                items = await reader.items(session.list_prompts, "prompts")
                if items is not None:
                    listing["prompts"] = items
                    self.store.replace_prompts(self.name, items)
            self.listing = listing
            if self.connected:
                await self._announce()
            return result

    async def send_log_level(self) -> None:
        """Send the client's ``logging/setLevel`` on to this server, if it logs and a level was asked for."""
        session, dispatcher, level = self.session, self.dispatcher, self._log_level()
        caps = session.server_capabilities if session is not None else None
        if level is None or caps is None or caps.logging is None or dispatcher is None:
            return
        try:
            # Raw, as a relay: the SDK's set_logging_level warns that logging is deprecated from
            # 2026-07-28 on, but this is a handshake-era client's own request passed on.
            with anyio.fail_after(self.config.timeout):
                await dispatcher.send_raw_request("logging/setLevel", {"level": level},
                                                  {"headers": {MCP_PROTOCOL_VERSION_HEADER: self.protocol_version}})
        except (TimeoutError, MCPError) as exc:
            self._warn(f"logging/setLevel failed: {describe_error(exc)}")

    async def _announce(self) -> None:
        """Tell the proxy which listings (resources, templates, prompts) changed since it was last told."""
        changed = frozenset(key for key in LISTINGS if self.listing[key] != self._announced[key])
        self._announced = dict(self.listing)
        if changed and self._on_listing_changed is not None:
            try:
                await self._on_listing_changed(self.name, changed)
            except Exception:  # a proxy's notification must not end the connection
                log.exception("server %s: announcing changed listings failed", self.name)
