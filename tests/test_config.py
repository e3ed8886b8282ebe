"""config.json, mcpServers files and available_tools.json: every key read, every error named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jit.config import Config, load_available_tools
from jit.config_files import load_config
from jit.errors import ConfigError
from jit.models import ServerStatus
from jit.servers_config import HttpServerConfig, SseServerConfig, StdioServerConfig, UnresolvedServerConfig

REPO = Path(__file__).resolve().parent.parent


def write(path: Path, data) -> Path:
    path.write_text(json.dumps(data) if not isinstance(data, str) else data, encoding="utf-8")
    return path


def test_repo_config_and_available_tools_load():
    cfg = load_config(REPO / "config.json", env={})
    assert isinstance(cfg.servers["time"], StdioServerConfig)
    assert cfg.tool_selection.token_budget == 4000
    assert {t.name for t in cfg.available_tools.tools} >= {"read_file", "bash"}
    assert cfg.store_path == (REPO / ".jit/catalog.db").resolve()
    assert cfg.rules_dir == (REPO / "rules").resolve()


def test_every_tool_selection_key_is_read(tmp_path):
    sel = {"full_threshold": 80, "condensed_threshold": 50, "minimal_threshold": 10, "logic_weight": 0.6,
           "vector_weight": 0.4, "max_full_tools": 3, "token_budget": 1234, "lexical_weight": 0.25,
           "candidate_pool": 77, "strong_threshold": 85, "strong_full_tools": 2, "strong_full_share": 0.7}
    cfg = load_config(write(tmp_path / "c.json", {"tool_selection": sel}), env={})
    assert cfg.tool_selection.model_dump() == {**cfg.tool_selection.model_dump(), **sel}


def test_the_catalog_timeouts_are_read(tmp_path):
    """``catalog.connect_timeout`` and ``catalog.statement_timeout`` default to 10 s and 30 s. What they
    do to a PostgreSQL catalog: tests/test_faults_postgres.py (a server that never answers, a lock held)."""
    assert (Config.default(tmp_path).catalog.connect_timeout, Config.default(tmp_path).catalog.statement_timeout) \
        == (10, 30.0)
    cfg = load_config(write(tmp_path / "c.json", {"catalog": {"connect_timeout": 4, "statement_timeout": 2.5}}), env={})
    assert (cfg.catalog.connect_timeout, cfg.catalog.statement_timeout) == (4, 2.5)


def test_defaults_apply_without_a_file():
    cfg = Config.default(Path("/tmp"))
    ts = cfg.tool_selection
    assert (ts.full_threshold, ts.condensed_threshold, ts.minimal_threshold) == (70, 40, 20)
    assert (ts.logic_weight, ts.vector_weight, ts.max_full_tools, ts.token_budget) == (0.7, 0.3, 10, 4000)
    assert set(cfg.shards) == {"coder", "tester", "reviewer", "researcher"}


@pytest.mark.parametrize(
    ("body", "key", "fragment"),
    [
        ({"tool_selection": {"full_treshold": 70}}, "tool_selection.full_treshold", "unknown key"),
        ({"tool_selection": {"token_budget": "lots"}}, "tool_selection.token_budget", "integer"),
        ({"tool_selection": {"token_budget": 0}}, "tool_selection.token_budget", "greater than 0"),
        ({"tool_selection": {"full_threshold": 30}}, "tool_selection", "full_threshold > condensed_threshold"),
        ({"tool_selection": {"logic_weight": 0.9}}, "tool_selection", "must be 1.0"),
        ({"tool_selection": {"logic_weight": -0.1, "vector_weight": 1.1}}, "tool_selection.logic_weight", "greater than or equal to 0"),
        ({"servers": {"x": {"transport": "stdio"}}}, "servers.x.command", "Field required"),
        ({"servers": {"x": {"transport": "carrier-pigeon"}}}, "servers.x.transport", "'transport' must be one of"),
        ({"servers": {"x": {"transport": "http", "url": "ftp://h"}}}, "servers.x.url", "http://"),
        ({"servers": {"x": {"url": "http://h/mcp\nx"}}}, "servers.x.url", "line break"),
        ({"servers": {"x": {"url": "http://h/a b"}}}, "servers.x.url", "space"),
        ({"servers": {"x": {"url": "http://h:0/mcp"}}}, "servers.x.url", "port 0"),
        ({"servers": {"x": {"command": "a", "timeout": -1}}}, "servers.x.timeout", "greater than 0"),
        ({"servers": {"a__b": {"command": "a"}}}, "servers.a__b", "'__'"),
        ({"servers": {"harness": {"command": "a"}}}, "servers.harness", "reserved"),
        ({"analyzer": {"provider": "openai"}}, "analyzer.provider", "offline"),
        ({"connection": {"reconnect_initial_delay": 5, "reconnect_max_delay": 1}}, "connection", "reconnect_max_delay"),
        ({"embedding": {"batch_size": 0}}, "embedding.batch_size", "greater than or equal to 1"),
        ({"shards": {"coder": {"descripton": "x"}}}, "shards.coder.descripton", "unknown key"),
        ({"tool_selection": {"freeze_gc": False}}, "tool_selection.freeze_gc", "jit.process.tuned()"),
        ({"colour": "blue"}, "colour", "unknown key"),
        ({"catalog": {"connect_timeout": 1}}, "catalog.connect_timeout", "greater than or equal to 2"),
        ({"catalog": {"connect_timeout": 2.5}}, "catalog.connect_timeout", "integer"),
        ({"catalog": {"statement_timeout": -1}}, "catalog.statement_timeout", "greater than or equal to 0"),
        ({"catalog": {"statment_timeout": 5}}, "catalog.statment_timeout", "unknown key"),
    ],
)
def test_config_errors_name_the_key_and_the_file(tmp_path, body, key, fragment):
    path = write(tmp_path / "config.json", body)
    with pytest.raises(ConfigError) as info:
        load_config(path, env={})
    err = info.value
    assert err.key == key and err.path == str(path)
    assert fragment in str(err) and str(path) in str(err)


def test_invalid_json_names_the_line(tmp_path):
    path = write(tmp_path / "config.json", '{\n  "servers": {,\n}')
    with pytest.raises(ConfigError, match="line 2"):
        load_config(path, env={})


def test_missing_config_file_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(tmp_path / "nope.json", env={})


def test_config_path_comes_from_the_environment(tmp_path):
    path = write(tmp_path / "elsewhere.json", {"tool_selection": {"token_budget": 999}})
    assert load_config(env={"JIT_CONFIG": str(path)}).tool_selection.token_budget == 999


def test_claude_desktop_config_imports_as_is(tmp_path):
    desktop = {
        "globalShortcut": "Ctrl+Space",
        "mcpServers": {
            "fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "${HOME}/work"],
                   "env": {"TOKEN": "${TOKEN:-none}"}},
            "remote": {"type": "http", "url": "https://example.invalid/mcp", "headers": {"Authorization": "Bearer ${KEY}"}},
            "legacy": {"type": "sse", "url": "http://127.0.0.1:9/sse", "disabled": True},
            "approved": {"command": "x", "autoApprove": ["a"]},
        },
    }
    cfg = load_config(write(tmp_path / "claude_desktop_config.json", desktop), env={"HOME": "/home/u", "KEY": "k"})
    fs, remote, legacy = cfg.servers["fs"], cfg.servers["remote"], cfg.servers["legacy"]
    assert isinstance(fs, StdioServerConfig) and fs.args[-1] == "/home/u/work" and fs.env == {"TOKEN": "none"}
    assert isinstance(remote, HttpServerConfig) and remote.headers["Authorization"] == "Bearer k"
    assert isinstance(legacy, SseServerConfig) and legacy.enabled is False
    assert cfg.tool_selection.token_budget == 4000


def test_an_unset_variable_leaves_its_server_unstarted_not_the_config_broken(tmp_path):
    """A ``${VAR}`` unset here with no default is the one server's problem: it is configured, shown
    ``error`` with the variable and the key using it (never a value), and the other servers load."""
    path = write(tmp_path / ".mcp.json", {"mcpServers": {
        "gh": {"command": "gh-mcp", "args": ["--org", "${ORG:-acme}"], "env": {"T": "${GH_TOKEN}", "S": "${SECRET}"}},
        "remote": {"type": "http", "url": "${REMOTE_URL}", "headers": {"Authorization": "Bearer ${REMOTE_TOKEN}"}},
        "off": {"command": "gh-mcp", "env": {"T": "${GH_TOKEN}"}, "disabled": True},
        "time": {"command": "mcp-server-time", "args": ["${TZ_ARG:-UTC}"]},
    }})
    cfg = load_config(path, env={"SECRET": "s3cret-value"})
    gh, remote, off, time = (cfg.servers[n] for n in ("gh", "remote", "off", "time"))
    src = path.resolve()
    assert isinstance(gh, UnresolvedServerConfig) and gh.transport == "stdio" and gh.enabled
    assert gh.problem == f"environment variable GH_TOKEN is not set and has no default (used by mcpServers.gh.env.T in {src})"
    assert gh.shown() == "gh-mcp --org ${ORG:-acme}"  # as written
    # An emptied url would not validate: that is the variables' problem too, not the file's.
    assert isinstance(remote, UnresolvedServerConfig) and remote.transport == "http"
    assert remote.problem == ("environment variables REMOTE_TOKEN, REMOTE_URL are not set and have no default "
                              f"(used by mcpServers.remote.url, mcpServers.remote.headers.Authorization in {src})")
    assert isinstance(off, UnresolvedServerConfig) and not off.enabled
    assert isinstance(time, StdioServerConfig) and time.args == ["UTC"]  # ${VAR:-default} as before
    assert cfg.unresolved() == {"gh": gh.problem, "remote": remote.problem}  # enabled ones only
    assert "s3cret" not in gh.problem + remote.problem
    assert cfg.server_status("gh", ServerStatus.IDLE, 1.0) is ServerStatus.ERROR
    assert cfg.server_status("off", ServerStatus.IDLE, 1.0) is ServerStatus.DISABLED


@pytest.mark.parametrize(("entry", "key", "fragment"), [
    ({"command": "gh-mcp", "argz": [], "env": {"T": "${GH_TOKEN}"}}, "mcpServers.gh.argz", "unknown key"),
    ({"command": "gh-mcp", "timeout": "9", "env": {"T": "${GH_TOKEN}"}}, "mcpServers.gh.timeout", "must be a number"),
    ({"type": "http", "url": "ftp://example.com/mcp", "headers": {"A": "${GH_TOKEN}"}}, "mcpServers.gh.url",
     "http:// or https://"),
    ({"command": "gh-mcp", "args": ["${A:-${GH_TOKEN}}"]}, "mcpServers.gh.args[0]", "nested references"),
])
def test_an_entry_wrong_beyond_its_unset_variables_is_still_a_config_error(tmp_path, entry, key, fragment):
    path = write(tmp_path / ".mcp.json", {"mcpServers": {"gh": entry}})
    with pytest.raises(ConfigError, match=fragment) as info:
        load_config(path, env={})
    assert info.value.key == key


def test_a_nested_reference_in_a_default_is_refused_not_cut(tmp_path):
    """``${A:-${B}}`` would end the default at B's ``}`` and expand to a literal ``${B`` and a stray ``}``."""
    path = write(tmp_path / ".mcp.json", {"mcpServers": {"gh": {"command": "gh-mcp", "args": ["${A:-${B}}"]}}})
    with pytest.raises(ConfigError, match="nested references are not expanded") as info:
        load_config(path, env={"B": "b"})
    assert info.value.key == "mcpServers.gh.args[0]"


