"""Fault injection: broken configuration files (issue #12, defect 9).

Each case is a config (or available_tools.json) that is wrong in one way: a key
given twice, a value of the wrong JSON type that lax parsing would coerce, a
non-finite number, an encoding that is not UTF-8, nesting deeper than any
config needs, a string no program, environment or header can hold, a path that
cannot be used (``store``, ``cwd``). Every case must be one ConfigError naming
the file and the key, through :func:`load_config` and through the ``jit`` command
(exit code 3, one line on stderr, no traceback): the Typer app in this process,
and in the slow tier the real console script for a sample of the cases (``jit``,
``RUNNERS``). It must leave an existing catalog byte for byte as it was. The catalog still answers with a
good config afterwards.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from servers.support import RAW, REPO
from typer.testing import CliRunner

from jit.catalog.store import Store
from jit.cli import app
from jit.config_files import load_config
from jit.errors import ConfigError
from jit.models import ServerStatus, ToolDef

JIT = str(Path(sys.executable).parent / "jit")
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "COLUMNS": "200"}
PY = json.dumps(sys.executable)
GOOD_SERVER = f'{{"command": {PY}, "args": [{json.dumps(RAW)}]}}'
EXAMPLES = REPO / "examples" / "servers"

#: (case id, config file bytes, key named in the error (None: the whole file), fragment of the message).
#: Every config also sets "store": "catalog.db" so a case that got through would use the test's catalog.
CASES: list[tuple[str, bytes, str | None, str]] = [
    # --- the same key twice: JSON keeps the last one, silently
    ("dup-server", b'{"servers": {"alpha": %s, "alpha": {"command": "other"}}}', "servers.alpha", "more than once"),
    ("dup-top-level", b'{"store": "catalog.db", "store": "elsewhere.db"}', "store", "more than once"),
    ("dup-env", b'{"servers": {"alpha": {"command": "x", "env": {"T": "1", "T": "2"}}}}', "servers.alpha.env.T",
     "more than once"),
    ("dup-mcpservers", b'{"mcpServers": {"alpha": {"command": "x"}, "alpha": {"command": "y"}}}',
     "mcpServers.alpha", "more than once"),
    # --- types lax parsing would coerce
    ("enabled-string", b'{"servers": {"alpha": {"command": "x", "enabled": "no"}}}', "servers.alpha.enabled",
     "true or false"),
    ("enabled-int", b'{"servers": {"alpha": {"command": "x", "enabled": 0}}}', "servers.alpha.enabled",
     "true or false"),
    ("timeout-bool", b'{"servers": {"alpha": {"command": "x", "timeout": true}}}', "servers.alpha.timeout",
     "must be a number"),
    ("timeout-string", b'{"servers": {"alpha": {"command": "x", "call_timeout": "60"}}}',
     "servers.alpha.call_timeout", "must be a number"),
    ("budget-string", b'{"tool_selection": {"token_budget": "4000"}}', "tool_selection.token_budget", "integer"),
    ("budget-fraction", b'{"tool_selection": {"token_budget": 4000.5}}', "tool_selection.token_budget", "integer"),
    ("flag-int", b'{"mcpServers": {"alpha": {"command": "x", "disabled": 1}}}', "mcpServers.alpha.disabled",
     "true or false"),
    ("renamed-key", b'{"tool_selection": {"dense_clauses": true}}', "tool_selection", "replaced by task_vectors"),
    ("disabled-string", b'{"mcpServers": {"alpha": {"command": "x", "disabled": "yes"}}}',
     "mcpServers.alpha.disabled", "true or false"),
    ("env-int", b'{"servers": {"alpha": {"command": "x", "env": {"PORT": 8080}}}}', "servers.alpha.env.PORT",
     "must be a string"),
    ("header-int", b'{"servers": {"alpha": {"url": "http://127.0.0.1:9/mcp", "headers": {"X-N": 1}}}}',
     "servers.alpha.headers.X-N", "must be a string"),
    ("args-string", b'{"servers": {"alpha": {"command": "x", "args": "--verbose"}}}', "servers.alpha.args",
     "must be a list"),
    ("shard-string", b'{"shards": {"coder": "writes code"}}', "shards.coder", "must be an object"),
    ("type-list", b'{"mcpServers": {"alpha": {"type": ["http"], "url": "http://h/mcp"}}}', "mcpServers.alpha.type",
     "unknown server type"),
    ("timeout-null", b'{"servers": {"alpha": {"command": "x", "timeout": null}}}', "servers.alpha.timeout",
     "must be a number"),
    ("args-numbers", b'{"servers": {"alpha": {"command": "x", "args": ["-p", 8080]}}}', "servers.alpha.args.1",
     "must be a string"),
    ("mcpservers-null", b'{"mcpServers": null}', "mcpServers", "must be an object"),
    # --- numbers: finite, in range
    ("timeout-overflow", b'{"servers": {"alpha": {"command": "x", "timeout": 1e999}}}', "servers.alpha.timeout",
     "not a finite number"),
    ("nan", b'{"tool_selection": {"logic_weight": NaN}}', "tool_selection.logic_weight", "not a finite number"),
    ("infinity", b'{"connection": {"ping_interval": Infinity}}', "connection.ping_interval", "not a finite number"),
    ("negative-timeout", b'{"servers": {"alpha": {"command": "x", "call_timeout": -5}}}',
     "servers.alpha.call_timeout", "greater than 0"),
    ("zero-budget", b'{"tool_selection": {"token_budget": 0}}', "tool_selection.token_budget", "greater than 0"),
    ("huge-pool", b'{"tool_selection": {"candidate_pool": 100000000000000000000000}}', "tool_selection.candidate_pool",
     "less than or equal to"),
    ("huge-integer", b'{"tool_selection": {"token_budget": ' + b"9" * 5000 + b"}}", None, "too many digits"),
    # --- strings nothing can use
    ("empty-command", b'{"servers": {"alpha": {"command": ""}}}', "servers.alpha.command", "at least 1 character"),
    ("blank-command", b'{"servers": {"alpha": {"command": "   "}}}', "servers.alpha.command", "whitespace"),
    ("nul-in-arg", b'{"servers": {"alpha": {"command": "x", "args": ["a\\u0000b"]}}}', "servers.alpha.args.0",
     "NUL"),
    ("surrogate", b'{"servers": {"alpha": {"command": "\\ud800x"}}}', "servers.alpha.command", "surrogate"),
    ("env-name", b'{"servers": {"alpha": {"command": "x", "env": {"A=B": "1"}}}}', "servers.alpha.env", "'='"),
    ("header-crlf", b'{"servers": {"alpha": {"url": "http://h/mcp", "headers": {"X": "a\\r\\nEvil: 1"}}}}',
     "servers.alpha.headers", "line break"),
    ("header-name", b'{"servers": {"alpha": {"url": "http://h/mcp", "headers": {"Bad Name": "1"}}}}',
     "servers.alpha.headers", "header name"),
    ("url-no-host", b'{"servers": {"alpha": {"url": "http:///mcp"}}}', "servers.alpha.url", "host"),
    ("url-bad-port", b'{"servers": {"alpha": {"url": "http://127.0.0.1:99999/mcp"}}}', "servers.alpha.url", "Port"),
    ("empty-store", b'{"store": ""}', "store", "at least 1 character"),
    # a URL of an engine jit has no backend for: it would become a local file named after the URL
    ("store-sqlalchemy-url", b'{"store": "postgresql+psycopg://jit@db.example/catalog"}', "store",
     "not a catalog jit can open"),
    ("store-mysql-url", b'{"store": "mysql://db.example/catalog"}', "store", "not a catalog jit can open"),
    ("store-sqlite-url", b'{"store": "sqlite:///tmp/catalog.db"}', "store", "not a catalog jit can open"),
    # --- keys naming paths that must exist: the config's error, not a rule or file error
    ("rules-missing", b'{"rules": "no-such-rules"}', "rules", "does not exist"),
    ("rules-a-file", b'{"rules": "config.json"}', "rules", "is not a directory"),
    ("available-tools-missing", b'{"available_tools": "no-such.json"}', "available_tools", "does not exist"),
    ("embedding-path-missing", b'{"embedding": {"path": "no-such-model"}}', "embedding.path", "does not exist"),
    ("embedding-path-a-file", b'{"embedding": {"path": "config.json"}}', "embedding.path", "is not a directory"),
    # --- encodings and structure
    ("latin-1", '{"servers": {"alpha": {"command": "caf\xe9"}}}'.encode("latin-1"), None, "not UTF-8"),
    ("utf-16", '{"store": "catalog.db"}'.encode("utf-16"), None, "UTF-16"),
    ("deep-5000", b'{"x": ' * 5000 + b"1" + b"}" * 5000, None, "nested too deeply"),
    ("deep-150", b'{"shards": {"coder": {"categories": ' + b"[" * 150 + b"]" * 150 + b"}}}", "shards.coder.categories",
     "nested more than"),
    ("empty-file", b"", None, "empty"),
    ("top-level-array", b'[{"servers": {}}]', None, "top level must be a JSON object"),
    ("bad-json", b'{"servers": {,}}', None, "invalid JSON at line 1"),
    # --- an unset variable makes one server unavailable, but does not excuse the rest of its entry
    ("unset-variable-and-unknown-key", b'{"servers": {"alpha": {"command": "x", "argz": [], '
     b'"env": {"T": "${JIT_TEST_NEVER_SET}"}}}}', "servers.alpha.argz", "unknown key"),
]


def config_bytes(body: bytes) -> bytes:
    """``body`` with %s filled by a good server entry and the test catalog set, where it is an object."""
    if b"%s" in body:
        body = body % GOOD_SERVER.encode()
    try:
        parsed = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return body
    if isinstance(parsed, dict) and body.startswith(b"{") and b'"store"' not in body:
        return b'{"store": "catalog.db", ' + body[1:] if body != b"{}" else b'{"store": "catalog.db"}'
    return body


def jit(*args: str) -> subprocess.CompletedProcess[str]:
    """The installed ``jit`` console script, in its own process (the slow tier's cases)."""
    return subprocess.run([JIT, *args], capture_output=True, text=True, env=ENV, timeout=300)


_runner = CliRunner()


def jit_in_process(*args: str) -> subprocess.CompletedProcess[str]:
    """The same command through the Typer app in this process, as a CompletedProcess.

    The error paths under test (parse, report, exit code) are all inside the app;
    what only a real process adds (the console script, interpreter start-up) is
    covered by the slow cases that call :func:`jit`."""
    result = _runner.invoke(app, list(args), env={"COLUMNS": "200"})
    return subprocess.CompletedProcess([JIT, *args], result.exit_code, result.stdout, result.stderr)


#: The cases that also go through the real console script (the rest run in process).
SUBPROCESS_CASES = {"dup-server", "enabled-string", "nan", "latin-1", "deep-5000", "header-crlf"}

#: A test's command through the app in this process, and, in the slow tier, through the console script.
RUNNERS = [pytest.param(jit_in_process, id="in-process"),
           pytest.param(jit, id="console-script", marks=pytest.mark.slow)]


def digest(directory: Path) -> dict[str, str]:
    """sha256 of every catalog file (the database and any WAL/SHM beside it)."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(directory.glob("catalog.db*"))}


@pytest.fixture(scope="module")
def synced_catalog(tmp_path_factory) -> Path:
    """A catalog with one server's tools and some usage, as a synced config leaves it (built once)."""
    path = tmp_path_factory.mktemp("synced") / "catalog.db"
    with Store(path) as store:
        store.sync_catalog([ToolDef(server="alpha", name=f"tool_{i}", description=f"Tool {i}.") for i in range(3)],
                           status=ServerStatus.IDLE)
        store.record_call("alpha", "tool_0", ok=True, latency_ms=5.0)
    assert [p.name for p in path.parent.iterdir()] == ["catalog.db"]  # closed: nothing beside it to copy
    return path


@pytest.fixture
def catalog(tmp_path: Path, synced_catalog: Path) -> Path:
    """A copy of ``synced_catalog`` of the test's own, as the config's ``catalog.db``."""
    return Path(shutil.copyfile(synced_catalog, tmp_path / "catalog.db"))


def assert_one_clear_line(done: subprocess.CompletedProcess[str], path: Path, key: str | None, fragment: str) -> None:
    assert done.returncode == 3, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr + done.stdout
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    line = lines[0]
    assert line.startswith("error:") and str(path) in line and fragment in line, line
    if key is not None:
        assert f"key {key!r}" in line, line


@pytest.mark.parametrize(("case", "body", "key", "fragment"), CASES, ids=[c[0] for c in CASES])
def test_load_config_names_file_and_key(tmp_path, case, body, key, fragment):
    path = tmp_path / "config.json"
    path.write_bytes(config_bytes(body))
    with pytest.raises(ConfigError) as info:
        load_config(path, env={})
    err = info.value
    assert err.path == str(path) and err.key == key, (err.path, err.key, str(err))
    assert fragment in err.message


def cli_exits_3_with_one_line_and_keeps_the_catalog(run, tmp_path: Path, body: bytes, key: str | None,
                                                    fragment: str) -> None:
    path = tmp_path / "config.json"
    path.write_bytes(config_bytes(body))
    before = digest(tmp_path)
    # sync is the command that would rewrite the catalog if the config got through.
    assert_one_clear_line(run("sync", "--config", str(path)), path, key, fragment)
    payload = json.loads(run("servers", "--json", "--config", str(path)).stderr)
    assert payload["error"] == "config_error" and payload["path"] == str(path) and payload.get("key") == key
    assert digest(tmp_path) == before


@pytest.mark.parametrize(("case", "body", "key", "fragment"), CASES, ids=[c[0] for c in CASES])
def test_cli_exits_3_with_one_line_and_keeps_the_catalog(tmp_path, catalog, case, body, key, fragment):
    cli_exits_3_with_one_line_and_keeps_the_catalog(jit_in_process, tmp_path, body, key, fragment)


@pytest.mark.slow
@pytest.mark.parametrize(("case", "body", "key", "fragment"), [c for c in CASES if c[0] in SUBPROCESS_CASES],
                         ids=[c[0] for c in CASES if c[0] in SUBPROCESS_CASES])
def test_console_script_exits_3_with_one_line_and_keeps_the_catalog(tmp_path, catalog, case, body, key, fragment):
    cli_exits_3_with_one_line_and_keeps_the_catalog(jit, tmp_path, body, key, fragment)


def test_the_catalog_answers_with_a_good_config_afterwards(tmp_path, catalog):
    bad = tmp_path / "config.json"
    for _, body, _, _ in CASES[:6]:
        bad.write_bytes(config_bytes(body))
        assert jit_in_process("sync", "--config", str(bad)).returncode == 3
    good = tmp_path / "good.json"
    good.write_text(f'{{"store": "catalog.db", "servers": {{"alpha": {GOOD_SERVER}}}}}', encoding="utf-8")
    listed = jit_in_process("tools", "--json", "--config", str(good))
    assert listed.returncode == 0, listed.stderr
    assert sorted(r["tool"] for r in json.loads(listed.stdout)) == ["tool_0", "tool_1", "tool_2"]
    with Store(catalog) as store:
        assert store.usage("alpha", "tool_0")["calls"] == 1


# --------------------------------------------------------------------------- accepted on purpose


def test_a_utf8_byte_order_mark_is_accepted(tmp_path):
    path = tmp_path / "config.json"
    path.write_bytes(b"\xef\xbb\xbf" + b'{"tool_selection": {"token_budget": 1234}}')
    assert load_config(path, env={}).tool_selection.token_budget == 1234


def test_integers_are_accepted_for_seconds_and_disabled_servers_may_lack_their_cwd(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"servers": {
        "alpha": {"command": "x", "timeout": 5, "call_timeout": 10},
        "beta": {"command": "x", "cwd": "/no/such/dir", "enabled": False},
    }}), encoding="utf-8")
    cfg = load_config(path, env={})
    assert cfg.servers["alpha"].timeout == 5.0 and cfg.servers["beta"].enabled is False


