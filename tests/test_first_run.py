"""What a new user meets in the first hour (issue #18): a directory with only a ``.mcp.json``,
a brand-new catalog, no ``available_tools.json``, a blank task, ``jit eval`` without the
benchmark data. Each case runs the real command (typer's runner in process) or library call
on a real SQLite catalog; no server process is needed.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from jit.catalog.store import Store
from jit.cli import app
from jit.config_files import load_config
from jit.errors import ConfigError, EvaluationError, SelectionError
from jit.evaluation.datasets import CHECKOUT_DATA_DIR, DATASETS, check_data
from jit.evaluation.evaluate import main as evaluate_main
from jit.models import HARNESS_SERVER
from jit.paths import default_config_file
from jit.payloads import iso_utc, server_rows, tool_counts
from jit.pipeline import sync
from jit.selection.compiler import Compiler
from jit.selection.task import TaskContext
from jit.serve.early import serve_command

runner = CliRunner()

#: A Claude Code project file: one server, and a key of Claude Code's own that jit ignores.
MCP_JSON = {"mcpServers": {"notes": {"command": "notes-server", "args": ["--db", "notes.db"]}},
            "someClientSetting": True}


def invoke(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args), env={"COLUMNS": "200"})
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project directory holding only ``.mcp.json``, the working directory of the test."""
    (tmp_path / ".mcp.json").write_text(json.dumps(MCP_JSON), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("JIT_CONFIG", raising=False)
    return tmp_path


# --------------------------------------------------------------------------- which config file


def test_without_config_json_the_project_mcp_json_is_read_and_said(project: Path) -> None:
    assert default_config_file({}) == ".mcp.json"
    assert set(load_config().servers) == {"notes"}
    code, out, err = invoke("servers", "--json")
    assert code == 0, err
    assert [r["server"] for r in json.loads(out)] == ["notes"]
    assert "note: no config.json here: reading the servers of ./.mcp.json" in err
    # Every command that loads the config falls back the same way, and says it once.
    _, _, err = invoke("tools")
    assert err.count("note: no config.json here") == 1 and "config file not found" not in err


def test_config_json_and_jit_config_still_come_first(project: Path) -> None:
    (project / "config.json").write_text(json.dumps({"servers": {}}), encoding="utf-8")
    assert default_config_file({}) == "config.json" and load_config().servers == {}
    code, _, err = invoke("servers")
    assert code == 0 and "note:" not in err
    assert default_config_file({"JIT_CONFIG": "/elsewhere.json"}) == "/elsewhere.json"
    # jit serve's early answer reads the same file the command line would.
    (project / "config.json").unlink()
    assert serve_command(["serve", "--stdio"], {}).config_file == ".mcp.json"
    assert serve_command(["serve", "--stdio", "-c", "x.json"], {}).config_file == "x.json"


def test_with_neither_file_the_error_says_what_was_looked_for(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("JIT_CONFIG", raising=False)
    with pytest.raises(ConfigError, match=r"no config\.json or \.mcp\.json in .*-c FILE.*JIT_CONFIG"):
        load_config()
    code, _, err = invoke("servers")
    assert code == 3 and "no config.json or .mcp.json" in err and "Traceback" not in err


# --------------------------------------------------------------------------- the first sync


def test_first_sync_reports_no_model_change_and_no_empty_harness(project: Path, hashing_embedder) -> None:
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {}}), encoding="utf-8")
    config = load_config()
    assert not config.available_tools.tools  # no available_tools.json here
    with Store(config.store_path) as store:
        report = asyncio.run(sync(config, store, hashing_embedder))
        assert store.server(HARNESS_SERVER) is None
        assert HARNESS_SERVER not in server_rows(config, store.servers(), tool_counts(store))
        assert not report.embedding.model_changed
        # A catalog from before this change still holds an empty harness row: not listed either.
        store.ensure_server(HARNESS_SERVER, "harness")
        assert [r["server"] for r in server_rows(config, store.servers(), tool_counts(store))] == []


