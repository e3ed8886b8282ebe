"""``jit setup claude-code``: a project's servers moved behind jit, and back (jit/clientsetup.py).

Real files in a temporary project; the user's Claude Code file is read from a temporary
``HOME`` given through ``env``. Every refusal is checked to leave both files byte for byte
as they were and no backup behind.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from jit.cli import app
from jit.clientsetup import BACKUP_DIR, jit_command, setup_claude_code, undo_setup
from jit.config import load_config
from jit.errors import ConfigError

SERVERS = {
    "time": {"command": "uvx", "args": ["mcp-server-time"], "env": {"TZ": "UTC"}},
    "tracker": {"type": "http", "url": "https://tracker.example/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}},
}
JIT = ["/opt/jit/bin/jit"]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "work" / "project"
    root.mkdir(parents=True)
    (root / ".mcp.json").write_text(json.dumps({"mcpServers": SERVERS}, indent=1) + "\n", encoding="utf-8")
    return root


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    return {"HOME": str(home), "TOKEN": "t0ken"}


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in (root / ".mcp.json", root / "config.json") if p.is_file()}


def setup(root: Path, env: dict[str, str], **kw) -> dict:
    return setup_claude_code(root, command=JIT, env=env, **kw)


def test_setup_moves_the_servers_and_leaves_jit_alone_in_mcp_json(project, env):
    before = snapshot(project)
    result = setup(project, env)
    mcp = json.loads((project / ".mcp.json").read_text())
    config = project / "config.json"
    assert mcp == {"mcpServers": {"jit": {"type": "stdio", "command": JIT[0],
                                          "args": ["serve", "--stdio", "-c", str(config)]}}}
    assert result["moved"] == ["time", "tracker"] and result["warnings"] == []
    loaded = load_config(config, env=env)
    assert set(loaded.servers) == {"time", "tracker"}
    assert loaded.servers["time"].args == ["mcp-server-time"] and loaded.servers["time"].env == {"TZ": "UTC"}
    # moved as written: the reference is expanded when jit reads the config, in the client's environment
    assert json.loads(config.read_text())["servers"]["tracker"]["headers"] == {"Authorization": "Bearer ${TOKEN}"}
    backup = Path(result["backup"])
    assert backup.parent == project / BACKUP_DIR and (backup / ".mcp.json").read_bytes() == before[".mcp.json"]
    assert (project / BACKUP_DIR / ".gitignore").read_text() == "*\n"

    undone = undo_setup(project)
    assert snapshot(project) == before  # config.json did not exist: the undo removed it
    assert undone["removed"] == [str(config)] and Path(undone["backup"]).name == backup.name + "-undone"
    with pytest.raises(ConfigError, match="no jit setup to undo"):
        undo_setup(project)


def test_an_existing_config_keeps_its_settings_and_is_restored_byte_for_byte(project, env):
    config = project / "jit.json"
    config.write_text('{"servers": {"git": {"command": "git-mcp"}},\n "store": "cat.db"}\n', encoding="utf-8")
    before = config.read_bytes()
    result = setup(project, env, config=config)
    merged = json.loads(config.read_text())
    assert merged["store"] == "cat.db" and set(merged["servers"]) == {"git", "time", "tracker"}
    assert json.loads((project / ".mcp.json").read_text())["mcpServers"]["jit"]["args"][-1] == str(config)
    assert (Path(result["backup"]) / "config.json").read_bytes() == before
    undo_setup(project)
    assert config.read_bytes() == before


def test_a_server_already_in_the_config_with_the_same_entry_is_kept(project, env):
    (project / "config.json").write_text(json.dumps({"servers": {"time": {"transport": "stdio", **SERVERS["time"]}}}))
    result = setup(project, env)
    assert result["already_in_config"] == ["time"] and result["moved"] == ["tracker", "time"]


@pytest.mark.parametrize("mcp_text, config_text, message", [
    (None, None, "no .mcp.json in"),
    ('{"mcpServers": {"time": ', None, "invalid JSON at line 1"),
    ('{"servers": {}}', None, "holds no 'mcpServers' object"),
    ('{"mcpServers": {}}', None, "'mcpServers' is empty"),
    ('{"mcpServers": {"a": {"command": "x"}, "a": {"command": "y"}}}', None, "given more than once"),
    ('{"mcpServers": {"jit": {"command": "/v/bin/jit", "args": ["serve", "--stdio"]}}}', None,
     "jit is already set up here: server 'jit'"),
    ('{"mcpServers": {"j": {"command": "python3", "args": ["-m", "jit", "serve"]}, "t": {"command": "x"}}}', None,
     "jit is already set up here: server 'j'"),
    ('{"mcpServers": {"jit": {"command": "other-jit-server"}}}', None, "a server named 'jit' is already in .mcp.json"),
    ('{"mcpServers": {"time": {"command": "x", "timeout_ms": 5}}}', None, "would not load"),
    ('{"mcpServers": {"bad__name": {"command": "x"}}}', None, "would not load"),
    (None, '{"servers": {"time": {"command": "other"}}}', "server 'time' is in both"),
    (None, '[1, 2]', "the top level must be a JSON object"),
    (None, '{"servers": {}, "telemetry": true}', "would not load"),
    (None, '{"mcpServers": {"time": {"command": "x"}}}', "would not load"),
])
def test_every_bad_input_is_refused_and_changes_nothing(project, env, mcp_text, config_text, message):
    if mcp_text is not None:
        (project / ".mcp.json").write_text(mcp_text, encoding="utf-8")
    if mcp_text is None and config_text is None:
        (project / ".mcp.json").unlink()
    if config_text is not None:
        (project / "config.json").write_text(config_text, encoding="utf-8")
    before = snapshot(project)
    with pytest.raises(ConfigError, match=message):
        setup(project, env)
    assert snapshot(project) == before
    assert not (project / BACKUP_DIR).exists()
    assert sorted(p.name for p in project.iterdir()) == sorted(before)  # no temporary file left


def test_the_undo_refuses_files_changed_since_and_force_keeps_them(project, env):
    before = snapshot(project)
    setup(project, env)
    mcp = project / ".mcp.json"
    edited = mcp.read_text().replace('"jit"', '"jit-renamed"')
    mcp.write_text(edited, encoding="utf-8")
    with pytest.raises(ConfigError, match=r"\.mcp\.json changed since `jit setup` wrote it; nothing was restored"):
        undo_setup(project)
    assert mcp.read_text() == edited and (project / "config.json").is_file()
    (project / "config.json").unlink()
    with pytest.raises(ConfigError, match=r"\.mcp\.json and .*config\.json \(gone\) changed"):
        undo_setup(project)
    result = undo_setup(project, force=True)
    assert snapshot(project) == before
    assert [Path(k).read_text() for k in result["kept"]] == [edited]


def test_two_setups_and_undos_nest(project, env):
    """A setup, an undo, a new setup: each undo takes the latest setup not yet undone."""
    original = snapshot(project)
    first = setup(project, env, now=datetime(2026, 1, 1, tzinfo=UTC))
    undo_setup(project)
    second = setup(project, env, now=datetime(2026, 1, 1, tzinfo=UTC))  # the same second: a fresh folder
    assert Path(second["backup"]).name == Path(first["backup"]).name + "-2"
    assert Path(undo_setup(project)["backup"]).name.endswith("-2-undone")
    assert snapshot(project) == original


def test_dry_run_writes_nothing(project, env):
    before = snapshot(project)
    result = setup(project, env, dry_run=True)
    assert result["dry_run"] and result["moved"] == ["time", "tracker"]
    assert snapshot(project) == before and not (project / BACKUP_DIR).exists()


def test_warnings_name_what_claude_code_would_still_load_beside_jit(project, env):
    parent = project.parent
    (parent / ".mcp.json").write_text('{"mcpServers": {"shared-db": {"command": "db-mcp"}}}')
    (parent.parent / ".mcp.json").write_text("{broken")
    claude = Path(env["HOME"]) / ".claude.json"
    claude.write_text(json.dumps({"mcpServers": {"time": {"command": "uvx"}, "other": {"command": "o"}},
                                  "projects": {str(project): {"mcpServers": {"notes": {"command": "n"}}}}}))
    del env["TOKEN"]
    warnings = setup(project, env)["warnings"]
    assert len(warnings) == 5, warnings
    assert "server 'tracker' uses ${TOKEN}, which is not set here" in warnings[0]
    assert str(parent / ".mcp.json") in warnings[1] and "shared-db" in warnings[1]
    assert str(parent.parent / ".mcp.json") in warnings[2] and "cannot be read" in warnings[2]
    assert "user-scope servers of the same names: time;" in warnings[3]  # 'other' is not one of the moved
    assert f"local-scope servers for {project}: notes" in warnings[4]


def test_jit_command_starts_this_installation():
    command = jit_command()
    assert Path(command[0]).is_absolute() and os.access(command[0], os.X_OK)
    assert len(command) == 1 or command[1:] == ["-m", "jit"]


def test_the_command_line(project, env, monkeypatch):
    monkeypatch.setenv("HOME", env["HOME"])
    monkeypatch.setenv("TOKEN", "x")
    monkeypatch.delenv("JIT_CONFIG", raising=False)
    runner = CliRunner()
    done = runner.invoke(app, ["setup", "claude-code", str(project)], env={"COLUMNS": "200"})
    assert done.exit_code == 0, done.output
    assert "moved 2 servers" in done.stdout and "backup:" in done.stdout
    entry = json.loads((project / ".mcp.json").read_text())["mcpServers"]["jit"]
    assert entry["args"][-4:] == ["serve", "--stdio", "-c", str(project / "config.json")]
    again = runner.invoke(app, ["setup", "claude-code", str(project), "--json"])
    assert again.exit_code == 3 and json.loads(again.stderr)["error"] == "config_error"
    undone = runner.invoke(app, ["setup", "claude-code", str(project), "--undo", "--json"])
    assert undone.exit_code == 0 and json.loads(undone.stdout)["restored"] == [str(project / ".mcp.json")]
