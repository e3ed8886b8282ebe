"""A role's sub-agent cannot see or call a tool its role denies: shown on what ``--subagents`` generated.

* The generated agents' server command, run as written (``jit`` from ``PATH``, ``-c
  .jit/config.json`` in the project) with the SDK's MCP client against the workspace example
  server: the reviewer's agent never lists a tool that changes files, its ``call_tool`` and the
  namespaced name refuse one, and the file stays; the coder's agent, on the same catalog, finds it.
* Claude Code's CLI (``.test-servers``, pinned in scripts/install-test-servers.sh) on the generated
  project, its model requests answered by tests/servers/scripted_messages_api.py on 127.0.0.1 (no
  key, no network): Claude Code loads the agents, delegates to the reviewer, whose requests offer
  only its own jit server's tools (not the parent's ``jit``), and whose call of a tool the role
  denies comes back ``denied`` with nothing sent to the workspace server.
* The same through the Claude Agent SDK (``claude-agent-sdk``, and the CLI it ships): ``query()``
  with :func:`~jit.adapters.claude_agent_sdk.agent_definitions`.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from conftest import REPO, example_servers_in_process
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from test_clients_external import BIN, client_env
from test_clients_thirdparty import require
from test_subagents import project_with_servers, read_agent

from jit.catalog.store import Store
from jit.cli.claude_agents import write_subagents
from jit.cli.claude_code import setup_claude_code
from jit.config_files import load_config
from jit.pipeline import sync

pytestmark = [pytest.mark.slow, pytest.mark.anyio]  # jit serve processes and their upstreams

#: Hang guard for one request or client run, not a speed bound.
TIMEOUT = 180
WRITES = {"workspace__delete_path", "workspace__edit_file", "workspace__write_file", "workspace__move_path"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def generated(tmp_path, embedder) -> Path:
    """A project set up with ``--subagents``, its catalog synced (as ``jit sync`` would)."""
    project = project_with_servers(tmp_path)
    setup_claude_code(project, env={"PATH": ""})
    write_subagents(project, env={})
    config = load_config(project / ".jit" / "config.json")
    with Store(config.store_path) as store:
        await sync(example_servers_in_process(config), store, embedder)
    return project


def role_env(project: Path) -> dict[str, str]:
    """What Claude Code starts an agent's server with: this installation's ``jit`` first on PATH."""
    return {**os.environ, "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]),
            "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
            "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def agent_server(project: Path, shard: str) -> StdioServerParameters:
    """The MCP server of ``jit-<shard>``'s agent file, exactly as written there."""
    meta, _ = read_agent(project / ".claude" / "agents" / f"jit-{shard}.md")
    (entry,) = (server[f"jit-{shard}"] for server in meta["mcpServers"])
    assert entry["command"] == "jit"
    return StdioServerParameters(command=entry["command"], args=entry["args"], cwd=str(project),
                                 env=role_env(project))


async def exposed_for(session: ClientSession, task: str) -> set[str]:
    """``set_task``, then the namespaced tools once the selection for it is listed."""
    await session.call_tool("set_task", {"task": task})
    with anyio.fail_after(TIMEOUT):
        while True:
            names = {t.name for t in (await session.list_tools()).tools if "__" in t.name}
            if any(n.startswith("workspace__") for n in names):
                return names
            await anyio.sleep(0.05)


TASK = "review README.md, then delete the stale notes file and rewrite src/app.py"


