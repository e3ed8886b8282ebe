"""``jit setup claude-code``: a project's servers moved behind jit, and back (jit/cli/claude_code.py).

Real files in a temporary project; the user's Claude Code file is read from a temporary
``HOME`` given through ``env``, whose ``PATH`` holds a ``jit``. Every refusal is checked to
leave the project's files byte for byte as they were and no backup behind.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from jit.catalog.store import Store
from jit.cli import app
from jit.cli.claude_code import BACKUP_DIR, jit_command, setup_claude_code, undo_setup
from jit.config_files import load_config
from jit.errors import ConfigError
from jit.paths import default_config_file

SERVERS = {
    "time": {"command": "uvx", "args": ["mcp-server-time"], "env": {"TZ": "UTC"}},
    "tracker": {"type": "http", "url": "https://tracker.example/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}},
}
JIT = ["/opt/jit/bin/jit"]
#: What .mcp.json starts jit with by default: the program on PATH, and the config by its path in the project.
ENTRY = {"type": "stdio", "command": "jit", "args": ["serve", "--stdio", "-c", ".jit/config.json"]}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "work" / "project"
    root.mkdir(parents=True)
    (root / ".mcp.json").write_text(json.dumps({"mcpServers": SERVERS}, indent=1) + "\n", encoding="utf-8")
    return root


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    home, bin_dir = tmp_path / "home", tmp_path / "bin"
    home.mkdir()
    bin_dir.mkdir()
    (bin_dir / "jit").write_text("#!/bin/sh\n")
    (bin_dir / "jit").chmod(0o755)
    return {"HOME": str(home), "TOKEN": "t0ken", "PATH": str(bin_dir)}


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every file and folder of the project (``None`` for a folder) but the setup's backups."""
    return {p.relative_to(root).as_posix(): p.read_bytes() if p.is_file() else None for p in sorted(root.rglob("*"))
            if p.relative_to(root).parts[0] != BACKUP_DIR}


def setup(root: Path, env: dict[str, str], **kw) -> dict:
    return setup_claude_code(root, env=env, **kw)


def open_catalog_of(config: Path, env: dict[str, str]) -> Path:
    """Open (so create) the catalog of ``config`` as ``jit serve`` does, with an index file beside it."""
    catalog = load_config(config, env=env).store_path
    with Store(catalog):
        pass
    (catalog.parent / f"{catalog.name}.index").mkdir(exist_ok=True)
    (catalog.parent / f"{catalog.name}.index" / "0123abcd.view").write_bytes(b"view")
    return catalog


def test_setup_moves_the_servers_and_leaves_jit_alone_in_mcp_json(project, env):
    before = snapshot(project)
    result = setup(project, env)
    mcp = json.loads((project / ".mcp.json").read_text())
    config = project / ".jit" / "config.json"
    assert mcp == {"mcpServers": {"jit": ENTRY}} and result["config"] == str(config)
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
    assert snapshot(project) == before  # the config did not exist, nor .jit/: the undo removed them
    assert undone["removed"] == [str(config), str(config.parent / ".gitignore"), str(config.parent)]
    assert Path(undone["backup"]).name == backup.name + "-undone" and undone["left"] == []
    with pytest.raises(ConfigError, match="no jit setup to undo"):
        undo_setup(project)


def test_an_existing_config_keeps_its_settings_and_is_restored_byte_for_byte(project, env):
    config = project / "jit.json"
    config.write_text('{"servers": {"git": {"command": "git-mcp"}},\n "store": "cat.db"}\n', encoding="utf-8")
    before = config.read_bytes()
    result = setup(project, env, config=config)
    merged = json.loads(config.read_text())
    assert merged["store"] == "cat.db" and set(merged["servers"]) == {"git", "time", "tracker"}
    assert json.loads((project / ".mcp.json").read_text())["mcpServers"]["jit"]["args"][-1] == "jit.json"
    assert (Path(result["backup"]) / "config.json").read_bytes() == before
    undo_setup(project)
    assert config.read_bytes() == before


def test_a_server_already_in_the_config_with_the_same_entry_is_kept(project, env):
    (project / ".jit").mkdir()
    (project / ".jit" / "config.json").write_text(
        json.dumps({"servers": {"time": {"transport": "stdio", **SERVERS["time"]}}}))
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
        (project / ".jit").mkdir()
        (project / ".jit" / "config.json").write_text(config_text, encoding="utf-8")
    before = snapshot(project)
    with pytest.raises(ConfigError, match=message):
        setup(project, env)
    assert snapshot(project) == before  # no temporary file left, no .jit/ made
    assert not (project / BACKUP_DIR).exists()


