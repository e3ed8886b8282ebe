"""stdin/stdout for ``jit serve --stdio``: the event loop's own pipe transports, bounded lines.

The SDK's ``stdio_server()`` reads and writes through ``anyio.wrap_file``: every
line read, every write and every flush is a hand-off to a worker thread and back,
three per proxied call. On a 2-core machine that is a measurable share of what
``jit serve`` adds to a call (bench/bench_serve.py). When stdin and stdout are
pipes or sockets, as they are under every MCP client, :func:`stdio_wire` reads and
writes them through asyncio pipe transports instead. Anything else (a terminal, a
regular file, an event loop that is not asyncio) is read and written in worker
threads, as the SDK does, but through the same line framing and writer, so
``jit serve`` has one stdio layer whatever its descriptors are (jit/serve/proxylane.py
decides what each line is).

Like the SDK, it moves the wire off fds 0 and 1 while serving (fd 0 reads
``/dev/null``, fd 1 writes to stderr), so a stray ``print`` or a child process
inheriting the descriptors cannot corrupt the protocol, and puts them back after.

Lines are read by :class:`jit.lines.PipeLines`: at most :data:`~jit.lines.MAX_LINE_BYTES`
each (a longer one is read as a :class:`~jit.lines.LineTooLong`, which the server answers
with an error). The writer cannot fail on text: a line that is not valid
UTF-8 (a lone surrogate) is written with the surrogate replaced (jit.jsonrpc.scrub).
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Protocol

import anyio
import anyio.to_thread

from ..jsonrpc import scrub
from ..lines import MAX_LINE_BYTES, READ_CHUNK, ByteSource, PipeLines
from .early import is_pipe

__all__ = ["PipeWriter", "stdio_wire"]


class _Sink(Protocol):
    def write(self, data: bytes) -> None: ...

    async def drain(self) -> None: ...


class PipeWriter:
    """``await write(str)`` / ``await flush()`` on a byte sink. Each ``write`` is one whole line,
    handed to the sink at once, so concurrent writers never interleave within a line."""

    def __init__(self, writer: _Sink) -> None:
        self._writer = writer

    async def write(self, text: str) -> None:
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: not UTF-8; the line must still go out
            data = scrub(text).encode("utf-8")
        self._writer.write(data)

    async def flush(self) -> None:
        await self._writer.drain()


class _FdSource:
    """Reads a descriptor that is not a pipe (a terminal, a file) in a worker thread."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    async def read(self, n: int) -> bytes:
        return await anyio.to_thread.run_sync(os.read, self._fd, n, abandon_on_cancel=True)


class _FdSink:
    """Writes a descriptor that is not a pipe in a worker thread, one flush at a time."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._pending = bytearray()
        self._lock = anyio.Lock()

    def write(self, data: bytes) -> None:
        self._pending += data

    async def drain(self) -> None:
        async with self._lock:
            data, self._pending = bytes(self._pending), bytearray()
            if data:
                await anyio.to_thread.run_sync(self._write_all, data)

    def _write_all(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view):]


class _Prefixed:
    """A source that reads ``prefix`` first: the bytes the early stage took off stdin (jit/serve/early.py)."""

    def __init__(self, prefix: bytes, source: ByteSource) -> None:
        self._prefix = prefix
        self._source = source

    async def read(self, n: int) -> bytes:
        if self._prefix:
            data, self._prefix = self._prefix[:n], self._prefix[n:]
            return data
        return await self._source.read(n)


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
async def stdio_wire(max_line: int = MAX_LINE_BYTES, *, prefix: bytes = b""
                     ) -> AsyncIterator[tuple[PipeLines, PipeWriter]]:
    """``(lines, writer)`` on the process's stdin and stdout while fds 0 and 1 are diverted:
    asyncio pipe transports when both are pipes or sockets, worker threads otherwise. The lines
    start with ``prefix``: what was read off stdin before (jit/serve/early.py)."""
    try:
        loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:  # anyio on another backend (trio)
        loop = None
    with suppress(Exception):
        sys.stdout.flush()  # what print() buffered belongs to the old fd 1
    wire_in = _divert(0)
    try:
        wire_out = _divert(1)
    except OSError:
        os.dup2(wire_in, 0)
        os.close(wire_in)
        raise
    in_transport = out_transport = None
    threaded = False
    try:
        if loop is not None and is_pipe(wire_in) and is_pipe(wire_out):
            reader = asyncio.StreamReader(limit=READ_CHUNK, loop=loop)
            in_transport, _ = await loop.connect_read_pipe(
                lambda: asyncio.StreamReaderProtocol(reader, loop=loop),
                os.fdopen(wire_in, "rb", buffering=0, closefd=False))
            # StreamReaderProtocol brings the flow control StreamWriter.drain() needs (the public recipe).
            out_transport, out_protocol = await loop.connect_write_pipe(
                lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader(loop=loop), loop=loop),
                os.fdopen(wire_out, "wb", buffering=0, closefd=False))
            writer = asyncio.StreamWriter(out_transport, out_protocol, None, loop)
            yield PipeLines(_Prefixed(prefix, reader), max_line), PipeWriter(writer)
        else:
            threaded = True
            yield PipeLines(_Prefixed(prefix, _FdSource(wire_in)), max_line), PipeWriter(_FdSink(wire_out))
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
            if threaded and fd == 0:
                continue  # a worker thread may still block reading it: never close and recycle it (as the SDK)
            with suppress(OSError):
                os.close(private)
