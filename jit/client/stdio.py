"""The stdio transport to an upstream server: the SDK's process handling, jit's line reader.

The SDK's ``stdio_client`` re-joins its whole pending text with each 64 KiB chunk it reads
(``(buffer + chunk).split("\\n")``), so a line costs time quadratic in its length: a tool
result of tens of megabytes takes longer to read than the call waiting for it may wait. It also reads a line of any length. :func:`stdio_transport` spawns,
writes to and stops the server exactly as the SDK does (the same helpers: its own process
group, the shutdown sequence of the MCP specification), but reads stdout through
:class:`jit.lines.PipeLines`: linear time, and a line over :data:`~jit.lines.MAX_LINE_BYTES`
is dropped as it arrives and handed up as :class:`MessageTooLarge`, which the read stream
answers for the request it was meant to answer (:class:`jit.client.transports.WatchedReadStream`).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, TextIO

import anyio
import anyio.lowlevel

# The SDK's process handling, used as its stdio_client uses it (private names: pinned by the tests
# that start, crash, hang and stop stdio servers through this module).
from mcp.client.stdio import (
    _WRITER_FLUSH_TIMEOUT,
    StdioServerParameters,
    _create_platform_compatible_process,
    _drain_stdout,
    _get_executable_command,
    _parse_line,
    _stop_server_process,
    get_default_environment,
)
from mcp.shared.message import SessionMessage

from ..lines import MAX_LINE_BYTES, LineTooLong, NotUtf8, PipeLines

__all__ = ["MessageTooLarge", "stdio_transport"]

log = logging.getLogger("jit.client.manager")


class MessageTooLarge(Exception):
    """A message from the server over the line limit, in place of the message: what was kept of it
    (its first and last KiB) names the request it answers."""

    def __init__(self, line: LineTooLong) -> None:
        super().__init__(f"a message of {line.size:,} bytes, over the limit of {line.limit:,}")
        self.size = line.size
        self.limit = line.limit
        self.head = line.head.decode("utf-8", errors="replace")
        self.tail = line.tail.decode("utf-8", errors="replace")


class _Receive:
    """A process's stdout as :class:`~jit.lines.PipeLines` reads it."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    async def read(self, n: int) -> bytes:
        try:
            return await self._stream.receive(n)
        except anyio.EndOfStream:
            return b""


def _item(line: str | NotUtf8 | LineTooLong) -> SessionMessage | Exception:
    if isinstance(line, LineTooLong):
        return MessageTooLarge(line)
    # Not UTF-8: read with U+FFFD, as the SDK's reader does with errors="replace".
    return _parse_line(line.text if isinstance(line, NotUtf8) else line)


@asynccontextmanager
async def stdio_transport(server: StdioServerParameters, errlog: TextIO,
                          max_line: int = MAX_LINE_BYTES) -> AsyncIterator[tuple[Any, Any]]:
    """Spawn ``server`` and yield the ``(read, write)`` streams of its stdout and stdin, as the
    SDK's ``stdio_client`` does (its stderr to ``errlog``)."""
    command = await _get_executable_command(server.command)
    process = await _create_platform_compatible_process(
        command=command, args=server.args, env=get_default_environment() | (server.env or {}), errlog=errlog,
        cwd=server.cwd)
    # No awaits until the task group is entered, or a cancellation in the gap would leak the process.
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)
    shutting_down = False
    writer_done = anyio.Event()

    async def stdout_reader() -> None:
        assert process.stdout is not None
        try:
            async with read_writer:
                try:
                    async for line in PipeLines(_Receive(process.stdout), max_line):
                        try:
                            await read_writer.send(_item(line))
                        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                            return  # the session is gone; only the drain below remains
                finally:
                    await _drain_stdout(process)
        except anyio.ClosedResourceError:
            pass  # our own shutdown closed the stdout stream under the read
        except (anyio.BrokenResourceError, ConnectionError):
            if not shutting_down:
                log.exception("reading an MCP server's stdout failed mid-session")

    async def stdin_writer() -> None:
        assert process.stdin is not None
        try:
            async with write_reader:
                async for message in write_reader:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                    await process.stdin.send(data.encode("utf-8", errors="replace"))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            # The server may still be alive: close the read stream so the session sees the
            # connection end instead of a request hanging forever.
            await read_writer.aclose()
        finally:
            writer_done.set()

    async def shutdown() -> None:
        read_stream.close()  # unblocks the reader into its drain, so a server stuck writing can exit
        write_stream.close()
        with anyio.move_on_after(_WRITER_FLUSH_TIMEOUT):
            await writer_done.wait()
        await _stop_server_process(process)
        for stream in (read_stream, write_stream, read_writer, write_reader):
            await stream.aclose()
        await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as tg:
        tg.start_soon(stdout_reader)
        tg.start_soon(stdin_writer)
        try:
            yield read_stream, write_stream
        finally:
            shutting_down = True
            with anyio.CancelScope(shield=True):  # every wait inside is bounded
                await shutdown()
            tg.cancel_scope.cancel()