def test_server_files_are_merged_and_duplicates_rejected(tmp_path):
    write(tmp_path / ".mcp.json", {"mcpServers": {"git": {"command": "mcp-server-git"}}})
    cfg = load_config(write(tmp_path / "config.json", {
        "servers": {"time": {"command": "mcp-server-time"}}, "server_files": [".mcp.json"]}), env={})
    assert set(cfg.servers) == {"time", "git"}
    dup = write(tmp_path / "dup.json", {"servers": {"git": {"command": "x"}}, "server_files": [".mcp.json"]})
    with pytest.raises(ConfigError, match="defined twice"):
        load_config(dup, env={})


def test_bad_mcp_servers_entry_names_the_key(tmp_path):
    path = write(tmp_path / ".mcp.json", {"mcpServers": {"w": {"type": "websocket", "url": "ws://x"}}})
    with pytest.raises(ConfigError, match="unknown server type") as info:
        load_config(path, env={})
    assert info.value.key == "mcpServers.w.type"
    path = write(tmp_path / ".mcp.json", {"mcpServers": {"w": {"command": "x", "argz": []}}})
    with pytest.raises(ConfigError, match="unknown key") as info:
        load_config(path, env={})
    assert info.value.key == "mcpServers.w.argz"


def test_available_tools_errors(tmp_path):
    shards = Config.default().shards
    cases = [
        ({"tools": [{"name": "a", "skeleton": ["astronaut"]}]}, "tools[0].skeleton", "unknown shard"),
        ({"overrides": {"no-slash": {}}}, "overrides", "server/tool"),
        ({"tools": [{"name": "a"}, {"name": "a"}]}, "tools", "duplicate"),
        ({"tools": [{"name": "a", "input_schema": {"type": "array"}}]}, "tools.0.input_schema", "type 'object'"),
    ]
    for body, key, fragment in cases:
        path = write(tmp_path / "available_tools.json", body)
        with pytest.raises(ConfigError, match=fragment) as info:
            load_available_tools(path, shards=shards)
        assert info.value.key == key, body


