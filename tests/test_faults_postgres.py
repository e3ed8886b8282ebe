"""Fault injection on a shared PostgreSQL catalog: a server that refuses, goes read-only, drops
connections or goes down and comes back, under real jit processes.

The cluster is the session's throwaway one (tests/pgcluster.py); ``crash`` stops it as
``pg_ctl stop -m immediate`` does and ``restart`` brings it back on the same data. The
processes are real: the console script, ``jit serve --stdio`` with a real stdio MCP server
(tests/servers/mutable_server.py, which logs every call it receives). Each case asserts one
clear error naming the catalog (no traceback, no psycopg class), and that nothing was lost.
The cases that start those processes are in the slow tier (tests/conftest.py); the ones on a
``Store`` in this process are fast.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest
from servers.support import notes_config

from jit.catalog.store import Store
from jit.errors import StoreError
from jit.models import ToolDef

JIT = [sys.executable, "-m", "jit"]
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
READ_ONLY = "options=-c%20default_transaction_read_only%3Don"


def _with(url: str, query: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}{query}"


def _as_user(pg_cluster, url: str, user: str) -> str:
    """``url`` with another database user (the test cluster trusts every user on its socket)."""
    with psycopg.connect(pg_cluster.url("postgres"), autocommit=True) as admin:
        if not admin.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (user,)).fetchone():
            admin.execute(f'CREATE ROLE "{user}" LOGIN')
    return url.replace(f"postgresql://{pg_cluster.user}@", f"postgresql://{user}@", 1)


def _config(tmp_path: Path, store: str) -> Path:
    """A config with one real stdio server, ``notes`` (two tools; calls logged to calls.jsonl)."""
    return notes_config(tmp_path, store)[0]


def jit(config: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*JIT, "-c", str(config), *args], capture_output=True, text=True, timeout=timeout,
                          env=ENV, check=False)


def assert_one_error(done: subprocess.CompletedProcess[str], *named: str) -> str:
    """A failed command's stderr: one ``error:`` line (after progress lines, if any) naming each of
    ``named``, no traceback."""
    assert done.returncode != 0, done.stdout
    lines = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1 and done.stderr.strip().splitlines()[-1] == lines[0], done.stderr
    assert "Traceback" not in done.stderr and "psycopg" not in done.stderr
    for part in named:
        assert part in lines[0], (part, lines[0])
    return lines[0]


class Serve:
    """``jit serve --stdio`` as a client drives it: one request at a time, answers matched by id."""

    def __init__(self, config: Path) -> None:
        self.proc = subprocess.Popen([*JIT, "serve", "--stdio", "-c", str(config)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
        self.ids = 0

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any] | None:
        self.ids += 1
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": self.ids, "method": method,
                                          **({"params": params} if params is not None else {})}) + "\n")
        self.proc.stdin.flush()
        while line := self.proc.stdout.readline():
            message = json.loads(line)
            if message.get("id") == self.ids:
                return message
        return None  # the process ended

    def initialize(self) -> dict[str, Any] | None:
        answer = self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                             "clientInfo": {"name": "probe", "version": "1"}})
        if answer is not None:
            assert self.proc.stdin is not None
            self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
            self.proc.stdin.flush()
        return answer

    def call(self, server: str, tool: str, **arguments: Any) -> dict[str, Any]:
        answer = self.request("tools/call", {"name": "call_tool", "arguments": {
            "server": server, "tool": tool, "arguments": arguments}})
        assert answer is not None
        return answer["result"]

    def close(self) -> tuple[int, str]:
        assert self.proc.stdin is not None and self.proc.stderr is not None
        try:
            self.proc.stdin.close()
        except BrokenPipeError:
            pass
        try:
            code = self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        return code, self.proc.stderr.read()


@contextmanager
def synced_serve(config: Path) -> Iterator[tuple[Serve, dict[str, Any]]]:
    """``jit sync`` of ``config``, then a ``jit serve`` on it, initialized; when the block ends it is
    closed and ``ended`` holds its ``code`` and ``err`` (stderr), which ended cleanly (exit 0, no
    traceback), checked here."""
    assert jit(config, "sync").returncode == 0
    serve = Serve(config)
    ended: dict[str, Any] = {}
    try:
        assert serve.initialize() is not None
        yield serve, ended
    finally:
        ended["code"], ended["err"] = serve.close()
    assert ended["code"] == 0 and "Traceback" not in ended["err"], ended["err"]


# --------------------------------------------------------------------------- a server that refuses


@pytest.mark.slow  # the console script and jit serve --stdio
@pytest.mark.parametrize("refusal", ["no_create_right", "read_only"])
def test_a_catalog_refused_after_connecting_is_one_error_naming_it_for_every_command(refusal, pg_cluster, pg_url,
                                                                                      tmp_path):
    """The connection opens, then the server refuses the first statement (creating the schema):
    a user without CREATE on the schema (PostgreSQL 15's default for a database it does not own),
    or a read-only server. It used to be a psycopg traceback from every command."""
    url = _as_user(pg_cluster, pg_url, "reader") if refusal == "no_create_right" else _with(pg_url, READ_ONLY)
    with pytest.raises(StoreError) as caught:
        Store(url)
    assert type(caught.value) is StoreError and caught.value.__cause__ is None
    expected = "lacks a privilege" if refusal == "no_create_right" else "takes no writes"
    assert expected in str(caught.value) and "LINE 1" not in str(caught.value)
    config = _config(tmp_path, url)
    for command in (["servers"], ["tools"], ["sync"], ["compile", "--shard", "coder", "--task", "read a note"],
                    ["call", "notes/read_note", "--args", "{}"], ["show", "notes/read_note"]):
        assert_one_error(jit(config, *command), expected, "(catalog postgresql://", "config key 'store'")
    # jit serve answers initialize (before anything loads), then stops with the same line.
    serve = Serve(config)
    assert serve.initialize() is not None
    serve.request("tools/list")
    code, err = serve.close()
    assert code == 1 and "Traceback" not in err
    assert err.strip().splitlines()[-1].startswith("error: ") and "config key 'store'" in err and expected in err


@pytest.mark.slow  # the console script, a real stdio server
def test_a_read_only_server_still_serves_reads_of_an_up_to_date_catalog(pg_url, tmp_path):
    """A host pointed at a read-only server (a standby): listing, showing and compiling work on
    the catalog as the primary left it; what must write (a sync, a call) is one error saying why,
    and the upstream never received the call."""
    config = _config(tmp_path, pg_url)
    done = jit(config, "sync")
    assert done.returncode == 0, done.stderr
    read_only = _config(tmp_path, _with(pg_url, READ_ONLY))
    for command in (["tools"], ["servers", "--json"], ["show", "notes/read_note"],
                    ["compile", "--shard", "coder", "--task", "read the note about the release"]):
        done = jit(read_only, *command)
        assert done.returncode == 0 and "Traceback" not in done.stderr, (command, done.stderr)
    assert "read_note" in jit(read_only, "tools").stdout
    for command in (["sync"], ["call", "notes/read_note", "--args", '{"text": "x"}']):
        assert_one_error(jit(read_only, *command), "takes no writes", "point `store` at the primary",
                         "(catalog postgresql://")
    assert not (tmp_path / "calls.jsonl").exists()
    with Store(pg_url) as store:
        assert sorted(t.tool.name for t in store.tools()) == ["read_note", "send_message"]


# --------------------------------------------------------------------------- connections lost and servers back


def _terminate_others(url: str) -> int:
    """``pg_terminate_backend`` every other session of jit on the catalog's database."""
    with psycopg.connect(url, autocommit=True) as admin:
        return admin.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname ="
                             " current_database() AND pid <> pg_backend_pid() AND application_name = 'jit'"
                             ).fetchone()[0]


