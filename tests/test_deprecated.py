"""Deprecated tools: told from their description, and losing to current ones by the policy.

@modelcontextprotocol/server-filesystem keeps ``read_file`` ("DEPRECATED: Use read_text_file
instead.") beside ``read_text_file``; the coder's ``read_file`` skeleton slot used to take the
deprecated one because its name sorts first. Real SQLite, the real rules and model.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from compiler_fixtures import write_config

from jit.analysis.deprecation import is_deprecated
from jit.catalog.embedding_pass import embed_pending
from jit.catalog.store import Store
from jit.models import ServerStatus, ToolDef
from jit.selection.compiler import Compiler
from jit.selection.logic import default_rules_dir
from jit.selection.task import TaskContext
from jit.selection.tokens import EstimateCounter

MARKED = [
    "DEPRECATED: Use read_text_file instead.",
    "Read the complete contents of a file. DEPRECATED: use read_text_file.",
    "[DEPRECATED] Lists the files of a directory.",
    "(deprecated) Old search endpoint.",
    "**Deprecated**. Use search_code instead.",
    "\u26a0\ufe0f Deprecated - use get_page.",
    "Deprecated in favour of get_issue.",
    "Deprecated, use list_branches.",
    "This tool is deprecated and will be removed in 2.0.",
    "Fetches a page.\n\nDeprecated since 1.4: use fetch_url.",
    "Returns the user. @deprecated use get_me",
    "Get a file (Deprecated)",
]
CURRENT = [
    "This replaces the deprecated list_files tool.",
    "Lists deprecated dependencies of a package.",
    "Deprecated API scanner for Java projects.",
    "Find deprecated API usage in the code base.",
    "Migrate code away from deprecated functions.",
    "Check whether a package version is deprecated on npm.",
    "Check if packages are deprecated",  # npm-sentinel's npmDeprecated: about packages, not itself
    "Returns deprecated: true when the field is deprecated.",
    "",
    None,
]


@pytest.mark.parametrize("text", MARKED)
def test_a_deprecation_marker_is_found(text):
    assert is_deprecated(text)


@pytest.mark.parametrize("text", CURRENT)
def test_talking_about_deprecation_is_not_a_marker(text):
    assert not is_deprecated(text)


def _schema(**params: str) -> dict:
    return {"type": "object", "properties": {k: {"type": "string", "description": v} for k, v in params.items()},
            "required": list(params)[:1]}


FILESYSTEM = [
    ToolDef(server="filesystem", name="read_file", input_schema=_schema(path="Path"),
            description="Read the complete contents of a file as text. DEPRECATED: Use read_text_file instead."),
    ToolDef(server="filesystem", name="read_text_file", input_schema=_schema(path="Path"),
            description="Read the complete contents of a file from the file system as text. Handles various text "
                        "encodings and provides detailed error messages if the file cannot be read. Use the 'head' "
                        "parameter to read only the first N lines of a file, or the 'tail' parameter to read only "
                        "the last N lines of a file."),
    ToolDef(server="filesystem", name="search_files", input_schema=_schema(pattern="Glob", path="Dir"),
            description="Recursively search for files and directories matching a pattern."),
]


def _store(root: Path, config, embedder) -> Store:
    """Only the filesystem server: no harness ``read_file`` to take the slot before either."""
    store = Store(root / "catalog.db")
    store.ensure_server("filesystem", "stdio")
    store.sync_tools("filesystem", FILESYSTEM)
    store.set_server_status("filesystem", ServerStatus.CONNECTED)
    embed_pending(store, embedder)
    return store


@pytest.fixture
def env(tmp_path, embedder):
    config = write_config(tmp_path)
    store = _store(tmp_path, config, embedder)
    yield tmp_path, config, store
    store.close()


def test_a_deprecated_tool_loses_its_skeleton_slot_and_logic_points(env, embedder):
    _, config, store = env
    with Compiler(store, config, embedder, token_counter=EstimateCounter()) as compiler:
        ts = compiler.compile(TaskContext(shard="coder", task="read src/app.py and fix the typo"))
    old, new = ts.get("filesystem__read_file"), ts.get("filesystem__read_text_file")
    assert new.skeleton and not old.skeleton
    assert "skeleton for coder (slot read_file)" in new.reasons
    assert "not skeleton: filesystem__read_text_file fills the same slot" in old.reasons
    assert old.points["penalty"] == -30 and new.points["penalty"] == 0
    (penalty,) = [r for r in old.reasons if r.startswith("penalty -30 (")]
    key = penalty.removeprefix("penalty -30 (").rstrip(")")
    assert ts.legend()[key].text == "penalty_points(T, 30) <= deprecated(T)"
    assert old.facts["deprecated"] is True and "deprecated" not in new.facts
    assert old.final < new.final


def test_without_the_rule_the_deprecated_tool_keeps_the_slot(env, tmp_path, embedder):
    """The preference is the policy's, not the compiler's: drop the rule and the tie-break decides (the
    shorter definition, the deprecated one's here: the current tool documents its head and tail options)."""
    _, _, store = env
    rules = tmp_path / "plain_rules"
    shutil.copytree(default_rules_dir(), rules)
    policy = rules / "policy.dl"
    policy.write_text(policy.read_text().replace("penalty_points(T, 30) <= deprecated(T)", ""))
    (tmp_path / "plain").mkdir()
    plain = write_config(tmp_path / "plain", rules=rules)
    with Compiler(store, plain, embedder, token_counter=EstimateCounter()) as compiler:
        ts = compiler.compile(TaskContext(shard="coder", task="read src/app.py and fix the typo"))
    assert ts.get("filesystem__read_file").skeleton and not ts.get("filesystem__read_text_file").skeleton
    assert ts.get("filesystem__read_file").points["penalty"] == 0


def test_a_description_that_becomes_deprecated_is_derived_again_and_saved(env, embedder):
    """A changed description reaches the rules on the next compile, and a new process that
    starts from the view file (viewfile.FORMAT) sees the same penalty without deriving it."""
    _, config, store = env
    task = TaskContext(shard="coder", task="read src/app.py and fix the typo")
    with Compiler(store, config, embedder, token_counter=EstimateCounter()) as compiler:
        assert compiler.compile(task).get("filesystem__search_files").points["penalty"] == 0
        store.sync_tools("filesystem", [*FILESYSTEM[:2], ToolDef(
            server="filesystem", name="search_files", input_schema=FILESYSTEM[2].input_schema,
            description="[DEPRECATED] Recursively search for files matching a pattern.")])
        embed_pending(store, embedder)
        changed = compiler.compile(task)
        assert changed.get("filesystem__search_files").points["penalty"] == -30
        # Still the only tool of its slot: deprecated, it keeps it rather than leave it empty.
        assert changed.get("filesystem__search_files").skeleton
        assert not any("search_code" in w for w in changed.warnings)
        compiler.prepare()  # writes the view file
    views = list(Path(f"{store.path}.index").glob("*.view"))
    assert views
    with Compiler(store, config, embedder, token_counter=EstimateCounter()) as fresh:
        again = fresh.compile(task)
    assert again.get("filesystem__search_files").points["penalty"] == -30
    assert again.get("filesystem__read_text_file").skeleton
