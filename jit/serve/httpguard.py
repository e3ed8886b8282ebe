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
  them on only for a literal loopback host): the allowed hosts are the loopback names,
  the bound address, this machine's host names, and those given with ``--allow-host``.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import logging
import os
import socket
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pydantic
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import INVALID_PARAMS, INVALID_REQUEST, InitializeRequestParams
from mcp_types.jsonrpc import UNSUPPORTED_PROTOCOL_VERSION
from mcp_types.version import KNOWN_PROTOCOL_VERSIONS

from ..jsonrpc import Rejected, decode, encode, error, first_problem, not_utf8, scrub
from ..process import until_stopped
from ..lines import MAX_LINE_BYTES

__all__ = [
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

_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


class RemoteBindRefused(ValueError):
    """``jit serve --http`` was asked to listen where it must not, or without the token it needs."""


@dataclass(frozen=True)
class HttpAccess:
    """How an HTTP ``jit serve`` is guarded: the SDK's Host/Origin settings and the bearer token."""

    security: TransportSecuritySettings
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


def _host_form(host: str) -> str:
    """``host`` as it appears in a Host header (IPv6 literals bracketed)."""
    name = host.strip("[]")
    try:
        return f"[{name}]" if ipaddress.ip_address(name).version == 6 else name
    except ValueError:
        return name.lower()


def _machine_names() -> list[str]:
    """This machine's host names: what a client on the network puts in Host for a wildcard bind."""
    names = {socket.gethostname()}
    try:
        names.add(socket.getfqdn())
    except OSError:
        pass
    return sorted(n.lower() for n in names if n)


def _settings(hosts: Iterable[str]) -> TransportSecuritySettings:
    allowed = list(dict.fromkeys(_host_form(h) for h in hosts if h))
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[form for h in allowed for form in (h, f"{h}:*")],
        allowed_origins=[f"{scheme}://{h}{port}" for h in allowed for scheme in ("http", "https")
                         for port in ("", ":*")],
    )


def http_access(host: str, *, allow_remote: bool = False, allowed_hosts: Iterable[str] = (),
                environ: Mapping[str, str] | None = None) -> HttpAccess:
    """The guard for ``jit serve --http`` on ``host``, or :class:`RemoteBindRefused` saying why it
    may not start (a non-loopback host without ``allow_remote``; ``allow_remote`` without a token)."""
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
        wildcard = ipaddress.ip_address(host.strip("[]")).is_unspecified
    except ValueError:
        wildcard = False
    hosts = [*_LOOPBACK_NAMES, *(_machine_names() if wildcard else [host]), *allowed_hosts]
    return HttpAccess(_settings(hosts), token)


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


#: A UTF-8 byte order mark: ignored before a message, as on stdio (:func:`jit.jsonrpc.decode`).
BOM = "\ufeff".encode()


class JsonRpcCheckMiddleware:
    """ASGI middleware: a POSTed JSON body is judged by jit's own reader (:func:`jit.jsonrpc.decode`,
    what ``--stdio`` answers with) before the SDK's Streamable HTTP transport sees it.

    The SDK answered a request whose ``id`` is not a string or an integer (``{"a":1}``, ``true``,
    ``1.5``, ``null``) with 202 and no body, running nothing: its client waited forever. A refused
    body is answered here (HTTP 400, the JSON-RPC error to the request's id when it has a valid one;
    202 for a dropped notification); anything else goes on unchanged. Bodies over the SDK's own
    limit and other content types are left to the SDK (413, 415).

    A request whose ``id`` is still in flight in the same session is refused too (MCP forbids
    reusing an id while its request runs): the SDK keeps one answer stream per id, so the second
    request waited out its client's timeout with no answer at all. So is a request in a session
    whose ``MCP-Protocol-Version`` header names no protocol revision: the SDK took it for the
    stateless revision and answered that ``params._meta`` lacked its envelope keys. And an
    ``initialize`` outside a session whose params the SDK's model refuses: the SDK refused it only
    after making a session for it that lived 30 minutes (9,000 such requests: +214 MB)."""

    def __init__(self, app: Any, limit: int) -> None:
        self._app = app
        self._limit = limit
        #: (session id, request id as JSON) of the requests being served.
        self._in_flight: set[tuple[bytes, str]] = set()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST" or not self._json(scope) or \
                self._declared(scope) > self._limit:
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
        verdict = None if more else self._verdict(b"".join(chunks))
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
            log.warning("refused a message from an HTTP client: %s", verdict.reason)
            if verdict.reply is None:
                await send({"type": "http.response.start", "status": 202, "headers": []})
                await send({"type": "http.response.body", "body": b""})
                return
            out = scrub(encode(verdict.reply)).encode("utf-8")  # as the stdio writer writes it
            await send({"type": "http.response.start", "status": 400, "headers": [
                (b"content-type", b"application/json"), (b"content-length", str(len(out)).encode())]})
            await send({"type": "http.response.body", "body": out})
            return
        if not more and b"".join(chunks).startswith(BOM):  # RFC 8259 lets a reader ignore it; the SDK does not
            chunks = [b"".join(chunks)[len(BOM):]]
        # What was read goes on as it came (an over-long body unread past the limit: the SDK refuses it).
        pending = [{"type": "http.request", "body": c, "more_body": more or i < len(chunks) - 1}
                   for i, c in enumerate(chunks)]

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


async def serve_http(server: Any, host: str, port: int, access: HttpAccess, max_sessions: int) -> None:
    """``MCPServer.run_streamable_http_async`` with jit's guard: the SDK's Streamable HTTP app
    with ``access.security`` as its Host/Origin settings and at most ``max_sessions`` sessions
    (``serve.max_http_sessions``), behind the bearer token when there is one."""
    import uvicorn

    sdk_app = server.streamable_http_app(transport_security=access.security, host=host, max_sessions=max_sessions)
    app: Any = JsonRpcCheckMiddleware(sdk_app, MAX_LINE_BYTES)
    if access.token is not None:
        app = BearerTokenMiddleware(app, access.token)
    config = uvicorn.Config(app, host=host, port=port, log_level=server.settings.log_level.lower())
    web = uvicorn.Server(config)

    def shut_down() -> None:  # what uvicorn does on SIGTERM; it leaves SIGHUP (a closed terminal) to kill
        web.should_exit = True

    await until_stopped(web.serve, signals=("SIGHUP",), stop=shut_down)