def test_a_connection_dropped_while_idle_costs_no_statement(pg_url):
    """The server dropped an idle connection (an administrator, an idle timeout, a restart): the
    statement that finds it lost runs on a new one, a read and a write alike."""
    tool = ToolDef(server="files", name="read_file", description="Read a file.", input_schema={"type": "object"})
    with Store(pg_url) as store:
        store.ensure_server("files", "stdio")
        pid = store._query("SELECT pg_backend_pid()")[0][0]
        assert _terminate_others(pg_url) == 1
        assert store.tools() == []  # a read
        assert store._query("SELECT pg_backend_pid()")[0][0] != pid
        assert _terminate_others(pg_url) == 1
        store.sync_tools("files", [tool])  # a write transaction
        store.record_call("files", "read_file", ok=True, latency_ms=1.0)
        assert _terminate_others(pg_url) == 1
        store.record_call("files", "read_file", ok=True, latency_ms=1.0)
        assert store.usage("files", "read_file")["calls"] == 2


@pytest.mark.slow  # jit sync and jit serve --stdio, a real stdio server
def test_jit_serve_counts_every_call_when_its_catalog_connection_was_dropped(pg_url, tmp_path):
    """``jit serve`` between two calls loses its catalog connection: the next call's usage is
    written on a new connection; it used to be lost, with a traceback in the log."""
    with synced_serve(_config(tmp_path, pg_url)) as (serve, _ended):
        assert not serve.call("notes", "read_note", text="one")["isError"]
        assert _terminate_others(pg_url) >= 1
        for text in ("two", "three"):
            assert not serve.call("notes", "read_note", text=text)["isError"]
    with Store(pg_url) as store:
        assert store.usage("notes", "read_note")["calls"] == 3
    assert len((tmp_path / "calls.jsonl").read_text().splitlines()) == 3