def test_overrides_match_exact_keys_before_globs(tmp_path):
    path = write(tmp_path / "a.json", {"overrides": {
        "github/*": {"categories": ["vcs"]},
        "github/create_issue": {"categories": ["project_management"]},
    }})
    at = load_available_tools(path)
    assert at.override_for("github", "create_issue").categories == ["project_management"]
    assert at.override_for("github", "list_commits").categories == ["vcs"]
    assert at.override_for("gitlab", "x") is None


def test_relative_cwd_is_relative_to_the_config_file(tmp_path):
    (tmp_path / "sub").mkdir()
    cfg = load_config(write(tmp_path / "config.json", {"servers": {"w": {"command": "srv", "cwd": "sub"}}}), env={})
    assert cfg.servers["w"].cwd == str((tmp_path / "sub").resolve())


def test_rules_default_to_the_bundled_ones_when_the_config_dir_has_none(tmp_path):
    from jit.paths import bundled_dir

    cfg = load_config(write(tmp_path / ".mcp.json", {"mcpServers": {}}), env={})
    assert cfg.rules_dir == bundled_dir("rules") and (cfg.rules_dir / "policy.dl").is_file()
    (tmp_path / "rules").mkdir()
    assert load_config(tmp_path / ".mcp.json", env={}).rules_dir == (tmp_path / "rules").resolve()


