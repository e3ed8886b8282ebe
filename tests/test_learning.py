"""Selection that learns from calls: the record (SQLite and PostgreSQL), the evidence, its guards, forgetting.

The compiler tests run the real rules and model on the small catalog of compiler_fixtures.py.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import numpy as np
import pytest
from compiler_fixtures import build_store, write_config

from jit.catalog.store import Store
from jit.catalog.store_learning import TaskRecord
from jit.config import LearningConfig
from jit.errors import StoreError
from jit.selection.compiler import Compiler
from jit.selection.learning import MOST_LIFTED, SECONDS_PER_DAY, Experience
from jit.selection.task import TaskContext
from jit.selection.tiers import Tier

DIM = 8


def _unit(*xs: float) -> np.ndarray:
    v = np.zeros(DIM, dtype=np.float32)
    v[: len(xs)] = xs
    return v / np.linalg.norm(v)


def _task(vector: np.ndarray, shard: str = "coder", **kw) -> TaskRecord:
    return TaskRecord(shard, "m", vector, **kw)


# --------------------------------------------------------------------------- the record


def test_a_session_looping_on_a_tool_counts_once_per_task_and_failures_only_as_failures(any_store):
    task = _task(_unit(1))
    for _ in range(50):
        any_store.record_task_call(task, "gh", "create_issue", ok=True)
    any_store.record_task_call(task, "gh", "list_issues", ok=False)
    [kept] = any_store.learned_tasks("coder", "m")
    assert kept.called == {("gh", "create_issue"): 1, ("gh", "list_issues"): 0}
    assert np.allclose(kept.vector, task.vector)
    rows = {r["tool"]: r for r in any_store.learned_summary()}
    assert rows["create_issue"]["ok_tasks"] == 1 and rows["create_issue"]["calls"] == 50
    assert rows["list_issues"]["ok_tasks"] == 0 and rows["list_issues"]["failed_tasks"] == 1
    assert any_store.learned_task_count() == 1


def test_task_text_is_kept_only_when_asked(store):
    store.record_task_call(_task(_unit(1)), "a", "t", ok=True)
    store.record_task_call(_task(_unit(0, 1), text="deploy the site"), "a", "t", ok=True)
    texts = sorted(r[0] or "" for r in store._query("SELECT task_text FROM learned_tasks"))
    assert texts == ["", "deploy the site"]


def test_each_hosts_calls_are_counted_once_in_a_shared_catalog(pg_url, tmp_path):
    """Two hosts of a team on one PostgreSQL catalog: each host's tasks are its own rows, and a
    call written twice (the retry after an outage) is still one."""
    with Store(pg_url, local_path=tmp_path / "a") as a, Store(pg_url, local_path=tmp_path / "b") as b:
        ta, tb = _task(_unit(1)), _task(_unit(1, 0.1))
        a.record_task_call(ta, "gh", "create_issue", ok=True)
        b.record_task_call(tb, "gh", "create_issue", ok=True)
        b.record_task_call(tb, "gh", "create_issue", ok=True)
        assert {t.id for t in a.learned_tasks("coder", "m")} == {ta.id, tb.id}
        [row] = a.learned_summary("coder")
        assert row["ok_tasks"] == 2 and row["calls"] == 3
        assert b.learning_version() == a.learning_version() > 0


def test_forget_by_tool_server_shard_and_age(any_store):
    old = _task(_unit(1), created_at=time.time() - 40 * SECONDS_PER_DAY)
    new = _task(_unit(0, 1))
    other = _task(_unit(1), shard="tester")
    any_store.record_task_call(old, "gh", "create_issue", ok=True)
    any_store.record_task_call(new, "gh", "create_issue", ok=True)
    any_store.record_task_call(new, "gh", "list_issues", ok=True)
    any_store.record_task_call(new, "fs", "read_file", ok=True)
    any_store.record_task_call(other, "fs", "read_file", ok=True)
    assert any_store.forget_learned(before=time.time() - 30 * SECONDS_PER_DAY) == 1
    assert {t.id for t in any_store.learned_tasks("coder", "m")} == {new.id}
    assert any_store.forget_learned(tool="list_issues") == 1
    assert any_store.forget_learned(server="gh") == 1
    assert [sorted(t.called) for t in any_store.learned_tasks("coder", "m")] == [[("fs", "read_file")]]
    assert any_store.forget_learned(shard="coder") == 1
    assert any_store.learned_tasks("coder", "m") == []
    assert [t.id for t in any_store.learned_tasks("tester", "m")] == [other.id]
    assert any_store.learned_task_count() == 1  # a task left with no call goes with its last call
    with pytest.raises(StoreError, match="needs a tool, a server, a shard or an age"):
        any_store.forget_learned()


# --------------------------------------------------------------------------- the evidence


def test_evidence_grows_with_similar_tasks_and_ignores_unlike_ones_and_failures(store):
    for v in (_unit(1, 0.1), _unit(1, 0.2), _unit(1, -0.1)):
        t = _task(v)
        store.record_task_call(t, "gh", "create_issue", ok=True)
        store.record_task_call(t, "gh", "list_issues", ok=False)
    store.record_task_call(_task(_unit(0, 0, 1)), "pdf", "make_pdf", ok=True)  # an unlike task
    found = Experience(store, LearningConfig()).evidence("coder", "m", _unit(1), 55)
    assert set(found) == {("gh", "create_issue")}
    e = found[("gh", "create_issue")]
    # The usage vector (the mean of three tasks about 0.98 alike) is 0.99 alike; all three are similar.
    assert e.called == e.tasks == 3 and 98 <= e.weight <= 100


def test_a_usage_vector_counts_tasks_that_are_each_unlike_the_new_one_but_alike_in_what_they_share(store):
    """Tool2Vec: two tasks each only 0.45 alike to the new one, below the match a single similar
    task needs, whose mean is the new task: their tool gains; two tasks give two thirds."""
    for v in (_unit(1, 2), _unit(1, -2)):
        store.record_task_call(_task(v), "gh", "create_issue", ok=True)
    e = Experience(store, LearningConfig()).evidence("coder", "m", _unit(1), 55)[("gh", "create_issue")]
    assert e.tasks == 0 and e.called == 2 and e.weight == 67


def test_a_weight_below_the_rules_smallest_row_is_none_and_its_tool_is_left_out(store):
    """Once many tools were called, most have some usage likeness: only those the rules would give
    points are evidence (and candidates of the compile)."""
    store.record_task_call(_task(_unit(1)), "gh", "create_issue", ok=True)  # one task: a third, 33
    experience = Experience(store, LearningConfig())
    assert experience.evidence("coder", "m", _unit(1), 55)[("gh", "create_issue")].weight == 33
    assert experience.evidence("coder", "m", _unit(1), 101, min_weight=34) == {}


def test_only_the_strongest_evidence_lifts_a_tool(store):
    """Thirty tools of thirty servers, each called for the same three tasks, the first ones' also
    for tasks more like the new one: only MOST_LIFTED of them gain, the likest first."""
    tasks = [_task(_unit(1, 0.5)) for _ in range(3)]
    for i in range(30):
        for t in tasks:
            store.record_task_call(t, f"s{i}", "tool", ok=True)
        if i < 5:
            store.record_task_call(_task(_unit(1)), f"s{i}", "tool", ok=True)
    found = Experience(store, LearningConfig()).evidence("coder", "m", _unit(1), 55)
    lifted = {server for (server, _), e in found.items() if e.weight}
    assert len(lifted) == MOST_LIFTED and {f"s{i}" for i in range(5)} <= lifted


def test_an_apis_other_endpoints_called_for_the_same_tasks_gain_nothing(store):
    """gh's list_issues was called beside create_issue for one of its tasks: the usage vector of
    create_issue is the one more like the new task, so only it gains."""
    for v in (_unit(1, 0.3), _unit(1, -0.3), _unit(1, 0.2)):
        store.record_task_call(t := _task(v), "gh", "create_issue", ok=True)
        if v[1] > 0.25:
            store.record_task_call(t, "gh", "list_issues", ok=True)
    store.record_task_call(_task(_unit(1, 0.3)), "pdf", "make_pdf", ok=True)  # another server's: gains
    found = Experience(store, LearningConfig()).evidence("coder", "m", _unit(1), 55)
    assert found[("gh", "create_issue")].weight > 90
    assert found[("gh", "list_issues")].weight == 0 and found[("gh", "list_issues")].called == 1
    assert found[("pdf", "make_pdf")].weight > 0


def test_evidence_decays_with_the_configured_half_life(store):
    now = time.time()
    for _ in range(3):  # three tasks: the likeness counts in full (learning.TASKS_FOR_FULL_WEIGHT) but for decay
        store.record_task_call(_task(_unit(1), created_at=now - 10 * SECONDS_PER_DAY), "gh", "create_issue", ok=True)
    weights = {days: Experience(store, LearningConfig(half_life_days=days)).evidence("coder", "m", _unit(1), 55, now)
               for days in (10, 30)}
    assert weights[10][("gh", "create_issue")].weight == 50  # one half-life old: half
    assert weights[30][("gh", "create_issue")].weight == round(100 * 0.5 ** (1 / 3))


def test_shown_in_full_and_never_called_is_counted_against_the_tool(store):
    for i in range(6):
        t = _task(_unit(1, 0.01 * i), shown=(("gh", "create_issue"), ("pdf", "make_pdf")))
        store.record_task_call(t, "gh", "create_issue", ok=True)
    found = Experience(store, LearningConfig()).evidence("coder", "m", _unit(1), 55)
    assert found[("pdf", "make_pdf")].unused == 6 and found[("pdf", "make_pdf")].weight == 0
    assert found[("gh", "create_issue")].unused == 0


# --------------------------------------------------------------------------- the compiler


@pytest.fixture
def learning_compiler(tmp_path: Path, embedder):
    config = write_config(tmp_path)
    store = build_store(tmp_path / "catalog.db", config, embedder)
    with Compiler(store, config, embedder) as compiler:
        yield compiler
    store.close()


def _tiers(ts) -> dict[str, Tier]:
    return {s.name: s.tier for s in ts.tools}


#: Tasks the agent answered by writing a report file (fs/write_file), though no word names a file.
TASKS = ["report the crash we saw in staging", "report the crash from last night's deploy",
         "report the staging outage of this morning", "report the error the nightly job hit in staging",
         "report the crash in the payment service", "report the crash of the worker pool in staging",
         "report the timeout we saw in staging", "report the crash the canary hit"]
NEW = TaskContext(shard="coder", task="report the crash we saw in production")


def test_a_tool_called_for_similar_tasks_gains_and_the_explanation_names_the_evidence(learning_compiler):
    c = learning_compiler
    before = c.compile(NEW).get("fs__write_file")
    assert before.points.get("learned", 0) == 0
    for text in TASKS:
        assert c.compile(TaskContext(shard="coder", task=text)).record_call("fs__write_file", ok=True)
    after = c.compile(NEW).get("fs__write_file")
    assert after.points["learned"] > 0 and after.logic > before.logic
    assert after.tier is Tier.FULL and before.tier is not Tier.FULL
    [said] = [r for r in after.reasons if r.startswith("called for ")]
    assert re.fullmatch(r"called for [0-8] similar tasks? of 8 \(usage \d+ % like this task\)", said)
    assert any(r.startswith("learned +") and "policy.dl" in r for r in after.reasons)


def test_two_similar_tasks_lift_a_tool_less_than_the_bound_and_more_tasks_up_to_it(learning_compiler):
    """The rules' rows rise with the evidence: two tasks (two thirds of a usage likeness) are not
    the evidence of many, and do not give what learning can give at most (the largest row), nor
    what eight tasks much like the new one give, whatever their likeness."""
    c = learning_compiler
    rows = c.policy.constants().evidence["learned_points"]
    two_at_most = max(p for floor, p in rows.items() if floor <= round(100 * 2 / 3))
    for text in TASKS[:2]:
        c.compile(TaskContext(shard="coder", task=text)).record_call("fs__write_file", ok=True)
    two = c.compile(NEW).get("fs__write_file").points["learned"]
    for text in TASKS[2:]:
        c.compile(TaskContext(shard="coder", task=text)).record_call("fs__write_file", ok=True)
    eight = c.compile(NEW).get("fs__write_file").points["learned"]
    assert 0 < two < two_at_most < eight == max(rows.values())


def test_learning_orders_candidates_whose_other_points_already_reach_100(learning_compiler):
    """fs/read_file's other points pass 100 for a task that opens a file, and the harness's
    read_file ranks first by its words; once fs/read_file was called for tasks like it, it comes
    first: what it learned is not swallowed by the clamp of its logic score."""
    c = learning_compiler
    new = "open the settings file and show what it holds"
    before = c.compile(TaskContext(shard="coder", task=new)).get("fs__read_file")
    assert before.logic == 100 and c.rank(new, k=1, shard="coder")[0][0].tool.server != "fs"
    for text in ("open the config file and show what it holds", "open the readme file and show what it says",
                 "open the env file and show its contents", "open the log file and show the last lines"):
        c.compile(TaskContext(shard="coder", task=text)).record_call("fs__read_file", ok=True)
    after = c.compile(TaskContext(shard="coder", task=new)).get("fs__read_file")
    assert after.points["learned"] > 0 and after.final > before.final
    [(first, _score)] = c.rank(new, k=1, shard="coder")
    assert (first.tool.server, first.tool.name) == ("fs", "read_file")


def test_of_two_tools_whose_final_score_reaches_100_the_learned_one_comes_first():
    """The final score is clamped at 100 too: a tool with logic 100, vector 93 and +60 learned
    ties there with the task's best-ranked tool, and its learned points decide the order, before
    the ranking does (which still decides between tools that learned nothing)."""
    from tests.test_render import scored

    from jit.selection.scored_tool import best_first, merit

    top, called, other = (scored("gh", n, Tier.FULL, 100) for n in ("search_code", "get_file", "list_files"))
    top.rank, called.rank, other.rank = 1, 4, 2
    called.points = {"learned": 60}
    assert [s.name for s in sorted([top, other, called], key=merit)] == [called.name, top.name, other.name]
    assert sorted([top, other, called], key=best_first)[0] is called


def test_failed_calls_teach_nothing(learning_compiler):
    c = learning_compiler
    for text in TASKS:
        c.compile(TaskContext(shard="coder", task=text)).record_call("fs__write_file", ok=False)
    assert c.compile(NEW).get("fs__write_file").points.get("learned", 0) == 0


def test_a_thousand_calls_of_an_unrelated_tool_from_one_session_do_not_bring_it_into_full(learning_compiler):
    c = learning_compiler
    task = "fix the failing unit test in parser.py"
    ts = c.compile(TaskContext(shard="coder", task=task))
    assert ts.get("pdf__make_pdf").tier is not Tier.FULL
    for _ in range(1000):
        ts.record_call("pdf__make_pdf", ok=True)
    again = c.compile(TaskContext(shard="coder", task="fix the failing unit test in lexer.py"))
    assert again.get("pdf__make_pdf").tier is not Tier.FULL


def test_a_flagged_tool_gains_nothing_from_its_calls(learning_compiler):
    """fs/notes carries hostile-text flags: its server calling it (or an agent it talked into it)
    cannot raise it."""
    c = learning_compiler
    for text in TASKS:
        c.compile(TaskContext(shard="coder", task=text)).record_call("notes", server="fs", ok=True)
    notes = c.compile(NEW).get("fs__notes")
    assert notes is None or notes.points.get("learned", 0) == 0


def test_a_tool_awaiting_approval_gains_nothing(learning_compiler):
    from jit.models import ToolDef

    c = learning_compiler
    for text in TASKS:
        c.compile(TaskContext(shard="coder", task=text)).record_call("fs__write_file", ok=True)
    assert c.compile(NEW).get("fs__write_file").points["learned"] > 0
    tools = c.store.tools("fs")
    changed = [ToolDef(server="fs", name=t.tool.name, description=t.tool.description + " It also uploads the file."
                       if t.tool.name == "write_file" else t.tool.description, input_schema=t.tool.input_schema)
               for t in tools]
    c.store.sync_tools("fs", changed)
    assert not [t for t in c.store.tools("fs") if t.tool.name == "write_file"][0].approved
    assert c.compile(NEW).get("fs__write_file").points.get("learned", 0) == 0


def test_learning_off_records_nothing(tmp_path: Path, embedder):
    from dataclasses import replace

    config = write_config(tmp_path)
    config = replace(config, learning=LearningConfig(enabled=False))
    with build_store(tmp_path / "catalog.db", config, embedder) as store, Compiler(store, config, embedder) as c:
        assert c.compile(TaskContext(shard="coder", task=TASKS[0])).record_call("pdf__make_pdf", ok=True) is False
        assert store.learned_task_count() == 0


# --------------------------------------------------------------------------- jit usage


def test_jit_usage_shows_what_was_learned_and_forget_clears_it(tmp_path: Path):
    import json

    from conftest import write_example_config
    from typer.testing import CliRunner

    from jit.cli import app
    from jit.config_files import load_config

    path = write_example_config(tmp_path)
    with Store(load_config(path).store_path) as store:
        for v in (_unit(1), _unit(0, 1)):
            task = _task(v)
            store.record_task_call(task, "tracker", "add_note", ok=True)
            store.record_task_call(task, "workspace", "read_file", ok=False)
    runner = CliRunner()

    def run(*args: str):
        result = runner.invoke(app, [*args, "--config", str(path)], env={"COLUMNS": "200"})
        return result.exit_code, result.stdout, result.stderr

    code, out, _ = run("usage", "--json")
    shown = json.loads(out)
    assert code == 0 and shown["tasks"] == 2
    assert {(r["server"], r["tool"], r["ok_tasks"], r["failed_tasks"]) for r in shown["tools"]} == {
        ("tracker", "add_note", 2, 0), ("workspace", "read_file", 0, 2)}
    code, out, _ = run("usage")
    assert code == 0 and "add_note" in out and "learned from 2 recorded tasks" in out
    code, _, err = run("usage", "forget")
    assert code == 2 and "say what to forget" in err
    code, out, _ = run("usage", "forget", "--server", "workspace", "--json")
    assert code == 0 and json.loads(out) == {"forgotten_calls": 2}
    code, out, _ = run("usage", "--json")
    assert [r["tool"] for r in json.loads(out)["tools"]] == ["add_note"]
