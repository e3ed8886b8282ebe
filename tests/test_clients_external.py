"""``jit serve --stdio`` driven by MCP clients jit's authors did not write.

* the MCP Inspector's CLI (``@modelcontextprotocol/inspector``, pinned in
  scripts/install-test-servers.sh): tools, resources, templates and prompts listed through
  jit and straight from @modelcontextprotocol/server-everything, then a call, a resource
  read and a prompt through jit;
* Claude Code's CLI (``@anthropic-ai/claude-code``): ``jit setup claude-code`` on a project
  (``.mcp.json`` then starts ``jit`` from ``PATH`` with a config path in the project), and
  ``claude mcp add``, each followed by ``claude mcp list`` showing jit ``Connected`` within
  the client's own default start-up timeout (``MCP_TIMEOUT``, 30 s in 2.1.197). No API key
  is needed for that; ``HOME`` is a temporary folder, so the user's own Claude config is
  never read or written.

Each client runs in its own process group, killed by its id if it outlives its deadline
(the Inspector starts jit, which starts server-everything). Missing clients fail the run
under CI=true and skip otherwise, as the third-party servers do.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO
from servers.support import EVERYTHING_BIN, EVERYTHING_DIR
from test_clients_thirdparty import require

from jit.cli.claude_code import setup_claude_code

pytestmark = pytest.mark.slow  # node clients starting jit and server-everything

BIN = REPO / ".test-servers" / "node_modules" / ".bin"
#: Hang guard for one client run (each starts jit and server-everything), not a speed bound.
DEADLINE = 180
#: What starts the jit under test: this interpreter, with this checkout first on the path.
JIT = [sys.executable, "-m", "jit"]
META_TOOLS = {"search_tools", "describe_tool", "call_tool", "compile_tools", "reload"}


@pytest.fixture
def everything() -> str:
    found = EVERYTHING_BIN.exists() and (EVERYTHING_DIR / "dist" / "index.js").exists() and shutil.which("node")
    return require("@modelcontextprotocol/server-everything (and node)", str(EVERYTHING_BIN) if found else None)


@pytest.fixture
def inspector() -> str:
    found = (BIN / "mcp-inspector").exists() and shutil.which("node")
    return require("@modelcontextprotocol/inspector (and node)", str(BIN / "mcp-inspector") if found else None)


@pytest.fixture
def claude() -> str:
    found = (BIN / "claude").exists()
    return require("@anthropic-ai/claude-code", str(BIN / "claude") if found else None)


def client_env(home: Path) -> dict[str, str]:
    """The environment of a client run: this checkout's jit, offline, a private HOME."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE_"))}
    env.update(PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
               HF_HUB_OFFLINE="1", HOME=str(home), DISABLE_AUTOUPDATER="1",
               CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_TELEMETRY="1")
    return env


