"""A short path for proxied ``tools/call`` requests on ``jit serve --stdio``.

A proxied call crosses the SDK twice inside jit: the server side (JSON-RPC
dispatch, middleware, tracing spans, request validation, the handler, result
validation and serialisation) and the client session to the upstream, many times
what relaying the same bytes costs (docs/serve.md, "Overhead", measures the lane
against a bare SDK relay: ``python -m bench.bench_serve``). :class:`ProxyLane` sits
between the stdio pipes and the SDK's ``stdio_server`` and answers the one
request that dominates a session's traffic itself: a ``tools/call`` of an
exposed tool or of the ``call_tool`` meta-tool with well-formed arguments. The
call still goes through :meth:`~jit.client.manager.ClientManager.call_tool` (timeouts,
the offline error, result validation; its usage is recorded right after the
answer is written, off the critical path), and the result is
shaped by the SDK's own per-version surface (``serialize_server_result``), so a
client sees the same response either way.

The lane is also jit's stdio transport (what the SDK's ``stdio_server`` would be):
every line is decided by :func:`jit.jsonrpc.decode` before anything else sees it, so
a line the SDK would drop unanswered (invalid JSON, a batch, a bad envelope, a lone
surrogate, a line over the size limit) gets its JSON-RPC error and serving goes on,
and every outgoing message, the SDK's and the lane's, is written by one writer that
cannot fail on its text (jit.jsonrpc.encode, jit.serve.stdio.PipeWriter).

When ``initialize`` was answered before the SDK had loaded (jit/serve/early.py), the
SDK still receives that request and answers it; the lane drops that one response, so
the client reads exactly one answer per id.

Anything else, and anything the lane is not sure of, goes to the SDK untouched:
requests before the ``initialize`` handshake has answered, connections on a
stateless (2026-era) protocol revision, requests whose ``_meta`` carries more
than a progress token, malformed or unknown tool names, arguments of the wrong
shape, and ids already in flight. ``notifications/cancelled`` for a call the
lane holds cancels it (and no response is sent, as the protocol asks).

End of input (the client closed stdin, or piped a file of requests) ends the session only
once every request read before it has been answered, for at most :data:`EOF_GRACE` seconds:
the SDK cancels whatever it still runs when its read stream closes, so a request on the
last line (with or without its newline) would otherwise never be answered.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, Protocol

import anyio
from mcp.shared.message import SessionMessage
from mcp_types import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    ErrorData,
    JSONRPCError,
    JSONRPCMessage,
    JSONRPCRequest,
    JSONRPCResponse,
    jsonrpc_message_adapter,
)
from mcp_types.methods import serialize_server_result
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic import ValidationError

from ..errors import JitError
from ..jsonrpc import Rejected, decode, encode, error, not_utf8, too_large
from ..lines import LineTooLong, NotUtf8

__all__ = ["ProxyLane", "ProxyTarget"]

log = logging.getLogger(__name__)

#: How long end of input waits for the answers to requests read before it (see the module docstring).
EOF_GRACE = 10.0
#: How long a server that could not start reads on, answering the requests already sent with its error.
UNSERVED_GRACE = 1.0

#: (server, tool, arguments) of a plain proxied call.
ProxyTarget = tuple[str, str, dict[str, Any]]


class _Writer(Protocol):
    async def write(self, text: str) -> None: ...

    async def flush(self) -> None: ...


class _Proxy(Protocol):
    def proxy_target(self, name: Any, arguments: Any) -> ProxyTarget | None: ...

    async def proxy_call(self, server: str, tool: str, arguments: dict[str, Any],
                         on_progress: Callable[..., Any] | None = None
                         ) -> tuple[dict[str, Any], Callable[[], None] | None]: ...


def _id_key(value: Any) -> tuple[str, Any] | None:
    """A hashable key for a JSON-RPC id, or None for what is not one (bools, floats, null)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | str):
        return (type(value).__name__, value)
    return None