@pytest.mark.slow  # jit sync and jit serve --stdio, a real stdio server
def test_calls_jit_serve_proxies_while_the_catalog_is_down_are_counted_once_it_is_back(pg_cluster, pg_url,
                                                                                      tmp_path):
    """The catalog's server crashes (``pg_ctl stop -m immediate``) under a running ``jit serve``:
    proxied calls still run and answer, and their usage, which could not be written, is written
    with the first call after the server is back. It used to be lost, a traceback per call."""
    with synced_serve(_config(tmp_path, pg_url)) as (serve, ended):
        assert not serve.call("notes", "read_note", text="before")["isError"]
        pg_cluster.crash()
        try:
            for text in ("down 1", "down 2"):
                result = serve.call("notes", "read_note", text=text)
                assert not result["isError"] and text in json.dumps(result)
        finally:
            pg_cluster.restart()
        assert not serve.call("notes", "read_note", text="after")["isError"]
    assert "is counted when the catalog answers again" in ended["err"]
    with Store(pg_url) as store:
        usage = store.usage("notes", "read_note")
        assert usage["calls"] == 4 and usage["errors"] == 0, ended["err"]
    assert len((tmp_path / "calls.jsonl").read_text().splitlines()) == 4


def test_a_count_the_catalog_refuses_for_good_is_not_kept(pg_url):
    """Only an unreachable catalog keeps a count for later: a refusal (here a read-only server)
    raises at once, and the next count does not carry it."""
    with Store(pg_url) as store:
        store.ensure_server("files", "stdio")
    with Store(_with(pg_url, READ_ONLY)) as read_only:
        with pytest.raises(StoreError, match="takes no writes"):
            read_only.record_call("files", "read_file", ok=True, latency_ms=1.0)
        assert read_only._unrecorded == {}
    with Store(pg_url) as store:
        store.record_call("files", "read_file", ok=True, latency_ms=1.0)
        assert store.usage("files", "read_file")["calls"] == 1


@pytest.mark.slow  # jit sync and jit serve --stdio, a real stdio server
def test_jit_serve_whose_start_met_an_unreachable_catalog_ranks_once_it_answers(pg_url, tmp_path):
    """``jit serve``'s background start (claiming the catalog, reading it into the compiler)
    fails on an unreachable catalog: here another session holds a lock on ``tools`` past the
    host's ``statement_timeout``. Meanwhile ``search_tools`` answers that error; once the lock
    is gone it ranks. It used to answer "cannot rank or compile" until restarted."""
    config = _config(tmp_path, pg_url)
    assert jit(config, "sync").returncode == 0
    slow = _config(tmp_path, _with(pg_url, "options=-c%20statement_timeout%3D500"))
    with psycopg.connect(pg_url) as holder:
        holder.execute("LOCK TABLE tools IN ACCESS EXCLUSIVE MODE")  # held until this transaction ends
        serve = Serve(slow)
        try:
            assert serve.initialize() is not None
            answer = serve.request("tools/call", {"name": "search_tools", "arguments": {"query": "read a note"}})
            assert answer is not None and answer["result"]["isError"]
            assert "statement timeout" in json.dumps(answer["result"])
            holder.rollback()
            deadline = time.monotonic() + 60
            while True:
                answer = serve.request("tools/call", {"name": "search_tools", "arguments": {"query": "read a note"}})
                assert answer is not None
                if not answer["result"]["isError"] or time.monotonic() > deadline:
                    break
                time.sleep(0.5)
            assert not answer["result"]["isError"], answer
            assert "read_note" in json.dumps(answer["result"])
        finally:
            code, err = serve.close()
    assert code == 0 and "Traceback" not in err, err
    assert "until its catalog answers" in err