async def test_the_reviewer_agents_server_neither_lists_nor_calls_what_the_role_denies(generated):
    doomed = generated / "workspace" / "README.md"
    async with stdio_client(agent_server(generated, "reviewer")) as (read, write), \
            ClientSession(read, write, read_timeout_seconds=TIMEOUT) as s:
        await s.initialize()
        exposed = await exposed_for(s, TASK)
        assert "workspace__read_file" in exposed and not exposed & WRITES
        found = await s.call_tool("search_tools", {"query": "delete a file or directory", "limit": 50})
        assert not {t["name"] for t in found.structured_content["tools"]} & WRITES
        refused = await s.call_tool("call_tool", {"server": "workspace", "tool": "delete_path",
                                                  "arguments": {"path": "README.md"}})
        assert refused.is_error and refused.structured_content["error"] == "tool_denied", refused
        by_name = await s.call_tool("workspace__delete_path", {"path": "README.md"})
        assert by_name.is_error
        described = await s.call_tool("describe_tool", {"server": "workspace", "tool": "delete_path"})
        assert described.is_error and described.structured_content["error"] == "tool_denied"
        other_role = await s.call_tool("search_tools", {"query": "delete a file", "shard": "coder"})
        assert other_role.is_error  # the session acts for its role only
        read = await s.call_tool("call_tool", {"server": "workspace", "tool": "read_file",
                                               "arguments": {"path": "README.md"}})
        assert not read.is_error
    assert doomed.exists()  # nothing reached the workspace server


async def test_the_coder_agents_server_on_the_same_catalog_has_the_tool(generated):
    """The control: the tool the reviewer is refused is there, for a role that may have it."""
    async with stdio_client(agent_server(generated, "coder")) as (read, write), \
            ClientSession(read, write, read_timeout_seconds=TIMEOUT) as s:
        await s.initialize()
        exposed = await exposed_for(s, TASK)
        found = await s.call_tool("search_tools", {"query": "delete a file or directory", "limit": 50})
        assert "workspace__delete_path" in exposed | {t["name"] for t in found.structured_content["tools"]}


class ScriptedApi:
    """tests/servers/scripted_messages_api.py in its own process group, and the requests it logged."""

    def __init__(self, log: Path, *args: str) -> None:
        self.log = log
        self.proc = subprocess.Popen([sys.executable, str(REPO / "tests" / "servers" / "scripted_messages_api.py"),
                                      "--log", str(log), *args], stdout=subprocess.PIPE, text=True,
                                     start_new_session=True)
        self.url = f"http://127.0.0.1:{self.proc.stdout.readline().strip()}"

    def close(self) -> None:
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def offered(self) -> list[set[str]]:
        """The tool names each logged request offered the model."""
        return [{t["name"] for t in json.loads(line)["body"].get("tools") or []}
                for line in self.log.read_text().splitlines()]


@pytest.fixture
def claude() -> str:
    return require("@anthropic-ai/claude-code", str(BIN / "claude") if (BIN / "claude").exists() else None)


