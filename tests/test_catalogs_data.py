"""Integrity of the catalogs set (bench/data/catalogs/, issue #21) and of the recorder's wire tap.

The set is the real ``tools/list`` answers of public MCP servers that labels will be written
against. These checks read the committed files only (no network, no server installed); the one
that starts a server starts the stdlib test server of ``tests/servers``.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest
from mcp import StdioServerParameters

from bench.record_roles import list_tools, set_pins, source_markdown, tool_row
from bench.record_sets import CATALOGS, ROLES
from jit.config_files import load_config

DATA = CATALOGS.folder
RAW_SERVER = Path(__file__).parent / "servers" / "raw_server.py"

#: The fields of ``ToolAnnotations`` in the MCP specification, by their wire names.
SPEC_ANNOTATIONS = {"title", "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"}


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    return read_jsonl(DATA / "tools.jsonl")


@pytest.fixture(scope="module")
def servers() -> dict:
    return json.loads((DATA / "servers.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def wire() -> list[dict]:
    return read_jsonl(DATA / "wire.jsonl")


def test_the_set_holds_at_least_25_servers_and_600_unique_tools(rows, servers):
    keys = [(r["server"], r["name"]) for r in rows]
    assert len(keys) == len(set(keys)), "a (server, tool) pair is recorded twice"
    counts = Counter(r["server"] for r in rows)
    assert len(counts) >= 25 and len(rows) >= 600
    assert list(servers) == [s.name for s in CATALOGS.servers], "servers.json follows the set's order"
    assert set(counts) == set(servers)
    for name, info in servers.items():
        assert info["tools"] == counts[name], f"{name}: servers.json says {info['tools']} tools"
        assert info["annotated"] == sum(r["annotations"] is not None for r in rows if r["server"] == name)
        assert info["registry"] in ("pypi", "npm") and info["package"] and info["version"], name
        assert info["license"] and info["server_info"]["name"], name
        # Names only: a value (even a dummy one) never reaches the recording.
        assert all(re.fullmatch(r"[A-Z][A-Z0-9_]*", e) for e in info["env"]), (name, info["env"])


def test_the_roles_servers_answer_as_in_the_roles_recording(rows, servers):
    # Same releases, installed together as they were first recorded: the same tool lists, row for row.
    roles = json.loads((ROLES.folder / "servers.json").read_text(encoding="utf-8"))
    for name, info in roles.items():
        assert (servers[name]["package"], servers[name]["version"]) == (info["package"], info["version"]), name
    assert [r for r in rows if r["server"] in roles] == read_jsonl(ROLES.folder / "tools.jsonl")


def test_rows_are_the_wire_pages_in_the_rows_format(rows, wire, servers):
    by_server: dict[str, list[dict]] = {}
    for page in wire:
        by_server.setdefault(page["server"], []).append(page)
    assert list(by_server) == list(servers)
    sent = []
    for name, pages in by_server.items():
        assert [p["page"] for p in pages] == list(range(len(pages))), name
        # Every page but the last names the next one; the last names none.
        assert all(p["result"].get("nextCursor") for p in pages[:-1]), name
        assert not pages[-1]["result"].get("nextCursor"), name
        sent += [(name, tool) for p in pages for tool in p["result"]["tools"]]
    assert [(r["server"], r["name"]) for r in rows] == [(name, t["name"]) for name, t in sent]
    for row, (_, tool) in zip(rows, sent, strict=True):
        assert row["input_schema"] == tool["inputSchema"], row["name"]
        assert row["output_schema"] == tool.get("outputSchema"), row["name"]
        assert row["description"] == (tool.get("description") or ""), row["name"]
        assert row["title"] == tool.get("title"), row["name"]
        # The rows keep the specification's annotations; a server's own keys (chrome-devtools'
        # ``category``) stay in wire.jsonl, as do ``_meta`` and ``execution``.
        hints = {k: v for k, v in (tool.get("annotations") or {}).items() if k in SPEC_ANNOTATIONS and v is not None}
        assert row["annotations"] == (hints or None), row["name"]


def test_source_md_is_what_the_recorder_writes_for_servers_json(servers):
    text = (DATA / "SOURCE.md").read_text(encoding="utf-8")
    runtime = re.search(r" with Node (\S+) and the `mcp` (\S+) Python SDK client", text)
    assert runtime, "SOURCE.md names the versions of Node and of the client that recorded the set"
    assert text == source_markdown(CATALOGS, servers, *runtime.groups())
    for name, info in servers.items():
        assert f"| {name} | {info['registry']} | {info['package']} | {info['version']} | {info['license']} " \
               f"| {info['tools']} | {info['annotated']} |" in text


def test_the_recording_carries_no_trace_of_its_scratch_directory():
    for file in ("tools.jsonl", "wire.jsonl", "servers.json"):
        text = (DATA / file).read_text(encoding="utf-8")
        assert "jit-record-" not in text, f"{file} names the recorder's scratch directory"


def test_server_names_are_valid_jit_server_names(servers, tmp_path: Path):
    config = {"servers": {n: {"transport": "stdio", "command": "true"} for n in servers}}
    (tmp_path / "config.json").write_text(json.dumps(config), encoding="utf-8")
    assert sorted(load_config(tmp_path / "config.json").servers) == sorted(servers)


def test_a_set_installs_the_releases_its_shared_servers_were_recorded_at(tmp_path: Path):
    # A set with no recording of its own yet takes the roles recording's pins, then its specs'.
    unrecorded = replace(CATALOGS, name="catalogs-not-recorded")
    assert not unrecorded.folder.exists()
    roles = json.loads((ROLES.folder / "servers.json").read_text(encoding="utf-8"))
    pins = set_pins(unrecorded, tmp_path)
    assert {info["package"]: pins[info["package"]] for info in roles.values()} == \
        {info["package"]: info["version"] for info in roles.values()}
    assert pins["@stripe/mcp"] == "0.2.5"
    assert "@playwright/mcp" not in pins, "a server no recording pins installs its newest release"


def test_list_tools_follows_every_page_and_keeps_each_as_sent(tmp_path: Path):
    params = StdioServerParameters(command=sys.executable, args=[
        str(RAW_SERVER), "--transport", "stdio", "--tools", "5", "--page-size", "2"])
    with (tmp_path / "stderr").open("w", encoding="utf-8") as errlog:
        init, tools, pages = asyncio.run(asyncio.wait_for(list_tools(params, errlog), 60))
    assert init.server_info.name
    assert [len(p["tools"]) for p in pages] == [2, 2, 1]
    assert [bool(p.get("nextCursor")) for p in pages] == [True, True, False]
    sent = [t for p in pages for t in p["tools"]]
    assert [t.name for t in tools] == [t["name"] for t in sent] == ["fail", "rpc_error", "tool_0", "tool_1", "tool_2"]
    assert all(tool_row("raw", t)["input_schema"] == s["inputSchema"] for t, s in zip(tools, sent, strict=True))
