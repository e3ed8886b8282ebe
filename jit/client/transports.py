"""Opening one upstream MCP connection: stdio, Streamable HTTP or SSE, on the official SDK.

A transport is an async context manager yielding the SDK's ``(read, write)``
stream pair; everything above it (handshake, ids, timeouts, pagination) is the
SDK's :class:`~mcp.client.session.ClientSession`. This module adds only what
jit needs around the SDK transports:

* :class:`StderrTail` — a stdio child's stderr goes into a pipe that jit drains
  into a bounded buffer, so a chatty or flooding server can neither fill our
  terminal nor block on a full pipe, and the last lines explain a crash;
* :class:`WatchedReadStream` — tells the connection the moment the server's
  side closes (process exit, HTTP stream gone), instead of waiting for a ping;
  and hands a message the SDK could not parse to :mod:`jit.salvage`, so one
  bad field costs one tool, not the whole reply or a timeout. It learns which
  method each response answers from the write stream, and over Streamable
  HTTP gets the raw body from a tee on the HTTP client (the SDK keeps only
  an opaque parse error there; both in :mod:`jit.client.requestlog`). A message over :data:`~jit.lines.MAX_LINE_BYTES`
  (a stdio line, a Streamable HTTP JSON body, an SSE event) is not read: the
  request it answers fails at once saying how large it was;
* :class:`InProcessServerConfig` — a server object living in this process
  (the SDK's ``MCPServer`` or low-level ``Server``), reached over the SDK's
  in-memory streams: no child process, no socket, the same session and
  supervisor on top. Built in Python only (a harness wrapping its own tools,
  jit's fast tests); a config file cannot name one;
* :func:`describe_error` — turns whatever a transport or the SDK raised
  (``MCPError``, ``httpx2`` errors, ``OSError``, nested ``ExceptionGroup``) into
  one line for ``last_error``.
"""

from __future__ import annotations

import errno
import logging
import os
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import anyio
import httpx2
import mcp_types as types

# The SDK's own in-process transport (what ``mcp.Client(server)`` uses); not re-exported by mcp.client.
from mcp.client._memory import InMemoryTransport
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from ..errors import ConfigError, JitError, bounded
from ..jsonrpc import first_problem
from ..lines import MAX_LINE_BYTES, mib
from ..salvage import salvage, salvage_value, too_large, too_large_error
from ..servers_config import (
    DEFAULT_CALL_TIMEOUT,
    DEFAULT_TIMEOUT,
    HttpServerConfig,
    SseServerConfig,
    StdioServerConfig,
    shown_url,
)
from .requestlog import RawBody, RecordingWriteStream, RequestLog, TeeTransport
from .stdio import MessageTooLarge, stdio_transport

__all__ = [
    "DEFAULT_STDERR_LIMIT",
    "HTTP_STREAM_READ_TIMEOUT",
    "InProcessServerConfig",
    "StderrTail",
    "WatchedReadStream",
    "describe_error",
    "open_transport",
    "root_cause",
]

#: Bytes of a stdio server's stderr kept in memory (the tail; older output is dropped).
DEFAULT_STDERR_LIMIT = 64 * 1024

#: Read timeout of the long-lived HTTP response streams (SDK default). A dead peer is
#: found sooner by the ping health check and by the stream closing.
HTTP_STREAM_READ_TIMEOUT = 300.0

_READ_CHUNK = 64 * 1024

#: Above this many characters a salvage runs in a worker thread, off the event loop.
_SALVAGE_INLINE_CHARS = 256 * 1024

#: The SDK's Streamable HTTP client reports a body it could not parse with these messages.
_HTTP_PARSE_FAILURES = ("Failed to parse JSON response", "Failed to parse SSE message")

log = logging.getLogger("jit.client.manager")


