"""What bench/bench_subagents.py counts: the definitions a real ``jit serve --expose-shard`` lists."""

from __future__ import annotations

import json

import pytest
from conftest import HashingEmbedder

from bench.bench_subagents import CATALOGS, markdown, meta_tools, run, sent, tokens
from bench.eval_roles import load_tools
from jit.config import Config

pytestmark = pytest.mark.slow  # a jit serve process per role


def test_a_roles_count_is_the_meta_tools_jit_serve_lists_and_its_full_tier_as_serve_renders_it(tmp_path):
    tools = [t for t in load_tools(CATALOGS / "tools.jsonl") if t.server in ("git", "filesystem", "time")]
    (tmp_path / "tools.jsonl").write_text("".join(
        json.dumps({"server": t.server, "name": t.name, "description": t.description,
                    "input_schema": t.input_schema, "annotations": t.annotations}) + "\n" for t in tools))
    (tmp_path / "tasks.jsonl").write_text(json.dumps(
        {"id": "reviewer-01", "shard": "reviewer", "task": "show the diff of the last commit and the file it changed",
         "steps": []}) + "\n")
    result = run(Config.default(), HashingEmbedder(), budget=4000, cache=tmp_path / "catalog.db",
                 tools_path=tmp_path / "tools.jsonl", tasks_path=tmp_path / "tasks.jsonl")
    summary = result["summary"]
    assert summary["direct_tools"] == len(tools) and result["servers"] == 3
    assert summary["direct_tokens"] == tokens([sent(f"mcp__{t.server}__{t.name}", t.description, t.input_schema)
                                               for t in tools])
    listed = meta_tools("reviewer")
    assert [d["name"] for d in listed] == [f"mcp__jit-reviewer__{n}" for n in (
        "search_tools", "describe_tool", "call_tool", "compile_tools", "set_task", "reload")]
    (row,) = result["tasks"]
    role = summary["roles"]["reviewer"]
    assert role["meta_tokens"] == tokens(listed) and role["mean_tokens"] == tokens(listed) + row["exposed_tokens"]
    assert row["full"] and not {"git/git_commit", "filesystem/write_file"} & set(row["full"])  # a read-only role
    assert role["mean_tokens"] < summary["direct_tokens"]
    assert "| `jit-reviewer` (1 tasks) |" in markdown(summary)

