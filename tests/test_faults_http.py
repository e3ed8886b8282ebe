"""``jit serve --http`` at the HTTP layer: the Host/Origin check on parsed headers, the bound on
reading a request's headers, and the body limit, each against a real ``jit serve --http`` process
(and the parsing rules in process)."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterator

import httpx2
import pytest
from conftest import write_example_config
from mcp_types import INVALID_REQUEST
from servers.support import http_session, serving_http

from jit.serve.hosts import allowed_hosts, host_of_header, host_of_origin
from jit.serve.httpguard import MAX_BODY_BYTES, TOKEN_ENV, RemoteBindRefused, http_access

TIMEOUT = 180
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
ENV.pop(TOKEN_ENV, None)
#: The header timeout of the served process: short, so stalled connections are closed within the test.
HEADER_TIMEOUT = 1.0


# --------------------------------------------------------------------------- parsing, in process


@pytest.mark.parametrize(("value", "host"), [
    ("127.0.0.1:18765", "127.0.0.1"),
    ("127.0.0.1:18765@evil.com", None),  # userinfo-like tail: the port is not digits
    ("LOCALHOST:18765", "localhost"),  # host names are case-insensitive
    ("localhost.:18765", "localhost"),  # the absolute form names the same host
    ("localhost", "localhost"),
    ("localhost:", "localhost"),  # RFC 3986 allows an empty port
    ("[::1]:18765", "[::1]"),
    ("[0:0:0:0:0:0:0:1]:18765", "[::1]"),  # an address compares as an address
    ("[::1]", "[::1]"),
    ("::1", None),  # an IPv6 literal must be bracketed
    ("[::1%25eth0]:1", None),  # a zone identifier names no host of ours
    ("[::1", None),
    ("[::1]x", None),
    ("evil.com:18765", "evil.com"),
    ("localhost:80:90", None),
    ("localhost..:1", None),  # an empty label
    (".localhost", None),
    ("user@localhost", None),
    ("local host", None),
    ("", None),
])
def test_a_host_header_is_read_as_host_and_port(value, host):
    assert host_of_header(value) == host


@pytest.mark.parametrize(("value", "host"), [
    ("http://localhost:8765", "localhost"),
    ("HTTPS://LOCALHOST", "localhost"),
    ("http://[::1]:9", "[::1]"),
    ("null", None),  # a sandboxed or file: page
    ("http://user@localhost", None),
    ("http://localhost/path", None),
    ("ftp://localhost", None),
    ("localhost:8765", None),
])
def test_an_origin_header_is_read_as_scheme_host_and_port(value, host):
    assert host_of_origin(value) == host


def test_the_allowed_hosts_are_normalised_and_a_bad_allow_host_is_refused():
    assert allowed_hosts("127.0.0.1", ["JIT.lan.", "::2", "[::3]"]) == {
        "127.0.0.1", "localhost", "[::1]", "jit.lan", "[::2]", "[::3]"}
    assert "0.0.0.0" not in allowed_hosts("0.0.0.0")  # a wildcard bind answers to this machine's names
    for bad in ("jit.lan:8080", "http://jit.lan", "jit.lan/x"):
        with pytest.raises(RemoteBindRefused, match="--allow-host"):
            http_access("127.0.0.1", allowed_hosts=[bad], environ={})


# --------------------------------------------------------------------------- a real jit serve --http


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> Iterator[str]:
    """One ``jit serve --http`` (the workspace example server behind it) with a short header timeout."""
    base = tmp_path_factory.mktemp("http")
    path = write_example_config(base, servers={"tracker": None}, serve={"http_header_timeout": HEADER_TIMEOUT},
                                connection={"reconnect_attempts": 0, "ping_interval": 0})
    with serving_http(base, path, env=ENV, host="127.0.0.1", timeout=TIMEOUT) as url:
        yield url


def _port(url: str) -> int:
    return int(url.split(":")[2].split("/")[0])


def _raw(url: str, request: bytes) -> bytes:
    """``request`` sent on a socket of its own; the status line of the answer."""
    with socket.create_connection(("127.0.0.1", _port(url)), timeout=TIMEOUT) as s:
        s.sendall(request)
        return s.recv(4096).split(b"\r\n", 1)[0]


@pytest.mark.slow
def test_the_host_check_reads_the_header_as_the_rfc_writes_it(served):
    port = _port(served)
    with httpx2.Client(timeout=TIMEOUT) as http:
        headers = http_session(http, served)
        ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}

        def status(**extra: str) -> int:
            return http.post(served, json=ping, headers={**headers, **extra}).status_code

        # The string comparison let the first through and refused the next four.
        assert status(Host=f"127.0.0.1:{port}@evil.com") == 400
        for host in (f"LOCALHOST:{port}", f"localhost.:{port}", f"[::1]:{port}", f"[0:0::1]:{port}"):
            assert status(Host=host) == 200, host
        assert status(Host=f"evil.com:{port}") == 421
        assert status(Host=f"localhost.evil.com:{port}") == 421
        assert status(Origin=f"http://LOCALHOST:{port}") == 200
        assert status(Origin=f"http://localhost:{port}@evil.com") == 403
        assert status(Origin="http://evil.com") == 403
        assert status(Origin="null") == 403
    # RFC 9110 §7.2: a request with two Host headers, or none, is answered 400.
    assert _raw(served, b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil.com\r\nContent-Length: 0\r\n\r\n") \
        .startswith(b"HTTP/1.1 400")
    assert _raw(served, b"POST /mcp HTTP/1.0\r\nContent-Length: 0\r\n\r\n").startswith(b"HTTP/1.1 400")


def _closed_by_server(s: socket.socket) -> bool:
    """Whether the server has closed ``s`` (it reads end of file; a stalled request gets no answer)."""
    try:
        return s.recv(4096) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def _answered(s: socket.socket, request: bytes) -> None:
    """Send a whole request on ``s`` and read its whole answer (it has a Content-Length)."""
    s.sendall(request)
    data = b""
    while b"\r\n\r\n" not in data:
        data += s.recv(4096)
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                  if line.lower().startswith(b"content-length"))
    while len(body) < length:
        body += s.recv(4096)


@pytest.mark.slow
def test_connections_that_stall_before_their_headers_end_are_closed(served):
    """uvicorn had no bound on reading a request's headers: a connection that sent nothing, half a
    request line or half its headers stayed open for good (1,100 of them for 45 s and more). Each
    is closed ``serve.http_header_timeout`` after it opened, or after the first bytes of a later
    request on a kept-alive connection, and the server goes on answering meanwhile."""
    port = _port(served)
    ping = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n"  # answered (400, no session)
    stalls = {
        "nothing": b"",
        "half a request line": b"POST /mc",
        "half the headers": b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Ty",
        "half a second request": b"GET /m",  # on a connection that was answered once (keep-alive)
    }
    sockets: list[tuple[str, socket.socket]] = []
    try:
        for kind, sent in stalls.items():
            for _ in range(10):
                s = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
                if kind == "half a second request":
                    _answered(s, ping)
                s.sendall(sent)
                s.settimeout(0.1)
                sockets.append((kind, s))
        with httpx2.Client(timeout=TIMEOUT) as http:
            http_session(http, served)  # answered while 40 connections stall
        deadline = time.monotonic() + 30  # a hang guard: each should close HEADER_TIMEOUT after its start
        still_open = list(sockets)
        while still_open and time.monotonic() < deadline:
            still_open = [(kind, s) for kind, s in still_open if not _closed_by_server(s)]
        assert not still_open, sorted({kind for kind, _ in still_open})
    finally:
        for _, s in sockets:
            s.close()


@pytest.mark.slow
def test_a_body_over_the_limit_is_answered_naming_the_limit(served):
    """The SDK answered a body over its 4 MiB limit with plain text; jit answers 413 with the
    JSON-RPC error its stdio reader gives a line over its limit, and the session goes on."""
    with httpx2.Client(timeout=TIMEOUT) as http:
        session = http_session(http, served)
        big = b'{"jsonrpc":"2.0","id":3,"method":"ping","params":{"x":"%s"}}' % (b"a" * (MAX_BODY_BYTES + (1 << 20)))

        def chunked() -> Iterator[bytes]:  # no Content-Length: the limit is found while reading
            for at in range(0, len(big), 1 << 16):
                yield big[at:at + (1 << 16)]

        for content, size in ((big, len(big)), (chunked(), None)):
            refused = http.post(served, content=content, headers=session)
            assert refused.status_code == 413, refused.text
            answer = refused.json()
            assert answer["id"] is None and answer["error"]["code"] == INVALID_REQUEST
            assert answer["error"]["data"] == {"limit": MAX_BODY_BYTES, "size": size}
            assert "over jit serve's limit of 4 MiB" in answer["error"]["message"]
        ok = http.post(served, json={"jsonrpc": "2.0", "id": 4, "method": "ping"}, headers=session)
        assert ok.status_code == 200 and '"id":4' in ok.text.replace(" ", ""), ok.text