class _OneLineStdoutNoise(logging.Filter):
    """The SDK's stdio client logs every stdout line of a server that is not JSON-RPC (a start-up
    banner, a print left in) with a full traceback, on the user's terminal during ``jit sync``.
    The line is skipped either way (:class:`jit.client.upstream.Upstream` counts such lines and
    reconnects past a bound); one short warning per distinct line says so, without the traceback."""

    def __init__(self) -> None:
        super().__init__()
        self._seen: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.exc_info or record.getMessage() != "Failed to parse JSONRPC message from server":
            return True
        exc = record.exc_info[1]
        line = ""
        if isinstance(exc, ValidationError) and exc.errors():
            line = str(exc.errors()[0].get("input", ""))
        preview = line[:80] + ("…" if len(line) > 80 else "")
        if preview in self._seen or len(self._seen) > 100:
            return False
        self._seen.add(preview)
        record.msg, record.args = "an MCP server wrote a line to stdout that is not JSON-RPC (skipped): %r", (preview,)
        record.levelno, record.levelname = logging.WARNING, "WARNING"
        record.exc_info = record.exc_text = None
        return True


logging.getLogger("mcp.client.stdio").addFilter(_OneLineStdoutNoise())


@dataclass(frozen=True)
class InProcessServerConfig:
    """An MCP server object in this process, connected over the SDK's in-memory transport.

    Stands where a ``servers`` entry of a config file would (``Config.servers``),
    with the same ``enabled``, ``timeout`` and ``call_timeout``; everything above
    the transport (handshake, discovery, list_changed, pings, calls, reconnects)
    is the code path every other transport takes. Each connection attempt runs
    ``server`` afresh on a new stream pair, as a restarted process would start.
    Two configs are equal only for the same server object, so a reload that
    swaps the object restarts the connection.
    """

    #: An ``mcp.server.mcpserver.MCPServer`` or a low-level ``mcp.server.Server``.
    server: Any
    enabled: bool = True
    timeout: float = DEFAULT_TIMEOUT
    call_timeout: float = DEFAULT_CALL_TIMEOUT
    #: What the catalog records as the server's transport.
    transport: str = "memory"

    def __post_init__(self) -> None:
        for key in ("timeout", "call_timeout"):
            if not getattr(self, key) > 0:
                raise ConfigError(f"{key} must be greater than 0", key=key)

    def shown(self) -> str:
        """What ``jit servers`` and ``jit://servers`` show as the target: the server object's
        class and, when it has one, its name (there is no command or URL to show)."""
        name = getattr(self.server, "name", None)
        kind = type(self.server).__name__
        return f"in-process {kind} {name!r}" if isinstance(name, str) and name else f"in-process {kind}"


class StderrTail:
    """A pipe for a child's stderr, drained into a bounded buffer.

    The write end is handed to the child; :meth:`pump` reads the other end
    without blocking the event loop and keeps the last ``limit`` bytes. Reading
    continuously matters: a child blocked writing to a full stderr pipe stops
    answering on stdout too.
    """

    def __init__(self, limit: int = DEFAULT_STDERR_LIMIT) -> None:
        self.limit = limit
        self.total_bytes = 0
        self._buf = bytearray()
        read_fd, write_fd = os.pipe()
        os.set_blocking(read_fd, False)
        self._read_fd: int | None = read_fd
        #: File object for the child's stderr (``stdio_client(errlog=...)`` needs ``fileno()``).
        self.writer = os.fdopen(write_fd, "w", encoding="utf-8", errors="replace")

    def close_writer(self) -> None:
        """Drop our copy of the write end once the child has it, so its exit reads as EOF."""
        if not self.writer.closed:
            self.writer.close()

    def _append(self, data: bytes) -> None:
        self.total_bytes += len(data)
        self._buf += data
        if len(self._buf) > self.limit:
            del self._buf[: len(self._buf) - self.limit]

    def drain(self, max_bytes: int | None = None) -> bool:
        """Read what the pipe holds now (up to ``max_bytes``); False once it hit EOF or is closed."""
        budget = max_bytes
        while self._read_fd is not None and (budget is None or budget > 0):
            try:
                data = os.read(self._read_fd, _READ_CHUNK)
            except BlockingIOError:
                return True
            except OSError:
                return False
            if not data:
                return False
            self._append(data)
            if budget is not None:
                budget -= len(data)
        return self._read_fd is not None

    async def pump(self) -> None:
        """Drain the pipe until EOF (every writer gone) or cancellation."""
        while self._read_fd is not None:
            await anyio.wait_readable(self._read_fd)
            # A bounded read per wake-up: a child writing non-stop must not starve the loop.
            if not self.drain(max_bytes=16 * _READ_CHUNK):
                return

    def close(self) -> None:
        """Close both ends (after :meth:`pump` has stopped)."""
        self.close_writer()
        if self._read_fd is not None:
            # Bounded: a surviving grandchild may still be writing as fast as we read.
            self.drain(max_bytes=4 * self.limit)
            os.close(self._read_fd)
            self._read_fd = None

    def text(self, max_chars: int = 2000) -> str:
        """The last ``max_chars`` characters of stderr, decoded leniently."""
        text = self._buf.decode("utf-8", errors="replace")
        if len(text) > max_chars:
            text = "…" + text[-max_chars:]
        return text

    def last_lines(self, n: int = 5, max_chars: int = 500) -> str:
        """The last ``n`` non-blank lines, joined with `` | `` (for one-line errors)."""
        lines = [ln.strip() for ln in self.text(max_chars * 4).splitlines() if ln.strip()]
        joined = " | ".join(lines[-n:])
        return joined if len(joined) <= max_chars else "…" + joined[-max_chars:]


