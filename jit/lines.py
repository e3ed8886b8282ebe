"""Newline-delimited JSON-RPC, read in bounded lines: what ``jit serve --stdio`` reads from its
client and what jit reads from a stdio server.

:class:`PipeLines` turns a byte source into lines in linear time (a line of megabytes is one
``bytearray`` grown chunk by chunk, not a string re-joined per chunk). A line is at most
:data:`MAX_LINE_BYTES`: the bytes of a longer one are dropped as they arrive (never held, but
its first and last few KiB, which name the request it answers) and it is read as a
:class:`LineTooLong`. A line that is not UTF-8 is read as a :class:`NotUtf8`.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Protocol

__all__ = ["MAX_LINE_BYTES", "READ_CHUNK", "ByteSource", "LineTooLong", "NotUtf8", "PipeLines", "mib"]

#: Bytes asked of the source per read.
READ_CHUNK = 1 << 16

#: The longest line (one JSON-RPC message) jit reads, from a client or a server: 32 MiB.
MAX_LINE_BYTES = 32 * 1024 * 1024

#: Bytes kept of each end of a line over the limit: enough for the envelope (``jsonrpc``, ``id``,
#: ``method``) whether a sender writes it before or after the payload.
KEPT_BYTES = 4096


@dataclass(frozen=True)
class LineTooLong:
    """A line over the limit, in place of its text: ``size`` bytes (newline excluded) were dropped
    but for ``head`` and ``tail``, its first and last :data:`KEPT_BYTES`."""

    size: int
    limit: int
    head: bytes = field(default=b"", compare=False, repr=False)
    tail: bytes = field(default=b"", compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class NotUtf8:
    """A line that is not UTF-8, in place of its text: ``text`` is it decoded with U+FFFD for each
    bad byte (enough to find a request's id), ``at`` the offset of the first bad byte."""

    text: str
    at: int


def mib(size: int) -> str:
    """``size`` bytes for a person: ``47.7 MiB``, ``32 MiB``."""
    return f"{size / (1 << 20):.1f}".removesuffix(".0") + " MiB"


def _text(line: bytes) -> str | NotUtf8:
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError as exc:  # answered, not run: U+FFFD would change what the client sent
        return NotUtf8(line.decode("utf-8", errors="replace"), exc.start)


class ByteSource(Protocol):
    """What :class:`PipeLines` reads: ``b""`` at the end."""

    async def read(self, n: int) -> bytes: ...


class PipeLines:
    """``async for line in …`` over a byte source: str lines with their newline, like a text file,
    a :class:`NotUtf8` for a line that is not UTF-8, or a :class:`LineTooLong` for a line over
    ``max_line`` bytes.

    A JSON-RPC message may be megabytes, so the limit is generous; the source's own buffer
    limit still pauses the pipe when the reader falls behind.
    """

    def __init__(self, reader: ByteSource, max_line: int = MAX_LINE_BYTES) -> None:
        self._reader = reader
        self._max = max_line
        self._partial = bytearray()
        self._dropped = 0  # > 0 while skipping the rest of a line over the limit
        self._head = b""
        self._tail = b""
        self._lines: deque[bytes | LineTooLong] = deque()

    def __aiter__(self) -> PipeLines:
        return self

    async def __anext__(self) -> str | NotUtf8 | LineTooLong:
        while not self._lines:
            chunk = await self._reader.read(READ_CHUNK)
            if not chunk:
                if self._dropped:
                    self._lines.append(self._too_long())
                    break
                if not self._partial:
                    raise StopAsyncIteration
                last, self._partial = bytes(self._partial), bytearray()
                return _text(last)
            self._feed(chunk)
        line = self._lines.popleft()
        return line if isinstance(line, LineTooLong) else _text(line)

    def _feed(self, chunk: bytes) -> None:
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            if self._dropped or len(self._partial) + end - start > self._max:
                self._drop(chunk[start:end])
                self._lines.append(self._too_long())
            else:
                self._partial += chunk[start:end + 1]
                self._lines.append(bytes(self._partial))
                self._partial = bytearray()
            start = end + 1
        if self._dropped:
            self._drop(chunk[start:])
        else:
            self._partial += chunk[start:]
            if len(self._partial) > self._max:  # over the limit with no end in sight: stop holding it
                self._drop(b"")

    def _drop(self, data: bytes) -> None:
        """Skip ``data`` of a line over the limit (what is held of it first), keeping its two ends."""
        if self._partial:
            held, self._partial = bytes(self._partial), bytearray()
            self._drop(held)
        if len(self._head) < KEPT_BYTES:
            self._head += data[:KEPT_BYTES - len(self._head)]
        self._tail = (self._tail + data[-KEPT_BYTES:])[-KEPT_BYTES:]
        self._dropped += len(data)

    def _too_long(self) -> LineTooLong:
        line = LineTooLong(self._dropped, self._max, self._head, self._tail)
        self._dropped, self._head, self._tail = 0, b"", b""
        return line