def run(argv: list[str], *, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run a client to its end; past :data:`DEADLINE` its whole process group is killed by id."""
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=DEADLINE)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"{argv[0]} did not finish within {DEADLINE}s: {err[-2000:]}")
    finally:
        try:  # what the client started and left behind (jit, server-everything), by group id
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def write_config(base: Path, everything: str) -> Path:
    config = base / "config.json"
    config.write_text(json.dumps({"servers": {"everything": {"command": everything, "args": ["stdio"]}}}))
    return config


class Inspector:
    """``mcp-inspector --cli TARGET --method M …``: one client process per request, its JSON answer."""

    def __init__(self, binary: str, target: list[str], home: Path) -> None:
        self.binary, self.target, self.home = binary, target, home

    def __call__(self, method: str, *args: str) -> dict[str, Any]:
        done = run([self.binary, "--cli", *self.target, "--method", method, *args], env=client_env(self.home),
                   cwd=self.home)
        assert done.returncode == 0, f"{method}: {done.stdout[-2000:]}{done.stderr[-2000:]}"
        return json.loads(done.stdout)

    def names(self, method: str, key: str) -> list[str]:
        return [item["name"] for item in self(method)[key]]


def test_the_inspector_sees_through_jit_what_the_upstream_serves(tmp_path, inspector, everything):
    config = write_config(tmp_path, everything)
    direct = Inspector(inspector, [everything, "stdio"], tmp_path)
    # -c, not --config: the Inspector takes --config for itself wherever it appears (docs/serve.md)
    jit = Inspector(inspector, [*JIT, "serve", "--stdio", "-c", str(config)], tmp_path)

    tools = jit("tools/list")["tools"]
    assert {t["name"] for t in tools} == META_TOOLS
    assert all(t["_meta"] == {"anthropic/alwaysLoad": True} for t in tools)
    for method, key in (("resources/list", "resources"), ("resources/templates/list", "resourceTemplates"),
                        ("prompts/list", "prompts")):
        upstream = direct.names(method, key)
        through = jit.names(method, key)
        assert upstream, method
        # every upstream item, under its server's prefix, after jit's own (resources and templates)
        assert [n for n in through if n.startswith("everything__")] == [f"everything__{n}" for n in upstream]

    called = jit("tools/call", "--tool-name", "call_tool", "--tool-arg", "server=everything",
                 "--tool-arg", "tool=echo", "--tool-arg", 'arguments={"message": "through jit"}')
    assert not called.get("isError") and called["content"] == [{"type": "text", "text": "Echo: through jit"}]
    uri = direct("resources/list")["resources"][0]["uri"]
    read = jit("resources/read", "--uri", uri)
    assert read == direct("resources/read", "--uri", uri)
    prompt = jit("prompts/get", "--prompt-name", "everything__args-prompt", "--prompt-args", "city=Paris")
    assert prompt == direct("prompts/get", "--prompt-name", "args-prompt", "--prompt-args", "city=Paris")
    upstream_tools = direct.names("tools/list", "tools")
    # The catalog (a sync, as `jit sync` before a client's first start): search_tools finds every tool.
    synced = run([*JIT, "sync", "-q", "-c", str(config)], env=client_env(tmp_path), cwd=tmp_path)
    assert synced.returncode == 0, synced.stderr[-2000:]
    found = jit("tools/call", "--tool-name", "search_tools", "--tool-arg", "query=echo a message",
                "--tool-arg", "limit=100")["structuredContent"]["tools"]
    assert sorted(t["tool"] for t in found) == sorted(upstream_tools)


def connected_line(listing: str, name: str) -> str:
    line = next((ln for ln in listing.splitlines() if ln.startswith(f"{name}:")), "")
    assert "Connected" in line, listing
    return line


def test_claude_code_connects_to_jit_after_jit_setup(tmp_path, claude, everything):
    """The one-step setup, then Claude Code's own health check of the project's servers."""
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    (project / ".mcp.json").write_text(json.dumps(
        {"mcpServers": {"everything": {"command": everything, "args": ["stdio"]}}}))
    # .mcp.json starts `jit` from PATH with the config's path in the project (what a team commits):
    # this installation's bin/ is first on the PATH of the shell that starts Claude Code.
    env = {**client_env(home), "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])}
    result = setup_claude_code(project, env=env)
    assert result["moved"] == ["everything"] and result["warnings"] == []
    # A project's .mcp.json servers wait for the user's approval in Claude Code; this is what
    # accepting the folder's trust dialog and approving the server writes.
    (home / ".claude.json").write_text(json.dumps(
        {"projects": {str(project.resolve()): {"hasTrustDialogAccepted": True}}}))
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.local.json").write_text(json.dumps({"enabledMcpjsonServers": ["jit"]}))

    listing = run([claude, "mcp", "list"], env=env, cwd=project)
    assert listing.returncode == 0, listing.stderr
    line = connected_line(listing.stdout, "jit")
    assert "jit serve --stdio -c .jit/config.json" in line and "everything" not in listing.stdout.replace(line, "")


def test_claude_code_connects_to_jit_added_with_claude_mcp_add(tmp_path, claude, everything):
    home = tmp_path / "home"
    home.mkdir()
    config = write_config(tmp_path, everything)
    added = run([claude, "mcp", "add", "jit", "--", *JIT, "serve", "--stdio", "-c", str(config)],
                env=client_env(home), cwd=tmp_path)
    assert added.returncode == 0, added.stderr
    listing = run([claude, "mcp", "list"], env=client_env(home), cwd=tmp_path)
    assert listing.returncode == 0, listing.stderr
    connected_line(listing.stdout, "jit")