class WatchedReadStream:
    """The transport's read stream plus a :attr:`closed` event and salvage of unparsable messages.

    The SDK's dispatcher reads until the stream ends and then just stops; jit
    needs to know at that moment that the server is gone (to mark it
    disconnected and start reconnecting), so the stream reports its own end.

    A message the SDK transport rejected (an exception in the stream for stdio
    and SSE, an opaque ``PARSE_ERROR`` over Streamable HTTP) is handed to
    :func:`jit.salvage.salvage` with its raw text; what comes back (a repaired
    message, or an error response for the waiting request) is delivered in its
    place. Anything else passes through unchanged, including ``last_context``.
    """

    def __init__(self, inner: Any, on_close: Callable[[], None] | None = None,
                 requests: RequestLog | None = None) -> None:
        self._inner = inner
        self._on_close = on_close
        self.requests = requests or RequestLog()
        self.closed = anyio.Event()
        #: Messages the SDK rejected that jit delivered in repaired form (or as an error).
        self.salvaged = 0

    def _mark_closed(self) -> None:
        if not self.closed.is_set():
            self.closed.set()
            if self._on_close is not None:
                self._on_close()

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        try:
            item = await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._mark_closed()
            raise
        if isinstance(item, ValidationError):
            return await self._salvage_rejected(item)
        if isinstance(item, MessageTooLarge):
            return self._too_large(item)
        if isinstance(item, SessionMessage) and isinstance(item.message, types.JSONRPCResponse | types.JSONRPCError):
            method = self.requests.method(item.message.id)
            body = self.requests.answered(item.message.id)
            if isinstance(item.message, types.JSONRPCError):
                size = body.too_large if body is not None else None
                if size is None and item.message.error.message.startswith(_SSE_TOO_LARGE):  # an SSE event
                    size = f"over {mib(MAX_LINE_BYTES)}, jit's limit for one message"
                if size is not None:  # the SDK's parse error or "SSE stream failed": say what happened
                    return SessionMessage(too_large_error(item.message.id, method, size))
                if body is not None and _http_parse_failure(item.message):
                    return await self._salvage_http(item, body, method)
        return item

    def _too_large(self, item: MessageTooLarge) -> SessionMessage | Exception:
        """stdio: a line over the limit, dropped as it arrived; its request fails at once saying so."""
        size = f"{mib(item.size)}, over jit's limit of {mib(item.limit)} for one message"
        message = too_large(item.head, item.tail, size, self._method_of, self.requests.waiting)
        if message is None:
            log.warning("dropped a message from the server of %s that answers no request jit is waiting for", size)
            return item
        return SessionMessage(message)

    def _method_of(self, request_id: Any) -> str | None:
        method = self.requests.method(request_id)
        self.requests.answered(request_id)
        return method

    @staticmethod
    async def _run_salvage(fn: Callable[..., Any], value: Any, method_of: Callable[[Any], str | None]) -> Any:
        if isinstance(value, str) and len(value) > _SALVAGE_INLINE_CHARS:
            return await anyio.to_thread.run_sync(fn, value, method_of)
        return fn(value, method_of)

    async def _salvage_rejected(self, exc: ValidationError) -> SessionMessage | Exception:
        """stdio / SSE: the SDK handed up its parse error; the raw text is in it."""
        errors = exc.errors()
        raw: Any = None
        for err in errors:
            if err["type"] == "json_invalid" and isinstance(err.get("input"), str):
                raw = err["input"]  # the whole line: JSON the strict parser refused
                break
            if isinstance(err.get("input"), dict) and "jsonrpc" in err["input"]:
                raw = err["input"]  # valid JSON, not a valid message (e.g. result is an array)
                break
        if raw is None:
            return exc
        fn = salvage if isinstance(raw, str) else salvage_value
        message = await self._run_salvage(fn, raw, self._method_of)
        if message is None:
            return exc
        self.salvaged += 1
        log.info("salvaged a message the MCP SDK could not parse: %s", str(errors[0].get("msg", ""))[:200])
        return SessionMessage(message)

    async def _salvage_http(self, item: SessionMessage, body: RawBody, method: str | None) -> SessionMessage:
        """Streamable HTTP: the SDK answered the request with PARSE_ERROR; retry on the kept body."""
        request_id = item.message.id
        for text in body.messages():
            try:
                types.jsonrpc_message_adapter.validate_json(text, by_name=False)
                continue  # this event parsed; the one that failed comes later
            except ValidationError:
                pass
            message = await self._run_salvage(salvage, text, lambda _id: method)
            if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
                message.id = request_id  # as the SDK does: correlate with the request it answers
                self.salvaged += 1
                return SessionMessage(message)
            break
        return item

    def __aiter__(self) -> WatchedReadStream:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        self._mark_closed()
        await self._inner.aclose()

    async def __aenter__(self) -> WatchedReadStream:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


