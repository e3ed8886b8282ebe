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
* :func:`describe_error` — turns whatever a transport or the SDK raised
  (``MCPError``, ``httpx2`` errors, ``OSError``, nested ``ExceptionGroup``) into
  one line for ``last_error``.
"""

from __future__ import annotations

import errno
import os
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from types import TracebackType
from typing import Any

import anyio
import httpx2
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage

from .config import HttpServerConfig, SseServerConfig, StdioServerConfig

__all__ = [
    "DEFAULT_STDERR_LIMIT",
    "HTTP_STREAM_READ_TIMEOUT",
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
    """The transport's read stream, unchanged, plus a :attr:`closed` event.

    The SDK's dispatcher reads until the stream ends and then just stops; jit
    needs to know at that moment that the server is gone (to mark it
    disconnected and start reconnecting), so the stream reports its own end.
    Everything else is delegated, including ``last_context``.
    """

    def __init__(self, inner: Any, on_close: Callable[[], None] | None = None) -> None:
        self._inner = inner
        self._on_close = on_close
        self.closed = anyio.Event()

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
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._mark_closed()
            raise

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


@asynccontextmanager
async def open_transport(
    config: StdioServerConfig | HttpServerConfig | SseServerConfig,
    *,
    stderr: StderrTail | None = None,
    on_close: Callable[[], None] | None = None,
) -> AsyncIterator[tuple[WatchedReadStream, Any]]:
    """Open the SDK transport ``config`` describes; yields ``(watched read stream, write stream)``.

    For stdio, ``stderr`` receives the child's stderr (``None`` discards it to
    ``/dev/null``). ``on_close`` is called once when the server's side closes.
    """
    async with AsyncExitStack() as stack:
        if isinstance(config, StdioServerConfig):
            params = StdioServerParameters(
                command=config.command,
                args=list(config.args),
                env=dict(config.env) or None,
                cwd=config.cwd,
                encoding_error_handler="replace",
            )
            errlog = stderr.writer if stderr is not None else stack.enter_context(open(os.devnull, "w"))
            read, write = await stack.enter_async_context(stdio_client(params, errlog=errlog))
            if stderr is not None:
                stderr.close_writer()  # the child holds its own copy now
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
                )
            )
            read, write = await stack.enter_async_context(streamable_http_client(config.url, http_client=client))
        yield WatchedReadStream(read, on_close), write


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
    """One line saying what went wrong, for ``last_error`` and error messages."""
    exc = root_cause(exc)
    if isinstance(exc, MCPError):
        return f"{exc.message} (JSON-RPC error {exc.code})"
    if isinstance(exc, httpx2.HTTPStatusError):
        return f"HTTP {exc.response.status_code} from {exc.request.url}"
    if isinstance(exc, httpx2.ConnectError):
        return f"cannot connect: {exc or 'connection refused'}"
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
