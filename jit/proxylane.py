"""A short path for proxied ``tools/call`` requests on ``jit serve --stdio``.

A proxied call crosses the SDK twice inside jit: the server side (JSON-RPC
dispatch, middleware, tracing spans, request validation, the handler, result
validation and serialisation) and the client session to the upstream. Measured
on a 2-core VM (bench/bench_serve.py), that is ~2 ms of CPU per call in jit's
process, while relaying the same bytes costs 0.3 ms. :class:`ProxyLane` sits
between the stdio pipes and the SDK's ``stdio_server`` and answers the one
request that dominates a session's traffic itself: a ``tools/call`` of an
exposed tool or of the ``call_tool`` meta-tool with well-formed arguments. The
call still goes through :meth:`~jit.clients.ClientManager.call_tool` (timeouts,
the offline error, result validation; its usage is recorded right after the
answer is written, off the critical path), and the result is
shaped by the SDK's own per-version surface (``serialize_server_result``), so a
client sees the same response either way.

Anything else, and anything the lane is not sure of, goes to the SDK untouched:
requests before the ``initialize`` handshake has answered, connections on a
stateless (2026-era) protocol revision, requests whose ``_meta`` carries more
than a progress token, malformed or unknown tool names, arguments of the wrong
shape, and ids already in flight. ``notifications/cancelled`` for a call the
lane holds cancels it (and no response is sent, as the protocol asks).
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any, Protocol

import anyio
from mcp_types import INTERNAL_ERROR
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from mcp_types.methods import serialize_server_result

__all__ = ["ProxyLane", "ProxyTarget"]

log = logging.getLogger(__name__)

#: (server, tool, arguments) of a plain proxied call.
ProxyTarget = tuple[str, str, dict[str, Any]]

# Substrings every line the lane may take contains: most lines skip the JSON parse.
_MARKERS = ('"tools/call"', '"notifications/cancelled"', '"initialize"')


class _Writer(Protocol):
    async def write(self, text: str) -> None: ...

    async def flush(self) -> None: ...


class _Proxy(Protocol):
    def proxy_target(self, name: Any, arguments: Any) -> ProxyTarget | None: ...

    async def proxy_call(self, server: str, tool: str, arguments: dict[str, Any]
                         ) -> tuple[dict[str, Any], Callable[[], None] | None]: ...


def _id_key(value: Any) -> tuple[str, Any] | None:
    """A hashable key for a JSON-RPC id, or None for what is not one (bools, floats, null)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | str):
        return (type(value).__name__, value)
    return None


class ProxyLane:
    """Line filter in front of ``stdio_server``: :meth:`lines` for its stdin, :attr:`writer`
    for its stdout. ``spawn`` starts a task (a task group's ``start_soon``) that must
    end before the pipes close."""

    def __init__(self, proxy: _Proxy, out: _Writer, spawn: Callable[..., None]) -> None:
        self._proxy = proxy
        self._out = out
        self._spawn = spawn
        self.writer = _SniffingWriter(self, out)
        #: The protocol revision the handshake settled on; None until then, or when not handshake-era.
        self.version: str | None = None
        self._init_id: tuple[str, Any] | None = None
        self._inflight: dict[tuple[str, Any], anyio.CancelScope] = {}
        #: Requests answered by the lane (for tests and benchmarks).
        self.handled = 0

    async def lines(self, source: AsyncIterator[str]) -> AsyncIterator[str]:
        async for line in source:
            try:
                taken = self._take(line)
            except Exception:  # noqa: BLE001 - a fault here must not stop the server reading
                log.exception("proxy lane failed on a line; the SDK handles it")
                taken = False
            if not taken:
                yield line

    def _take(self, line: str) -> bool:
        """Start answering ``line`` and return True, or return False to pass it on."""
        if not any(marker in line for marker in _MARKERS):
            return False
        try:
            msg = json.loads(line)
        except ValueError:
            return False
        if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
            return False
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
        scope = anyio.CancelScope()
        self._inflight[key] = scope
        self._spawn(self._answer, msg["id"], key, scope, self.version, target)
        return True

    async def _answer(self, rid: Any, key: tuple[str, Any], scope: anyio.CancelScope, version: str,
                      target: ProxyTarget) -> None:
        after: Callable[[], None] | None = None
        try:
            with scope:
                try:
                    result, after = await self._proxy.proxy_call(*target)
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
            log.debug("client went away before a proxied result could be sent")

    def _answered(self, line: str) -> None:
        """An outgoing line while the handshake is pending: the ``initialize`` result names the revision."""
        try:
            msg = json.loads(line)
        except ValueError:
            return
        if not isinstance(msg, dict) or _id_key(msg.get("id")) != self._init_id:
            return
        self._init_id = None
        result = msg.get("result")
        version = result.get("protocolVersion") if isinstance(result, dict) else None
        self.version = version if version in HANDSHAKE_PROTOCOL_VERSIONS else None


def _line(message: dict[str, Any]) -> str:
    """One JSON-RPC message as a line of strict JSON (a NaN raises rather than goes out)."""
    return json.dumps(message, ensure_ascii=False, separators=(",", ":"), allow_nan=False) + "\n"


class _SniffingWriter:
    """The SDK's stdout, reading outgoing lines only while an ``initialize`` answer is due."""

    def __init__(self, lane: ProxyLane, out: _Writer) -> None:
        self._lane = lane
        self._out = out

    async def write(self, text: str) -> None:
        if self._lane._init_id is not None:
            self._lane._answered(text)
        await self._out.write(text)

    async def flush(self) -> None:
        await self._out.flush()

