"""The Host and Origin checks of ``jit serve --http`` (against DNS rebinding), on parsed headers.

A page on ``evil.example`` whose name an attacker re-points at 127.0.0.1 makes the browser
send requests to jit with ``Host: evil.example:PORT``; jit answers only requests whose Host
names it. The SDK's own check compared strings (``host.startswith("127.0.0.1:")``), which let
``Host: 127.0.0.1:8765@evil.example`` through and refused ``LOCALHOST:8765``. Here each value
is parsed as the RFC says it is written, and compared by what it names:

* ``Host`` (RFC 9110 §7.2) is ``uri-host [":" port]`` (RFC 3986 §3.2.2): an IPv6 literal in
  brackets, an IPv4 address or a registered name, then an optional port of digits. No
  userinfo, path or anything else. Names are case-insensitive and one trailing dot (the
  absolute form, ``localhost.``) names the same host; addresses compare as addresses
  (``[0:0::1]`` is ``[::1]``). A request without exactly one valid Host is answered 400
  (RFC 9110 §7.2 demands it), one naming another host 421 (as the SDK answers it).
* ``Origin`` (RFC 6454 §7) is ``scheme "://" host [":" port]`` or ``null``. Absent, the
  request is not a browser's cross-site one and passes; present, its scheme must be http or
  https and its host allowed, else 403. ``null`` (a sandboxed or ``file:`` page) is refused.

Any port passes: what is checked is whom the request was meant for, and jit listens on one.
"""

from __future__ import annotations

import ipaddress
import logging
import re
import socket
from collections.abc import Iterable
from typing import Any

__all__ = ["HostCheckMiddleware", "allowed_hosts", "host_of_header", "host_of_origin", "normal_host"]

log = logging.getLogger("jit.serve.httpguard")

#: The loopback names every ``jit serve --http`` answers to.
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")

# RFC 3986 §3.2.2 reg-name: unreserved / pct-encoded / sub-delims (no "@", ":", "/", "[", "]").
_REG_NAME = re.compile(r"(?:[A-Za-z0-9\-._~!$&'()*+,;=]|%[0-9A-Fa-f]{2})*")
# RFC 3986 §3.2.2 IPv4address: four dec-octets, no leading zeros (anything else is a reg-name).
_OCTET = r"(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])"
_IPV4 = re.compile(rf"{_OCTET}(?:\.{_OCTET}){{3}}")
_ORIGIN = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://(.*)")


def normal_host(host: str) -> str | None:
    """``host`` (an IPv6 literal in brackets, an IPv4 address or a name; no port) as it is
    compared: a name lower-cased without its one trailing dot, an address in its compressed
    form (IPv6 in brackets). None when it is none of these."""
    if host.startswith("["):
        if not host.endswith("]") or "%" in host:  # no zone identifiers: they name no host of ours
            return None
        try:
            return f"[{ipaddress.IPv6Address(host[1:-1]).compressed}]"
        except ValueError:
            return None
    if _IPV4.fullmatch(host):
        return host
    name = host[:-1] if host.endswith(".") else host
    if not _REG_NAME.fullmatch(name) or "" in name.split("."):  # no empty label (``a..b``, ``.a``, ``a..``)
        return None
    return name.lower()


def _split_port(text: str) -> tuple[str, str] | None:
    """``host[:port]`` split at the port's colon (an IPv6 literal keeps its own); None when the
    port is not digits."""
    if text.startswith("["):
        end = text.find("]")
        host, rest = (text[:end + 1], text[end + 1:]) if end > 0 else (text, "")
    else:
        host, colon, port = text.partition(":")
        rest = colon + port
    if rest and not (rest.startswith(":") and rest[1:].isdigit() or rest == ":"):
        return None
    return host, rest[1:]


def host_of_header(value: str) -> str | None:
    """The host a ``Host`` header value names (:func:`normal_host`), or None if it is not one."""
    split = _split_port(value.strip(" \t"))
    return None if split is None else normal_host(split[0])


def host_of_origin(value: str) -> str | None:
    """The host an ``Origin`` header value names when its scheme is http or https; None otherwise
    (``null``, another scheme, userinfo, a path, a malformed host or port)."""
    match = _ORIGIN.fullmatch(value.strip(" \t"))
    if match is None or match.group(1).lower() not in ("http", "https"):
        return None
    split = _split_port(match.group(2))
    return None if split is None else normal_host(split[0])


def _machine_names() -> list[str]:
    """This machine's host names: what a client on the network puts in Host for a wildcard bind."""
    names = {socket.gethostname()}
    try:
        names.add(socket.getfqdn())
    except OSError:
        pass
    return sorted(n for n in names if n)


def _bracketed(host: str) -> str:
    """An IPv6 address as it appears in a Host header (a config or command line may give it bare)."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def allowed_hosts(bound: str, extra: Iterable[str] = ()) -> frozenset[str]:
    """The hosts a ``jit serve --http`` bound to ``bound`` answers to, normalised: the loopback
    names, the bound address (for a wildcard bind, this machine's names instead) and ``extra``
    (``--allow-host``). An IPv6 address may be given with or without brackets. Raises ValueError
    naming an ``extra`` entry that is not a host name or address (a port, a scheme, a path)."""
    try:
        wildcard = ipaddress.ip_address(bound.strip("[]")).is_unspecified
    except ValueError:
        wildcard = False
    own = [normal_host(_bracketed(h)) for h in (*LOOPBACK_NAMES, *(_machine_names() if wildcard else [bound]))]
    given = []
    for entry in extra:
        host = normal_host(_bracketed(entry.strip()))
        if host is None:
            raise ValueError(f"{entry!r} is not a host name or address (give it without a scheme, port or path)")
        given.append(host)
    return frozenset(h for h in (*own, *given) if h is not None)


class HostCheckMiddleware:
    """ASGI middleware: an HTTP request is served only when its ``Host`` (and ``Origin``, when
    sent) names one of ``hosts`` (normalised as :func:`normal_host` gives them)."""

    def __init__(self, app: Any, hosts: frozenset[str]) -> None:
        self._app = app
        self._hosts = hosts

    def _refusal(self, headers: list[tuple[bytes, bytes]]) -> tuple[int, str] | None:
        hosts = [v for k, v in headers if k.lower() == b"host"]
        if len(hosts) != 1:
            return 400, "Bad Request: a request must carry exactly one Host header"
        host = host_of_header(hosts[0].decode("latin-1"))
        if host is None:
            return 400, "Bad Request: the Host header is not a host[:port]"
        if host not in self._hosts:
            return 421, "Misdirected Request: this server does not answer to the host in the Host header"
        origins = [v for k, v in headers if k.lower() == b"origin"]
        if len(origins) > 1:
            return 403, "Forbidden: more than one Origin header"
        if origins and host_of_origin(origins[0].decode("latin-1")) not in self._hosts:
            return 403, "Forbidden: requests from this Origin are not served"
        return None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        refusal = self._refusal(scope.get("headers", [])) if scope["type"] == "http" else None
        if refusal is None:
            await self._app(scope, receive, send)
            return
        status, text = refusal
        log.warning("refused an HTTP request: %s", text)  # never the header itself: it is the client's text
        body = text.encode()
        await send({"type": "http.response.start", "status": status, "headers": [
            (b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})
