"""``jit serve --stdio`` starts serving at once: what it answers before its upstreams are up.

A real ``jit serve --stdio`` process, spoken to over its pipes, with three upstreams
(real processes): ``demo`` (tests/servers/demo_server.py, its tools already in the
catalog from an earlier sync), ``hang`` (tests/servers/slow_server.py asleep for an
hour, so it never answers ``initialize``; its ``timeout`` is 120 s) and ``late`` (the
same server asleep for a few seconds, not in the catalog yet).

The read deadline for the answers that must not wait (:data:`PROMPT`, 20 s) is far
below ``hang``'s timeout: an answer within it was not waiting for ``hang``. Whether
``hang`` was still connecting is read from jit's own ``jit://servers`` resource after
each answer. These are deadlines, not speed assertions (speed is bench/bench_serve.py).
"""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

import anyio
import pytest
from conftest import REPO, write_example_config
from servers.support import pid_alive

from jit.catalog.store import Store
from jit.cli.shared import exit_code
from jit.config_files import load_config
from jit.embedding.factory import embedder_from_config
from jit.errors import JitError
from jit.pipeline import sync
from jit.serve.server import create_server
from jit.serve.state import ServeOptions

#: Deadline for an answer that must not wait for the hanging upstream (whose timeout is 120 s).
PROMPT = 20
#: Hang guard for the background start-up (model load, embedding, the late upstream).
SETTLE = 180
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
SERVERS = REPO / "tests" / "servers"
META_TOOLS = {"search_tools", "describe_tool", "call_tool", "compile_tools", "reload"}