# --------------------------------------------------------------------------- available_tools.json


@pytest.mark.parametrize(("body", "key", "fragment"), [
    (b'{"overrides": {"a/b": {"exclude": true}, "a/b": {"exclude": false}}}', "overrides.a/b", "more than once"),
    (b'{"overrides": {"a/b": {"exclude": "yes"}}}', "overrides.a/b.exclude", "true or false"),
    (b'{"tools": [{"name": "t", "shard_affinity": {"coder": 150}}]}', "tools.0.shard_affinity.coder",
     "less than or equal to 100"),
    (b'{"tools": [{"name": "t", "input_schema": {"type": "object", "maximum": NaN}}]}', "tools.0.input_schema.maximum",
     "not a finite number"),
    (b'{"tools": [{"name": "t", "description": "caf\xe9"}]}', None, "not UTF-8"),
])
def test_available_tools_faults_name_file_and_key(tmp_path, catalog, body, key, fragment):
    tools = tmp_path / "available_tools.json"
    tools.write_bytes(body)
    path = tmp_path / "config.json"
    path.write_text('{"store": "catalog.db", "available_tools": "available_tools.json"}', encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(path, env={})
    assert info.value.path == str(tools) and info.value.key == key and fragment in info.value.message
    before = digest(tmp_path)
    assert_one_clear_line(jit_in_process("sync", "--config", str(path)), tools, key, fragment)
    assert digest(tmp_path) == before


# --------------------------------------------------------------------------- paths: the config itself, store, cwd


@pytest.mark.parametrize("run", RUNNERS)
def test_a_symlink_loop_is_a_config_error(tmp_path, run):
    path = tmp_path / "config.json"
    (tmp_path / "other.json").symlink_to(path)
    path.symlink_to(tmp_path / "other.json")
    with pytest.raises(ConfigError, match="cannot resolve"):
        load_config(path, env={})
    done = run("servers", "--config", str(path))
    assert done.returncode == 3 and "Traceback" not in done.stderr and "cannot resolve" in done.stderr


@pytest.mark.parametrize("run", RUNNERS)
def test_a_config_that_is_a_directory(tmp_path, run):
    path = tmp_path / "config.json"
    path.mkdir()
    with pytest.raises(ConfigError, match="cannot read config file"):
        load_config(path, env={})
    assert_one_clear_line(run("servers", "--config", str(path)), path, None, "cannot read config file")


@pytest.mark.parametrize("where", ["under-a-file", "a-directory", "uncreatable", "a-device", "in-proc"])
def test_an_unusable_store_is_a_config_error_naming_store(tmp_path, where):
    blocker = tmp_path / "blocker"
    blocker.write_text("a file, not a directory", encoding="utf-8")
    (tmp_path / "catalog-dir").mkdir()
    store = {
        "under-a-file": str(blocker / "catalog.db"),
        # /proc refuses new directories even to root, which a read-only directory does not.
        "uncreatable": "/proc/jit-test-no-such-dir/catalog.db",
        "a-directory": str(tmp_path / "catalog-dir"),
        "a-device": "/dev/null",  # SQLite would open it, and leave /dev/null-journal behind as root
        "in-proc": "/proc/jit-catalog.db",  # os.access says yes to root; creating a file there fails
    }[where]
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"store": store}), encoding="utf-8")
    for command in (["servers"], ["tools"], ["sync"]):
        done = jit_in_process(*command, "--config", str(path))
        assert_one_clear_line(done, path, "store", "catalog")
    assert blocker.read_text(encoding="utf-8") == "a file, not a directory"