def test_the_undo_refuses_files_changed_since_and_force_keeps_them(project, env):
    before = snapshot(project)
    setup(project, env)
    mcp = project / ".mcp.json"
    edited = mcp.read_text().replace('"jit"', '"jit-renamed"')
    mcp.write_text(edited, encoding="utf-8")
    with pytest.raises(ConfigError, match=r"\.mcp\.json changed since `jit setup` wrote it; nothing was restored"):
        undo_setup(project)
    assert mcp.read_text() == edited and (project / ".jit" / "config.json").is_file()
    (project / ".jit" / "config.json").unlink()
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
    assert snapshot(project) == before and not (project / BACKUP_DIR).exists()  # no .jit/ either


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
    for key in ("HOME", "TOKEN", "PATH"):
        monkeypatch.setenv(key, env[key])
    monkeypatch.delenv("JIT_CONFIG", raising=False)
    runner = CliRunner()
    done = runner.invoke(app, ["setup", "claude-code", str(project)], env={"COLUMNS": "200"})
    assert done.exit_code == 0, done.output
    assert "moved 2 servers" in done.stdout and "backup:" in done.stdout
    assert "jit = jit serve --stdio -c .jit/config.json" in done.stdout and "jit sync -c .jit/config.json" in done.stdout
    assert json.loads((project / ".mcp.json").read_text())["mcpServers"]["jit"] == ENTRY
    again = runner.invoke(app, ["setup", "claude-code", str(project), "--json"])
    assert again.exit_code == 3 and json.loads(again.stderr)["error"] == "config_error"
    # `jit import` in the project adds to the config jit reads there, not to an app's config.json.
    (project / "more.json").write_text(json.dumps({"mcpServers": {"notes": {"command": "notes-mcp"}}}))
    monkeypatch.chdir(project)
    imported = runner.invoke(app, ["import", "more.json", "--json"])
    assert imported.exit_code == 0, imported.output
    assert json.loads(imported.stdout)["config"] == str(project / ".jit" / "config.json")
    undone = runner.invoke(app, ["setup", "claude-code", str(project), "--undo", "--force"], env={"COLUMNS": "200"})
    assert undone.exit_code == 0, undone.output
    assert f"restored {project / '.mcp.json'}" in undone.stdout and "removed what the setup made: " in undone.stdout
    assert not (project / ".jit").exists()


# --------------------------------------------------------------------------- a project's own files, a team's files


APP_CONFIG = '{"port": 8080, "debug": true}\n'


def test_a_project_whose_app_has_a_config_json_is_set_up_beside_it(project, env, monkeypatch):
    """jit's config is .jit/config.json: the app's config.json is neither read nor written, and jit
    finds its own config first in the project (`jit sync` there needs no -c)."""
    (project / "config.json").write_text(APP_CONFIG, encoding="utf-8")
    result = setup(project, env)
    assert (project / "config.json").read_text() == APP_CONFIG and result["warnings"] == []
    config = load_config(project / ".jit" / "config.json", env=env)
    assert set(config.servers) == {"time", "tracker"} and config.store_path == project / ".jit" / "catalog.db"
    monkeypatch.chdir(project)
    monkeypatch.delenv("JIT_CONFIG", raising=False)
    assert default_config_file({}) == ".jit/config.json"


def test_an_app_config_named_with_c_is_refused_naming_c(project, env):
    (project / "config.json").write_text(APP_CONFIG, encoding="utf-8")
    before = snapshot(project)
    with pytest.raises(ConfigError, match=r"would not load: unknown key .*; -c FILE names another file") as caught:
        setup(project, env, config=project / "config.json")
    assert caught.value.key == "port" and snapshot(project) == before