# --------------------------------------------------------------------------- odd data


def test_text_postgresql_cannot_hold_costs_no_write(pg_url):
    """NUL (which SQLite stores and PostgreSQL's text refuses) in a tool's description, a status
    error or a call's error text, and a lone surrogate in a call's error (a result's JSON may carry
    one): each used to fail the whole write (a server's sync, the call's usage). Now stored with
    U+FFFD in its place; the rest of the write as given."""
    tools = [ToolDef(server="odd", name="nul", description="before\x00after", input_schema={"type": "object"}),
             ToolDef(server="odd", name="fine", description="Fine.", input_schema={"type": "object"})]
    with Store(pg_url) as store:
        store.ensure_server("odd", "stdio")
        result = store.sync_tools("odd", tools)
        assert result.added == ["fine", "nul"]
        assert store.tool("odd", "nul").tool.description == "before\ufffdafter"
        assert store.sync_tools("odd", tools).unchanged == 2  # the hash is the listed text's: no change
        store.record_call("odd", "nul", ok=False, latency_ms=1.0, error="bad\x00 text")
        store.record_call("odd", "nul", ok=False, latency_ms=1.0, error="cut \ud83d")
        usage = store.usage("odd", "nul")
        assert (usage["calls"], usage["errors"], usage["last_error"]) == (2, 2, "cut \ufffd")


@pytest.mark.slow  # jit sync and jit serve --stdio, a real stdio server
def test_an_upstream_whose_changed_tools_the_catalog_cannot_take_stays_connected(pg_cluster, pg_url, tmp_path):
    """An upstream announces a changed tool list while the catalog's server is down. Writing the
    listing failed and ended the upstream's connection, the catalog's error as the server's own (with
    no reconnects, for good). Now the connection stays, calls keep flowing, and the listing is
    asked for again until the catalog, back, takes it."""
    listed = ("send_message", "read_note", "announce")  # a call to announce sends tools/list_changed
    config, set_tools = notes_config(tmp_path, pg_url, listed)
    with synced_serve(config) as (serve, ended):
        assert not serve.call("notes", "read_note", text="before")["isError"]
        pg_cluster.crash()
        try:
            set_tools(*listed, "archive_note")
            assert not serve.call("notes", "announce")["isError"]
            time.sleep(3)  # the re-discovery meets the catalog down
            result = serve.call("notes", "read_note", text="while down")
            assert not result["isError"], result
        finally:
            pg_cluster.restart()
        deadline = time.monotonic() + 60
        while True:
            with Store(pg_url) as store:
                if store.tool("notes", "archive_note") is not None:
                    break
            assert time.monotonic() < deadline, "the re-discovered tool list never reached the catalog"
            time.sleep(1)
        assert not serve.call("notes", "archive_note", text="after")["isError"]
        with Store(pg_url) as store:
            record = store.server("notes")
            assert record.status.value == "connected", record
    assert "the catalog could not take its changed tool list" in ended["err"], ended["err"]


# --------------------------------------------------------------------------- a server that never answers


@contextmanager
def silent_server() -> Iterator[int]:
    """A TCP listener on 127.0.0.1 that accepts every connection and never sends a byte (a proxy
    whose database is gone, a server hung before its first answer); its port. Closed on exit."""
    import socket
    import threading

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    accepted: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                accepted.append(listener.accept()[0])
            except OSError:
                return  # closed

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        listener.close()
        for conn in accepted:
            conn.close()
        thread.join(timeout=10)