def test_first_sync_through_the_command_line_says_nothing_odd(project: Path, hashing_embedder, monkeypatch) -> None:
    from jit.cli import catalog as catalog_command

    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {}}), encoding="utf-8")
    # The model's stand-in (tests/conftest.py): what is tested is what the sync says.
    monkeypatch.setattr(catalog_command, "_embedder", lambda config: hashing_embedder)
    # One harness tool makes the first sync embed something: the model is declared then.
    (project / "available_tools.json").write_text(json.dumps({"tools": [
        {"name": "run_tests", "description": "Run the project's test suite."}]}), encoding="utf-8")
    code, out, err = invoke("sync")
    assert code == 0, err
    assert "embedding: 1 embedded" in out and "model changed" not in out
    (project / "available_tools.json").unlink()
    code, out, err = invoke("sync")
    assert code == 0, err
    assert re.search(r"│ harness .* 0 .* 1 ", out), out  # the sync that removed its last tool says so
    assert "harness" not in invoke("sync")[1]
    assert "harness" not in invoke("servers")[1]


def test_servers_json_gives_last_seen_as_iso_utc(project: Path, hashing_embedder) -> None:
    assert iso_utc(0) == "1970-01-01T00:00:00Z" and iso_utc(None) is None
    config = load_config()
    with Store(config.store_path) as store:
        store.ensure_server("notes", "stdio")
        store.touch_server("notes")
    code, out, _ = invoke("servers", "--json")
    assert code == 0
    (row,) = json.loads(out)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", row["last_seen"]), row
    assert "s ago" in invoke("servers")[1]  # the table still says how long ago


# --------------------------------------------------------------------------- a blank task


@pytest.mark.parametrize("task", ["", "   ", "\n\t", "\u200b"])
def test_a_blank_task_is_refused_by_the_library_and_the_command(project: Path, hashing_embedder, task) -> None:
    config = load_config()
    with Store(config.store_path) as store, Compiler(store, config, hashing_embedder) as compiler:
        if task:  # a task that lost its words
            with pytest.raises(SelectionError, match="the task is empty"):
                compiler.compile(TaskContext(shard="coder", task=task))
        else:  # the library's "no task": the shard's rules alone (jit serve --expose-shard before set_task)
            assert compiler.compile(TaskContext(shard="coder", task="")).task == ""
        assert compiler.compile(TaskContext(shard="coder", task="take a note")).task == "take a note"
    # The command line has no "no task": an empty --task is a mistake there.
    code, _, err = invoke("compile", "--shard", "coder", "--task", task, "--json")
    assert code == 2 and json.loads(err)["error"] == "selection_error" and "--task is empty" in err
    code, _, err = invoke("serve", "--stdio", "--expose-shard", "coder", "--task", task)
    assert code == 2 and "--task is empty" in err


# --------------------------------------------------------------------------- jit eval without data


def test_eval_without_the_data_says_where_it_comes_from(tmp_path: Path) -> None:
    with pytest.raises(EvaluationError) as missing:
        check_data(DATASETS["livemcpbench"], tmp_path)
    text = missing.value.message
    assert f"no {tmp_path / 'livemcpbench' / 'tools.jsonl'}" in text
    assert "--data-dir" in text and "$JIT_DATA_DIR" in text and "docs/quality.md" in text
    assert f"--data-dir {CHECKOUT_DATA_DIR}" in text  # this checkout carries LiveMCPBench
    check_data(DATASETS["livemcpbench"], CHECKOUT_DATA_DIR)  # ... and the hint works
    code, out, err = invoke("eval", "livemcpbench", "--data-dir", str(tmp_path / "absent"), "-q")
    assert code == 1 and "data directory not found" in err and "Traceback" not in err + out
    assert evaluate_main(["livemcpbench", "--data-dir", str(tmp_path), "-q"]) == 2
