"""What jit's side of one connection waits for, and the bodies it may need again.

:class:`RequestLog` maps each request id to its method (so a reply the SDK could not parse, or
one too large to read, is answered for the right request) and, over Streamable HTTP, keeps each
JSON-RPC POST's response body (:class:`TeeTransport`, a tee on the HTTP client: the SDK keeps
only an opaque parse error). A JSON body is one message, bounded as a stdio line is
(:data:`~jit.lines.MAX_LINE_BYTES`): past it the body is not read further.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import mcp_types as types
from mcp.shared.message import SessionMessage

from ..lines import MAX_LINE_BYTES, mib
from ..salvage import MAX_SALVAGE_BYTES
from .delivery import note_not_sent, note_sent

__all__ = ["RawBody", "RecordingWriteStream", "RequestLog", "TeeTransport"]

#: Requests remembered (id → method) and HTTP bodies kept for salvage; the oldest go first.
_MAX_TRACKED = 256


class RequestLog:
    """What jit's side of one connection is waiting for: request id → method, and raw HTTP bodies.

    Bounded (the oldest entries go first), and each entry is dropped as soon as
    its response arrives, so a server that never answers cannot grow it.
    """

    def __init__(self, limit: int = _MAX_TRACKED) -> None:
        self.limit = limit
        self._methods: OrderedDict[str, tuple[str, Any]] = OrderedDict()  # key -> (method, the id as sent)
        self._bodies: OrderedDict[str, RawBody] = OrderedDict()

    @staticmethod
    def _key(request_id: Any) -> str:
        return str(request_id)

    def sent(self, request_id: Any, method: str) -> None:
        self._methods[self._key(request_id)] = (method, request_id)
        while len(self._methods) > self.limit:
            self._methods.popitem(last=False)

    def method(self, request_id: Any) -> str | None:
        found = self._methods.get(self._key(request_id))
        return found[0] if found is not None else None

    def waiting(self) -> list[Any]:
        """The ids of the requests not answered yet (as sent), oldest first."""
        return [rid for _method, rid in self._methods.values()]

    def answered(self, request_id: Any) -> RawBody | None:
        """Forget ``request_id``; returns its raw HTTP body if one was kept."""
        key = self._key(request_id)
        self._methods.pop(key, None)
        return self._bodies.pop(key, None)

    def body(self, request_id: Any, content_type: str, declared: int | None = None) -> RawBody:
        body = self._bodies[self._key(request_id)] = RawBody(content_type, declared)
        while len(self._bodies) > self.limit:
            self._bodies.popitem(last=False)
        return body


class _BodyTooLarge(httpx2.StreamError):
    """A JSON response body past :data:`~jit.lines.MAX_LINE_BYTES`: raised while it streams in, so
    the SDK's reader stops (and answers its request with a parse error, which jit rewords)."""


class RawBody:
    """The bytes of one HTTP response, kept until its JSON-RPC response has been delivered.

    A JSON body (one message) is bounded as a stdio line is: past :data:`MAX_LINE_BYTES` it is
    not read further, and :attr:`too_large` says how large it was (or is declared to be)."""

    def __init__(self, content_type: str, declared: int | None = None) -> None:
        self.content_type = content_type
        self.declared = declared
        self.data = bytearray()
        self.overflow = False
        self.seen = 0
        #: Why the body was not read to its end (its size against the limit), or None.
        self.too_large: str | None = None

    def add(self, chunk: bytes) -> None:
        self.seen += len(chunk)
        if self.content_type.startswith("application/json") and max(self.seen, self.declared or 0) > MAX_LINE_BYTES:
            size = self.declared if self.declared is not None and self.declared > MAX_LINE_BYTES else None
            self.too_large = (f"{mib(size)}, over jit's limit of {mib(MAX_LINE_BYTES)} for one message" if size
                              else f"over {mib(MAX_LINE_BYTES)}, jit's limit for one message")
            self.data = bytearray()
            raise _BodyTooLarge(self.too_large)
        if self.overflow:
            return
        if len(self.data) + len(chunk) > MAX_SALVAGE_BYTES:
            self.overflow = True
            self.data = bytearray()
            return
        self.data += chunk

    def messages(self) -> list[str]:
        """The JSON texts in the body: the body itself, or each SSE event's data."""
        text = self.data.decode("utf-8", errors="replace")
        if not self.content_type.startswith("text/event-stream"):
            return [text]
        out = []
        for event in text.replace("\r\n", "\n").replace("\r", "\n").split("\n\n"):
            data = [ln[5:].removeprefix(" ") for ln in event.split("\n") if ln.startswith("data:")]
            if data:
                out.append("\n".join(data))
        return out


class _TeeStream(httpx2.AsyncByteStream):
    def __init__(self, inner: Any, body: RawBody) -> None:
        self._inner = inner
        self._body = body

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            self._body.add(chunk)
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


class TeeTransport(httpx2.AsyncBaseTransport):
    """Keeps a copy of each JSON-RPC POST's response body in the :class:`RequestLog`, and reports a
    POST whose connection could not be made as not sent (:mod:`jit.client.delivery`)."""

    def __init__(self, inner: httpx2.AsyncBaseTransport, requests: RequestLog) -> None:
        self._inner = inner
        self._requests = requests

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        try:
            response = await self._inner.handle_async_request(request)
        except (httpx2.ConnectError, httpx2.ConnectTimeout):
            # No connection, so no byte of the request went out (jit/client/delivery.py).
            note_not_sent(_posted_request_id(request))
            raise
        request_id = _posted_request_id(request)
        if request_id is not None:
            length = response.headers.get("content-length", "")
            body = self._requests.body(request_id, response.headers.get("content-type", "").lower(),
                                       int(length) if length.isdigit() else None)
            response.stream = _TeeStream(response.stream, body)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


def _posted_request_id(request: httpx2.Request) -> Any:
    if request.method != "POST":
        return None
    try:
        message = json.loads(request.content)
    except (httpx2.RequestNotRead, ValueError):
        return None
    if isinstance(message, dict) and "method" in message and isinstance(message.get("id"), str | int):
        return message["id"]
    return None


class RecordingWriteStream:
    """The transport's write stream, noting each request's method in the :class:`RequestLog`."""

    def __init__(self, inner: Any, requests: RequestLog) -> None:
        self._inner = inner
        self._requests = requests

    async def send(self, item: SessionMessage) -> None:
        if isinstance(item.message, types.JSONRPCRequest):
            self._requests.sent(item.message.id, item.message.method)
            note_sent(item.message.id)
        await self._inner.send(item)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> RecordingWriteStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)