@pytest.mark.slow  # the console script and jit serve --stdio
def test_a_catalog_server_that_accepts_and_never_answers_is_one_error_naming_it(tmp_path):
    """The catalog's address accepts TCP and never answers: `jit tools` printed nothing for minutes
    (psycopg's default wait is 130 s) and `jit serve` answered no request, logging nothing. Now opening
    waits `catalog.connect_timeout` (2 s here): `jit tools` exits 1 with one line naming the catalog (its
    password as ***) and the setting; `jit serve` answers the requests it was sent with that error,
    logs it, and exits 1."""
    from jit.cli import EXIT_CODES
    from jit.errors import JitError

    with silent_server() as port:
        url = f"postgresql://jit:s3cret-pw@127.0.0.1:{port}/catalog"
        config = _config(tmp_path, url)
        body = json.loads(config.read_text())
        config.write_text(json.dumps({**body, "catalog": {"connect_timeout": 2}}), encoding="utf-8")
        expected = ("connection timeout expired (no session with the server within 2 s, `catalog.connect_timeout`",
                    f"(catalog postgresql://jit:***@127.0.0.1:{port}/catalog, config key 'store')")
        done = jit(config, "tools", timeout=120)
        line = assert_one_error(done, *expected)
        assert done.returncode == EXIT_CODES[JitError] and "s3cret-pw" not in done.stderr + done.stdout, line

        serve = Serve(config)
        try:
            assert serve.initialize() is not None
            listed = serve.request("tools/list")
            called = serve.request("tools/call", {"name": "call_tool", "arguments": {
                "server": "notes", "tool": "read_note", "arguments": {}}})
        finally:
            code, err = serve.close()
    for answer in (listed, called):
        assert answer is not None and answer["error"]["code"] == -32603, answer
        assert all(part in answer["error"]["message"] for part in expected), answer
        assert answer["error"]["data"]["error"] == "store_error" and "s3cret-pw" not in json.dumps(answer)
    assert code == 1 and "Traceback" not in err and "s3cret-pw" not in err
    assert err.strip().splitlines()[-1].startswith("error: catalog open failed: connection timeout expired"), err


@pytest.mark.slow  # the console script and jit serve --stdio
def test_a_statement_held_by_a_lock_ends_at_the_statement_timeout_with_one_error(pg_url, tmp_path):
    """Another session holds a lock on the catalog's tools table: every read waited for it without end.
    Now `catalog.statement_timeout` (1 s here; 30 s by default) ends it with one line naming the catalog
    and the setting, `jit serve`'s meta-tools answer that error, and once the lock is gone both work."""
    config = _config(tmp_path, pg_url)
    assert jit(config, "sync").returncode == 0
    body = json.loads(config.read_text())
    config.write_text(json.dumps({**body, "catalog": {"statement_timeout": 1}}), encoding="utf-8")
    with psycopg.connect(pg_url) as holder:
        holder.execute("LOCK TABLE tools IN ACCESS EXCLUSIVE MODE")  # held until this transaction ends
        line = assert_one_error(jit(config, "tools", timeout=120), "canceling statement due to statement timeout",
                                "(1 s, `catalog.statement_timeout`", "(catalog postgresql://")
        assert "another session holds a lock" in line
        serve = Serve(config)
        try:
            assert serve.initialize() is not None
            answer = serve.request("tools/call", {"name": "search_tools", "arguments": {"query": "read a note"}})
            assert answer is not None and answer["result"]["isError"], answer
            assert "`catalog.statement_timeout`" in json.dumps(answer["result"])
            holder.rollback()
            deadline = time.monotonic() + 60
            while answer is not None and answer["result"]["isError"] and time.monotonic() < deadline:
                time.sleep(0.5)
                answer = serve.request("tools/call", {"name": "search_tools", "arguments": {"query": "read a note"}})
            assert answer is not None and not answer["result"]["isError"] and "read_note" in json.dumps(answer)
        finally:
            code, err = serve.close()
    assert code == 0 and "Traceback" not in err, err
    assert jit(config, "tools").returncode == 0
