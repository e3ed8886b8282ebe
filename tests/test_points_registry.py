"""A points signal is the rules plus one row of ``POINTS`` (jit/selection/policy.py), and nothing else.

The parts of the logic score are listed once: each part's derived predicate and where its
table is read (per tool, per shard, per task over labels). A predicate the rules give points
with that the registry lacks is refused (it would be a silent no-op); one the registry has
is derived, scored, cited, explained and kept in the view file like the shipped parts.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
from compiler_fixtures import build_store, write_config

from jit.errors import RuleError
from jit.selection.compiler import Compiler
from jit.selection.logic import default_rules_dir
from jit.selection.tokens import EstimateCounter

SCHEMA = """
derive recency_points(T, Points)            # a per-tool signal
derive coverage_points(Shard, T, Points)    # a per-shard signal
derive intent_points(Capability, Points)    # a task table over capabilities
"""
POLICY = """
recency_points(T, 3) <= analyzed(T)
coverage_points(Sh, T, 4) <= shard_category(Sh, C) & category(T, C)
intent_points(C, 6) <= task_capability(C)
"""
#: The rows a newcomer adds to POINTS for the three signals above.
ROWS = """    Points("recency", "recency_points", PER_TOOL),
    Points("coverage", "coverage_points", PER_SHARD),
    Points("intent", "intent_points", BY_LABEL, label="capability"),
"""
TASK = "Fix the failing unit test in parser.py, then open a GitHub issue describing the bug"

_WITH_ROWS = """
import importlib.util, json, pathlib, sys

import jit.selection

# jit/selection/policy.py as a newcomer edits it: three rows more in POINTS, nothing else.
path = pathlib.Path(jit.selection.__file__).parent / "policy.py"
source = path.read_text(encoding="utf-8")
last = '    Points("penalty", "penalty_points", PER_TOOL, sign=-1),\\n)'
assert source.count(last) == 1, "POINTS no longer ends as this test expects"
source = source.replace(last, last[:-1] + sys.argv[4] + ")")
spec = importlib.util.spec_from_loader("jit.selection.policy", loader=None)
policy = importlib.util.module_from_spec(spec)
policy.__file__ = str(path)
sys.modules[spec.name] = policy
exec(compile(source, str(path), "exec"), policy.__dict__)

from jit.catalog.store import Store
from jit.config_files import load_config
from jit.selection.compiler import Compiler
from jit.selection.task import TaskContext
from jit.selection.tokens import EstimateCounter


class Lexical:
    '''Another model than the catalog's: the compile ranks by words alone and embeds nothing.'''
    model_name, dimension = "lexical-only", 384

    def embed(self, texts):
        raise AssertionError("nothing to embed")


def compile_once(prepare):
    with Compiler(Store(sys.argv[1]), load_config(sys.argv[2]), Lexical(), token_counter=EstimateCounter()) as c:
        if prepare:
            c.prepare()  # the view file, with the coder's shard tables, for the second compiler
        ts = c.compile(TaskContext(shard="coder", task=sys.argv[3]))
        return {"tools": [[s.name, s.tier.value, s.points, s.logic, s.final, s.reasons] for s in ts.tools],
                "legend": {k: c.text for k, c in ts.legend().items()}, "derived": list(policy.DERIVED)}


print(json.dumps([compile_once(True), compile_once(False)]))
"""


@pytest.fixture
def rules(tmp_path):
    rules = tmp_path / "rules"
    shutil.copytree(default_rules_dir(), rules)
    with (rules / "schema.dl").open("a", encoding="utf-8") as f:
        f.write(SCHEMA)
    with (rules / "policy.dl").open("a", encoding="utf-8") as f:
        f.write(POLICY)
    return rules


def test_points_the_rules_give_that_jit_does_not_read_are_a_rule_error(tmp_path, rules, embedder):
    config = write_config(tmp_path, rules=rules)
    store = build_store(tmp_path / "own.db", config, embedder)
    try:
        with pytest.raises(RuleError, match="recency_points gives points jit does not read: add it to POINTS") as e:
            Compiler(store, config, embedder, token_counter=EstimateCounter())
        assert e.value.path.endswith("schema.dl")
    finally:
        store.close()


def test_a_new_points_signal_needs_only_the_rules_and_its_row(tmp_path, rules, embedder):
    config = write_config(tmp_path, rules=rules)
    build_store(tmp_path / "own.db", config, embedder).close()
    done = subprocess.run([sys.executable, "-c", _WITH_ROWS, str(tmp_path / "own.db"), str(tmp_path / "config.json"),
                           TASK, ROWS], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    built, loaded = json.loads(done.stdout)
    assert {"recency_points", "coverage_points"} <= set(built["derived"])
    tools = {name: (tier, points, logic, reasons) for name, tier, points, logic, _final, reasons in built["tools"]}
    for _tier, points, logic, _reasons in tools.values():
        assert {"recency", "coverage", "intent"} <= points.keys()
        assert logic == min(100, max(0, sum(points.values())))
    # Per tool: every analyzed tool; per shard: the coder's categories; per task: the task's capabilities.
    assert tools["fs__read_file"][1]["recency"] == 3 and tools["pdf__make_pdf"][1]["recency"] == 0
    assert tools["fs__read_file"][1]["coverage"] == 4 and tools["fs__notes"][1]["coverage"] == 0
    assert any(points["intent"] == 6 for _tier, points, _logic, _reasons in tools.values())
    assert any(points["intent"] == 0 for _tier, points, _logic, _reasons in tools.values())
    # Each part's reason cites its rule, as the shipped parts' reasons do.
    for part, text in (("recency +3", "recency_points(T, 3) <= analyzed(T)"),
                       ("coverage +4", "coverage_points(Sh, T, 4) <= shard_category(Sh, C) & category(T, C)"),
                       ("intent +6", "intent_points(C, 6) <= task_capability(C)")):
        reason = next(r for _t, _p, _l, reasons in tools.values() for r in reasons if r.startswith(part + " ("))
        assert built["legend"][reason.removeprefix(part + " (").rstrip(")")] == text
    # A new process starts from the view file, the shard's new table in it, and selects the same.
    assert loaded == built
