"""Integrity of the roles set (bench/data/roles/, issue #15): the recording and the labels.

The set is data the evaluator (``bench/eval_roles.py``) trusts: a label naming a tool
that is not in the recording, or a tool both needed and forbidden, would silently skew
every number. These checks read the committed files only: no network, no model.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from bench.eval_roles import DATA, READ_ONLY_SHARDS, load_tasks, load_tools
from jit.config import DEFAULT_SHARDS
from jit.config_files import load_config

#: The annotation hints of the MCP specification, by their wire names.
HINTS = {"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"}

#: Servers of systems outside the machine (code hosting, chat, a database, a maps API):
#: the labels forbid all their tools to a task that does not point at the system, which
#: is a task with none of their tools needed or acceptable.
REMOTE_SERVERS = ("github", "gitlab", "slack", "postgres", "google-maps")

#: Side effects of the servers that send no annotations (github, gitlab, slack), read off
#: their descriptions. For annotated servers ``readOnlyHint: false`` says it.
UNANNOTATED_WRITES = frozenset({
    *(f"github/{n}" for n in (
        "create_or_update_file", "create_repository", "push_files", "create_issue", "create_pull_request",
        "fork_repository", "create_branch", "update_issue", "add_issue_comment", "create_pull_request_review",
        "merge_pull_request", "update_pull_request_branch")),
    *(f"gitlab/{n}" for n in (
        "create_or_update_file", "create_repository", "push_files", "create_issue", "create_merge_request",
        "fork_repository", "create_branch")),
    *(f"slack/{n}" for n in ("slack_post_message", "slack_reply_to_thread", "slack_add_reaction")),
})


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    return [json.loads(line) for line in (DATA / "tools.jsonl").read_text(encoding="utf-8").splitlines()
            if line.strip()]


@pytest.fixture(scope="module")
def tool_keys(rows) -> set[str]:
    return {f"{r['server']}/{r['name']}" for r in rows}


@pytest.fixture(scope="module")
def tasks():
    return load_tasks()


def test_the_recording_holds_at_least_ten_real_servers(rows):
    servers = json.loads((DATA / "servers.json").read_text(encoding="utf-8"))
    counts = Counter(r["server"] for r in rows)
    assert len(counts) >= 10
    assert set(servers) == set(counts), "servers.json and tools.jsonl name the same servers"
    for name, info in servers.items():
        assert info["registry"] in ("pypi", "npm") and info["package"] and info["version"], name
        assert info["tools"] == counts[name], f"{name}: servers.json says {info['tools']} tools"


def test_tools_are_unique_and_load_as_tool_defs(rows):
    keys = [(r["server"], r["name"]) for r in rows]
    assert len(keys) == len(set(keys))
    tools = load_tools()
    assert [(t.server, t.name) for t in tools] == keys
    assert all(t.input_schema.get("type") == "object" for t in tools)


def test_server_names_are_valid_jit_server_names(rows, tmp_path: Path):
    # The config loader is what refuses a bad name (and '__', jit's namespace separator).
    names = sorted({r["server"] for r in rows})
    config = {"servers": {n: {"transport": "stdio", "command": "true"} for n in names}}
    (tmp_path / "config.json").write_text(json.dumps(config), encoding="utf-8")
    assert sorted(load_config(tmp_path / "config.json").servers) == names


def test_annotations_are_kept_as_sent(rows):
    annotated = [r for r in rows if r["annotations"] is not None]
    assert len(annotated) >= 40, "the annotating servers (git, filesystem, memory, ...) were recorded"
    for r in annotated:
        hints = {k: v for k, v in r["annotations"].items() if k != "title"}
        assert set(hints) <= HINTS, (r["name"], hints)
        # A hint the server left out stays out: no nulls stand in for it.
        assert all(isinstance(v, bool) for v in hints.values()), (r["name"], hints)
    by_key = {f"{r['server']}/{r['name']}": r["annotations"] for r in rows}
    assert by_key["git/git_reset"]["destructiveHint"] is True
    assert "destructiveHint" not in by_key["filesystem/read_text_file"]


def test_tasks_cover_every_default_shard(tasks):
    assert len(tasks) >= 60
    ids = [t.id for t in tasks]
    assert len(ids) == len(set(ids))
    per_shard = Counter(t.shard for t in tasks)
    assert set(per_shard) == set(DEFAULT_SHARDS)
    assert min(per_shard.values()) >= 10, per_shard
    assert all(t.task.strip() for t in tasks)


def test_every_label_names_a_recorded_tool(tasks, tool_keys):
    for t in tasks:
        for name in ("needed", "acceptable", "forbidden"):
            refs = getattr(t, name)
            assert len(refs) == len(set(refs)), f"{t.id}: {name} repeats a tool"
            unknown = set(refs) - tool_keys
            assert not unknown, f"{t.id}: {name} names tools that were not recorded: {sorted(unknown)}"


def test_labels_do_not_contradict_each_other(tasks):
    for t in tasks:
        needed, acceptable, forbidden = set(t.needed), set(t.acceptable), set(t.forbidden)
        assert not needed & forbidden, f"{t.id}: needed and forbidden: {sorted(needed & forbidden)}"
        assert not acceptable & forbidden, f"{t.id}: acceptable and forbidden: {sorted(acceptable & forbidden)}"
        assert not needed & acceptable, f"{t.id}: needed and acceptable: {sorted(needed & acceptable)}"


def test_nearly_every_task_needs_a_tool(tasks):
    # A task no tool can do (run the tests, with no server that runs commands) is a
    # deliberate case for coverage warnings; it must say why in its note.
    unneeded = [t for t in tasks if not t.needed]
    assert len(unneeded) <= 3
    assert all(t.note for t in unneeded)


def test_read_only_roles_are_forbidden_every_side_effect_they_are_not_granted(tasks, rows):
    side_effects = UNANNOTATED_WRITES | {f"{r['server']}/{r['name']}" for r in rows
                                         if (r["annotations"] or {}).get("readOnlyHint") is False}
    for t in tasks:
        if t.shard in READ_ONLY_SHARDS:
            loose = side_effects - set(t.forbidden) - t.accepted
            assert not loose, f"{t.id}: side effects neither forbidden nor granted: {sorted(loose)}"


def test_remote_systems_are_forbidden_unless_the_task_points_at_them(tasks, tool_keys):
    for t in tasks:
        for server in REMOTE_SERVERS:
            tools = {k for k in tool_keys if k.split("/", 1)[0] == server}
            if not tools & t.accepted:
                assert tools <= set(t.forbidden), f"{t.id}: {server} is not pointed at but not forbidden"


def test_the_issue_cases_are_in_the_set(tasks):
    """The selections issue #15 reports must stay measured."""
    by_text = {t.task.lower(): t for t in tasks}

    def find(*words: str):
        hits = [t for text, t in by_text.items() if all(re.search(w, text) for w in words)]
        assert hits, words
        return hits[0]

    review = find(r"review", r"unstaged")
    assert review.shard == "reviewer" and {"git/git_commit", "git/git_reset"} <= set(review.forbidden)
    fix = find(r"fix", r"stage")
    assert {"git/git_add", "filesystem/edit_file"} <= set(fix.needed)
    assert "github/merge_pull_request" in fix.forbidden
    assert "postgres/query" in find(r"run the test suite").forbidden
    assert "filesystem/edit_file" in find(r"pom\.xml").needed
    assert any("summarise" in t.task.lower() for t in tasks)
    researcher = [t for t in tasks if t.shard == "researcher" and "memory/delete_entities" in t.forbidden]
    assert researcher


