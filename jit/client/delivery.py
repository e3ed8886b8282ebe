"""Whether a request jit sent reached its server at all.

When a connection drops with a call on it, the call may or may not have run, and must not be
sent again (a tool that wrote a file, sent a message or charged a card would do it twice). But
a connection that died while idle is often found only by the next request: a Streamable HTTP
server killed between calls holds no open stream, so the next call's POST is what finds it
gone. That POST never connected, so nothing of the call left this process: it is safe to send
it once more on the connection that replaces the dead one.

The call path opens a :func:`tracking_delivery` around one request; the transports report what
they know of it on the :class:`Delivery` it yields. They see the request in the task that sent
it, or in one the SDK started with that task's context (its Streamable HTTP client runs each
POST so), which is how a report finds its request without the id being passed around.

What a request's error says of its connection is read here too: :func:`connection_closed` (the
connection is gone: the request may or may not have run) and :func:`timed_out` (the SDK gave up
waiting), as opposed to a server's own JSON-RPC error answered on a working connection.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError

__all__ = [
    "NOT_CONNECTED",
    "Delivery",
    "NotSent",
    "connection_closed",
    "note_not_sent",
    "note_sent",
    "send_tracked",
    "timed_out",
    "tracking_delivery",
]

#: The message of the CONNECTION_CLOSED error jit raises itself for a server not connected
#: (:meth:`jit.client.upstream.Upstream.discover`).
NOT_CONNECTED = "not connected"
#: The messages of the CONNECTION_CLOSED errors that mean the connection is gone: the SDK
#: dispatcher's (a transport at EOF or torn down) and jit's own; and the prefix of those the
#: SDK's Streamable HTTP client makes up for a request whose stream broke ("SSE stream failed: …",
#: "SSE stream ended without a response", "… reconnection attempts were exhausted").
_CLOSED = frozenset({"Connection closed", NOT_CONNECTED})
_CLOSED_PREFIX = "SSE stream "


def connection_closed(exc: BaseException) -> bool:
    """Whether ``exc`` says the connection to the server is gone. Not every -32000 does: JSON-RPC
    leaves -32000..-32099 to servers, and many answer a failed request with -32000; that answer
    is the server's error on a working connection, so only the SDK's and jit's own errors
    count."""
    return isinstance(exc, MCPError) and exc.code == types.CONNECTION_CLOSED and \
        (exc.message in _CLOSED or exc.message.startswith(_CLOSED_PREFIX))


def timed_out(exc: MCPError, method: str) -> bool:
    """Whether ``exc`` is the SDK's own timeout of a ``method`` request, not a server answering
    -32001 itself (the message is the SDK dispatcher's; tests pin it)."""
    return exc.code == types.REQUEST_TIMEOUT and exc.message == f"Request {method!r} timed out"


@dataclass
class Delivery:
    """What is known of one request's delivery: its id once written, and whether its transport
    knows that none of it reached the server (``not_sent``)."""

    request_id: Any = None
    not_sent: bool = False


_CURRENT: ContextVar[Delivery | None] = ContextVar("jit_delivery", default=None)


@contextmanager
def tracking_delivery() -> Iterator[Delivery]:
    """Track the delivery of the next request sent from this task (see the module's docstring)."""
    delivery = Delivery()
    token = _CURRENT.set(delivery)
    try:
        yield delivery
    finally:
        _CURRENT.reset(token)


def note_sent(request_id: Any) -> None:
    """A request was handed to the transport: the tracked one, if it is the first since tracking began."""
    delivery = _CURRENT.get()
    if delivery is not None and delivery.request_id is None:
        delivery.request_id = request_id


def note_not_sent(request_id: Any) -> None:
    """The transport knows that nothing of request ``request_id`` reached the server (its
    connection could not be opened)."""
    delivery = _CURRENT.get()
    if delivery is not None and delivery.request_id is not None and delivery.request_id == request_id:
        delivery.not_sent = True


class NotSent(Exception):
    """A request of which nothing reached the server: its connection was found dead as it was sent."""


async def send_tracked(dispatcher: Any, method: str, params: dict[str, Any] | None, opts: dict[str, Any]
                       ) -> dict[str, Any]:
    """``dispatcher.send_raw_request(method, params, opts)``; the error of a connection that failed
    with none of the request sent is :class:`NotSent` instead."""
    with tracking_delivery() as delivery:
        try:
            return await dispatcher.send_raw_request(method, params, opts)
        except MCPError:
            if delivery.not_sent:
                raise NotSent(method) from None
            raise
