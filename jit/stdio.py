"""stdin/stdout for ``jit serve --stdio`` on the event loop's own pipe transports.

The SDK's ``stdio_server()`` reads and writes through ``anyio.wrap_file``: every
line read, every write and every flush is a hand-off to a worker thread and back,
three per proxied call. On a 2-core machine that is a measurable share of what
``jit serve`` adds to a call (bench/bench_serve.py). When stdin and stdout are
pipes or sockets, as they are under every MCP client, :func:`pipe_stdio` gives the
SDK's ``stdio_server(stdin, stdout)`` asyncio pipe transports instead; the SDK
still does the JSON-RPC framing and validation.

Like the SDK, it moves the wire off fds 0 and 1 while serving (fd 0 reads
``/dev/null``, fd 1 writes to stderr), so a stray ``print`` or a child process
inheriting the descriptors cannot corrupt the protocol, and puts them back after.
Anything else (a terminal, a regular file, an event loop that is not asyncio)
yields ``(None, None)`` and the SDK's own transport is used.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import stat
import sys
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress

__all__ = ["pipe_stdio"]

_CHUNK = 1 << 16


def _is_pipe(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


class PipeLines:
    """``async for line in …`` over a stream reader: str lines with their newline, like a text file.

    Lines are not length-limited (a JSON-RPC message may be megabytes); the reader's
    own buffer limit still pauses the pipe when the server falls behind.
    """

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader
        self._partial = bytearray()
        self._lines: deque[bytes] = deque()

    def __aiter__(self) -> PipeLines:
        return self

    async def __anext__(self) -> str:
        while not self._lines:
            chunk = await self._reader.read(_CHUNK)
            if not chunk:
                if not self._partial:
                    raise StopAsyncIteration
                last, self._partial = bytes(self._partial), bytearray()
                return last.decode("utf-8", errors="replace")
            self._partial += chunk
            if b"\n" in chunk:
                *complete, rest = bytes(self._partial).split(b"\n")
                self._lines.extend(line + b"\n" for line in complete)
                self._partial = bytearray(rest)
        return self._lines.popleft().decode("utf-8", errors="replace")


class PipeWriter:
    """``await write(str)`` / ``await flush()`` on a pipe transport, as ``stdio_server`` calls them."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer

    async def write(self, text: str) -> None:
        self._writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self._writer.drain()


def _divert(fd: int) -> int:
    """Move the wire on ``fd`` to a private descriptor; point ``fd`` somewhere harmless."""
    private = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    if fd == 0:
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
    else:
        os.dup2(2, fd)
    return private


@asynccontextmanager
async def pipe_stdio() -> AsyncIterator[tuple[PipeLines, PipeWriter] | tuple[None, None]]:
    """``(stdin, stdout)`` for ``mcp.server.stdio.stdio_server`` over pipe transports,
    or ``(None, None)`` when the process's stdio is not a pair of pipes or sockets."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # anyio on another backend (trio)
        loop = None
    if loop is None or not (_is_pipe(0) and _is_pipe(1)):
        yield None, None
        return
    with suppress(Exception):
        sys.stdout.flush()  # what print() buffered belongs to the old fd 1
    wire_in = _divert(0)
    try:
        wire_out = _divert(1)
    except OSError:
        os.dup2(wire_in, 0)
        os.close(wire_in)
        raise
    reader = asyncio.StreamReader(limit=_CHUNK, loop=loop)
    in_transport = out_transport = None
    try:
        in_transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader, loop=loop), os.fdopen(wire_in, "rb", buffering=0, closefd=False))
        # StreamReaderProtocol brings the flow control StreamWriter.drain() needs (the public recipe).
        out_transport, out_protocol = await loop.connect_write_pipe(
            lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader(loop=loop), loop=loop),
            os.fdopen(wire_out, "wb", buffering=0, closefd=False))
        writer = asyncio.StreamWriter(out_transport, out_protocol, None, loop)
        yield PipeLines(reader), PipeWriter(writer)
    finally:
        for transport in (in_transport, out_transport):
            if transport is not None:
                transport.close()
        with suppress(Exception):
            sys.stdout.flush()
        for fd, private in ((0, wire_in), (1, wire_out)):
            with suppress(OSError):
                os.set_blocking(private, True)  # the transports made the shared pipe non-blocking
                os.dup2(private, fd)
            with suppress(OSError):
                os.close(private)
