"""The catalog view derives per class of tools (jit/selection/fact_classes.py, ``abstract``):
what it derives must equal asking the rules about every tool with all its facts asserted.

Each case compares a view's tables with a reference engine holding every tool's own facts,
on the compiler fixture's catalog, with rules and tools chosen to defeat a careless
abstraction: a rule naming a server, a tool named like its category or like a server,
a name with a NUL, a server whose status changes, tool calls, a removed and an added tool.
"""

from __future__ import annotations

import shutil
from dataclasses import replace

import pytest
from compiler_fixtures import build_store, write_config

from jit.analysis.analyze import effective_tool
from jit.errors import RuleError
from jit.models import ServerStatus, ToolAnalysis, ToolDef
from jit.selection.catalog_view import CatalogView
from jit.selection.fact_classes import tool_facts
from jit.selection.logic import LogicEngine, RuleSet, default_rules_dir
from jit.selection.policy import merge_points
from jit.selection.tiers import Tier

SHARDS = ("coder", "tester", "reviewer", "researcher")

#: Rules that read server and tool names as constants, and join a name with a label.
EXTRA_RULES = """
blocked(T, 'gh is frozen') <= tool(T, 'gh', N) & flag(T, 'frozen_repo')
tier_cap(T, 'minimal') <= tool(T, S, N) & category(T, N)
skeleton(Sh, T, S) <= shard(Sh) & tool(T, S, 'notes')
shard_points(Sh, T, 33) <= shard(Sh) & tool(T, S, N) & server_status(S, 'error')
usage_points(T, 7) <= usage(T, C, E) & (C == 1)
"""


def reference(view: CatalogView, snap) -> dict:
    """The per-tool tables with every tool's facts in a fresh engine (the view before classes)."""
    facts = []
    for i, st in snap.by_id.items():
        facts += tool_facts(st, effective_tool(st, view.config.available_tools, shards=view.config.shards),
                            view.derivation.globs)
    facts += [("server_status", s.name, view.derivation.status_of(s.name, s.status, s.last_seen))
              for s in view.store.servers()]
    facts += [("shard", s) for s in view.config.shards]
    facts += [("shard_category", s, c) for s, sc in view.config.shards.items() for c in sc.categories]
    facts += [("shard_rule", s, *sel) for s, sc in view.config.shards.items() for sel in sc.selectors()
              if sel[1] != "tool"]
    with LogicEngine(view.rules) as engine:
        engine.change(facts)
        blocked: dict[int, str] = {}
        for t, reason in engine.query("blocked", None, None):
            blocked.setdefault(t, str(reason))
        caps: dict[int, Tier] = {}
        for t, tier in engine.query("tier_cap", None, None):
            cap = {x.value: x for x in Tier}.get(str(tier), Tier.EXCLUDED)
            caps[t] = max(cap, caps.get(t, Tier.FULL), key=lambda x: x.rank)
        usage: dict[int, int] = {}
        merge_points(usage, engine.query("usage_points", None, None))
        out = {"blocked": blocked, "offline": {t for (t,) in engine.query("offline", None)}, "tier_cap": caps,
               "usage_points": usage}
        for shard in SHARDS:
            points: dict[int, int] = {}
            merge_points(points, [(t, p) for _s, t, p in engine.query("shard_points", shard, None, None)])
            slots: dict[int, set] = {}
            for _s, t, slot in engine.query("skeleton", shard, None, None):
                slots.setdefault(t, set()).add(str(slot))
            denied: dict[int, set] = {}
            for _s, t, reason in engine.query("denied", shard, None, None):
                denied.setdefault(t, set()).add(str(reason))
            out[shard] = ({"shard_points": points}, {t: tuple(sorted(v)) for t, v in slots.items()},
                          {t: tuple(sorted(v)) for t, v in denied.items()})
    return out


def derived(view: CatalogView) -> dict:
    snap = view.snapshot()
    out = {"blocked": {t: r for t, r in snap.blocked.items() if r != "awaiting approval"},
           "offline": set(snap.offline), "tier_cap": snap.tier_cap, "usage_points": snap.points["usage_points"]}
    for shard in SHARDS:
        out[shard] = view.shard_tables(snap, shard)
    return out


def check(view: CatalogView) -> None:
    snap = view.snapshot()
    assert derived(view) == reference(view, snap)