@pytest.mark.parametrize("run", RUNNERS)
@pytest.mark.parametrize("kind", ["missing", "a-file"])
def test_a_bad_cwd_names_the_cwd_key_not_the_program(tmp_path, kind, run):
    (tmp_path / "file.txt").write_text("x", encoding="utf-8")
    cwd = "no-such-dir" if kind == "missing" else "file.txt"
    path = tmp_path / ".mcp.json"
    path.write_text(json.dumps({"mcpServers": {"alpha": {"command": sys.executable, "args": [RAW], "cwd": cwd}}}),
                    encoding="utf-8")
    with pytest.raises(ConfigError, match="working directory") as info:
        load_config(path, env={})
    assert info.value.key == "mcpServers.alpha.cwd" and str(tmp_path / cwd) in info.value.message
    assert_one_clear_line(run("sync", "--config", str(path)), path, "mcpServers.alpha.cwd", "working directory")


@pytest.mark.slow  # real stdio servers: the cwd is the child process's
def test_a_cwd_removed_after_loading_is_reported_as_the_cwd(tmp_path):
    """The directory exists when the config loads and is gone when the server starts."""
    from jit.client.manager import ClientManager

    work = tmp_path / "work"
    work.mkdir()
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"store": "catalog.db", "connection": {"reconnect_attempts": 0, "ping_interval": 0},
                                "servers": {"alpha": {"command": sys.executable, "args": [RAW, "--transport", "stdio"],
                                                      "cwd": "work"},
                                            "beta": {"command": sys.executable,
                                                     "args": [RAW, "--transport", "stdio"]}}}),
                    encoding="utf-8")
    config = load_config(path, env={})
    work.rmdir()

    async def connect() -> tuple[str | None, list[str]]:
        with Store(config.store_path) as store:
            async with ClientManager(config, store) as manager:  # entered once every server has settled
                last_error = manager.statuses()["alpha"].last_error
                beta = await manager.call_tool("beta", "tool_0", {"x": "still answers"})
            return last_error, [str(b.get("text", "")) for b in beta.content]

    last_error, beta_text = asyncio.run(connect())
    assert last_error is not None and "working directory" in last_error and str(work) in last_error
    assert "cannot start" not in last_error
    assert any("still answers" in t for t in beta_text)  # the other server is unaffected