#: How the SDK's Streamable HTTP client fails a request whose SSE event passed ``max_sse_event_size``.
_SSE_TOO_LARGE = "SSE stream failed: Server-sent event exceeded the "


def _http_parse_failure(message: types.JSONRPCError) -> bool:
    return message.error.code == types.PARSE_ERROR and message.error.message.startswith(_HTTP_PARSE_FAILURES)


@asynccontextmanager
async def open_transport(
    config: StdioServerConfig | HttpServerConfig | SseServerConfig | InProcessServerConfig,
    *,
    stderr: StderrTail | None = None,
    on_close: Callable[[], None] | None = None,
) -> AsyncIterator[tuple[WatchedReadStream, Any]]:
    """Open the SDK transport ``config`` describes; yields ``(watched read stream, write stream)``.

    Both streams share one :class:`RequestLog`, so a response the SDK could not
    parse can be salvaged knowing which request it answers.

    For stdio, ``stderr`` receives the child's stderr (``None`` discards it to
    ``/dev/null``). ``on_close`` is called once when the server's side closes.
    """
    requests = RequestLog()
    async with AsyncExitStack() as stack:
        if isinstance(config, StdioServerConfig):
            if config.cwd is not None and not os.path.isdir(config.cwd):
                # Checked at config load too; here for a directory removed since. Without this the
                # failed chdir is reported as "cannot start '<cwd>'", as if the cwd were the program.
                raise ConfigError(f"the server's working directory {config.cwd!r} does not exist or is not a "
                                  "directory", key="cwd")
            params = StdioServerParameters(
                command=config.command,
                args=list(config.args),
                env=dict(config.env) or None,
                cwd=config.cwd,
                encoding_error_handler="replace",
            )
            errlog = stderr.writer if stderr is not None else stack.enter_context(open(os.devnull, "w"))
            read, write = await stack.enter_async_context(stdio_transport(params, errlog))
            if stderr is not None:
                stderr.close_writer()  # the child holds its own copy now
        elif isinstance(config, InProcessServerConfig):
            read, write = await stack.enter_async_context(InMemoryTransport(config.server))
        elif isinstance(config, SseServerConfig):  # before HttpServerConfig: SSE subclasses it
            read, write = await stack.enter_async_context(
                sse_client(
                    config.url,
                    headers=dict(config.headers) or None,
                    timeout=config.timeout,
                    sse_read_timeout=max(HTTP_STREAM_READ_TIMEOUT, config.call_timeout),
                )
            )
        else:
            client = await stack.enter_async_context(
                httpx2.AsyncClient(
                    headers=dict(config.headers),
                    timeout=httpx2.Timeout(config.timeout, read=max(HTTP_STREAM_READ_TIMEOUT, config.call_timeout)),
                    transport=TeeTransport(httpx2.AsyncHTTPTransport(), requests),
                )
            )
            # One message is bounded alike on every transport: an SSE event as a stdio line (the
            # SDK's own bound is 1 MiB, past which it failed the request as a broken stream).
            read, write = await stack.enter_async_context(
                streamable_http_client(config.url, http_client=client, max_sse_event_size=MAX_LINE_BYTES))
        yield WatchedReadStream(read, on_close, requests), RecordingWriteStream(write, requests)


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        out: list[BaseException] = []
        for sub in exc.exceptions:
            out.extend(_leaves(sub))
        return out
    return [exc]