@pytest.fixture
def catalog(tmp_path, embedder):
    rules = tmp_path / "rules"
    shutil.copytree(default_rules_dir(), rules)
    with (rules / "policy.dl").open("a", encoding="utf-8") as f:
        f.write(EXTRA_RULES)
    config = write_config(tmp_path, rules=rules)
    # Allow/deny selectors of every kind, some naming a server, some a tool glob.
    shards = dict(config.shards)
    shards["reviewer"] = shards["reviewer"].model_copy(update={"deny": ["server:gh"], "allow": ["tool:fs/write_*"]})
    shards["coder"] = shards["coder"].model_copy(update={"deny": ["annotation:destructiveHint", "tool:pdf/x*"]})
    shards["tester"] = shards["tester"].model_copy(update={"allow": ["capability:/execute", "category:search"]})
    config = replace(config, shards=shards)
    store = build_store(tmp_path / "own.db", config, embedder)
    # Tools named like a category they have, like a server, and with a NUL in the name.
    odd = [ToolDef(server="pdf", name="search", description="Search PDFs."),
           ToolDef(server="pdf", name="gh", description="Named like a server."),
           ToolDef(server="pdf", name="x\x00name", description="A NUL in the name."),
           ToolDef(server="pdf", name="notes", description="Named like a slot of the extra rules."),
           ToolDef(server="pdf", name="shred", description="Deletes a PDF.", annotations={"destructiveHint": True}),
           ToolDef(server="pdf", name="wipe", description="Erases every page and writes a blank one.",
                   annotations={"readOnlyHint": True, "destructiveHint": True})]
    existing = [st.tool for st in store.tools() if st.tool.server == "pdf"]
    store.sync_tools("pdf", [*existing, *odd])
    store.put_analyses([(odd[0].definition_hash, ToolAnalysis(categories=["search"], capabilities=["/search"])),
                        (odd[1].definition_hash, ToolAnalysis(categories=["search"], flags=["frozen_repo"]))])
    view = CatalogView(store, config, RuleSet.load(rules), model_name=embedder.model_name)
    yield view, store
    view.close()
    store.close()


def test_classes_derive_what_every_tool_would(catalog):
    view, _store = catalog
    check(view)
    # The engine holds fewer classes than the catalog has tools (the point of them).
    assert len(view.derivation.classes.projection) < len(view.snapshot().by_id) * len(view.derivation.classes.reads)
    # Every kind of selector and the read-only default took effect (not only "equal to the reference").
    snap = view.snapshot()
    by_name = {(st.tool.server, st.tool.name): i for i, st in snap.by_id.items()}
    reviewer, coder = view.shard_tables(snap, "reviewer").denied, view.shard_tables(snap, "coder").denied
    assert {i for i, (server, _) in snap.heads.items() if server == "gh"} <= reviewer.keys()
    assert "denied by config: server" in reviewer[by_name["gh", "create_issue"]]
    assert "read-only role: the tool can change things" in reviewer[by_name["pdf", "shred"]]
    assert by_name["pdf", "wipe"] not in reviewer  # the server says read-only: the hint outweighs the text
    assert by_name["fs", "write_file"] not in reviewer  # granted by the tool glob
    assert coder[by_name["pdf", "shred"]] == ("denied by config: annotation",)
    assert coder[by_name["pdf", "x\x00name"]] == ("denied by config: tool",)


def test_classes_follow_status_changes_calls_and_catalog_edits(catalog):
    view, store = catalog
    check(view)
    store.set_server_status("web", ServerStatus.CONNECTED)
    store.set_server_status("gh", ServerStatus.ERROR, error="gone")
    check(view)
    store.record_call("fs", "read_file", ok=True, latency_ms=1)
    check(view)
    for _ in range(3):
        store.record_call("gh", "create_issue", ok=False, latency_ms=1, error="HTTP 500")
    check(view)
    kept = [st.tool for st in store.tools() if st.tool.server == "fs" and st.tool.name != "write_file"]
    store.sync_tools("fs", [*kept, ToolDef(server="fs", name="grep", description="Search files by pattern.")])
    check(view)
    store.set_server_status("web", ServerStatus.DISCONNECTED)
    check(view)


def test_a_task_table_may_not_read_per_tool_facts(tmp_path, embedder):
    rules = tmp_path / "rules"
    shutil.copytree(default_rules_dir(), rules)
    with (rules / "policy.dl").open("a", encoding="utf-8") as f:
        f.write("\ncategory_points(C, 5) <= task_category(C) & category(T, C)\n")
    config = write_config(tmp_path, rules=rules)
    # Allow/deny selectors of every kind, some naming a server, some a tool glob.
    shards = dict(config.shards)
    shards["reviewer"] = shards["reviewer"].model_copy(update={"deny": ["server:gh"], "allow": ["tool:fs/write_*"]})
    shards["coder"] = shards["coder"].model_copy(update={"deny": ["annotation:destructiveHint", "tool:pdf/x*"]})
    shards["tester"] = shards["tester"].model_copy(update={"allow": ["capability:/execute", "category:search"]})
    config = replace(config, shards=shards)
    store = build_store(tmp_path / "own.db", config, embedder)
    try:
        with pytest.raises(RuleError, match="category_points is a task table") as err:
            CatalogView(store, config, RuleSet.load(rules), model_name=embedder.model_name)
        assert err.value.line is not None
    finally:
        store.close()