# --------------------------------------------------------------------------- the evaluator


def test_the_evaluator_scores_every_task_with_the_annotations_in_the_catalog(embedder, tmp_path: Path):
    from dataclasses import replace

    from bench.eval_roles import run
    from jit.config import AvailableTools, Config

    config = replace(Config.default(tmp_path), available_tools=AvailableTools())
    report = run(config, embedder, budget=4000, cache=tmp_path / "roles.db")
    assert report["tools"] == len(load_tools()) and report["servers"] >= 10
    assert set(report["summary"]) == {"all", *DEFAULT_SHARDS}
    assert len(report["tasks"]) == report["summary"]["all"]["tasks"] >= 60
    for s in report["summary"].values():
        for key in ("full_precision", "recall_full", "recall_full_condensed", "recall_any"):
            assert s[key] is None or 0.0 <= s[key] <= 1.0, key
        assert s["recall_full"] <= s["recall_full_condensed"] <= s["recall_any"]
        assert s["forbidden_full"] <= s["forbidden_rendered"]
    # The recorded annotations reach the catalog the selection reads.
    from jit.catalog.store import Store

    with Store(tmp_path / "roles.db") as store:
        reset = next(st.tool for st in store.tools() if st.key == "git/git_reset")
    assert reset.annotations is not None and reset.annotations["destructiveHint"] is True
