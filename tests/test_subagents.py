"""``jit setup claude-code --subagents`` and the Claude Agent SDK adapter: one sub-agent per shard.

The files are read back as Claude Code reads them (YAML front matter, then the prompt); the
SDK's ``AgentDefinition`` is the installed ``claude-agent-sdk``'s own class. That a role's
sub-agent can neither see nor call a tool its role denies is shown on the generated server
command, run as written against the workspace example server (tests/test_subagents_live.py),
and through Claude Code itself (tests/test_clients_external.py).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml
from conftest import write_example_config
from test_clients_thirdparty import require
from typer.testing import CliRunner

from jit.adapters.claude_agent_sdk import agent_definitions, agent_name, frontmatter, mcp_servers, role_agents
from jit.cli import app
from jit.cli.claude_agents import undo_subagents, write_subagents
from jit.cli.claude_code import setup_claude_code
from jit.config_files import load_config
from jit.errors import ConfigError

SHARDS = ["coder", "tester", "reviewer", "researcher"]


def project_with_servers(tmp_path: Path) -> Path:
    """A project whose ``.mcp.json`` runs the example servers (what ``jit setup claude-code`` moves)."""
    project = tmp_path / "project"
    project.mkdir()
    config = write_example_config(project)
    servers = json.loads(config.read_text())["servers"]
    config.unlink()
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": servers}))
    return project


def read_agent(path: Path) -> tuple[dict, str]:
    """An agent file as Claude Code reads it: the YAML between the ``---`` lines, then the prompt."""
    text = path.read_text(encoding="utf-8")
    assert text.startswith("---\n")
    head, body = text[4:].split("\n---\n", 1)
    return yaml.safe_load(head), body.strip()


@pytest.fixture
def project(tmp_path) -> Path:
    project = project_with_servers(tmp_path)
    setup_claude_code(project, env={"PATH": ""})
    return project


def test_each_shard_gets_a_sub_agent_whose_one_server_is_jit_acting_for_its_role(project):
    result = write_subagents(project, env={})
    assert [(a["name"], a["action"]) for a in result["agents"]] == [(f"jit-{s}", "written") for s in SHARDS]
    assert result["warnings"] == [] and result["removed"] == []
    for shard in SHARDS:
        path = project / ".claude" / "agents" / f"jit-{shard}.md"
        meta, prompt = read_agent(path)
        assert meta["name"] == f"jit-{shard}" and f"The {shard} role" in meta["description"]
        # the role's own server, inline (connected for this sub-agent alone), reading the project's config
        assert meta["mcpServers"] == [{f"jit-{shard}": {
            "type": "stdio", "command": "jit",
            "args": ["serve", "--stdio", "-c", ".jit/config.json", "--expose-shard", shard]}}]
        # the parent's unscoped jit, which a sub-agent would otherwise inherit, is kept out
        assert meta["disallowedTools"] == ["mcp__jit"]
        assert "tools" not in meta  # Claude Code's own tools stay the agent's
        assert "set_task" in prompt and "tool_denied" in prompt
        # nothing of this machine: no absolute path (the project's, the interpreter's, the venv's)
        text = path.read_text()
        assert str(project) not in text and sys.executable not in text and str(Path(sys.executable).parent) not in text


def test_a_rerun_is_idempotent_and_removes_the_agents_of_shards_no_longer_in_the_config(project):
    write_subagents(project, env={})
    before = {p.name: p.read_bytes() for p in (project / ".claude" / "agents").iterdir()}
    again = write_subagents(project, env={})
    assert {a["action"] for a in again["agents"]} == {"unchanged"}
    assert {p.name: p.read_bytes() for p in (project / ".claude" / "agents").iterdir()} == before

    # naming a shard refreshes its agent and leaves the other shards' alone
    one = write_subagents(project, env={}, shards=["reviewer"])
    assert [(a["name"], a["action"]) for a in one["agents"]] == [("jit-reviewer", "unchanged")]
    assert one["removed"] == [] and len(before) == len(list((project / ".claude" / "agents").iterdir()))

    config_path = project / ".jit" / "config.json"
    raw = json.loads(config_path.read_text())
    raw["shards"] = {"coder": {"description": "writes code"}, "reviewer": {"description": "reviews code"}}
    config_path.write_text(json.dumps(raw))
    third = write_subagents(project, env={})
    assert [(a["name"], a["action"]) for a in third["agents"]] == [("jit-coder", "updated"),
                                                                  ("jit-reviewer", "updated")]
    assert sorted(Path(p).name for p in third["removed"]) == ["jit-researcher.md", "jit-tester.md"]
    assert sorted(p.name for p in (project / ".claude" / "agents").iterdir()) == ["jit-coder.md", "jit-reviewer.md"]


def test_a_users_own_agent_of_the_same_name_is_never_replaced_without_saying_so(project):
    agents = project / ".claude" / "agents"
    agents.mkdir(parents=True)
    mine = agents / "jit-reviewer.md"
    mine.write_text("---\nname: jit-reviewer\ndescription: my own reviewer\n---\nI review.\n")
    kept = mine.read_bytes()
    result = write_subagents(project, env={})
    assert {a["name"]: a["action"] for a in result["agents"]}["jit-reviewer"] == "kept"
    assert mine.read_bytes() == kept
    assert any("jit-reviewer.md is not one jit wrote" in w and "--force" in w for w in result["warnings"])

    forced = write_subagents(project, env={}, force=True)
    assert {a["name"]: a["action"] for a in forced["agents"]}["jit-reviewer"] == "replaced"
    assert read_agent(mine)[0]["mcpServers"][0]["jit-reviewer"]["args"][-1] == "reviewer"
    copies = list((project / ".jit-setup").glob("*-subagents/jit-reviewer.md"))
    assert [c.read_bytes() for c in copies] == [kept]


def test_undo_removes_what_it_wrote_and_nothing_else(project):
    claude = project / ".claude"
    assert not claude.exists()
    write_subagents(project, env={})
    edited = claude / "agents" / "jit-tester.md"
    edited.write_text(edited.read_text() + "\nAlso run the linters.\n")
    (claude / "settings.local.json").write_text("{}")  # the user's, written meanwhile
    result = undo_subagents(project)
    assert sorted(Path(p).name for p in result["removed"]) == ["jit-coder.md", "jit-researcher.md",
                                                               "jit-reviewer.md"]
    assert result["left"] == [f"{edited}: edited since jit wrote it"]
    assert edited.is_file() and (claude / "settings.local.json").is_file()
    with pytest.raises(ConfigError, match="jit wrote no sub-agents"):
        undo_subagents(project)


def test_undo_removes_the_folders_it_made_when_they_are_empty(project):
    write_subagents(project, env={})
    undo_subagents(project)
    assert not (project / ".claude").exists()


def test_the_cli_writes_the_sub_agents_with_the_setup_and_its_undo_takes_them_away(tmp_path, monkeypatch):
    project = project_with_servers(tmp_path)
    before = (project / ".mcp.json").read_bytes()
    monkeypatch.delenv("JIT_CONFIG", raising=False)
    runner = CliRunner()
    done = runner.invoke(app, ["setup", "claude-code", str(project), "--subagents", "--shard", "reviewer", "--json"])
    assert done.exit_code == 0, done.output
    result = json.loads(done.stdout)
    assert result["moved"] == ["workspace", "tracker"]
    assert [a["name"] for a in result["subagents"]["agents"]] == ["jit-reviewer"]
    assert sorted(p.name for p in (project / ".claude" / "agents").iterdir()) == ["jit-reviewer.md"]
    # once jit is set up, --subagents writes the sub-agents alone
    more = runner.invoke(app, ["setup", "claude-code", str(project), "--subagents", "--json"])
    assert more.exit_code == 0, more.output
    assert "moved" not in json.loads(more.stdout)
    assert len(list((project / ".claude" / "agents").iterdir())) == 4
    undone = runner.invoke(app, ["setup", "claude-code", str(project), "--undo"])
    assert undone.exit_code == 0, undone.output
    assert (project / ".mcp.json").read_bytes() == before and not (project / ".claude").exists()
    bad = runner.invoke(app, ["setup", "claude-code", str(project), "--shard", "coder"])
    assert bad.exit_code == 2 and "--shard needs --subagents" in bad.output


def test_an_unknown_shard_is_refused_before_anything_is_written(project):
    with pytest.raises(ConfigError, match="unknown shard 'deployer'"):
        write_subagents(project, env={}, shards=["deployer"])
    assert not (project / ".claude").exists()


def test_shard_names_become_agent_names_claude_code_accepts():
    assert agent_name("Code_Reviewer") == "jit-code-reviewer"
    with pytest.raises(ConfigError, match="cannot name a sub-agent"):
        agent_name("__")


def test_the_sdk_gets_the_same_agents_as_agent_definitions(tmp_path):
    try:
        import claude_agent_sdk
    except ImportError:  # the claude-agent-sdk extra, which scripts/test.sh installs
        claude_agent_sdk = None
    require("claude-agent-sdk (pip install -e '.[claude-agent-sdk]')", claude_agent_sdk and claude_agent_sdk.__file__)
    config = load_config(write_example_config(tmp_path))
    agents = role_agents(config, shards=["reviewer", "coder"], config_file=str(tmp_path / "config.json"))
    defs = agent_definitions(agents)
    assert list(defs) == ["jit-reviewer", "jit-coder"]
    reviewer = defs["jit-reviewer"]
    assert isinstance(reviewer, claude_agent_sdk.AgentDefinition)
    # a harness's agents run this interpreter's jit, on the config it names
    assert reviewer.mcpServers == [{"jit-reviewer": {
        "type": "stdio", "command": sys.executable,
        "args": ["-m", "jit", "serve", "--stdio", "-c", str(tmp_path / "config.json"), "--expose-shard",
                 "reviewer"]}}]
    assert reviewer.disallowedTools == ["mcp__jit"] and reviewer.prompt == agents[0].prompt
    # registered once for the session and named by the agents, as the SDK's options take them
    by_name = agent_definitions(agents, inline=False)
    assert by_name["jit-coder"].mcpServers == ["jit-coder"]
    options = claude_agent_sdk.ClaudeAgentOptions(agents=by_name, mcp_servers=mcp_servers(agents))
    assert options.mcp_servers["jit-coder"]["args"][-2:] == ["--expose-shard", "coder"]


def test_a_dry_run_shows_the_sub_agents_and_writes_nothing(tmp_path, monkeypatch):
    project = project_with_servers(tmp_path)
    before = (project / ".mcp.json").read_bytes()
    monkeypatch.delenv("JIT_CONFIG", raising=False)
    done = CliRunner().invoke(app, ["setup", "claude-code", str(project), "--subagents", "--dry-run", "--json"])
    assert done.exit_code == 0, done.output
    result = json.loads(done.stdout)
    # the config the setup would create does not exist yet: its default shards are shown
    assert [(a["name"], a["action"]) for a in result["subagents"]["agents"]] == [
        (f"jit-{s}", "written") for s in SHARDS]
    assert result["subagents"]["dry_run"] and "does not exist yet" in result["subagents"]["warnings"][0]
    assert sorted(p.name for p in project.iterdir()) == [".mcp.json", "workspace"]
    assert (project / ".mcp.json").read_bytes() == before


def test_without_the_sdk_agent_definitions_says_which_extra_and_the_rest_works(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "claude_agent_sdk", None)  # as if the extra were not installed
    agents = role_agents(load_config(write_example_config(tmp_path)), shards=["tester"])
    with pytest.raises(ConfigError, match=r"pip install -e '\.\[claude-agent-sdk\]'"):
        agent_definitions(agents)
    assert frontmatter(agents[0])["mcpServers"][0]["jit-tester"]["args"][-2:] == ["--expose-shard", "tester"]
