"""Who may reach ``jit serve --http``: loopback by default, a bearer token beyond it.

Behind jit are every configured server's tools (a shell, a filesystem, a git
repository): whoever reaches its HTTP endpoint can call them. So:

* a host that is not loopback (``0.0.0.0``, ``::``, a LAN address, a hostname other
  than ``localhost``) is refused unless ``--allow-remote`` is given, before anything
  binds or loads (:func:`http_access` raises :class:`RemoteBindRefused`);
* with ``--allow-remote`` a bearer token is required: ``$JIT_SERVE_TOKEN``, at least
  :data:`MIN_TOKEN_LENGTH` characters, never printed or logged. Each request must send
  ``Authorization: Bearer <token>``, compared in constant time; anything else is
  answered 401 before the MCP transport sees it (:class:`BearerTokenMiddleware`).
  When ``$JIT_SERVE_TOKEN`` is set it is enforced on a loopback bind too;
* the Host/Origin checks against DNS rebinding stay on whatever the bind (the SDK turns
  them on only for a literal loopback host), on parsed headers (:mod:`jit.serve.hosts`):
  the allowed hosts are the loopback names, the bound address, this machine's host names,
  and those given with ``--allow-host``;
* a request body is at most :data:`MAX_BODY_BYTES` (answered 413 with a JSON-RPC error past
  it), and a request's headers must arrive within ``serve.http_header_timeout`` seconds
  (:mod:`jit.serve.headertimeout`).
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import logging
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pydantic
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import INVALID_PARAMS, INVALID_REQUEST, InitializeRequestParams
from mcp_types.jsonrpc import UNSUPPORTED_PROTOCOL_VERSION
from mcp_types.version import KNOWN_PROTOCOL_VERSIONS

from ..config import ServeConfig
from ..jsonrpc import Rejected, decode, encode, error, first_problem, not_utf8, scrub, too_large
from ..process import until_stopped
from . import hosts as hostcheck
from ..lines import MAX_LINE_BYTES

__all__ = [
    "MAX_BODY_BYTES",
    "MIN_TOKEN_LENGTH",
    "TOKEN_ENV",
    "BearerTokenMiddleware",
    "HttpAccess",
    "RemoteBindRefused",
    "http_access",
    "is_loopback",
]

log = logging.getLogger(__name__)

#: The environment variable holding the bearer token.
TOKEN_ENV = "JIT_SERVE_TOKEN"
#: Shortest token accepted (``openssl rand -hex 32`` gives 64 characters).
MIN_TOKEN_LENGTH = 16

class RemoteBindRefused(ValueError):
    """``jit serve --http`` was asked to listen where it must not, or without the token it needs."""


@dataclass(frozen=True)
class HttpAccess:
    """How an HTTP ``jit serve`` is guarded: the hosts it answers to (normalised as
    :func:`~jit.serve.hosts.normal_host` gives them) and the bearer token."""

    hosts: frozenset[str]
    token: str | None = field(default=None, repr=False)


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1); False for wildcard
    addresses, other addresses and other names (what a name resolves to may change)."""
    name = host.strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def http_access(host: str, *, allow_remote: bool = False, allowed_hosts: Iterable[str] = (),
                environ: Mapping[str, str] | None = None) -> HttpAccess:
    """The guard for ``jit serve --http`` on ``host``, or :class:`RemoteBindRefused` saying why it
    may not start (a non-loopback host without ``allow_remote``; ``allow_remote`` without a token;
    an ``allowed_hosts`` entry that is not a host)."""
    env = os.environ if environ is None else environ
    token = env.get(TOKEN_ENV) or None
    loopback = is_loopback(host)
    if not loopback and not allow_remote:
        raise RemoteBindRefused(
            f"refusing to serve HTTP on {host!r}: it is not a loopback address, so anyone who can reach it "
            f"could call every configured server's tools. Use a loopback host (127.0.0.1), or pass "
            f"--allow-remote with a bearer token in ${TOKEN_ENV}")
    if allow_remote and token is None:
        raise RemoteBindRefused(f"--allow-remote needs a bearer token: set ${TOKEN_ENV} "
                                f"(at least {MIN_TOKEN_LENGTH} characters, e.g. `openssl rand -hex 32`)")
    if token is not None and len(token) < MIN_TOKEN_LENGTH:
        raise RemoteBindRefused(f"${TOKEN_ENV} is too short: use at least {MIN_TOKEN_LENGTH} characters "
                                "(e.g. `openssl rand -hex 32`)")
    try:
        return HttpAccess(hostcheck.allowed_hosts(host, allowed_hosts), token)
    except ValueError as exc:
        raise RemoteBindRefused(f"--allow-host {exc}") from None