def root_cause(exc: BaseException) -> BaseException:
    """The most telling leaf of a (possibly nested) ExceptionGroup: not a cancellation."""
    leaves = _leaves(exc)
    for leaf in leaves:
        if not isinstance(leaf, anyio.get_cancelled_exc_class()):
            return leaf
    return leaves[0]


def describe_error(exc: BaseException) -> str:
    """One line saying what went wrong, for ``last_error`` and error messages; what a server
    wrote into it is bounded (:data:`jit.errors.MAX_ERROR_CHARS`)."""
    return bounded(_describe(root_cause(exc)))


def _describe(exc: BaseException) -> str:
    if isinstance(exc, JitError):
        return exc.message
    if isinstance(exc, MCPError):
        return f"{exc.message} (JSON-RPC error {exc.code})"
    if isinstance(exc, ValidationError) and exc.errors():
        # What a server sent broke the MCP schema: name the field, not the model
        # ("content: Input should be a valid list", not "1 validation error for CallToolResult").
        where, first, more = first_problem(exc)
        return f"{where}: {first['msg']}{more}"
    if isinstance(exc, httpx2.HTTPStatusError):
        return f"HTTP {exc.response.status_code} from {_url_of(exc)}"
    if isinstance(exc, httpx2.ConnectError):
        # httpx says "All connection attempts failed"; the OS error under it says why.
        return f"cannot connect to {_url_of(exc)}: {_os_reason(exc) or exc or 'connection refused'}"
    if isinstance(exc, httpx2.TimeoutException):
        return f"HTTP timeout: {type(exc).__name__}"
    if isinstance(exc, httpx2.HTTPError):
        return f"HTTP error: {type(exc).__name__}: {exc}"
    if isinstance(exc, FileNotFoundError | PermissionError) and exc.filename:
        return f"cannot start {exc.filename!r}: {os.strerror(exc.errno or errno.ENOENT)}"
    if isinstance(exc, OSError):
        return f"{type(exc).__name__}: {exc.strerror or exc}"
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def _url_of(exc: httpx2.HTTPError) -> str:
    """The URL of the request ``exc`` is about, its password and query values masked (a token in
    a URL must not reach ``last_error``); "the server" when httpx does not say."""
    try:
        return shown_url(str(exc.request.url))
    except RuntimeError:  # an error raised outside a request
        return "the server"


def _os_reason(exc: BaseException) -> str | None:
    """The operating system's reason under ``exc`` (``Connection refused``, ``Name or service not
    known``), from its chain of causes."""
    seen: set[int] = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, OSError) and isinstance(cur.errno, int):
            return os.strerror(cur.errno) if cur.errno > 0 else (cur.strerror or str(cur))
        cur = cur.__cause__ or cur.__context__
    return None
