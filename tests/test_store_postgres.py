"""One catalog for a fleet: the PostgreSQL backend, on a real cluster the session starts.

The cluster (``pg_cluster``, tests/conftest.py and tests/pgcluster.py) is Debian's
PostgreSQL run from a temporary directory; each test has a database of its own.
Other "hosts" are other processes (tests/pg_host.py): each has its own connection
and holder id, as a process on another machine would. Where only the database tells
hosts apart (its locks, counts and versions are per connection: migrations, usage, a
sync another host's compiler must see), the fast tier's other hosts run in this
process with a Store of their own (``HOSTS``), and the slow tier runs the same test
with processes. The store tests that hold for both
engines run on both in tests/test_store.py; these are PostgreSQL's own.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import anyio
import pytest
from conftest import HashingEmbedder
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp_types import ToolListChangedNotification
from servers.support import notes_config

from jit.catalog.backend import redact
from jit.catalog.migrations import default_migrations_dir
from jit.catalog.ownership import open_catalog
from jit.catalog.store import Store
from jit.config_files import load_config
from jit.errors import MigrationError, StoreError
from jit.models import ServerStatus, ToolDef
from jit.pipeline import sync
from jit.selection.compiler import Compiler
from jit.selection.task import TaskContext

HOST = str(Path(__file__).parent / "pg_host.py")


def host(*args: str, timeout: float = 120, name: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run tests/pg_host.py (another host; ``name``: its ``JIT_HOST``) to completion."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    if name is not None:
        env["JIT_HOST"] = name
    done = subprocess.run([sys.executable, HOST, *args], check=False, capture_output=True, text=True,
                          timeout=timeout, env=env)
    assert done.returncode == 0, done.stderr
    return done


#: Other hosts as threads with a Store (a connection) each, and in the slow tier as pg_host.py processes.
HOSTS = ["threads", pytest.param("processes", marks=pytest.mark.slow)]


def start_hosts(how: str, n: int, args: list[str], run: Callable[[], str]) -> Callable[[], list[str]]:
    """``n`` other hosts at once: ``tests/pg_host.py ARGS`` processes, or threads calling ``run`` (which
    opens a Store of its own). The function returned waits for them and gives what each printed (or
    ``run`` returned); a host that failed fails the test."""
    if how == "processes":
        procs = [subprocess.Popen([sys.executable, HOST, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True) for _ in range(n)]

        def processes_done() -> list[str]:
            outs = [p.communicate(timeout=120) for p in procs]
            assert all(p.returncode == 0 for p in procs), [e for _, e in outs]
            return [o for o, _ in outs]

        return processes_done
    pool = ThreadPoolExecutor(n)
    futures = [pool.submit(run) for _ in range(n)]

    def threads_done() -> list[str]:
        try:
            return [f.result(timeout=120) for f in futures]
        finally:
            pool.shutdown()

    return threads_done


def record_calls(url: str, server: str, tool: str, n: str) -> str:
    """pg_host.py's ``calls URL SERVER TOOL N`` on a Store of its own, in this process."""
    with Store(url) as store:
        for _ in range(int(n)):
            store.record_call(server, tool, ok=True, latency_ms=1.0)
    return ""


def _tool(name: str, description: str, server: str = "files") -> ToolDef:
    return ToolDef(server=server, name=name, description=description, input_schema={"type": "object"})


# --------------------------------------------------------------------------- credentials