class BearerTokenMiddleware:
    """ASGI middleware: an HTTP request without ``Authorization: Bearer <token>`` is answered 401.

    Both sides are hashed before the constant-time comparison, so neither the token's
    content nor its length shows in the timing."""

    def __init__(self, app: Any, token: str) -> None:
        self._app = app
        self._digest = hashlib.sha256(token.encode("utf-8")).digest()

    def _authorized(self, headers: list[tuple[bytes, bytes]]) -> bool:
        values = [value for name, value in headers if name.lower() == b"authorization"]
        if len(values) != 1:
            return False
        scheme, _, credentials = values[0].partition(b" ")
        if scheme.lower() != b"bearer":
            return False
        return hmac.compare_digest(hashlib.sha256(credentials.strip()).digest(), self._digest)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await self._app(scope, receive, send)
            return
        if scope["type"] != "http":
            return  # nothing but HTTP is served (a websocket upgrade goes unanswered and is closed)
        if self._authorized(scope.get("headers", [])):
            await self._app(scope, receive, send)
            return
        body = (b'{"error":"invalid_token","error_description":"this jit serve requires '
                b'Authorization: Bearer <token>"}')
        await send({"type": "http.response.start", "status": 401, "headers": [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"www-authenticate", b'Bearer realm="jit", error="invalid_token"'),
        ]})
        await send({"type": "http.response.body", "body": body})


#: The largest request body ``jit serve --http`` reads: 4 MiB, the SDK's own default. Over HTTP each
#: body is held whole while it is judged and parsed, and many sessions may post at once (over stdio,
#: one client owns the process: :data:`~jit.serve.stdio.MAX_LINE_BYTES`, 32 MiB).
MAX_BODY_BYTES = 4 * 1024 * 1024

#: A UTF-8 byte order mark: ignored before a message, as on stdio (:func:`jit.jsonrpc.decode`).
BOM = "\ufeff".encode()