def test_what_the_setup_writes_a_team_can_commit(project, env):
    """.mcp.json names no one's installation or checkout, and git sees the config but not the catalog
    jit builds beside it, nor the backups."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    setup(project, env)
    text = (project / ".mcp.json").read_text()
    assert str(project) not in text and env["PATH"] not in text and os.sep + "bin" not in text
    catalog = open_catalog_of(project / ".jit" / "config.json", env)
    assert catalog == project / ".jit" / "catalog.db" and catalog.is_file()
    git = ["git", "-c", "init.defaultBranch=main", "-C", str(project)]
    subprocess.run([*git, "init", "-q"], check=True, timeout=60)
    listed = subprocess.run([*git, "status", "--porcelain", "--untracked-files=all"], check=True, timeout=60,
                            capture_output=True, text=True).stdout.split()
    assert sorted(f for f in listed if f != "??") == [".jit/.gitignore", ".jit/config.json", ".mcp.json"]


def test_the_undo_removes_the_jit_folder_it_made_but_nothing_it_did_not_write(project, env):
    before = snapshot(project)
    setup(project, env)
    catalog = open_catalog_of(project / ".jit" / "config.json", env)
    undone = undo_setup(project)
    assert snapshot(project) == before and str(catalog) in undone["removed"]

    setup(project, env)
    catalog = open_catalog_of(project / ".jit" / "config.json", env)
    (project / ".jit" / "notes.txt").write_text("mine")
    undone = undo_setup(project)
    assert undone["left"] == [f"{project / '.jit'}: it holds what the setup did not write (notes.txt)"]
    assert sorted(p.name for p in (project / ".jit").iterdir()) == [".gitignore", "catalog.db", "catalog.db.index",
                                                                    "notes.txt"]
    assert catalog.is_file() and not (project / ".jit" / "config.json").exists()


def test_a_jit_folder_that_was_there_keeps_its_catalog_and_loses_only_the_setups_files(project, env):
    """A project synced from its .mcp.json before (jit's default catalog, .jit/catalog.db): the setup's
    config uses that catalog, and the undo takes back only the config and the .gitignore it wrote."""
    (project / ".jit").mkdir()
    catalog = open_catalog_of(project / ".mcp.json", env)
    before = snapshot(project)
    setup(project, env)
    assert load_config(project / ".jit" / "config.json", env=env).store_path == catalog
    assert (project / ".jit" / ".gitignore").is_file()
    undone = undo_setup(project)
    assert snapshot(project) == before and undone["left"] == []


def test_a_changed_gitignore_is_kept(project, env):
    setup(project, env)
    ignore = project / ".jit" / ".gitignore"
    ignore.write_text(ignore.read_text() + "/scratch/\n")
    undone = undo_setup(project)
    assert ignore.is_file() and str(ignore) not in undone["removed"] and len(undone["left"]) == 1


def test_a_relative_cwd_names_the_same_directory_from_the_config(project, env):
    (project / "tools").mkdir()
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {
        "local": {"command": "./run.sh", "cwd": "tools"}, "here": {"command": "srv", "cwd": "."},
        "home": {"command": "srv", "cwd": "~"}}}))
    setup(project, env)
    written = json.loads((project / ".jit" / "config.json").read_text())["servers"]
    assert [written[s]["cwd"] for s in ("local", "here", "home")] == ["../tools", "..", "~"]
    servers = load_config(project / ".jit" / "config.json", env=env).servers
    assert (servers["local"].cwd, servers["here"].cwd) == (str(project / "tools"), str(project))


def test_warnings_say_when_jit_is_not_on_path_and_when_a_jit_config_json_is_hidden(project, env):
    env["PATH"] = str(project / "nowhere")
    (project / "config.json").write_text(json.dumps({"servers": {}, "store": "old.db"}))
    warnings = setup(project, env)["warnings"]
    assert len(warnings) == 2, warnings
    assert warnings[0].startswith("`jit` is not on PATH here") and " ".join(jit_command()) in warnings[0]
    assert warnings[1].startswith(f"{project / 'config.json'} is a jit config too")


def test_a_setup_recorded_by_an_earlier_jit_is_still_read_and_undone(project, env, monkeypatch):
    """Setups made before .jit/config.json: the config at config.json (named in .mcp.json), a
    record without "made". jit still reads that config in the project, and the undo works."""
    before = snapshot(project)
    result = setup(project, env, config=project / "config.json")
    record = Path(result["backup"]) / "setup.json"
    old = json.loads(record.read_text())
    del old["made"]
    record.write_text(json.dumps({**old, "version": 1}))
    monkeypatch.chdir(project)
    monkeypatch.delenv("JIT_CONFIG", raising=False)
    assert default_config_file({}) == "config.json" and set(load_config(env=env).servers) == {"time", "tracker"}
    with pytest.raises(ConfigError, match="jit is already set up here"):
        setup(project, env)
    assert undo_setup(project)["removed"] == [str(project / "config.json")] and snapshot(project) == before