def test_a_relative_embedding_path_is_read_from_the_config_files_directory(tmp_path, monkeypatch):
    """``embedding.path`` went to the model loader as written, so a relative one depended on the
    directory jit ran in (every other path key is relative to the config file)."""
    (tmp_path / "models" / "mini").mkdir(parents=True)
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"embedding": {"path": "models/mini"}}), encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert load_config(path).embedding.path == str(tmp_path / "models" / "mini")


# --------------------------------------------------------------------------- an unset variable: one server, not all


@pytest.mark.slow
def test_a_server_using_an_unset_variable_is_unavailable_and_the_others_work(tmp_path):
    """A ``.mcp.json`` whose workspace server needs ``${JIT_TEST_WORKSPACE_TOKEN}``, synced once with
    it set, then used with it unset: ``jit sync`` syncs the time server (exit 0; 4 with --strict, as
    for any server that fails), ``jit servers`` gives the reason, and ``jit serve --stdio`` (driven by
    the SDK's client) starts, logs one line, searches and calls the time server's tools, and refuses
    a call to the workspace (a cached tool or an unknown one) at once with the reason."""
    time_server = Path(sys.executable).parent / "mcp-server-time"
    if not time_server.exists():
        pytest.fail(f"{time_server} is not installed (scripts/install-test-servers.sh)")
    (tmp_path / "workspace").mkdir()
    (tmp_path / "workspace" / "notes.txt").write_text("ship jit\n", encoding="utf-8")
    config = tmp_path / ".mcp.json"
    config.write_text(json.dumps({"mcpServers": {
        "time": {"command": str(time_server), "args": ["--local-timezone", "UTC"]},
        "workspace": {"command": sys.executable, "args": [str(EXAMPLES / "workspace.py"), "--root",
                                                          str(tmp_path / "workspace")],
                      "env": {"WORKSPACE_TOKEN": "${JIT_TEST_WORKSPACE_TOKEN}"}},
    }}), encoding="utf-8")
    unset = {k: v for k, v in ENV.items() if k != "JIT_TEST_WORKSPACE_TOKEN"}
    first = subprocess.run([JIT, "sync", "--json", "-c", str(config)], capture_output=True, text=True, timeout=300,
                           env={**unset, "JIT_TEST_WORKSPACE_TOKEN": "t0ken-value"})
    assert first.returncode == 0 and json.loads(first.stdout)["unreachable"] == [], first.stderr
    problem = ("environment variable JIT_TEST_WORKSPACE_TOKEN is not set and has no default "
               f"(used by mcpServers.workspace.env.WORKSPACE_TOKEN in {config.resolve()})")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([JIT, *args, "-c", str(config)], capture_output=True, text=True, timeout=300, env=unset)

    synced = run("sync", "--json")
    assert synced.returncode == 0, synced.stderr
    rows = {r["server"]: r for r in json.loads(synced.stdout)["servers"]}
    assert rows["time"]["reached"] and rows["time"]["tools"] == 2
    assert rows["workspace"]["status"] == "error" and rows["workspace"]["last_error"] == problem
    assert rows["workspace"]["tools"] > 0  # its cached tools stay
    assert run("sync", "--strict").returncode == 4
    servers = {r["server"]: r for r in json.loads(run("servers", "--json").stdout)}
    assert (servers["workspace"]["status"], servers["workspace"]["last_error"]) == ("error", problem)
    assert "t0ken-value" not in synced.stdout + json.dumps(servers)

    log = tmp_path / "serve.log"
    params = StdioServerParameters(command=JIT, args=["serve", "--stdio", "-c", str(config)], env=unset)

    async def drive() -> tuple[Any, ...]:
        with log.open("w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), \
                    ClientSession(read, write, read_timeout_seconds=180) as session:
                await session.initialize()
                found = await session.call_tool("search_tools", {"query": "current time in a timezone"})
                now = await session.call_tool("call_tool", {"server": "time", "tool": "get_current_time",
                                                            "arguments": {"timezone": "UTC"}})
                cached = await session.call_tool("call_tool", {"server": "workspace", "tool": "read_file",
                                                               "arguments": {"path": "notes.txt"}})
                unknown = await session.call_tool("call_tool", {"server": "workspace", "tool": "nope"})
                return found, now, cached, unknown

    found, now, cached, unknown = anyio.run(drive)
    assert ("time", "get_current_time") in {(t["server"], t["tool"]) for t in found.structured_content["tools"]}
    assert not now.is_error and json.loads(now.content[0].text)["timezone"] == "UTC"
    for refused in (cached, unknown):
        err = refused.structured_content
        assert refused.is_error and err["error"] == "server_unavailable"
        assert (err["server"], err["status"], err["last_error"]) == ("workspace", "error", problem)
    assert unknown.structured_content["message"].endswith("its last tool listing has no tool 'nope'")
    said = [line for line in log.read_text().splitlines() if "JIT_TEST_WORKSPACE_TOKEN" in line]
    assert len(said) == 1 and said[0].endswith(f"server workspace is not started: {problem}"), said