class JsonRpcCheckMiddleware:
    """ASGI middleware: a POSTed JSON body is judged by jit's own reader (:func:`jit.jsonrpc.decode`,
    what ``--stdio`` answers with) before the SDK's Streamable HTTP transport sees it.

    The SDK answered a request whose ``id`` is not a string or an integer (``{"a":1}``, ``true``,
    ``1.5``, ``null``) with 202 and no body, running nothing: its client waited forever. A refused
    body is answered here (HTTP 400, the JSON-RPC error to the request's id when it has a valid one;
    202 for a dropped notification); anything else goes on unchanged. A body over ``limit`` bytes
    (:data:`MAX_BODY_BYTES`) is answered 413 with ``-32600`` naming the limit, whatever its content
    type, and unread when its ``Content-Length`` says so (the SDK answered it in plain text, "Request
    body too large"); other content types are left to the SDK (415).

    A request whose ``id`` is still in flight in the same session is refused too (MCP forbids
    reusing an id while its request runs): the SDK keeps one answer stream per id, so the second
    request waited out its client's timeout with no answer at all. So is a request in a session
    whose ``MCP-Protocol-Version`` header names no protocol revision: the SDK took it for the
    stateless revision and answered that ``params._meta`` lacked its envelope keys. And an
    ``initialize`` outside a session whose params the SDK's model refuses: the SDK refused it only
    after making a session for it that lived 30 minutes, so a loop of them grew the process."""

    def __init__(self, app: Any, limit: int) -> None:
        self._app = app
        self._limit = limit
        #: (session id, request id as JSON) of the requests being served.
        self._in_flight: set[tuple[bytes, str]] = set()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self._app(scope, receive, send)
            return
        declared = self._declared(scope)
        if declared > self._limit:  # refused before a byte of it is read
            await self._answer(send, 413, too_large(declared, self._limit, "a request body"))
            return
        if not self._json(scope):  # the SDK answers it (415), its body bounded by the same limit
            await self._app(scope, receive, send)
            return
        chunks: list[bytes] = []
        size, more = 0, True
        while more and size <= self._limit:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            more = bool(message.get("more_body"))
        if size > self._limit:  # a body sent without its length (chunked), or longer than it said
            await self._answer(send, 413, too_large(None if more else size, self._limit, "a request body"))
            return
        body = b"".join(chunks)
        verdict = self._verdict(body)
        if isinstance(verdict, dict) and verdict.get("method") == "initialize" and "id" in verdict \
                and self._header(scope, b"mcp-session-id") is None:
            verdict = self._initialize_problem(verdict) or verdict
        key = self._request_key(scope, verdict)
        version = self._unknown_version(scope) if key is not None else None
        if version is not None and isinstance(verdict, dict):
            verdict = Rejected(error(verdict["id"], UNSUPPORTED_PROTOCOL_VERSION,
                                     f"Unsupported protocol version: the MCP-Protocol-Version header says {version!r}; "
                                     f"this server speaks {', '.join(KNOWN_PROTOCOL_VERSIONS)}",
                                     supported=list(KNOWN_PROTOCOL_VERSIONS), requested=version),
                               f"unknown MCP-Protocol-Version {version!r}")
        elif key is not None and key in self._in_flight and isinstance(verdict, dict):
            verdict = Rejected(error(verdict["id"], INVALID_REQUEST,
                                     f"Invalid Request: request id {key[1]} is still in flight in this session; "
                                     "an id may not be reused before its answer came"),
                               f"request id {key[1]} reused while in flight")
        if isinstance(verdict, Rejected):
            await self._answer(send, 400, verdict)
            return
        if body.startswith(BOM):  # RFC 8259 lets a reader ignore it; the SDK does not
            body = body[len(BOM):]
        pending = [{"type": "http.request", "body": body, "more_body": False}]

        async def replay() -> dict[str, Any]:
            return pending.pop(0) if pending else await receive()

        if key is None:
            await self._app(scope, replay, send)
            return
        in_flight = self._in_flight

        async def answering(message: dict[str, Any]) -> None:
            # The id is free once the last of the answer leaves, before the client can see it (the
            # app may still be winding down when the client sends its next request).
            if message.get("type") == "http.response.body" and not message.get("more_body"):
                in_flight.discard(key)
            await send(message)

        in_flight.add(key)
        try:
            await self._app(scope, replay, answering)
        finally:
            in_flight.discard(key)

    @staticmethod
    async def _answer(send: Any, status: int, refused: Rejected) -> None:
        """Answer a refused message with ``status`` and its JSON-RPC error (202 and nothing for a
        notification, which is never answered)."""
        log.warning("refused a message from an HTTP client: %s", refused.reason)
        if refused.reply is None:
            await send({"type": "http.response.start", "status": 202, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        out = scrub(encode(refused.reply)).encode("utf-8")  # as the stdio writer writes it
        await send({"type": "http.response.start", "status": status, "headers": [
            (b"content-type", b"application/json"), (b"content-length", str(len(out)).encode())]})
        await send({"type": "http.response.body", "body": out})

    @staticmethod
    def _header(scope: dict[str, Any], name: bytes) -> bytes | None:
        """A header's first value, as the SDK reads it (Starlette's ``Headers.get``): a header sent
        twice must not let a body past this guard that the SDK then serves."""
        return next((v for k, v in scope.get("headers", []) if k.lower() == name), None)

    @classmethod
    def _request_key(cls, scope: dict[str, Any], message: dict[str, Any] | Rejected | None) -> tuple[bytes, str] | None:
        """(session, id) of a request sent in a session; None for anything else (a notification, a
        response, ``initialize`` before a session exists)."""
        if not isinstance(message, dict) or "method" not in message or "id" not in message:
            return None
        session = cls._header(scope, b"mcp-session-id")
        return None if session is None else (session, encode(message["id"]).strip())

    @staticmethod
    def _initialize_problem(message: dict[str, Any]) -> Rejected | None:
        """The answer to an ``initialize`` whose params the SDK's own model refuses (None: it takes
        them), so no session is made for it."""
        try:
            InitializeRequestParams.model_validate(message.get("params"))
        except pydantic.ValidationError as exc:
            where, first, _more = first_problem(exc, ("params",))
            return Rejected(error(message["id"], INVALID_PARAMS, f"Invalid params: {where}: {first['msg']}"),
                            f"initialize refused: {where}: {first['msg']}")
        return None

    @classmethod
    def _unknown_version(cls, scope: dict[str, Any]) -> str | None:
        """The ``MCP-Protocol-Version`` header's value when it names no protocol revision."""
        given = cls._header(scope, b"mcp-protocol-version")
        if given is None:
            return None
        value = given.decode("latin-1")
        return None if value in KNOWN_PROTOCOL_VERSIONS else value

    @classmethod
    def _declared(cls, scope: dict[str, Any]) -> int:
        try:
            return int(cls._header(scope, b"content-length") or 0)
        except ValueError:
            return 0

    @classmethod
    def _json(cls, scope: dict[str, Any]) -> bool:
        """Whether the SDK takes the body for JSON: its rule (``_check_content_type``), on the
        first Content-Type header: any comma-separated part before ``;`` is ``application/json``."""
        given = cls._header(scope, b"content-type") or b""
        return any(part.strip() == b"application/json" for part in given.split(b";")[0].split(b","))

    @staticmethod
    def _verdict(body: bytes) -> dict[str, Any] | Rejected | None:
        """The message the body holds, the answer refusing it, or None (a blank body)."""
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError as exc:
            return not_utf8(body.decode("utf-8", errors="replace"), exc.start)
        return decode(text)


async def serve_http(server: Any, host: str, port: int, access: HttpAccess, settings: ServeConfig) -> None:
    """``MCPServer.run_streamable_http_async`` with jit's guard: the SDK's Streamable HTTP app with
    at most ``settings.max_http_sessions`` sessions and bodies of at most :data:`MAX_BODY_BYTES`,
    behind the Host/Origin check on ``access.hosts`` (the SDK's own, which compares strings, is
    off) and the bearer token when there is one; served by uvicorn with a bound on reading a
    request's headers (``settings.http_header_timeout``, :mod:`jit.serve.headertimeout`)."""
    import uvicorn

    from .headertimeout import header_timeout_protocol

    sdk_app = server.streamable_http_app(
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False), host=host,
        max_sessions=settings.max_http_sessions, max_request_body_size=MAX_BODY_BYTES)
    app: Any = hostcheck.HostCheckMiddleware(JsonRpcCheckMiddleware(sdk_app, MAX_BODY_BYTES), access.hosts)
    if access.token is not None:
        app = BearerTokenMiddleware(app, access.token)
    config = uvicorn.Config(app, host=host, port=port, log_level=server.settings.log_level.lower(),
                            http=header_timeout_protocol(settings.http_header_timeout))  # type: ignore[arg-type]
    web = uvicorn.Server(config)

    def shut_down() -> None:  # what uvicorn does on SIGTERM; it leaves SIGHUP (a closed terminal) to kill
        web.should_exit = True

    await until_stopped(web.serve, signals=("SIGHUP",), stop=shut_down)