class ProxyLane:
    """jit's stdio transport with a fast path for proxied calls: :meth:`streams` gives the
    server its read and write streams over a source of lines and the writer ``out``.
    ``spawn`` starts a task (a task group's ``start_soon``) that must end before the pipes close."""

    def __init__(self, proxy: _Proxy, out: _Writer, spawn: Callable[..., None], *,
                 answered: dict[str, Any] | None = None) -> None:
        self._proxy = proxy
        self._out = out
        self._spawn = spawn
        #: The ``initialize`` response already written before the SDK was ready (jit/serve/early.py);
        #: the SDK's own response to that id is not written again.
        self._answered = answered
        self._answered_id = _id_key(answered["id"]) if answered is not None else None
        #: The protocol revision the handshake settled on; None until then, or when not handshake-era.
        self.version: str | None = None
        self._init_id: tuple[str, Any] | None = None
        self._inflight: dict[tuple[str, Any], anyio.CancelScope] = {}
        #: Ids of requests handed to the SDK and not answered yet.
        self._awaiting: set[tuple[str, Any]] = set()
        #: Requests answered by the lane (for tests and benchmarks).
        self.handled = 0
        #: Lines refused with a JSON-RPC error (or dropped, for a notification).
        self.refused = 0

    @asynccontextmanager
    async def streams(self, source: AsyncIterator[str | NotUtf8 | LineTooLong]
                      ) -> AsyncIterator[tuple[Any, Any]]:
        """``(read_stream, write_stream)`` for ``Server.run``, as ``stdio_server`` yields them: one
        task reads ``source`` through :meth:`messages`, one writes what the server sends."""
        read_send, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        write_stream, write_receive = anyio.create_memory_object_stream[SessionMessage](0)
        written = anyio.Event()

        async def reader() -> None:
            async with read_send:
                async for message in self.messages(source):
                    try:
                        await read_send.send(message)
                    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                        return  # the server stopped reading
                with anyio.move_on_after(EOF_GRACE):  # end of input: answer what was asked first
                    while self._awaiting or self._inflight:
                        await anyio.sleep(0.01)

        async def writer() -> None:
            try:
                async with write_receive:
                    async for session_message in write_receive:
                        await self.write_message(session_message.message)
            finally:
                written.set()

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(reader)
            tasks.start_soon(writer)
            try:
                yield read_stream, write_stream
            finally:
                write_stream.close()
                with anyio.move_on_after(5, shield=True):
                    await written.wait()  # what the server sent before it stopped still goes out
                tasks.cancel_scope.cancel()  # the reader may be waiting on a client that keeps the pipe open

    async def messages(self, source: AsyncIterator[str | NotUtf8 | LineTooLong]) -> AsyncIterator[SessionMessage]:
        """The messages of ``source`` for the SDK: refused lines are answered here, proxied calls
        are started here; the rest are validated into the SDK's models."""
        async for line in source:
            if isinstance(line, LineTooLong):
                await self._refuse(too_large(line.size, line.limit, "a line"))
                continue
            if isinstance(line, NotUtf8):
                await self._refuse(not_utf8(line.text, line.at))
                continue
            try:
                decoded = decode(line)
            except Exception:  # noqa: BLE001 - a fault here must not stop the server reading
                log.exception("reading a line failed")
                decoded = Rejected(error(None, INTERNAL_ERROR, "Internal error"), "reading the line failed")
            if decoded is None:
                continue
            if isinstance(decoded, Rejected):
                await self._refuse(decoded)
                continue
            try:
                taken = self._take(decoded)
            except Exception:  # noqa: BLE001 - a fault here must not stop the server reading
                log.exception("proxy lane failed on a line; the SDK handles it")
                taken = False
            if taken:
                continue
            try:
                message = jsonrpc_message_adapter.validate_python(decoded, by_name=False)
            except ValidationError as exc:  # check_envelope is the SDK's rule; this is its safety net
                rid = decoded.get("id")
                await self._refuse(Rejected(error(rid if "method" in decoded and _id_key(rid) else None,
                                                  INVALID_REQUEST, "Invalid Request: not a JSON-RPC message"),
                                            f"{exc.error_count()} validation errors"))
                continue
            if "method" in decoded and (key := _id_key(decoded.get("id"))) is not None:
                self._awaiting.add(key)
            yield SessionMessage(message)

    async def write_message(self, message: JSONRPCMessage) -> None:
        """One message the server sends; the ``initialize`` answer names the revision the lane serves."""
        if isinstance(message, JSONRPCResponse | JSONRPCError):
            self._awaiting.discard(_id_key(message.id))
        if self._init_id is not None and isinstance(message, JSONRPCResponse | JSONRPCError) \
                and _id_key(message.id) == self._init_id:
            self._init_id = None
            version = message.result.get("protocolVersion") if isinstance(message, JSONRPCResponse) else None
            self.version = version if version in HANDSHAKE_PROTOCOL_VERSIONS else None
        line = encode(message)
        if self._answered_id is not None and isinstance(message, JSONRPCResponse | JSONRPCError) \
                and _id_key(message.id) == self._answered_id:
            answered, self._answered, self._answered_id = self._answered, None, None
            if json.loads(line) != answered:  # tests/test_serve_early.py keeps this from happening
                log.error("the initialize answer sent before the server was ready differs from the SDK's: "
                          "sent %s, the SDK's %s", json.dumps(answered), line.strip())
            return
        await self._send(line)

    async def refuse_unserved(self, read_stream: Any, failure: JitError, *, within: float = UNSERVED_GRACE) -> int:
        """The server could not start (its start-up failed: a catalog that cannot be opened, a server
        that never answers): each request the client has sent meanwhile is answered with ``failure``
        (-32603, the error's payload as ``data``) rather than left waiting on a process that exits.
        Reads what arrives within ``within`` seconds; returns how many requests were answered. The
        ``initialize`` answered early (jit/serve/early.py) gets nothing more."""
        answered = 0
        with anyio.move_on_after(within):
            async for item in read_stream:
                message = getattr(item, "message", None)
                if isinstance(message, JSONRPCRequest) and _id_key(message.id) == self._answered_id:
                    self._answered = self._answered_id = None  # its answer went out before the failure
                elif isinstance(message, JSONRPCRequest):
                    await self.write_message(JSONRPCError(jsonrpc="2.0", id=message.id, error=ErrorData(
                        code=INTERNAL_ERROR, message=failure.message, data=failure.to_dict())))
                    answered += 1
        return answered

    async def _refuse(self, rejected: Rejected) -> None:
        self.refused += 1
        log.warning("refused a message from the client: %s", rejected.reason)
        if rejected.reply is not None:
            await self._send(encode(rejected.reply))

    def _take(self, msg: dict[str, Any]) -> bool:
        """Start answering ``msg`` (a checked envelope) and return True, or return False to pass it on."""
        method = msg.get("method")
        params = msg.get("params")
        if method == "initialize":
            # A new handshake: nothing is taken until its answer names the revision.
            self.version = None
            self._init_id = _id_key(msg.get("id"))
            return False
        if method == "notifications/cancelled":
            key = _id_key(params.get("requestId")) if isinstance(params, dict) else None
            scope = self._inflight.get(key) if key is not None else None
            if scope is None:
                self._awaiting.discard(key)  # the SDK cancels it and sends no answer
                return False
            scope.cancel()
            return True
        if method != "tools/call" or self.version is None or not isinstance(params, dict):
            return False
        key = _id_key(msg.get("id"))
        if key is None or key in self._inflight:
            return False
        meta = params.get("_meta")
        if meta is not None and (not isinstance(meta, dict) or set(meta) - {"progressToken"}):
            return False
        target = self._proxy.proxy_target(params.get("name"), params.get("arguments"))
        if target is None:
            return False
        token = meta.get("progressToken") if meta is not None else None
        if token is not None and _id_key(token) is None:
            return False  # not a token the SDK takes: it answers the error
        scope = anyio.CancelScope()
        self._inflight[key] = scope
        self._spawn(self._answer, msg["id"], key, scope, self.version, target, token)
        return True

    async def _answer(self, rid: Any, key: tuple[str, Any], scope: anyio.CancelScope, version: str,
                      target: ProxyTarget, token: Any = None) -> None:
        after: Callable[[], None] | None = None

        async def progress(value: float, total: float | None, message: str | None) -> None:
            """The upstream's progress, under the client's token (the SDK path does the same)."""
            params: dict[str, Any] = {"progressToken": token, "progress": value}
            if total is not None:
                params["total"] = total
            if message is not None:
                params["message"] = message
            await self._send(_line({"jsonrpc": "2.0", "method": "notifications/progress", "params": params}))

        try:
            with scope:
                try:
                    result, after = await self._proxy.proxy_call(
                        *target, on_progress=progress if token is not None else None)
                    response = _line({"jsonrpc": "2.0", "id": rid,
                                      "result": serialize_server_result("tools/call", version, result)})
                except Exception:  # noqa: BLE001 - what the SDK answers for a handler's bug
                    log.exception("proxied call to %s/%s failed", target[0], target[1])
                    response = _line({"jsonrpc": "2.0", "id": rid,
                                      "error": {"code": INTERNAL_ERROR, "message": "Internal error"}})
                self.handled += 1
                await self._send(response)
        finally:
            self._inflight.pop(key, None)
            if after is not None:
                # Usage is written once the client has its answer (a cancelled call ran too).
                try:
                    after()
                except Exception:  # noqa: BLE001 - a catalog write must not take the server down
                    log.exception("recording a proxied call to %s/%s failed", target[0], target[1])

    async def _send(self, line: str) -> None:
        try:
            await self._out.write(line)
            await self._out.flush()
        except (OSError, RuntimeError, anyio.ClosedResourceError, anyio.BrokenResourceError):
            log.debug("client went away before a message could be sent")


def _line(message: dict[str, Any]) -> str:
    """One JSON-RPC message as a line of strict JSON (a NaN raises rather than goes out)."""
    return json.dumps(message, ensure_ascii=False, separators=(",", ":"), allow_nan=False) + "\n"