def test_the_password_is_never_printed(pg_cluster, tmp_path, monkeypatch):
    secret = "s3cr3t-Pa55"
    url = f"postgresql://jit:{secret}@/no_such_db?host={pg_cluster.socket_dir}&port={pg_cluster.port}"
    assert secret not in redact(url) and redact(url).startswith("postgresql://jit:***@/no_such_db")
    assert secret not in redact(f"postgresql:///x?password={secret}&host=/tmp")
    with pytest.raises(StoreError) as caught:
        Store(url)
    assert "no_such_db" in str(caught.value) and secret not in str(caught.value)
    assert "\n" not in str(caught.value) and "\t" not in str(caught.value)  # libpq's lines made one
    assert secret not in repr(caught.value) and secret not in json.dumps(caught.value.details)
    assert caught.value.__cause__ is None  # a printed traceback carries no cause that could name it
    # From the environment (libpq's PGPASSWORD): never echoed either.
    monkeypatch.setenv("PGPASSWORD", secret)
    with pytest.raises(StoreError) as caught:
        Store(f"postgresql://jit@/no_such_db?host={pg_cluster.socket_dir}&port={pg_cluster.port}")
    assert secret not in str(caught.value)
    # A config holding the URL: neither its repr nor the CLI's error shows it.
    (tmp_path / "config.json").write_text(json.dumps({"store": url}), encoding="utf-8")
    config = load_config(tmp_path / "config.json")
    assert config.store_url == url and secret not in repr(config)
    done = subprocess.run([str(Path(sys.executable).parent / "jit"), "--config", str(tmp_path / "config.json"),
                           "servers"], check=False, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "no_such_db" in done.stderr + done.stdout
    assert secret not in done.stderr + done.stdout


def test_a_url_store_keeps_this_hosts_files_beside_the_config(pg_url, tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"store": pg_url}), encoding="utf-8")
    config = load_config(tmp_path / "config.json")
    assert config.store_location == pg_url
    assert config.store_path == (tmp_path / ".jit" / "shared-catalog").resolve()
    with Store(config.store_location, local_path=config.store_path) as store:
        assert store.dialect == "postgresql" and store.path == str(config.store_path)
        assert repr(store) == f"Store({redact(pg_url)!r})"
        assert len(store.catalog_id()) == 32


# --------------------------------------------------------------------------- migrations


@pytest.mark.parametrize("how", HOSTS)
def test_hosts_starting_together_apply_each_migration_once(pg_url, how):
    def open_the_catalog() -> str:  # as pg_host.py's "open"
        with Store(pg_url) as store:
            return json.dumps(sorted(store.applied_migrations()))

    outs = start_hosts(how, 4, ["open", pg_url], open_the_catalog)()
    files = sorted(int(p.name[:4]) for p in (default_migrations_dir() / "postgresql").glob("*.sql"))
    assert all(json.loads(o) == files for o in outs)
    with Store(pg_url) as store:
        assert store._query("SELECT count(*) FROM schema_migrations")[0][0] == len(files)
        assert store._query("SELECT count(*) FROM meta WHERE key = 'catalog_id'")[0][0] == 1


def _pg_migrations_copy(tmp_path: Path) -> tuple[Path, Path, int]:
    base = tmp_path / "migrations"
    shutil.copytree(default_migrations_dir(), base)
    pg = base / "postgresql"
    return base, pg, max(int(p.name[:4]) for p in pg.glob("*.sql")) + 1


def test_a_failed_migration_rolls_back_and_an_edited_one_is_refused(pg_url, tmp_path):
    base, pg, n = _pg_migrations_copy(tmp_path)
    broken = pg / f"{n:04d}_broken.sql"
    broken.write_text("CREATE TABLE half_done (x integer);\nINSERT INTO half_done VALUES (1);\nCREATE TABLEE oops (y);")
    with pytest.raises(MigrationError, match=broken.name):
        Store(pg_url, migrations_dir=base)
    with Store(pg_url, migrations_dir=base, migrate=False) as s:
        assert n not in s.applied_migrations()
        assert not s._query("SELECT 1 FROM pg_tables WHERE tablename = 'half_done'")
    broken.write_text("CREATE TABLE half_done (x integer);")
    with Store(pg_url, migrations_dir=base) as s:
        assert n in s.applied_migrations()
    broken.write_text("CREATE TABLE half_done (x integer, y text);")
    with pytest.raises(MigrationError, match="differs from the one this catalog ran"):
        Store(pg_url, migrations_dir=base)


# --------------------------------------------------------------------------- several hosts


@pytest.mark.parametrize("how", HOSTS)
def test_usage_from_every_host_is_counted_once(pg_url, how):
    with Store(pg_url) as store:
        store.ensure_server("files", "stdio")
        store.sync_tools("files", [_tool("read_file", "Read a file.")])
        start = store.usage_version()

    others_done = start_hosts(how, 3, ["calls", pg_url, "files", "read_file", "40"],
                              lambda: record_calls(pg_url, "files", "read_file", "40"))
    with Store(pg_url) as store:  # and this host at the same time
        for _ in range(40):
            store.record_call("files", "read_file", ok=True, latency_ms=1.0)
        others_done()
        assert store.usage("files", "read_file")["calls"] == 160
        assert store.usage_version() == start + 160
        tool_id = store.tool("files", "read_file").id
        assert store.usage_since(start) == {tool_id: (160, 0)}


