"""One ``tools/call`` below the manager: its result, the checks before it is sent, and the send.

:meth:`~jit.client.manager.ClientManager.call_tool` picks the connection, waits for it, records
usage and turns failures into jit's errors; what is here is what it needs of the call itself:
:class:`CallResult` (what a call returned), :func:`check_sendable` (arguments JSON cannot carry
are refused before anything is sent), :func:`send_call` (the request on the connection's
dispatcher, :class:`~jit.client.delivery.NotSent` when none of it left jit), :class:`BadResult`
(a result the tool's own declarations forbid) and :func:`bounded_data` (a server's error
``data`` passed on only up to :data:`MAX_ERROR_DATA_CHARS`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER

from ..errors import InvalidArgumentsError
from ..jsonrpc import MAX_DEPTH, find_unsendable, json_path
from .delivery import send_tracked
from .upstream import Upstream

__all__ = ["MAX_ARGUMENT_DEPTH", "MAX_ERROR_DATA_CHARS", "BadResult", "CallResult", "bounded_data",
           "check_sendable", "send_call"]


@dataclass(frozen=True, slots=True)
class CallResult:
    """What a ``tools/call`` returned. ``is_error`` is the tool's own ``isError``."""

    server: str
    tool: str
    content: list[dict[str, Any]]
    structured_content: dict[str, Any] | None
    is_error: bool
    latency_ms: float

    def text(self) -> str:
        """The text content blocks joined by newlines (images and resources left out)."""
        return "\n".join(str(c.get("text", "")) for c in self.content if c.get("type") == "text")


#: Largest ``data`` of a server's JSON-RPC error passed on with :class:`ToolCallError` (compact JSON).
MAX_ERROR_DATA_CHARS = 16_384


def bounded_data(data: Any) -> Any:
    """A server's error ``data``, or a note saying how large it was when it is past
    :data:`MAX_ERROR_DATA_CHARS` (it would be printed by ``jit call`` and sent to ``jit serve``'s client)."""
    if data is None:
        return None
    try:
        size = len(json.dumps(data, ensure_ascii=False, separators=(",", ":")))
    except (TypeError, ValueError, RecursionError):
        return None
    if size <= MAX_ERROR_DATA_CHARS:
        return data
    return f"[cut by jit: the server's error data, {size:,} characters of JSON]"


class BadResult(Exception):
    """A call's result that the tool's own declarations forbid (structured content against its output
    schema: :meth:`~jit.client.manager.ClientManager.call_tool`)."""


async def send_call(up: Upstream, params: dict[str, Any], opts: dict[str, Any]) -> dict[str, Any]:
    """``tools/call`` on ``up``'s connection, straight through the session's dispatcher (what
    ClientSession.call_tool does under its request and result models); :class:`NotSent` when the
    connection was found dead with none of it sent (jit/client/delivery.py)."""
    headers = {MCP_PROTOCOL_VERSION_HEADER: up.protocol_version}
    return await send_tracked(up.dispatcher, "tools/call", params, {**opts, "headers": headers})


#: Deepest nesting of a call's arguments: ``tools/call`` puts them two levels into the message,
#: and the SDK's parser on the other end reads messages :data:`~jit.jsonrpc.MAX_DEPTH` deep.
MAX_ARGUMENT_DEPTH = MAX_DEPTH - 2


def check_sendable(server: str, tool: str, arguments: Any) -> None:
    """Refuse arguments JSON cannot carry before anything is sent. Sent, a lone surrogate or a
    too-deep value breaks the SDK's serialiser inside the connection's writer, which drops the
    connection (and respawns a stdio server, losing its state) though the call never left; NaN
    goes out as a literal other servers cannot parse, so the call waits out its timeout."""
    found = find_unsendable(arguments, ("arguments",), MAX_ARGUMENT_DEPTH)
    if found is not None:
        path, problem = found
        raise InvalidArgumentsError(server=server, tool=tool, path=json_path(path), problem=problem)