async def test_claude_code_delegates_to_the_reviewer_agent_which_sees_only_its_roles_jit(generated, claude, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    # Accepting the folder's trust dialog and approving the project's jit server, as a user would.
    (home / ".claude.json").write_text(json.dumps({"projects": {str(generated): {"hasTrustDialogAccepted": True}}}))
    (generated / ".claude" / "settings.local.json").write_text(json.dumps({"enabledMcpjsonServers": ["jit"]}))
    call = "mcp__jit-reviewer__call_tool"
    api = ScriptedApi(tmp_path / "requests.jsonl", "--delegate-to", "jit-reviewer", "--call", call, "--call-input",
                      json.dumps({"server": "workspace", "tool": "delete_path", "arguments": {"path": "README.md"}}))
    try:
        env = {**client_env(home), "PATH": role_env(generated)["PATH"], "ANTHROPIC_BASE_URL": api.url,
               "ANTHROPIC_API_KEY": "scripted-not-a-key"}
        run = subprocess.Popen([claude, "-p", "Review README.md.", "--output-format", "stream-json", "--verbose",
                                "--allowedTools", call], cwd=generated, env=env, stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            out, err = run.communicate(timeout=TIMEOUT)
        finally:
            try:  # the jit servers it started, and theirs, by group id
                os.killpg(run.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    finally:
        api.close()
    assert run.returncode == 0, err[-2000:]
    events = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    init = next(e for e in events if e.get("subtype") == "init")
    assert {f"jit-{s}" for s in ("coder", "tester", "reviewer", "researcher")} <= set(init["agents"])
    offered = api.offered()
    parent = [names for names in offered if any(n.startswith("mcp__jit__") for n in names)]
    sub = [names for names in offered if call in names]
    assert parent, "the parent's jit server was connected"
    assert sub, "the reviewer's sub-agent ran with its own jit server"
    for names in sub:  # the sub-agent sees its role's jit, never the parent's (unscoped) jit
        assert not any(n.startswith("mcp__jit__") for n in names), sorted(names)
        assert not any(n.startswith("mcp__jit-") and not n.startswith("mcp__jit-reviewer__") for n in names)
    requests = [json.loads(line)["body"] for line in api.log.read_text().splitlines()]
    results = [part for body in requests for message in body.get("messages", [])
               if isinstance(message.get("content"), list) for part in message["content"]
               if isinstance(part, dict) and part.get("tool_use_id") == "toolu_call"]
    assert results and all(r.get("is_error") for r in results)
    assert "is denied for shard 'reviewer'" in json.dumps(results[0]["content"])
    assert (generated / "workspace" / "README.md").exists()


async def test_the_claude_agent_sdk_runs_the_role_agents_definitions(generated, tmp_path):
    """``agent_definitions`` given to the SDK's ``query()``, which runs the Claude Code CLI it ships,
    beside an unscoped jit of the session's own: the sub-agent's requests offer its role's jit server
    (this interpreter's jit, as a harness runs it) and not the session's, and its call of a tool the
    role denies comes back denied."""
    try:
        from claude_agent_sdk import ClaudeAgentOptions, ResultMessage, query
    except ImportError:
        require("claude-agent-sdk (pip install -e '.[claude-agent-sdk]')", None)
    from jit.adapters.claude_agent_sdk import agent_definitions, role_agents

    home = tmp_path / "sdk-home"
    home.mkdir()
    config = load_config(generated / ".jit" / "config.json")
    agents = role_agents(config, shards=["reviewer"], config_file=str(generated / ".jit" / "config.json"))
    call = agents[0].tool_prefix + "call_tool"
    api = ScriptedApi(tmp_path / "sdk-requests.jsonl", "--delegate-to", "jit-reviewer", "--call", call,
                      "--call-input", json.dumps({"server": "workspace", "tool": "delete_path",
                                                  "arguments": {"path": "README.md"}}))
    env = {**role_env(generated), "HOME": str(home), "ANTHROPIC_BASE_URL": api.url,
           "ANTHROPIC_API_KEY": "scripted-not-a-key", "DISABLE_AUTOUPDATER": "1",
           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1"}
    # The session's own jit, unscoped (no role): the sub-agent must not inherit it (hidden_servers' default).
    unscoped = {"command": sys.executable, "args": ["-m", "jit", "serve", "--stdio", "-c",
                                                    str(generated / ".jit" / "config.json")]}
    options = ClaudeAgentOptions(agents=agent_definitions(agents), mcp_servers={"jit": unscoped},
                                 allowed_tools=[call], cwd=str(tmp_path), env=env, setting_sources=[])
    try:
        with anyio.fail_after(TIMEOUT):
            results = [m async for m in query(prompt="Review README.md.", options=options)
                       if isinstance(m, ResultMessage)]
    finally:
        api.close()
    assert results and not results[-1].is_error, results
    offered = api.offered()
    assert any(n.startswith("mcp__jit__") for names in offered for n in names), "the session's jit was connected"
    sub = [names for names in offered if call in names]
    assert sub, "the reviewer's sub-agent ran with its own jit server"
    assert all(not any(n.startswith("mcp__jit__") for n in names) for names in sub)
    logged = api.log.read_text()
    assert "is denied for shard 'reviewer'" in logged
    assert (generated / "workspace" / "README.md").exists()