def test_concurrent_syncs_of_two_configs_never_prune_each_others_servers(pg_url):
    """Two hosts with different configs sync the same catalog at once, many times over."""
    errors: list[BaseException] = []

    def run(owner: str, mine: list[str]) -> None:
        try:
            with Store(pg_url) as store:
                for round_ in range(15):
                    for name in mine:
                        store.ensure_server(name, "stdio", owner=owner)
                        store.sync_tools(name, [_tool(f"t{i}", f"{owner} round {round_}", server=name)
                                                for i in range(5)])
                    store.reconcile_owner(owner, mine)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=("/a/config.json", ["a1", "a2", "shared"])),
               threading.Thread(target=run, args=("/b/config.json", ["b1", "shared"]))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors
    with Store(pg_url) as store:
        owners = store.server_owners()
        assert owners == {"a1": ["/a/config.json"], "a2": ["/a/config.json"], "b1": ["/b/config.json"],
                          "shared": ["/a/config.json", "/b/config.json"]}
        assert {t.tool.server for t in store.tools()} == {"a1", "a2", "b1", "shared"}
        assert len(store.tools()) == 20


def test_kill_9_during_a_sync_leaves_the_catalog_consistent(pg_url):
    churn = subprocess.Popen([sys.executable, HOST, "churn", pg_url, "big", "400"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        assert churn.stdout.readline().strip() == "ready", churn.stderr.read()
        with Store(pg_url) as store:
            # Let it commit a few rounds, then kill it in the middle of one.
            start = store.catalog_version()
            while store.catalog_version() < start + 3:
                store.wait_for_change(5)
    finally:
        os.kill(churn.pid, signal.SIGKILL)
        churn.wait(timeout=30)
    with Store(pg_url) as store:
        tools = store.tools("big")
        assert len(tools) == 400
        # Every tool is from one round: a sync is one transaction, never half applied.
        assert len({t.tool.description for t in tools}) == 1
        # The killed session's write lock went with its connection: this host writes at once.
        store.sync_tools("big", [_tool("tool_0", "after the kill", server="big")])
        assert [t.tool.description for t in store.tools("big")] == ["after the kill"]


def test_a_lost_connection_is_reopened_by_the_next_statement(pg_url):
    """The database server dropped the connection (a restart, an idle timeout) under a
    long-running process: the statement that finds it lost runs on a new connection
    (tests/test_faults_postgres.py has the other cases)."""
    import psycopg

    with Store(pg_url) as store:
        store.ensure_server("files", "stdio")
        pid = store._query("SELECT pg_backend_pid()")[0][0]
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        store.sync_tools("files", [_tool("read_file", "Read a file.")])  # BEGIN found it lost: a new one
        assert [t.tool.name for t in store.tools()] == ["read_file"]
        assert store._query("SELECT pg_backend_pid()")[0][0] != pid


def test_a_change_is_announced_to_listeners_on_other_hosts(pg_url):
    with Store(pg_url) as listener, Store(pg_url) as writer:
        writer.ensure_server("files", "stdio")
        assert not listener.wait_for_change(0.05)  # opens the LISTEN connection; nothing yet
        writer.sync_tools("files", [_tool("read_file", "Read a file.")])
        assert listener.wait_for_change(10)
        writer.record_call("files", "read_file", ok=True, latency_ms=1.0)
        assert listener.wait_for_change(10)


@pytest.mark.parametrize("how", HOSTS)
def test_a_compiler_sees_another_hosts_sync_at_its_next_compile(pg_url, tmp_path, hashing_embedder, how):
    """Host B syncs a changed server (a real stdio MCP server, jit's own sync, over a connection of
    its own: another process, or in the fast tier this process); host A's long-lived compiler, never
    restarted, serves the change at its very next compile."""
    config_file, tools = notes_config(tmp_path, pg_url)

    def host_b(*args: str) -> None:
        if how == "processes":
            host(*args)
        elif args[0] == "sync":  # as pg_host.py's "sync": its own catalog connection and embedder
            other = load_config(Path(args[1]))
            with open_catalog(other) as store:
                asyncio.run(sync(other, store, HashingEmbedder()))
        else:
            record_calls(*args[1:])

    host_b("sync", str(config_file))
    config = load_config(config_file)
    task = TaskContext(shard="coder", task="archive the note about the release")
    with Store(config.store_location, local_path=config.store_path) as store, \
            Compiler(store, config, hashing_embedder) as compiler:
        store.set_scope({"notes", "harness"})
        first = {s.tool_name for s in compiler.compile(task).tools}
        assert {"send_message", "read_note"} <= first and "archive_note" not in first
        tools("send_message", "read_note", "archive_note")
        host_b("sync", str(config_file))
        second = {s.tool_name for s in compiler.compile(task).tools}
        assert "archive_note" in second
        # Usage recorded on host B reaches host A's next compile too.
        host_b("calls", pg_url, "notes", "archive_note", "7")
        (called,) = [s for s in compiler.compile(task).tools if s.tool_name == "archive_note"]
        assert called.tool.calls == 7


@pytest.mark.parametrize("engine", ["sqlite", "postgresql"])
def test_a_server_can_be_up_for_one_host_and_down_for_another(engine, request, tmp_path):
    location = str(tmp_path / "catalog.db") if engine == "sqlite" else request.getfixturevalue("pg_url")
    with Store(location) as store:
        store.ensure_server("notes", "stdio")
        store.sync_tools("notes", [_tool("read_note", "Read a note.", server="notes")])
    holder = subprocess.Popen([sys.executable, HOST, "connect", location, "notes"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env={**os.environ, "JIT_HOST": "host-a"})
    try:
        assert holder.stdout.readline().strip() == "held"  # host A holds a live connection
        _up_here_down_there(location)
    finally:
        holder.communicate("", timeout=60)


def _up_here_down_there(location: str) -> None:
    with Store(location) as store:  # this host cannot reach it
        version = store.catalog_version()
        store.set_server_status("notes", ServerStatus.ERROR, error="connection refused")
        assert store.catalog_version() > version  # this host's compiles must see it
        mine = store.server("notes")
        assert (mine.status, mine.last_error) == (ServerStatus.ERROR, "connection refused")
        assert "for pid" in mine.note and "on host-a" in mine.note
        assert store.server_statuses()["notes"][0] is ServerStatus.ERROR
        assert store.tools(online=True) == [] and len(store.tools(online=False)) == 1
    # Host A still sees it up, and a third host (no view of its own) reads the shared status.
    assert json.loads(host("status", location, "notes", name="host-a").stdout)["online"] == ["read_note"]
    third = json.loads(host("status", location, "notes", name="host-c").stdout)
    assert third["status"] == "connected" and third["online"] == ["read_note"]
    # Once this host connects itself, its own view is gone: one status again.
    with Store(location) as store:
        store.set_server_status("notes", ServerStatus.CONNECTED)
        assert store.server("notes").status is ServerStatus.CONNECTED and store.server("notes").note is None
        assert store._query("SELECT count(*) FROM server_host_status")[0][0] == 0


@pytest.mark.slow  # jit serve with the model, and another host's sync with it
def test_jit_serve_announces_another_hosts_sync(pg_url, tmp_path):
    """``jit serve --expose-shard`` on host A; host B syncs a server that gained a tool. Host A's
    serve hears the catalog change (LISTEN), recompiles, and tells its client ``list_changed``."""
    config_file, tools = notes_config(tmp_path, pg_url)
    (tmp_path / "available_tools.json").write_text(json.dumps(
        {"overrides": {"notes/*": {"skeleton": ["coder"]}}}), encoding="utf-8")
    host("sync", str(config_file), "model", timeout=300)
    changes: list[object] = []

    async def on_message(message: object) -> None:
        if isinstance(message, ToolListChangedNotification):
            changes.append(message)

    async def scenario() -> None:
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "jit", "serve", "--stdio", "--config", str(config_file),
                                          "--expose-shard", "coder", "--task", "archive the release notes"],
            env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
        async with stdio_client(params) as (read, write), \
                ClientSession(read, write, read_timeout_seconds=180, message_handler=on_message) as s:
            await s.initialize()
            with anyio.fail_after(180):
                while "notes__send_message" not in {t.name for t in (await s.list_tools()).tools}:
                    await anyio.sleep(0.05)
                tools("send_message", "read_note", "archive_note")
                changes.clear()
                await anyio.to_thread.run_sync(lambda: host("sync", str(config_file), "model", timeout=300))
                while "notes__archive_note" not in {t.name for t in (await s.list_tools()).tools}:
                    await anyio.sleep(0.05)
                while not changes:  # and it was announced
                    await anyio.sleep(0.05)

    anyio.run(scenario)
