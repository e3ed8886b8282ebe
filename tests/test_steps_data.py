"""Integrity of the steps set (bench/data/steps/, issue #21): tasks whose steps list every tool that does them.

A scorer trusts these labels: a tool name that is not in the catalogs recording would make
a step impossible to cover, a forbidden tool that is also a step's tool would count the
same selection as right and wrong, and a README whose counts drifted from the file would
report a different set than the one measured. These checks read the committed files only.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from jit.config import DEFAULT_SHARDS

DATA = Path(__file__).resolve().parent.parent / "bench" / "data"
STEPS = DATA / "steps"
CATALOGS = DATA / "catalogs"

CAPABILITIES = {"read", "write", "delete", "execute", "send"}
#: The default shards whose role is read-only (jit's least-privilege roles, issue #15).
READ_ONLY_SHARDS = {"reviewer", "researcher"}
ROW_KEYS = {"id", "shard", "task", "steps", "forbidden", "servers"}
STEP_KEYS = {"step", "capability", "tools", "role_may"}


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


#: Each set's directory and the fewest tasks it holds: the first set, and sets 2 to 8, written apart from jit
#: and measured unseen (unseenN/README.md).
SETS = {STEPS: 60, STEPS / "unseen2": 40, STEPS / "unseen3": 40, STEPS / "unseen4": 40, STEPS / "unseen5": 40,
        STEPS / "unseen6": 40, STEPS / "unseen7": 40, STEPS / "unseen8": 40}


@pytest.fixture(scope="module", params=list(SETS), ids=lambda d: d.name)
def steps_set(request) -> Path:
    return request.param


@pytest.fixture(scope="module")
def tasks(steps_set) -> list[dict]:
    return read_jsonl(steps_set / "tasks.jsonl")


@pytest.fixture(scope="module")
def catalog_keys() -> set[str]:
    return {f"{r['server']}/{r['name']}" for r in read_jsonl(CATALOGS / "tools.jsonl")}


def step_tools(task: dict) -> list[str]:
    return [tool for step in task["steps"] for tool in step["tools"]]


def test_rows_have_the_documented_fields(tasks):
    ids = [t["id"] for t in tasks]
    assert len(ids) == len(set(ids)), "an id is used twice"
    for t in tasks:
        assert ROW_KEYS <= set(t) <= ROW_KEYS | {"note"}, t["id"]
        assert t["shard"] in DEFAULT_SHARDS and re.fullmatch(rf"{t['shard']}-\d\d", t["id"]), t["id"]
        assert t["task"].strip() and t["steps"], t["id"]
        for step in t["steps"]:
            assert set(step) == STEP_KEYS and step["step"].strip(), (t["id"], step)
            assert len(step["tools"]) == len(set(step["tools"])), (t["id"], step["step"])


def test_every_tool_named_is_in_the_catalogs_recording(tasks, catalog_keys):
    for t in tasks:
        named = step_tools(t) + t["forbidden"]
        assert not set(named) - catalog_keys, (t["id"], sorted(set(named) - catalog_keys))


def test_capabilities_are_in_the_vocabulary_and_role_may_follows_from_them(tasks):
    for t in tasks:
        for step in t["steps"]:
            assert step["capability"] in CAPABILITIES, (t["id"], step["capability"])
            read_only = t["shard"] in READ_ONLY_SHARDS
            assert step["role_may"] is (not read_only or step["capability"] == "read"), (t["id"], step["step"])


def test_no_step_tool_is_forbidden_and_every_task_has_a_step_with_tools(tasks):
    for t in tasks:
        assert not set(step_tools(t)) & set(t["forbidden"]), t["id"]
        assert step_tools(t), f"{t['id']}: no step has a tool"
        for step in t["steps"]:
            if not step["tools"]:
                assert t.get("note"), f"{t['id']}: a step without a tool needs a note saying why"


def test_the_pool_is_every_recorded_server(tasks):
    servers = list(json.loads((CATALOGS / "servers.json").read_text(encoding="utf-8")))
    for t in tasks:
        assert t["servers"] == servers, t["id"]
        assert {tool.split("/")[0] for tool in step_tools(t)} <= set(servers), t["id"]


def test_the_set_is_large_and_spread(tasks, steps_set):
    shards = Counter(t["shard"] for t in tasks)
    assert len(tasks) >= SETS[steps_set] and set(shards) == set(DEFAULT_SHARDS)
    assert len({tool.split("/")[0] for t in tasks for tool in step_tools(t)}) >= 15
    # The read-only roles read, and a few of their tasks ask for what the role may not do.
    for shard in READ_ONLY_SHARDS:
        own = [t for t in tasks if t["shard"] == shard]
        asking = [t for t in own if any(not s["role_may"] for s in t["steps"])]
        assert 2 <= len(asking) <= len(own) // 3, (shard, len(asking))


def readme_counts(steps_set: Path) -> tuple[dict[str, list[int]], int, int, int]:
    text = (steps_set / "README.md").read_text(encoding="utf-8")
    table = {m[0]: [int(n) for n in m[1:]] for m in re.findall(
        r"^\| (\w+) \| (\d+) \| (\d+) \| (\d+) \| (\d+) \|$", text, re.M)}
    servers = re.search(r"Servers named in steps: (\d+) of (\d+)\.", text)
    tools = re.search(r"Distinct tools named in steps: (\d+)\.", text)
    assert servers and tools, "README.md lost its count lines"
    return table, int(servers[1]), int(servers[2]), int(tools[1])


def test_the_readme_counts_match_the_file(tasks, steps_set):
    table, servers_named, pool, distinct = readme_counts(steps_set)
    expected: dict[str, list[int]] = {}
    for t in tasks:
        row = [1, len(t["steps"]), sum(not s["role_may"] for s in t["steps"]),
               sum(not s["tools"] for s in t["steps"])]
        for key in (t["shard"], "all"):
            expected[key] = [a + b for a, b in zip(expected.get(key, [0, 0, 0, 0]), row, strict=True)]
    assert table == expected
    tools = {tool for t in tasks for tool in step_tools(t)}
    assert servers_named == len({tool.split("/")[0] for tool in tools})
    assert pool == len(tasks[0]["servers"])
    assert distinct == len(tools)