class Client:
    """A JSON-RPC client on a ``jit serve --stdio`` process's pipes; notifications are kept apart."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.lines: queue.Queue[bytes] = queue.Queue()
        self.notifications: list[dict[str, Any]] = []
        self._next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            self.lines.put(raw)

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps({"jsonrpc": "2.0", **message}) + "\n").encode())
        self.proc.stdin.flush()

    def receive(self, deadline: float) -> dict[str, Any]:
        try:
            raw = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise AssertionError(f"no message from jit serve in time (exit code {self.proc.poll()})") from None
        message = json.loads(raw)
        if "method" in message:
            self.notifications.append(message)
        return message

    def request(self, method: str, params: dict[str, Any] | None = None, *, within: float = PROMPT) -> Any:
        """The result of one request, answered within ``within`` seconds (an error fails the test)."""
        self._next_id += 1
        self.send({"id": self._next_id, "method": method, **({"params": params} if params is not None else {})})
        deadline = time.monotonic() + within
        while True:
            message = self.receive(deadline)
            if message.get("id") == self._next_id and "method" not in message:
                assert "error" not in message, message
                return message["result"]

    def call(self, name: str, arguments: dict[str, Any], *, within: float = PROMPT) -> dict[str, Any]:
        return self.request("tools/call", {"name": name, "arguments": arguments}, within=within)

    def wait_list_changed(self, within: float) -> None:
        """Until a ``notifications/tools/list_changed`` not seen before arrives."""
        seen = sum(n["method"] == "notifications/tools/list_changed" for n in self.notifications)
        deadline = time.monotonic() + within
        while sum(n["method"] == "notifications/tools/list_changed" for n in self.notifications) == seen:
            self.receive(deadline)

    def statuses(self) -> dict[str, str]:
        result = self.request("resources/read", {"uri": "jit://servers"})
        return {row["server"]: row["status"] for row in json.loads(result["contents"][0]["text"])}


def _children(pid: int) -> set[int]:
    """Every live descendant of ``pid`` (from /proc), to clean up and check by PID."""
    found: set[int] = set()
    todo = [pid]
    while todo:
        parent = todo.pop()
        for task in Path(f"/proc/{parent}/task").glob("*"):
            try:
                kids = (task / "children").read_text().split()
            except OSError:
                continue
            for kid in map(int, kids):
                if kid not in found:
                    found.add(kid)
                    todo.append(kid)
    return found


def _stop(proc: subprocess.Popen[bytes], pids: set[int]) -> None:
    """End jit serve (closing its stdin, as a client does), then any process left, by PID."""
    if proc.poll() is None:
        assert proc.stdin is not None
        proc.stdin.close()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=10)
    for pid in pids:
        if pid_alive(pid):
            os.kill(pid, signal.SIGKILL)


def _initialized(path: Path, log: IO[bytes]) -> Client:
    """A client of a new ``jit serve --stdio -c path`` (stderr to ``log``), past ``initialize``."""
    proc = subprocess.Popen([sys.executable, "-m", "jit", "serve", "--stdio", "-c", str(path)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, env=ENV, start_new_session=True)
    client = Client(proc)
    try:
        client.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                      "clientInfo": {"name": "test", "version": "0"}})
    except BaseException:
        _stop(proc, set())
        raise
    return client


async def _presync(path: Path) -> None:
    """The catalog as an earlier `jit sync` of the demo server alone left it."""
    config = load_config(path)
    with Store(config.store_path) as store:
        await sync(config, store, embedder_from_config(config.embedding))


@pytest.mark.slow  # processes and the embedding model
def test_serve_answers_while_an_upstream_hangs_and_announces_the_exposed_tools(tmp_path):
    available = json.loads((REPO / "available_tools.json").read_text())
    available["overrides"] = {"demo/echo": {"skeleton": ["coder"]}}  # a demo tool in the coder's Full tier
    (tmp_path / "available_tools.json").write_text(json.dumps(available))
    demo = {"command": sys.executable, "args": [str(SERVERS / "demo_server.py")]}
    keys = {"available_tools": str(tmp_path / "available_tools.json"),
            "connection": {"reconnect_attempts": 0, "ping_interval": 0}}
    path = write_example_config(tmp_path, servers={"workspace": None, "tracker": None, "demo": demo}, **keys)
    anyio.run(_presync, path)

    hang_pid, late_pid = tmp_path / "hang.pid", tmp_path / "late.pid"
    path = write_example_config(tmp_path, servers={
        "workspace": None, "tracker": None, "demo": demo,
        "hang": {"command": sys.executable, "timeout": 120,
                 "args": [str(SERVERS / "slow_server.py"), "--delay", "3600", "--pid-file", str(hang_pid)]},
        "late": {"command": sys.executable, "timeout": 120,
                 "args": [str(SERVERS / "slow_server.py"), "--delay", "3", "--pid-file", str(late_pid)]},
    }, **keys)
    log = (tmp_path / "serve.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "jit", "serve", "--stdio", "--config", str(path), "--expose-shard", "coder",
         "--task", "echo some text back"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, env=ENV, start_new_session=True)
    pids: set[int] = set()
    try:
        client = Client(proc)
        init = client.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                             "clientInfo": {"name": "test", "version": "0"}})
        assert init["serverInfo"]["name"] == "jit" and init["capabilities"]["tools"]["listChanged"] is True
        client.send({"method": "notifications/initialized"})
        listed = {t["name"] for t in client.request("tools/list")["tools"]}
        assert META_TOOLS <= listed
        assert client.statuses()["hang"] == "connecting"  # so the answers above did not wait for it

        # A meta-tool answers on the cached catalog while `hang` still connects.
        found = client.call("search_tools", {"query": "echo the text back", "limit": 3})
        assert not found.get("isError"), found
        assert "demo__echo" in [t["name"] for t in found["structuredContent"]["tools"]]
        assert client.statuses()["hang"] == "connecting"

        # A call to an upstream still on its first connection attempt waits for it, then goes through.
        late = client.call("call_tool", {"server": "late", "tool": "echo", "arguments": {"text": "here"}},
                           within=SETTLE)
        assert not late.get("isError") and late["content"][0]["text"] == "here"

        # Once demo is connected and synced, the exposed tools are announced: listed, online, callable.
        deadline = time.monotonic() + SETTLE
        while True:
            tools = {t["name"]: t for t in client.request("tools/list")["tools"]}
            echo = tools.get("demo__echo")
            if echo is not None and not echo["description"].startswith("[offline"):
                break
            client.wait_list_changed(deadline - time.monotonic())
        assert any(n["method"] == "notifications/tools/list_changed" for n in client.notifications)
        assert META_TOOLS <= set(tools)
        echoed = client.call("demo__echo", {"text": "exposed"})
        assert echoed["content"][0]["text"] == "exposed"
        assert client.statuses()["hang"] == "connecting"  # all of it while `hang` still hangs
        assert pid_alive(int(hang_pid.read_text()))

        pids = _children(proc.pid)
        assert {int(hang_pid.read_text()), int(late_pid.read_text())} <= pids
    finally:
        pids |= _children(proc.pid) if proc.poll() is None else set()
        _stop(proc, pids)
        log.close()
    assert proc.returncode == 0, (tmp_path / "serve.log").read_text()
    assert not [pid for pid in pids if pid_alive(pid)]  # every upstream process ended with jit serve


@pytest.mark.slow  # processes and the embedding model
def test_a_one_shot_client_reads_each_servers_first_connection_outcome(tmp_path):
    """A client that starts jit, reads ``jit://servers`` and leaves read "connecting" for every
    server, though most were a second or two from connected or failed. The read waits for the
    first connection attempts, at most until ``SERVERS_SETTLE_WAIT`` after jit began serving: a
    server that answers late reads connected, one that cannot start reads error, and one that
    hangs past the window reads connecting, with a note saying for how long and when it gives up."""
    hang_pid = tmp_path / "hang.pid"
    slow = str(SERVERS / "slow_server.py")
    path = write_example_config(tmp_path, servers={
        "workspace": None, "tracker": None,
        "late": {"command": sys.executable, "args": [slow, "--delay", "1"]},
        "missing": {"command": str(tmp_path / "no-such-program")},
        "hang": {"command": sys.executable, "timeout": 120,
                 "args": [slow, "--delay", "3600", "--pid-file", str(hang_pid)]},
    }, connection={"reconnect_attempts": 0, "ping_interval": 0})
    log = (tmp_path / "serve.log").open("wb")
    client = _initialized(path, log)
    pids: set[int] = set()
    try:
        client.send({"method": "notifications/initialized"})
        read = client.request("resources/read", {"uri": "jit://servers"})
        rows = {row["server"]: row for row in json.loads(read["contents"][0]["text"])}
        pids = _children(client.proc.pid)
    finally:
        _stop(client.proc, pids)
        log.close()
    assert {name: rows[name]["status"] for name in ("late", "missing", "hang")} == {
        "late": "connected", "missing": "error", "hang": "connecting"}, rows
    assert re.fullmatch(r"first connection attempt under way for \d+ s \(it gives up after 120 s\)",
                        rows["hang"]["status_note"]), rows["hang"]
    assert rows["late"]["status_note"] is None and "cannot start" in rows["missing"]["last_error"]


def _faulty_config(tmp_path: Path, fault: str) -> Path:
    """An example config (no servers) with broken rules (``rules``) or a store path under a file (``store``)."""
    if fault == "rules":
        rules = tmp_path / "rules"
        rules.mkdir()
        for name in ("schema.dl", "policy.dl"):
            (rules / name).write_text((REPO / "rules" / name).read_text())
        (rules / "policy.dl").write_text((rules / "policy.dl").read_text() + "\nthis is not ( a rule\n")
        return write_example_config(tmp_path, servers={"workspace": None, "tracker": None}, rules=str(rules))
    (tmp_path / "file").write_text("not a directory")
    return write_example_config(tmp_path, servers={"workspace": None, "tracker": None},
                                store=str(tmp_path / "file" / "catalog.db"))


STARTUP_FAULTS = [("rules", 1, "policy.dl"), ("store", 3, "store")]


@pytest.mark.anyio
@pytest.mark.parametrize(("fault", "code", "message"), STARTUP_FAULTS)
async def test_a_startup_fault_is_raised_by_the_lifespan_before_it_serves(tmp_path, fault, code, message):
    """In this process: the lifespan raises the error (its exit code, its message) before it yields, so
    nothing is served; the case below runs the process and reads its exit code and output."""
    server = create_server(ServeOptions(config_path=_faulty_config(tmp_path, fault)))
    low = server._lowlevel_server
    with pytest.raises(JitError) as info:
        async with low.lifespan(low):
            pytest.fail("the lifespan yielded: jit serve would have served")
    assert exit_code(info.value) == code and message in str(info.value)
    assert not server.serving


@pytest.mark.slow  # a jit serve process per case (its in-process half is above)
@pytest.mark.parametrize(("fault", "code", "message"), STARTUP_FAULTS)
def test_a_startup_fault_is_still_an_exit_code_before_serving(tmp_path, fault, code, message):
    """What the user must fix (the rules, the store path) stops jit serve before it serves, as before."""
    path = _faulty_config(tmp_path, fault)
    done = subprocess.run([sys.executable, "-m", "jit", "serve", "--stdio", "--config", str(path)],
                          check=False, input=b"", capture_output=True, env=ENV, timeout=120)
    assert done.returncode == code, done.stderr.decode()
    assert message in done.stderr.decode() and done.stdout == b""


@pytest.mark.slow  # processes and the embedding model
def test_serve_says_on_stderr_what_its_start_up_is_doing(tmp_path):
    """The client's server log (jit's stderr) says what is served, when searching can start, and which
    servers the first connections missed and why; before, a start-up said nothing at all."""
    path = write_example_config(tmp_path, servers={
        "workspace": None, "tracker": None,
        "demo": {"command": sys.executable, "args": [str(SERVERS / "demo_server.py")]},
        "missing": {"command": str(tmp_path / "no-such-program")},
    }, connection={"reconnect_attempts": 0, "ping_interval": 0})
    log_path = tmp_path / "serve.log"
    log = log_path.open("wb")
    proc = _initialized(path, log).proc
    pids: set[int] = set()
    try:
        deadline = time.monotonic() + SETTLE
        while time.monotonic() < deadline:
            text = log_path.read_text()
            if "servers: " in text and "ready to search and compile" in text:
                break
            time.sleep(0.2)
        pids = _children(proc.pid)
    finally:
        _stop(proc, pids)
        log.close()
    lines = [line.split(" jit.serve.startup: ", 1)[1] for line in log_path.read_text().splitlines()
             if " INFO jit.serve.startup: " in line]
    assert lines[0] == f"serving MCP on stdio (config {path}); connecting to 2 servers and loading the embedding " \
                       "model in the background"
    assert "servers: 1 of 2 connected; not connected: missing (error: cannot start" in "\n".join(lines)
    assert any(line.startswith("ready to search and compile: ") for line in lines), lines
