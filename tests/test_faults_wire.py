"""Fault injection on jit serve's wire: malformed JSON-RPC, lone surrogates, unsendable
arguments, oversized and over-deep lines on ``--stdio``; binds and tokens on ``--http``.

The stdio cases run against one real ``jit serve --stdio`` process (upstreams: the repo's
example workspace server and the client tests' demo server), written to byte by byte as a
client would, and read back line by line: every line jit writes must be UTF-8 JSON a strict
parser takes, every malformed line gets its JSON-RPC error, and after each the server still
answers and the upstream child is the same process (not torn down and respawned).
The lane's decisions themselves are unit-tested in test_proxylane.py style at the end.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from typing import Any

import httpx2
import pydantic_core
import pytest
from conftest import REPO, write_example_config
from mcp_types import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR
from servers.support import demo_stdio, free_port, http_session, make_config, port_open, serving_http, stop
from typer.testing import CliRunner

from jit.cli import app
from jit.errors import InvalidArgumentsError
from jit.jsonrpc import Rejected, decode, find_unsendable, not_utf8
from jit.serve.httpguard import TOKEN_ENV, RemoteBindRefused, http_access, is_loopback
from jit.lines import MAX_LINE_BYTES

#: Hang guard for one answer (the first waits for jit serve's start-up: model, connections).
TIMEOUT = 180
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
ENV.pop(TOKEN_ENV, None)
DEMO = {"command": sys.executable, "args": [str(REPO / "tests" / "servers" / "demo_server.py")]}


class Wire:
    """A raw JSON-RPC client on a ``jit serve --stdio`` process's pipes."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.lines: queue.Queue[bytes] = queue.Queue()
        self._next_id = 1000
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            self.lines.put(raw)

    def send(self, data: bytes | str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data.encode("utf-8") if isinstance(data, str) else data)
        self.proc.stdin.flush()

    def receive(self) -> Any:
        """The next line jit writes: it must be UTF-8 and JSON that the SDK's strict parser reads."""
        try:
            raw = self.lines.get(timeout=TIMEOUT)
        except queue.Empty:
            raise AssertionError(f"no answer from jit serve (exit code {self.proc.poll()})") from None
        return pydantic_core.from_json(raw.decode("utf-8"))

    def answer(self, rid: Any = None) -> Any:
        """The next response (skipping notifications); with ``rid``, the one to that id."""
        while True:
            msg = self.receive()
            if isinstance(msg, list) or "method" not in msg:
                if rid is None or (isinstance(msg, dict) and msg.get("id") == rid):
                    return msg

    def request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        self._next_id += 1
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": self._next_id, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(json.dumps(msg) + "\n")
        return self.answer(self._next_id)

    def call(self, server: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        answer = self.request("tools/call", {"name": "call_tool", "arguments": {
            "server": server, "tool": tool, "arguments": arguments}})
        return answer["result"]

    def demo_pid(self) -> int:
        result = self.call("demo", "pid", {})
        assert not result.get("isError"), result
        return int(result["content"][0]["text"])


@pytest.fixture(scope="module")
def wire(tmp_path_factory):
    """One ``jit serve --stdio`` with the workspace and demo servers, after the handshake."""
    base = tmp_path_factory.mktemp("wire")
    path = write_example_config(base, servers={"tracker": None, "demo": DEMO},
                                connection={"reconnect_attempts": 1, "ping_interval": 0})
    log = open(base / "serve.log", "wb")  # noqa: SIM115 - closed in teardown
    proc = subprocess.Popen([sys.executable, "-m", "jit", "serve", "--stdio", "--config", str(path)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, env=ENV,
                            start_new_session=True)
    try:
        w = Wire(proc)
        w.send(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "faults", "version": "0"}}}) + "\n")
        assert w.answer(0)["result"]["protocolVersion"] == "2025-11-25"
        w.send('{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        w.first_pid = w.demo_pid()
        yield w
    finally:
        stop(proc)
        log.close()


def still_serving(w: Wire) -> None:
    """The server answers a normal request, and the upstream child was not respawned."""
    assert w.proc.poll() is None
    assert w.request("ping") == {"jsonrpc": "2.0", "id": w._next_id, "result": {}}
    assert w.demo_pid() == w.first_pid


def deep(depth: int) -> str:
    return "[" * depth + "]" * depth


def call_line(rid: int, arguments: str) -> str:
    return ('{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"call_tool","arguments":%s}}\n'
            % (rid, arguments))


# Each case: the line, the error code, the id the error goes to.
MALFORMED = {
    # not JSON: -32700, id null
    "truncated": ('{"jsonrpc": "2.0", "id": 1, "method": "tools/call", \n', PARSE_ERROR, None),
    "prose": ("hello, is this thing on?\n", PARSE_ERROR, None),
    "trailing garbage": ('{"jsonrpc":"2.0","id":2,"method":"ping"}}\n', PARSE_ERROR, None),
    "invalid utf-8": (b'\xff\xfe{"jsonrpc":"2.0","id":3,"method":"ping"}\n', PARSE_ERROR, None),
    "nul bytes": (b"\x00\x00\x00\n", PARSE_ERROR, None),
    # not UTF-8 inside a string: not run with U+FFFD in its place; the error goes to the id it names
    "invalid utf-8 in an argument": (call_line(21, '{"server":"demo","tool":"echo","arguments":{"text":"caf@"}}')
                                     .encode().replace(b"@", b"\xe9 \xff"), PARSE_ERROR, 21),
    "invalid utf-8 in the id": (b'{"jsonrpc":"2.0","id":"a\xffb","method":"ping"}\n', PARSE_ERROR, None),
    "depth 5000 arguments": (call_line(4, '{"server":"demo","tool":"echo","arguments":{"text":%s}}' % deep(5000)),
                             PARSE_ERROR, None),
    "20 MB garbage": ("x" * 20_000_000 + "\n", PARSE_ERROR, None),
    # not one JSON-RPC message: -32600
    "no jsonrpc": ('{"id":5,"method":"ping"}\n', INVALID_REQUEST, 5),
    "jsonrpc 1.0": ('{"jsonrpc":"1.0","id":6,"method":"ping"}\n', INVALID_REQUEST, 6),
    "object id": ('{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}\n', INVALID_REQUEST, None),
    "boolean id": ('{"jsonrpc":"2.0","id":true,"method":"ping"}\n', INVALID_REQUEST, None),
    "null id": ('{"jsonrpc":"2.0","id":null,"method":"tools/list"}\n', INVALID_REQUEST, None),
    "float id": ('{"jsonrpc":"2.0","id":1.5,"method":"ping"}\n', INVALID_REQUEST, None),
    "numeric method": ('{"jsonrpc":"2.0","id":7,"method":42}\n', INVALID_REQUEST, 7),
    "a string": ('"ping"\n', INVALID_REQUEST, None),
    "empty object": ("{}\n", INVALID_REQUEST, None),
    "empty batch": ("[]\n", INVALID_REQUEST, None),
    "batch of numbers": ("[1, 2, 3]\n", INVALID_REQUEST, None),
    "batch of notifications": ('[{"jsonrpc":"2.0","method":"notifications/initialized"}]\n', INVALID_REQUEST, None),
    "over the line limit": (b"y" * (MAX_LINE_BYTES + 10) + b"\n", INVALID_REQUEST, None),
    # a request with bad params: -32602 to its id
    "params array": ('{"jsonrpc":"2.0","id":8,"method":"tools/call","params":["call_tool"]}\n', INVALID_PARAMS, 8),
    "params string": ('{"jsonrpc":"2.0","id":9,"method":"tools/list","params":"all"}\n', INVALID_PARAMS, 9),
    # params the SDK refuses with a bare "Invalid request parameters": the field is named
    "arguments array": (('{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":"search_tools",'
                         '"arguments":[]}}\n'), INVALID_PARAMS, 17),
    "meta string": (('{"jsonrpc":"2.0","id":18,"method":"tools/call","params":{"name":"search_tools",'
                     '"arguments":{"query":"x"},"_meta":"str"}}\n'), INVALID_PARAMS, 18),
    "progress token object": ('{"jsonrpc":"2.0","id":19,"method":"ping","params":{"_meta":{"progressToken":{"a":1}}}}\n',
                              INVALID_PARAMS, 19),
    "numeric tool name": ('{"jsonrpc":"2.0","id":20,"method":"tools/call","params":{"name":5}}\n', INVALID_PARAMS, 20),
    "depth 300 arguments": (call_line(10, '{"server":"demo","tool":"echo","arguments":{"text":%s}}' % deep(300)),
                            INVALID_PARAMS, 10),
    # lone surrogates (valid JSON, not Unicode): -32602 to the id, naming where
    "surrogate server": (call_line(11, r'{"server":"\ud800x","tool":"echo","arguments":{"text":"a"}}'),
                         INVALID_PARAMS, 11),
    "surrogate tool": (call_line(12, r'{"server":"demo","tool":"ec\udfffho","arguments":{"text":"a"}}'),
                       INVALID_PARAMS, 12),
    "surrogate argument": (call_line(13, r'{"server":"demo","tool":"echo","arguments":{"text":"cut \ud83d"}}'),
                           INVALID_PARAMS, 13),
    "surrogate key": (call_line(14, r'{"server":"demo","tool":"echo","arguments":{"\udc00":"a"}}'),
                      INVALID_PARAMS, 14),
    "surrogate task": ('{"jsonrpc":"2.0","id":15,"method":"tools/call","params":{"name":"compile_tools",'
                       r'"arguments":{"shard":"coder","task":"fix \ud800 bug"}}}' "\n", INVALID_PARAMS, 15),
    "surrogate in a string id": (r'{"jsonrpc":"2.0","id":"a\ud800","method":"ping"}' "\n", INVALID_REQUEST, None),
    # integers past the 4,300 digits any parser reads: valid JSON, answered like the cases above
    "5000-digit argument": (call_line(16, '{"server":"demo","tool":"echo","arguments":{"n":%s}}' % ("9" * 5000)),
                            INVALID_PARAMS, 16),
    "5000-digit id": ('{"jsonrpc":"2.0","id":%s,"method":"ping"}\n' % ("7" * 5000), INVALID_REQUEST, None),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(MALFORMED))
def test_a_malformed_line_gets_its_json_rpc_error_and_the_server_keeps_serving(wire, case):
    line, code, rid = MALFORMED[case]
    wire.send(line)
    answer = wire.answer()
    assert isinstance(answer, dict), answer
    assert answer["error"]["code"] == code and answer["id"] == rid, answer
    assert "\ufffd" not in answer["error"]["message"]  # the offending text is named, not echoed
    still_serving(wire)


@pytest.mark.slow
def test_a_line_over_the_limit_is_answered_naming_the_limit(wire):
    """Over stdio a message is one line of at most 32 MiB (over HTTP, a body of 4 MiB:
    tests/test_faults_http.py); the answer names the limit and the size, as the HTTP one does."""
    wire.send(b"y" * (MAX_LINE_BYTES + 10) + b"\n")
    answer = wire.answer()
    assert answer["id"] is None and answer["error"]["code"] == INVALID_REQUEST
    assert answer["error"]["data"] == {"limit": MAX_LINE_BYTES, "size": MAX_LINE_BYTES + 10}
    assert "over jit serve's limit of 32 MiB" in answer["error"]["message"]
    still_serving(wire)


@pytest.mark.slow
def test_a_byte_order_mark_before_a_message_is_ignored(wire):
    # RFC 8259 lets a parser ignore it; a client whose writer starts its stream with one must
    # still get its answers (the first line it writes is its initialize).
    wire.send('\ufeff{"jsonrpc":"2.0","id":"bom","method":"ping"}\n')
    assert wire.answer("bom") == {"jsonrpc": "2.0", "id": "bom", "result": {}}
    still_serving(wire)


@pytest.mark.slow
def test_a_batch_with_requests_answers_each_request_id_in_an_array(wire):
    wire.send('[{"jsonrpc":"2.0","id":"b1","method":"ping"},{"jsonrpc":"2.0","method":"notifications/x"},'
              '{"jsonrpc":"2.0","id":2,"method":"tools/list"}]\n')
    answer = wire.answer()
    assert [(a["id"], a["error"]["code"]) for a in answer] == [("b1", INVALID_REQUEST), (2, INVALID_REQUEST)]
    still_serving(wire)


@pytest.mark.slow
def test_a_surrogate_error_names_the_argument_path_and_says_nothing_ran(wire):
    wire.send(call_line(20, r'{"server":"demo","tool":"echo","arguments":{"items":[{"name":"\ud800"}]}}'))
    error = wire.answer(20)["error"]
    assert error["data"]["path"] == "params.arguments.arguments.items[0].name"
    assert "lone surrogate" in error["message"] and "not run" in error["message"]
    still_serving(wire)


@pytest.mark.slow
@pytest.mark.parametrize("value, problem", [("NaN", "nan"), ("-Infinity", "-inf"), ("[1e999]", "inf")])
def test_arguments_json_cannot_carry_are_refused_before_sending_with_the_upstream_untouched(wire, value, problem):
    # The SDK's parser reads NaN and infinities; sent on, other servers could not parse the call.
    wire.send(call_line(30, '{"server":"demo","tool":"echo","arguments":{"text":%s}}' % value))
    result = wire.answer(30)["result"]
    assert result["isError"] is True
    data = result["structuredContent"]
    assert data["error"] == "invalid_arguments" and data["path"].startswith("arguments.text")
    assert problem in data["message"] and "nothing was sent" in data["message"]
    still_serving(wire)


@pytest.mark.slow
def test_end_of_input_answers_what_was_asked_before_it(tmp_path):
    # A client (or `printf … | jit serve --stdio`) closes stdin after its last request, the last line
    # without its newline: every request is answered before the process exits (the SDK alone cancels them).
    path = write_example_config(tmp_path, servers={"tracker": None, "workspace": None, "demo": DEMO},
                                connection={"reconnect_attempts": 0, "ping_interval": 0})
    lines = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "eof", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": "list", "method": "tools/list"},
        {"jsonrpc": "2.0", "id": "ping", "method": "ping"},
        {"jsonrpc": "2.0", "id": "echo", "method": "tools/call", "params": {"name": "call_tool", "arguments": {
            "server": "demo", "tool": "echo", "arguments": {"text": "last line"}}}},
    ]
    done = subprocess.run([sys.executable, "-m", "jit", "serve", "--stdio", "--config", str(path)], check=False,
                          input="\n".join(json.dumps(line) for line in lines).encode(), capture_output=True,
                          env=ENV, timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    answers = {m["id"]: m for m in map(json.loads, done.stdout.decode().splitlines()) if "id" in m}
    assert set(answers) == {0, "list", "ping", "echo"}, done.stdout.decode()
    assert answers["ping"]["result"] == {}
    assert "search_tools" in {t["name"] for t in answers["list"]["result"]["tools"]}
    assert answers["echo"]["result"]["content"][0]["text"] == "last line"


@pytest.mark.slow
def test_normal_calls_still_work_after_every_fault(wire):
    assert wire.call("demo", "echo", {"text": "caf\u00e9 \U0001f600"})["content"][0]["text"] == "caf\u00e9 \U0001f600"
    read = wire.call("workspace", "read_file", {"path": "README.md"})
    assert read["content"][0]["text"].startswith("# demo project")
    still_serving(wire)


# --------------------------------------------------------------------------- ClientManager, Python API


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
@pytest.mark.slow
async def test_the_client_manager_refuses_unsendable_arguments_and_keeps_the_connection(tmp_path, store):
    from jit.client.manager import ClientManager

    config = make_config(tmp_path, {"demo": demo_stdio()})
    async with ClientManager(config, store) as manager:
        before = (await manager.call_tool("demo", "pid", {})).content[0]["text"]
        for arguments, path in [
            ({"text": "\ud800x"}, "arguments.text"),
            ({"text": "ok", "nested": {"deep": ["a", "b\udfff"]}}, "arguments.nested.deep[1]"),
            ({"\ud83d": "key"}, 'arguments["\\ud83d"]'),
            ({"text": b"bytes"}, "arguments.text"),
            ({"text": float("nan")}, "arguments.text"),
            ({"text": json.loads(deep(400))}, "arguments.text"),
        ]:
            with pytest.raises(InvalidArgumentsError) as caught:
                await manager.call_tool("demo", "echo", arguments)
            assert caught.value.path.startswith(path), caught.value.path
            assert "nothing was sent" in caught.value.message
        after = await manager.call_tool("demo", "pid", {})
        assert after.content[0]["text"] == before  # the same child: not torn down, not respawned
        assert (await manager.call_tool("demo", "echo", {"text": "still here"})).content[0]["text"] == "still here"
    usage = store.usage("demo", "echo")
    assert (usage["calls"], usage["errors"]) == (1, 0)  # a refused call was never made, so never counted


# --------------------------------------------------------------------------- decisions, in process


@pytest.mark.parametrize("line", [
    '{"jsonrpc":"2.0","id":1,"method":"ping"}',
    '{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"a","arguments":{"v":NaN}}}',
    '{"jsonrpc":"2.0","method":"notifications/initialized"}',
    '{"jsonrpc":"2.0","method":"notifications/initialized","params":null}',
    '{"jsonrpc":"2.0","id":1,"result":{}}',
    '{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"m"}}',
    '{"jsonrpc":"2.0","id":null,"error":{"code":-1,"message":"m"}}',
    '{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping","extra":[1]}',
    '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"\\ud83d\\ude00":"a whole pair"}}',
])
def test_what_is_served_is_exactly_what_the_sdk_accepts(line):
    from mcp_types import jsonrpc_message_adapter

    assert isinstance(decode(line), dict)
    jsonrpc_message_adapter.validate_json(line, by_name=False)  # would raise if the SDK disagreed


@pytest.mark.parametrize("case", [c for c in MALFORMED if c != "over the line limit"])  # that one: the reader's
def test_each_malformed_line_is_rejected_in_process(case):
    line, code, rid = MALFORMED[case]
    try:  # as jit.lines.PipeLines reads a line: a line that is not UTF-8 is answered by not_utf8
        verdict = decode(line.decode("utf-8") if isinstance(line, bytes) else line)
    except UnicodeDecodeError as exc:
        verdict = not_utf8(line.decode("utf-8", errors="replace"), exc.start)
    assert isinstance(verdict, Rejected)
    assert isinstance(verdict.reply, dict)
    assert (verdict.reply["error"]["code"], verdict.reply["id"]) == (code, rid)


def test_a_notification_with_a_lone_surrogate_is_dropped_without_an_answer():
    verdict = decode(r'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"reason":"\ud800"}}')
    assert isinstance(verdict, Rejected) and verdict.reply is None


@pytest.mark.parametrize("value, found", [
    ({"a": [1, 2.5, None, True, "ok"]}, None),
    ({"a": "x\ud800"}, (("a",), "lone surrogate")),
    ({"a": {"b": float("inf")}}, (("a", "b"), "inf")),
    ({"a": {1: "x"}}, (("a",), "key of type int")),
    ({"a": {"s"}}, (("a",), "set")),
    (json.loads(deep(10)), ((0,) * 4, "nested more than 4")),
])
def test_find_unsendable_names_the_first_bad_place(value, found):
    result = find_unsendable(value, max_depth=4 if isinstance(value, list) else 100)
    if found is None:
        assert result is None
    else:
        assert result is not None and result[0] == found[0] and found[1] in result[1]


# --------------------------------------------------------------------------- --http: binds and tokens


@pytest.mark.parametrize("host, loopback", [
    ("127.0.0.1", True), ("127.8.9.10", True), ("localhost", True), ("::1", True), ("[::1]", True),
    ("0.0.0.0", False), ("::", False), ("192.168.1.20", False), ("10.0.0.1", False), ("example.com", False),
    ("localhost.evil.example", False),
])
def test_only_loopback_hosts_count_as_loopback(host, loopback):
    assert is_loopback(host) is loopback


@pytest.mark.parametrize("hostport", ["0.0.0.0", "[::]", "192.168.1.20", "myhost.example"])
def test_a_non_loopback_bind_is_refused_before_anything_binds(tmp_path, hostport):
    port = free_port()
    result = CliRunner().invoke(app, ["serve", "--http", f"{hostport}:{port}", "--config", str(tmp_path / "none.json")],
                                env={"COLUMNS": "200", TOKEN_ENV: ""})
    assert result.exit_code == 2, result.output
    assert "not a loopback address" in result.output and "--allow-remote" in result.output
    assert not port_open(port)  # a wildcard bind would have accepted this connection


def test_allow_remote_requires_a_long_enough_token_and_never_prints_it(tmp_path):
    base = ["serve", "--http", f"0.0.0.0:{free_port()}", "--allow-remote", "--config", str(tmp_path / "none.json")]
    missing = CliRunner().invoke(app, base, env={"COLUMNS": "200", TOKEN_ENV: ""})
    assert missing.exit_code == 2 and TOKEN_ENV in missing.output
    short = CliRunner().invoke(app, base, env={"COLUMNS": "200", TOKEN_ENV: "s3cr3t-short"})
    assert short.exit_code == 2 and "too short" in short.output and "s3cr3t-short" not in short.output
    with pytest.raises(RemoteBindRefused):
        http_access("192.168.1.20", environ={TOKEN_ENV: "x" * 40})  # a token alone does not allow remote


def test_host_and_origin_checks_stay_on_for_remote_binds():
    access = http_access("192.168.1.20", allow_remote=True, allowed_hosts=["jit.lan"],
                         environ={TOKEN_ENV: "t" * 32})
    assert access.hosts == {"192.168.1.20", "jit.lan", "127.0.0.1", "localhost", "[::1]"}
    assert "t" * 32 not in repr(access)  # the token stays out of reprs and logs
    wildcard = http_access("0.0.0.0", allow_remote=True, environ={TOKEN_ENV: "t" * 32})
    assert "0.0.0.0" not in wildcard.hosts and {"127.0.0.1", "localhost"} <= wildcard.hosts


@pytest.mark.slow
def test_allow_remote_serves_only_requests_with_the_bearer_token(tmp_path):
    # Bound on loopback only; --allow-remote takes the same path as a remote bind: token required.
    token = "a-test-token-" + "0123456789abcdef"
    path = write_example_config(tmp_path, servers={"tracker": None},
                                connection={"reconnect_attempts": 0, "ping_interval": 0})
    with serving_http(tmp_path, path, "--allow-remote", env={**ENV, TOKEN_ENV: token}, host="127.0.0.1",
                      timeout=TIMEOUT) as url:
        body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
        headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        with httpx2.Client(timeout=TIMEOUT) as http:
            for auth in (None, "Bearer wrong-token-0123456789", f"Basic {token}", f"Bearer {token}x"):
                sent = headers if auth is None else {**headers, "Authorization": auth}
                denied = http.post(url, json=body, headers=sent)
                assert denied.status_code == 401, auth
                assert denied.headers["www-authenticate"].startswith("Bearer")
                assert token not in denied.text
            authorized = {**headers, "Authorization": f"Bearer {token}"}
            rebinding = http.post(url, json=body, headers={**authorized, "Host": "evil.example"})
            assert rebinding.status_code == 421  # Host checks stay on behind the token
            ok = http.post(url, json=body, headers=authorized)
            assert ok.status_code == 200, ok.text
            assert "2025-11-25" in ok.text
    assert token not in (tmp_path / "serve.log").read_text()


@pytest.mark.slow
def test_http_answers_malformed_bodies_as_stdio_does(tmp_path):
    """Over Streamable HTTP the SDK answered a request whose id is not a string or an integer with
    202 and no body (nothing ran; the client waited forever), and other malformed bodies with -32602
    and a pydantic dump. jit's reader judges each POSTed body first: 400 with the same JSON-RPC
    error as on stdio, and the session keeps serving. An MCP-Protocol-Version header naming no
    revision got "params._meta must be an object carrying ... envelope keys" from the SDK; it gets
    -32022 naming the header's value and the revisions spoken."""
    path = write_example_config(tmp_path, servers={"tracker": None},
                                connection={"reconnect_attempts": 0, "ping_interval": 0})
    with serving_http(tmp_path, path, env=ENV, host="127.0.0.1", timeout=TIMEOUT) as url, \
            httpx2.Client(timeout=TIMEOUT) as http:
        session = http_session(http, url)
        cases = [
            ({"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}, INVALID_REQUEST, None),
            ({"jsonrpc": "2.0", "id": 1.5, "method": "ping"}, INVALID_REQUEST, None),
            ({"id": 5, "method": "ping"}, INVALID_REQUEST, 5),
            (42, INVALID_REQUEST, None),
            ({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": [1]}, INVALID_PARAMS, 6),
        ]
        for body, code, rid in cases:
            answer = http.post(url, json=body, headers=session)
            assert answer.status_code == 400, (body, answer.text)
            assert (answer.json()["error"]["code"], answer.json()["id"]) == (code, rid), answer.text
        utf8 = http.post(url, content=b'{"jsonrpc":"2.0","id":7,"method":"ping","params":{"x":"caf\xe9"}}',
                         headers=session)
        assert utf8.status_code == 400 and utf8.json()["error"]["code"] == PARSE_ERROR and utf8.json()["id"] == 7
        # The SDK takes any comma-separated part "application/json" (of the first Content-Type) for JSON:
        # so does the guard, and a header sent twice does not get a body past it.
        bad_id = b'{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}'
        plain = [(k, v) for k, v in session.items() if k.lower() != "content-type"]
        for content_type in ([("Content-Type", "application/json, text/plain")],
                             [("Content-Type", "text/plain, application/json; charset=utf-8")],
                             [("Content-Type", "application/json"), ("Content-Type", "text/plain")]):
            sneaked = http.post(url, content=bad_id, headers=plain + content_type)
            assert sneaked.status_code == 400 and sneaked.json()["error"]["code"] == INVALID_REQUEST, \
                (content_type, sneaked.status_code, sneaked.text)
        # An initialize the SDK would refuse is refused before it makes a session (each lived 30 minutes).
        fresh = {k: v for k, v in session.items() if k not in ("Mcp-Session-Id", "Mcp-Protocol-Version")}
        for params in ({}, {"protocolVersion": 123, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
                       {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": "t"}):
            refused = http.post(url, json={"jsonrpc": "2.0", "id": 13, "method": "initialize", "params": params},
                                headers=fresh)
            assert refused.status_code == 400 and refused.json()["error"]["code"] == INVALID_PARAMS, refused.text
            assert "mcp-session-id" not in refused.headers and "params" in refused.json()["error"]["message"]
        # A byte order mark before the body is ignored, as on stdio (the SDK refused it with -32700).
        bom = http.post(url, content="\ufeff".encode() + b'{"jsonrpc":"2.0","id":12,"method":"ping"}', headers=session)
        assert bom.status_code == 200 and '"id":12' in bom.text.replace(" ", ""), bom.text
        # A protocol version header that names no revision: said so, not "params._meta lacks its envelope".
        for version in ("1999-01-01", "garbage", ""):
            odd = http.post(url, json={"jsonrpc": "2.0", "id": 11, "method": "ping"},
                            headers={**session, "Mcp-Protocol-Version": version})
            assert odd.status_code == 400, (version, odd.text)
            refused = odd.json()
            assert refused["id"] == 11 and refused["error"]["code"] == -32022  # unsupported protocol version
            assert refused["error"]["data"]["requested"] == version and "2025-11-25" in refused["error"]["data"]["supported"]
            assert "MCP-Protocol-Version header says" in refused["error"]["message"]
        # Params the SDK's models refuse, on any method: the field is named over HTTP too.
        level = http.post(url, json={"jsonrpc": "2.0", "id": 14, "method": "logging/setLevel",
                                     "params": {"level": "loud"}}, headers=session)
        error = _sse_or_json(level)["error"]
        assert error["code"] == INVALID_PARAMS and error["data"] == {"path": "params.level"}, level.text
        ok = http.post(url, json={"jsonrpc": "2.0", "id": 8, "method": "ping"}, headers=session)
        assert ok.status_code == 200 and '"id":8' in ok.text.replace(" ", ""), ok.text


def _sse_or_json(response: Any) -> Any:
    """The one JSON-RPC message of a Streamable HTTP answer, sent as JSON or as one SSE event."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        data = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
        return json.loads(next(d for d in data if d))
    return response.json()


@pytest.mark.slow
def test_http_sessions_are_bounded_and_a_deleted_one_frees_its_place(tmp_path):
    """Each valid initialize makes a session that lives until DELETE or 30 idle minutes (~24 KB each):
    ``serve.max_http_sessions`` bounds how many are open; past it a new one gets 503 and the open
    sessions still answer; a DELETE frees a place."""
    path = write_example_config(tmp_path, servers={"tracker": None}, serve={"max_http_sessions": 2},
                                connection={"reconnect_attempts": 0, "ping_interval": 0})
    with serving_http(tmp_path, path, env=ENV, host="127.0.0.1", timeout=TIMEOUT) as url, \
            httpx2.Client(timeout=TIMEOUT) as http:
        first, second = http_session(http, url), http_session(http, url)
        fresh = {k: v for k, v in first.items() if k not in ("Mcp-Session-Id", "Mcp-Protocol-Version")}
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
        third = http.post(url, json=init, headers=fresh)
        assert third.status_code == 503 and "mcp-session-id" not in third.headers, third.text
        assert "Too many open sessions" in third.text
        for session in (first, second):  # the open sessions are untouched
            ok = http.post(url, json={"jsonrpc": "2.0", "id": 2, "method": "ping"}, headers=session)
            assert ok.status_code == 200 and '"id":2' in ok.text.replace(" ", ""), ok.text
        assert http.delete(url, headers=first).status_code == 200
        http_session(http, url)  # the deleted session's place is free again
        gone = http.post(url, json={"jsonrpc": "2.0", "id": 3, "method": "ping"}, headers=first)
        assert gone.status_code == 404


@pytest.mark.slow
def test_http_refuses_a_request_id_still_in_flight_in_its_session(tmp_path):
    """MCP forbids reusing a request id while its request runs. The SDK keeps one answer stream
    per id, so a second request with the id of one still running got no answer at all (its client
    waited out its timeout). jit answers it at once: 400 with -32600 naming the id; the first
    request still gets its answer, and the id may be used again once it has."""
    demo = {"command": sys.executable, "args": [str(REPO / "tests" / "servers" / "demo_server.py")]}
    path = write_example_config(tmp_path, servers={"tracker": None, "demo": demo},
                                connection={"reconnect_attempts": 0, "ping_interval": 0})
    with serving_http(tmp_path, path, env=ENV, host="127.0.0.1", timeout=TIMEOUT) as url, \
            httpx2.Client(timeout=TIMEOUT) as http:
        session = http_session(http, url)
        http.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session)
        call = {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "call_tool", "arguments": {
            "server": "demo", "tool": "sleep", "arguments": {"seconds": 3}}}}
        warm = {"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": "call_tool", "arguments": {
            "server": "demo", "tool": "sleep", "arguments": {"seconds": 0}}}}
        warmed = http.post(url, json=warm, headers=session)  # the demo server is connected and answers
        assert warmed.status_code == 200 and "slept 0" in warmed.text, warmed.text
        answers: queue.Queue = queue.Queue()
        slow = threading.Thread(target=lambda: answers.put(http.post(url, json=call, headers=session)))
        slow.start()
        try:
            time.sleep(1.0)  # the call with id 9 is running upstream
            started = time.monotonic()
            again = http.post(url, json={"jsonrpc": "2.0", "id": 9, "method": "ping"}, headers=session)
            assert time.monotonic() - started < 2.0  # answered at once, not after a timeout
            assert again.status_code == 400, again.text
            assert again.json()["id"] == 9 and again.json()["error"]["code"] == INVALID_REQUEST
            assert "still in flight" in again.json()["error"]["message"]
            # The session header sent twice: the SDK reads the first, and so does the guard.
            twice = http.post(url, json={"jsonrpc": "2.0", "id": 9, "method": "ping"},
                              headers=[*session.items(), ("Mcp-Session-Id", "another")])
            assert twice.status_code == 400 and "still in flight" in twice.json()["error"]["message"], twice.text
            other = http.post(url, json={"jsonrpc": "2.0", "id": 10, "method": "ping"}, headers=session)
            assert other.status_code == 200, other.text  # another id is served meanwhile
        finally:
            slow.join(TIMEOUT)
        done = answers.get_nowait()
        assert done.status_code == 200 and '"id":9' in done.text.replace(" ", ""), done.text
        reused = http.post(url, json={"jsonrpc": "2.0", "id": 9, "method": "ping"}, headers=session)
        assert reused.status_code == 200, reused.text  # answered: the id is free again


@pytest.mark.slow
@pytest.mark.parametrize(("tool", "arguments", "field", "limit"), [
    ("search_tools", {"query": "q" * 40_000}, "query", 32_768),
    ("compile_tools", {"shard": "coder", "task": "t" * 40_000}, "task", 32_768),
    ("describe_tool", {"server": "s" * 5_000_000, "tool": "x"}, "server", 256),
    ("call_tool", {"server": "demo", "tool": "t" * 300, "arguments": {}}, "tool", 256),
])
def test_an_oversized_query_or_name_is_refused_briefly_and_other_calls_go_on(wire, tool, arguments, field, limit):
    """A 10 MB query took 19 s to rank and held every other call up meanwhile; a 5 MB server name
    came back three times in a 15 MB error. Each is now refused by the meta-tool's schema, in an
    answer that names the field and its limit without echoing the input."""
    rid = wire._next_id = wire._next_id + 1
    started = time.monotonic()
    wire.send(json.dumps({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                          "params": {"name": tool, "arguments": arguments}}) + "\n")
    answer = wire.answer(rid)
    assert time.monotonic() - started < 10
    text = json.dumps(answer)
    assert len(text) < 4_000, len(text)  # the input is not echoed back
    assert field in text and str(limit) in text.replace(",", ""), text
    still_serving(wire)


#: Requests whose params the SDK's own models refuse, beyond tools/call: (method, params, path named).
REFUSED_PARAMS = [
    ("logging/setLevel", {"level": "loud"}, "params.level"),
    ("logging/setLevel", {}, "params.level"),
    ("prompts/get", {"name": "demo__greet", "arguments": {"who": 5}}, "params.arguments.who"),
    ("prompts/get", {}, "params.name"),
    ("resources/read", {"uri": 5}, "params.uri"),
    ("tools/list", {"cursor": 5}, "params.cursor"),
    ("resources/list", {"cursor": {"a": 1}}, "params.cursor"),
    ("resources/templates/list", {"cursor": True}, "params.cursor"),
    ("prompts/list", {"cursor": []}, "params.cursor"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("method", "params", "path"), REFUSED_PARAMS)
def test_params_the_sdk_refuses_are_answered_naming_the_field(wire, method, params, path):
    """The SDK answers any request whose params its models refuse with -32602 "Invalid request
    parameters" and empty data; jit's reader named the field only for tools/call, ``_meta`` and
    ``progressToken``. Every method now gets -32602 naming the field and why, and the server goes on."""
    answer = wire.request(method, params)
    error = answer["error"]
    assert error["code"] == INVALID_PARAMS, answer
    assert error["data"] == {"path": path}, answer
    assert error["message"].startswith(f"Invalid params: {path} "), answer
    still_serving(wire)