def test_a_servers_target_is_shown_as_written_with_secrets_masked(tmp_path):
    """``jit servers`` and the ``jit://servers`` resource (which reaches the model) show each server's
    target as the file wrote it: a secret expanded from ``${VAR}`` stays in the environment, and one
    written into the file is masked (URL password and query values, arguments after a secret flag
    or shaped like a known credential)."""
    from jit.servers_config import shown_target

    path = write(tmp_path / "config.json", {"servers": {
        "gh": {"command": "npx", "args": ["server", "--token", "${GH_TOKEN}", "--name", "gh"]},
        "web": {"url": "https://user:hunter2@api.example/mcp?api_key=${KEY}&v=2"},
        "lit": {"command": "srv", "args": ["--api-key", "abc123", "--password=pw", "ghp_0123456789abcdef",
                                           "--verbose", "plain"]},
    }})
    cfg = load_config(path, env={"GH_TOKEN": "ghp_SECRETSECRET99", "KEY": "k-SECRET"})
    assert cfg.servers["gh"].args[2] == "ghp_SECRETSECRET99"  # what the server gets
    assert cfg.servers["gh"].shown() == "npx server --token ${GH_TOKEN} --name gh"
    assert cfg.servers["web"].shown() == "https://user:***@api.example/mcp?api_key=***&v=***"
    assert cfg.servers["lit"].shown() == "srv --api-key *** --password=*** *** --verbose plain"
    # A config built in code (no file): the expanded values, masked the same way.
    assert shown_target({"command": "x", "args": ["--token", "t0k3n", "-v"]}) == "x --token *** -v"
    assert shown_target({"url": "http://tok@h/mcp"}) == "http://***@h/mcp"


@pytest.mark.parametrize(("url", "shown", "redacted"), [
    # An MCP server's URL (shown_url) hides a bare user part and every query value; a catalog's
    # (redact) only the password, wherever it is. Items are kept as written otherwise.
    ("https://u:pw@h/mcp?api_key=k&v=1&flag", "https://u:***@h/mcp?api_key=***&v=***&flag",
     "https://u:***@h/mcp?api_key=k&v=1&flag"),
    ("postgresql://jit@h/db?Pass%77ord=s&host=/tmp", "postgresql://***@h/db?Pass%77ord=***&host=***",
     "postgresql://jit@h/db?Pass%77ord=***&host=/tmp"),
    ("http://[broken/x", "http://***", "http://***"),
])
def test_urls_are_shown_without_their_secrets(url, shown, redacted):
    from jit.paths import masked_url
    from jit.servers_config import shown_url

    assert shown_url(url) == shown
    assert masked_url(url, bare_user=False, query_key=lambda k: k.lower() == "password") == redacted
