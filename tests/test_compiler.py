"""compile() on a small, fully known catalog, through the real rules, model and SQLite."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest
from compiler_fixtures import build_store, write_config

from jit.errors import SelectionError, ToolDeniedError, ToolNotFoundError
from jit.models import ServerStatus
from jit.selection.compiler import Compiler
from jit.selection.logic import default_rules_dir
from jit.selection.records import StaleSnapshot
from jit.selection.retrieve import split_task
from jit.selection.snapshot import label_rows
from jit.selection.step_words import spelled
from jit.selection.steps import FILE_STEP, FIND_MATCHING, PUSH_BRANCH, embedded, task_steps
from jit.selection.task import TaskContext
from jit.selection.tiers import Tier
from jit.selection.tokens import EstimateCounter

TASK = "Fix the failing unit test in parser.py, then open a GitHub issue describing the bug"

F, C, M, X = Tier.FULL, Tier.CONDENSED, Tier.MINIMAL, Tier.EXCLUDED
# The exact selection of each shard for TASK with the shipped rules (see compiler_fixtures.py).
GOLDEN: dict[str, dict[str, Tier]] = {
    "coder": {
        "bash": F, "fs__search_files": F, "read_file": F, "gh__create_issue": F, "gh__read_file": F,
        "ci__run_pipeline": C, "gh__list_issues": C,
        "fs__read_file": M, "fs__notes": M, "pdf__make_pdf": X,
        # "Fix ... in parser.py" changes code in place: its /write step is the local file writer
        # (file_step 'edit'), though no word names it and gh__create_issue also writes.
        "fs__write_file": F, "web__fetch": X, "web__web_search": X,
    },
    "tester": {
        "bash": F, "read_file": F, "gh__create_issue": F, "gh__read_file": F, "fs__write_file": F,
        "ci__run_pipeline": C, "gh__list_issues": C,
        "fs__read_file": M, "fs__notes": X, "pdf__make_pdf": X, "fs__search_files": X,
        "web__fetch": X, "web__web_search": X,
    },
    # Read-only roles (rules/policy.dl): nothing that writes, runs commands or sends is offered,
    # even where the task asks for it (gh__create_issue, bash, ci__run_pipeline, fs__notes, fs__write_file).
    "reviewer": {
        "fs__search_files": F, "read_file": F, "gh__read_file": F,
        "gh__list_issues": C,
        "fs__read_file": M, "pdf__make_pdf": X,
        "web__fetch": X, "web__web_search": X,
    },
    "researcher": {
        # The fix implies reading the code first (jit.selection.steps): a read the researcher may take.
        "web__fetch": F, "web__web_search": F, "gh__read_file": F, "read_file": F,
        "gh__list_issues": C,
        "fs__read_file": X, "pdf__make_pdf": X, "fs__search_files": X,
    },
}
SKELETON = {
    "coder": {"bash", "fs__search_files", "read_file"},
    "tester": {"bash", "read_file"},
    "reviewer": {"fs__search_files", "read_file"},
    "researcher": {"web__fetch", "web__web_search"},
}


@pytest.fixture(scope="module")
def env(tmp_path_factory, embedder):
    root = tmp_path_factory.mktemp("compiler")
    config = write_config(root)
    store = build_store(root / "catalog.db", config, embedder)
    compiler = Compiler(store, config, embedder, token_counter=EstimateCounter())
    yield root, config, store, compiler
    compiler.close()
    store.close()


def selection(ts) -> dict[str, Tier]:
    return {s.name: s.tier for s in ts.tools}


@pytest.mark.parametrize("shard", sorted(GOLDEN))
def test_golden_selection_per_shard(env, shard):
    _, _, _, compiler = env
    ts = compiler.compile(TaskContext(shard=shard, task=TASK))
    assert selection(ts) == GOLDEN[shard]
    assert {s.name for s in ts.tools if s.skeleton} == SKELETON[shard]
    # The fixture leaves pdf/make_pdf and the two harness tools unanalysed: compile says so. A read-only
    # role is told which steps of the task (fix: a change; the failing test: a run) it may not take.
    denied = "every tool in reach that does it is denied to {0} (read-only role: the tool can change things)"
    # The step that opens an issue is named first (jit.selection.steps), then the task's capabilities.
    may_not = [f"{shard} may not change files or data: the step 'open a GitHub issue describing the bug' needs a "
               f"tool the policy denies to {shard}",
               f"{shard} may not run commands: the task asks for /execute, and {denied.format(shard)}",
               f"{shard} may not change files or data: the task asks for /write, and {denied.format(shard)}"]
    assert ts.warnings == [*(may_not if shard in ("reviewer", "researcher") else []),
                           "3 of 14 tools have no analysis yet (an interrupted or unfinished `jit sync`?): their "
                           "text is checked for hostile instructions, but they get no points for labels or shard "
                           "affinity; run `jit sync` to analyse them"]


def test_a_change_a_refused_step_implies_has_no_warning_of_its_own_and_a_read_stays(env):
    """A read-only role may not open a pull request nor delete: the push the pull request implies
    is no second warning beside the pull request's, and the listing before a deletion by a
    pattern stays a step (what the deletion would take is still what the task is about)."""
    _, _, _, compiler = env
    ts = compiler.compile(TaskContext(shard="reviewer", task="Commit the fix and open a PR against main on GitHub."))
    steps = [w for w in ts.warnings if "the step" in w]
    assert len(steps) == 2 and "'open a PR against main on GitHub'" in steps[1]
    assert not any(PUSH_BRANCH in w for w in ts.warnings)
    ts = compiler.compile(TaskContext(shard="reviewer", task="Delete the files that start with tmp_ in the project "
                                                             "folder."))
    assert any("may not delete anything: the step 'Delete the files" in w for w in ts.warnings)
    assert any(s.step == FIND_MATCHING and s.tier is Tier.FULL for s in ts.tools)
    assert any(s.text == FIND_MATCHING for s in task_steps("Delete the files that start with tmp_ in the project "
                                                             "folder."))


def test_changing_policy_changes_selection(env, tmp_path, embedder):
    _, _, store, compiler = env
    before = compiler.compile(TaskContext(shard="researcher", task=TASK))
    coder_before = compiler.compile(TaskContext(shard="coder", task=TASK))
    rules = tmp_path / "rules"
    shutil.copytree(default_rules_dir(), rules)
    policy = rules / "policy.dl"
    text = policy.read_text(encoding="utf-8")
    # The researcher now always gets a file reader, and a failed server no longer caps its tools.
    text = text.replace("+ skeleton_slot('researcher', 'web_search')",
                        "+ skeleton_slot('researcher', 'web_search')\n+ skeleton_slot('researcher', 'read_file')")
    text = text.replace("tier_cap(T, 'condensed') <= server_status(S, 'error') & tool(T, S, N)\n", "")
    policy.write_text(text, encoding="utf-8")
    config = write_config(tmp_path, rules=rules)
    with Compiler(store, config, embedder, token_counter=EstimateCounter()) as edited:
        after = edited.compile(TaskContext(shard="researcher", task=TASK))
        coder_after = edited.compile(TaskContext(shard="coder", task=TASK))
    # Before, read_file is Full as the tool of the fix's implied read (jit.selection.steps), not as skeleton.
    assert not before.get("read_file").skeleton and before.get("read_file").step == "read the contents of a text file"
    assert after.get("read_file").skeleton and after.get("read_file").tier is Tier.FULL
    assert coder_before.get("ci__run_pipeline").tier is Tier.CONDENSED
    assert coder_after.get("ci__run_pipeline").tier is Tier.FULL


def test_offline_server_tools_stay_selectable_and_are_marked(env):
    _, _, _, compiler = env
    ts = compiler.compile(TaskContext(shard="researcher", task="search the web for the latest parser release"))
    fetch = ts.get("web__web_search")
    assert fetch is not None and fetch.offline and fetch.tier is Tier.FULL
    rendered = {t["name"]: t for t in ts.render("anthropic")}
    assert rendered["web__web_search"]["description"].startswith("[offline: server 'web' is disconnected")
    assert ts.get("web__fetch").offline


def test_idle_server_tools_are_not_offline(env):
    """A server jit closed itself after it answered (a CLI command ended) is not offline."""
    _, _, store, compiler = env
    store.set_server_status("web", ServerStatus.IDLE)
    try:
        ts = compiler.compile(TaskContext(shard="researcher", task="search the web for the latest parser release"))
        assert not ts.get("web__web_search").offline
        rendered = {t["name"]: t for t in ts.render("anthropic")}
        assert not rendered["web__web_search"]["description"].startswith("[offline")
    finally:
        store.set_server_status("web", ServerStatus.DISCONNECTED)


def test_skeleton_keeps_one_instance_per_slot_and_renders_each_tool_once(env):
    _, _, _, compiler = env
    ts = compiler.compile(TaskContext(shard="coder", task="read the file config.yaml"))
    readers = [s for s in ts.tools if s.tool_name == "read_file"]
    assert len(readers) == 3
    assert [s.name for s in readers if s.skeleton] == ["read_file"]  # the harness one
    assert any("fills the same slot" in r for s in readers if not s.skeleton for r in s.reasons)
    names = [t["name"] for t in ts.render("anthropic")]
    assert len(names) == len(set(names))


def test_flaky_tool_loses_and_proven_tool_gains_logic_points(env):
    _, _, _, compiler = env
    ts = compiler.compile(TaskContext(shard="coder", task="list the GitHub issues and create an issue"))
    assert ts.get("gh__list_issues").points["usage"] == -40
    assert ts.get("gh__create_issue").points["usage"] == 10
    flaky = ts.get("gh__list_issues")
    assert flaky.logic == max(0, min(100, sum(flaky.points.values())))
    # On the golden task the same penalty keeps it out of the Full tier.
    assert GOLDEN["coder"]["gh__list_issues"] is Tier.CONDENSED


def test_poisoned_description_cannot_reach_full(env):
    _, _, _, compiler = env
    ts = compiler.compile(TaskContext(shard="coder", task="Use fs__notes to keep notes while you fix the bug"))
    notes = ts.get("fs__notes")
    assert notes.vector == 100 and notes.wanted is Tier.FULL
    assert notes.tier is Tier.CONDENSED
    assert any("capped at condensed" in r for r in notes.reasons)
    assert "IGNORE" not in str(ts.render("anthropic")) and "IGNORE" not in ts.render("markdown")


def test_override_exclude_blocks_a_tool_even_when_named(env):
    _, _, _, compiler = env
    ts = compiler.compile(TaskContext(shard="coder", task="call gh/delete_repo on the old repository"))
    assert ts.get("gh__delete_repo") is None


def test_tool_without_analysis_is_selectable(env):
    _, _, store, compiler = env
    assert store.tool("pdf", "make_pdf").analysis is None
    ts = compiler.compile(TaskContext(shard="researcher", task="render this markdown report as a PDF document"))
    pdf = ts.get("pdf__make_pdf")
    assert pdf.tier is Tier.FULL and pdf.facts["analyzed"] is False


def test_named_tool_is_never_missed(env):
    _, _, _, compiler = env
    for task in ("afterwards run gh/list_issues", "then `list_issues` please", "use gh__list_issues"):
        ts = compiler.compile(TaskContext(shard="researcher", task=task, budget=20000))
        tool = ts.get("gh__list_issues")
        assert tool.vector == 100 and tool.rank == 1 and "named in the task" in tool.reasons


def test_intent_and_language_boost_matching_tools(env):
    _, _, _, compiler = env
    plain = compiler.compile(TaskContext(shard="tester", task="check the build"))
    boosted = compiler.compile(TaskContext(shard="tester", task="check the build", intent="test", language="python",
                                           files=("src/parser.py",)))
    assert boosted.task_facts["intent"] == ["test"] and boosted.task_facts["language"] == ["/python"]
    assert boosted.get("bash").points["capability"] == 20
    assert boosted.get("bash").logic > plain.get("bash").logic


def test_include_and_exclude_servers(env):
    _, _, _, compiler = env
    only = compiler.compile(TaskContext(shard="coder", task=TASK, include_servers=("gh", "harness")))
    assert {s.server for s in only.tools} <= {"gh", "harness"}
    without = compiler.compile(TaskContext(shard="coder", task=TASK, exclude_servers=("gh", "nosuch")))
    assert "gh" not in {s.server for s in without.tools}
    assert any("'nosuch' has no tools" in w for w in without.warnings)


def test_bad_task_contexts_raise_selection_error(env):
    _, _, _, compiler = env
    with pytest.raises(SelectionError, match="unknown shard 'pilot'"):
        compiler.compile(TaskContext(shard="pilot", task=TASK))
    with pytest.raises(SelectionError, match="budget"):
        compiler.compile(TaskContext(shard="coder", task=TASK, budget=0))
    with pytest.raises(SelectionError, match="include_servers"):
        compiler.compile(TaskContext(shard="coder", task=TASK, include_servers="gh"))  # type: ignore[arg-type]


def test_explain_gives_facts_scores_rules_and_tier_of_every_tool(env):
    _, _, _, compiler = env
    ts = compiler.compile(TaskContext(shard="coder", task=TASK))
    rows = {r["name"]: r for r in ts.explain()}
    assert set(rows) == {s.name for s in ts.tools}
    issue = rows["gh__create_issue"]
    assert issue["facts"]["usage"] == {"calls": 10, "errors": 0}
    assert issue["final"] == round(0.7 * issue["logic"] + 0.3 * issue["vector"])
    (usage,) = [r for r in issue["reasons"] if r.startswith("usage +10")]
    legend = ts.legend()
    (key,) = [k for k in issue["rules"] if f"({k})" == usage.removeprefix("usage +10 ")]
    assert usage == f"usage +10 ({key})" and legend[key].text.startswith("usage_points(T, 10) <=")
    assert rows["ci__run_pipeline"]["wanted_tier"] == "full" and rows["ci__run_pipeline"]["tier"] == "condensed"
    assert any(r.startswith("capped at condensed by tier_cap (policy.dl:") for r in rows["ci__run_pipeline"]["reasons"])


def test_explain_names_each_rule_once_in_a_legend(env):
    """A reason cites the rule that gave its points (one relevance tier, not all six), and the
    tool set's legend gives the text of exactly the rules its reasons cite."""
    _, _, _, compiler = env
    ts = compiler.compile(TaskContext(shard="coder", task=TASK))
    legend = ts.legend()
    rows = ts.explain()
    cited = {k for r in rows for k in r["rules"]}
    assert cited == set(legend) and all(k.startswith("policy.dl:") for k in cited)
    relevance = {r["name"]: [x for x in r["reasons"] if x.startswith("relevance ")] for r in rows}
    for name, (reason,) in ((n, x) for n, x in relevance.items() if x):
        points = int(reason.split()[1])
        key = reason[reason.index("(") + 1:-1]
        assert "," not in key, reason  # exactly one relevance_points row gave these points
        assert legend[key].head.startswith("relevance_points(") and legend[key].head.endswith(f", {points})")
    assert list(legend) == sorted(legend, key=lambda k: int(k.split(":")[1]))  # by line, each once


def test_resolve_maps_names_back_to_server_and_tool(env):
    _, _, _, compiler = env
    ts = compiler.compile(TaskContext(shard="coder", task=TASK))
    assert ts.resolve("gh__create_issue") == ("gh", "create_issue")
    assert ts.resolve("read_file") == ("harness", "read_file")
    with pytest.raises(ToolNotFoundError):
        ts.resolve("gh__nope")


def test_catalog_changes_update_only_what_changed(env, tmp_path, embedder):
    root, config, _, _ = env
    store = build_store(tmp_path / "own.db", config, embedder)  # this test changes its catalog
    compiler = Compiler(store, config, embedder, token_counter=EstimateCounter())
    before = compiler.compile(TaskContext(shard="coder", task="list the GitHub issues"))
    view = compiler.catalog.snapshot()
    for _ in range(60):
        store.record_call("gh", "list_issues", ok=True, latency_ms=3)
    # Calls alone change usage only: the next compile must not scan every tool's state.
    scan, store.tool_states = store.tool_states, lambda: pytest.fail("a usage change re-read the catalog")
    after = compiler.compile(TaskContext(shard="coder", task="list the GitHub issues"))
    store.tool_states = scan
    assert after.usage_version > before.usage_version and after.catalog_version == before.catalog_version
    assert before.get("gh__list_issues").points["usage"] == -40
    assert after.get("gh__list_issues").points["usage"] == 10  # 66 calls, 5 errors: proven now
    new_view = compiler.catalog.snapshot()
    assert new_view.by_id[after.get("gh__create_issue").tool.id] is view.by_id[after.get("gh__create_issue").tool.id]
    assert new_view.index is view.index  # no definition changed: the retrieval index is kept
    # and so are the tables of the servers (the ones a task names, each server's tools)
    assert view.memo.server_names is not None and new_view.memo.server_names is view.memo.server_names
    # A definition change after calls rebuilds from the catalog, usage included.
    store.set_server_status("gh", ServerStatus.DISCONNECTED, error="gone")
    offline = compiler.compile(TaskContext(shard="coder", task="list the GitHub issues"))
    assert offline.catalog_version > after.catalog_version
    assert offline.get("gh__list_issues").offline and offline.get("gh__list_issues").points["usage"] == 10
    compiler.close()
    store.close()


def test_compile_is_thread_safe(env):
    _, _, _, compiler = env
    tasks = [(shard, TASK) for shard in GOLDEN] * 3
    results: dict[int, dict[str, Tier]] = {}

    def run(i: int, shard: str, task: str) -> None:
        results[i] = selection(compiler.compile(TaskContext(shard=shard, task=task)))

    threads = [threading.Thread(target=run, args=(i, *t)) for i, t in enumerate(tasks)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [results[i] for i in range(len(tasks))] == [GOLDEN[shard] for shard, _ in tasks]


def test_rank_orders_the_catalog_with_scores_between_0_and_1(env):
    _, _, _, compiler = env
    ranked = compiler.rank("create a new GitHub issue with a title", k=5)
    assert ranked[0][0].tool.name == "create_issue"
    scores = [s for _, s in ranked]
    assert scores == sorted(scores, reverse=True) and all(0 <= s <= 1 for s in scores)
    by_shard = compiler.rank("create a new GitHub issue with a title", k=3, shard="coder")
    assert len(by_shard) == 3 and by_shard[0][0].tool.name == "create_issue"


def test_a_rule_that_reads_usage_is_asked_again_after_calls(env, tmp_path, embedder):
    root, config, _, _ = env
    store = build_store(tmp_path / "own.db", config, embedder)
    rules = tmp_path / "rules"
    shutil.copytree(default_rules_dir(), rules)
    with (rules / "policy.dl").open("a", encoding="utf-8") as f:
        f.write("\nblocked(T, 'failed three times') <= usage(T, C, E) & (E >= 3)\n")
    edited = write_config(tmp_path, rules=rules)
    with Compiler(store, edited, embedder, token_counter=EstimateCounter()) as compiler:
        assert "blocked" in compiler.catalog.derivation.usage_dependents
        before = compiler.compile(TaskContext(shard="coder", task="create a GitHub issue"))
        for _ in range(3):
            store.record_call("gh", "create_issue", ok=False, latency_ms=3, error="HTTP 500")
        after = compiler.compile(TaskContext(shard="coder", task="create a GitHub issue"))
    assert before.get("gh__create_issue").tier is Tier.FULL
    assert "gh__create_issue" not in selection(after)
    assert after.catalog_version == before.catalog_version  # the usage path, not a rebuild
    store.close()


def test_weights_thresholds_and_pool_come_from_config(env, tmp_path, embedder):
    root, _, store, _ = env
    config = write_config(tmp_path, rules=root / "rules", logic_weight=0.0, vector_weight=1.0,
                          full_threshold=95, condensed_threshold=50, minimal_threshold=5, candidate_pool=2,
                          lexical_weight=1.0)
    with Compiler(store, config, embedder, token_counter=EstimateCounter()) as c:
        ts = c.compile(TaskContext(shard="researcher", task="open a GitHub issue"))
    for s in ts.tools:
        assert s.final == s.vector
        if not s.skeleton:
            assert s.wanted is (F if s.final >= 95 else C if s.final >= 50 else M if s.final >= 5 else X)
    # lexical_weight=1 and a pool of 2: only the two best lexical matches, plus skeleton and named tools.
    assert len([s for s in ts.tools if not s.skeleton]) <= 2 * 2


class _Recording:
    """The real embedder, keeping every batch it was asked to embed."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.batches: list[list[str]] = []
        self.model_name, self.dimension = inner.model_name, inner.dimension

    def embed(self, texts):
        self.batches.append(list(texts))
        return self.inner.embed(texts)


@pytest.mark.parametrize("task_vectors", ["clauses", "whole", "both"])
def test_task_vectors_decides_what_the_model_embeds(env, tmp_path, embedder, task_vectors):
    root, _, store, _ = env
    config = write_config(tmp_path, rules=root / "rules", task_vectors=task_vectors)
    recording = _Recording(embedder)
    with Compiler(store, config, recording, token_counter=EstimateCounter()) as c:
        ts = c.compile(TaskContext(shard="coder", task=TASK))
        single = c.compile(TaskContext(shard="coder", task="list the open issues"))
    clauses = split_task(TASK)
    assert len(clauses) == 2
    queries = {"clauses": clauses, "whole": [TASK], "both": [TASK, *clauses]}[task_vectors]
    # with the texts of the task's steps (jit.selection.steps), each once, in the same batch; not that
    # of the fix in parser.py, a step of the policy's file tool
    assert recording.batches[0] == list(dict.fromkeys([*queries, *(spelled(s.text) for s in task_steps(TASK)
                                                                   if s.by != FILE_STEP)]))
    assert "read the contents of a text file" in recording.batches[0]  # the fix's implied read
    # "Fix ... in parser.py" changes code in place: the policy's text for that step's tool, once.
    assert recording.batches[1] == ["edit a text file by replacing lines in it"]
    # one clause: the task itself, whatever the mode, and its one step is that text, embedded once
    assert recording.batches[2:] == [["list the open issues"]]
    assert selection(ts)["fs__write_file"] is F  # the step's tool, whatever the mode
    assert single.tools


def test_max_full_tools_caps_the_full_tier(env, tmp_path, embedder):
    root, _, store, _ = env
    # No extra places for the tools the task wants most (strong_full_tools): the count alone.
    config = write_config(tmp_path, rules=root / "rules", max_full_tools=3, strong_full_tools=0)
    with Compiler(store, config, embedder, token_counter=EstimateCounter()) as c:
        ts = c.compile(TaskContext(shard="coder", task=TASK, budget=20000))
    full = ts.tier(Tier.FULL)
    assert sum(s.skeleton for s in full) == 3  # the three skeleton tools fill it
    # beside them only the tools of the task's steps, which the cap does not take back
    assert all(s.skeleton or s.step for s in full) and any(s.step for s in full)
    demoted = [s for s in ts.tools if any("max_full_tools=3" in r for r in s.reasons)]
    assert demoted and all(s.tier is Tier.CONDENSED for s in demoted)


def test_missing_rules_directory_in_a_config_file_is_an_error(tmp_path):
    from jit.errors import ConfigError

    with pytest.raises(ConfigError) as info:
        write_config(tmp_path, rules=tmp_path / "no-rules")
    assert info.value.key == "rules" and "does not exist" in info.value.message


def test_a_rules_directory_removed_after_loading_is_a_rule_error(tmp_path, env, embedder):
    from jit.errors import RuleError

    _, _, store, _ = env
    (tmp_path / "gone").mkdir()
    config = write_config(tmp_path, rules=tmp_path / "gone")
    (tmp_path / "gone").rmdir()
    with pytest.raises(RuleError, match="rules directory not found"):
        Compiler(store, config, embedder)


def test_rules_fingerprint_is_reported(env):
    _, _, _, compiler = env
    ts = compiler.compile(TaskContext(shard="coder", task=TASK))
    assert ts.rules == compiler.rules.fingerprint and len(ts.rules) == 16
    assert Path(compiler.rules.directory).name == "rules"


def test_shards_spawned_for_one_task_embed_it_once(env, embedder):
    _, config, store, _ = env
    calls: list[list[str]] = []

    class Counting:
        model_name = embedder.model_name
        dimension = embedder.dimension

        def embed(self, texts):
            calls.append(list(texts))
            return embedder.embed(texts)

    task = "read the parser source, then run the failing test and search the web for the error"
    with Compiler(store, config, Counting(), token_counter=EstimateCounter()) as compiler:
        sets = [compiler.compile(TaskContext(shard=s, task=task)) for s in ("coder", "tester", "reviewer")]
    # one batch, once: the task, then the texts of its steps (jit.selection.steps)
    assert len(calls) == 1 and calls[0][0] == task and len(calls[0]) == len(set(calls[0]))
    assert all(ts.tools for ts in sets)


def test_a_labels_rows_are_those_of_its_tools_kept_in_the_snapshot(env):
    """The rows of a capability's tools, which the steps' checks ask a mask over at once: those of
    the snapshot's labels, ascending, computed once per snapshot."""
    _, _, _, compiler = env
    compiler.compile(TaskContext(shard="coder", task=TASK))
    view = compiler.catalog.snapshot()
    assert view.labels["capability"]
    for cap, ids in view.labels["capability"].items():
        rows = label_rows(view, "capability", cap)
        assert rows.tolist() == sorted(view.row_of[t] for t in ids if t in view.row_of) and len(rows)
        assert label_rows(view, "capability", cap) is rows
    assert label_rows(view, "capability", "/no-such-capability").tolist() == []


def test_a_changed_tool_reloads_only_itself(env, tmp_path, embedder, monkeypatch):
    from compiler_fixtures import CATALOG

    from jit.models import ToolDef

    _, config, _, _ = env
    store = build_store(tmp_path / "own.db", config, embedder)  # this test changes its catalog
    with Compiler(store, config, embedder, token_counter=EstimateCounter()) as compiler:
        before = compiler.compile(TaskContext(shard="coder", task=TASK))
        old = compiler.catalog.snapshot()
        defs = [ToolDef(server="fs", name=n, description=d + (" Now also in bulk." if n == "notes" else ""),
                        input_schema=sch) for n, d, sch, _ in CATALOG["fs"][1]]
        before_sync = dict(old.by_id.items())  # the old snapshot reads definitions on demand: keep them now
        store.sync_tools("fs", defs)
        notes = next(i for i, st in before_sync.items() if (st.tool.server, st.tool.name) == ("fs", "notes"))
        loaded: list[set[int] | None] = []
        asked: list[list] = []
        tool_records, query_many = store.tool_records, compiler.catalog.engine.query_many
        monkeypatch.setattr(store, "tool_records",
                            lambda ids=None: loaded.append(None if ids is None else set(ids)) or tool_records(ids))
        vectors_of: list[list[int]] = []
        vector_matrix = store.vector_matrix
        monkeypatch.setattr(store, "tool_record_batches", lambda *a, **k: (_ for _ in ()).throw(AssertionError))
        monkeypatch.setattr(store, "vector_matrix",
                            lambda ids=None: vectors_of.append(None if ids is None else sorted(ids)) or vector_matrix(ids))
        monkeypatch.setattr(compiler.catalog.engine, "query_many", lambda qs: asked.append(list(qs)) or query_many(qs))
        after = compiler.compile(TaskContext(shard="coder", task=TASK))
        new = compiler.catalog.snapshot()
    assert after.catalog_version > before.catalog_version and new is not old
    # The changed tool is read for its facts, and for the retrieval index, patched: no other
    # tool's definition or vector is read.
    assert loaded == [{notes}] and vectors_of == [[notes]]
    # The rules were asked only about classes the change made (bound: a class id, never a free
    # tool), and only for the shards a compile had asked for; a new description in an unchanged
    # analysis makes none.
    per_tool = [q for batch in asked for q in batch if q[0] in ("blocked", "offline", "tier_cap", "usage_points")]
    assert all(isinstance(q[1][0], int) and q[1][0] < 0 for q in per_tool)
    assert {q[1][0] for batch in asked for q in batch if q[0] == "shard_points"} <= {"coder"}
    assert "bulk" in new.by_id[notes].tool.description and "bulk" not in before_sync[notes].tool.description
    assert all(new.by_id[i] == st for i, st in before_sync.items() if i != notes)
    with pytest.raises(StaleSnapshot):  # the old snapshot cannot give a definition it no longer has
        old.by_id[notes]
    assert new.index is not old.index  # a definition changed: the lexical index is rebuilt
    # Memo entries of the other tools carry over.
    assert {i: v for i, v in new.memo.summaries.items() if i != notes} == \
        {i: v for i, v in old.memo.summaries.items() if i != notes}
    store.close()


def test_a_published_snapshot_is_never_written_only_its_memo(env, embedder):
    """Compiles for a shard not asked before fill the snapshot's memo, never its fields."""
    import copy
    from dataclasses import fields

    from jit.selection.snapshot import CatalogSnapshot

    from jit.selection.viewfile import ViewFiles

    _, config, store, _ = env
    for path in ViewFiles(store.path).directory.glob("*.view"):  # a view file may carry every shard's tables
        path.unlink()
    with Compiler(store, config, embedder, token_counter=EstimateCounter()) as compiler:
        compiler.compile(TaskContext(shard="coder", task=TASK))
        snap = compiler.catalog.snapshot()
        # The records and analyses are read on first use: what they give must not change.
        kept = {f.name: copy.deepcopy(getattr(snap, f.name)) for f in fields(CatalogSnapshot)
                if f.name not in ("memo", "index", "by_id", "analyses")}
        given = (dict(snap.by_id.items()), dict(snap.analyses.items()))
        assert set(snap.memo.shards) == {"coder"}
        with pytest.raises(AttributeError):
            snap.blocked = {}  # type: ignore[misc]
        for shard in ("tester", "reviewer", "researcher"):
            compiler.compile(TaskContext(shard=shard, task=TASK))
        assert compiler.catalog.snapshot() is snap
        assert {f: getattr(snap, f) for f in kept} == kept
        assert (dict(snap.by_id.items()), dict(snap.analyses.items())) == given
        assert set(snap.memo.shards) == set(GOLDEN)


def test_a_stale_snapshot_does_not_keep_the_newer_engines_shard_tables(env, tmp_path, embedder):
    _, config, _, _ = env
    store = build_store(tmp_path / "own.db", config, embedder)
    with Compiler(store, config, embedder, token_counter=EstimateCounter()) as compiler:
        old = compiler.catalog.snapshot()
        store.set_server_status("gh", ServerStatus.DISCONNECTED, error="gone")
        new = compiler.catalog.snapshot()
        assert new is not old
        tables = compiler.catalog.shard_tables(old, "tester")  # a compile that began before the change
        assert "tester" not in old.memo.shards and tables.points["shard_points"].keys() <= old.by_id.keys()
        compiler.catalog.shard_tables(new, "tester")
        assert "tester" in new.memo.shards
    store.close()


def test_an_untuned_process_keeps_its_collector_and_blas_threads(env, embedder, monkeypatch):
    """A library object changes no process-wide state: nothing is paused, frozen or limited."""
    import gc

    from jit import process
    from jit.selection.catalog_view import CatalogView

    _, config, store, _ = env
    during: list[bool] = []
    build, load = CatalogView._build, CatalogView._load_saved  # built from the catalog or from its view file
    monkeypatch.setattr(CatalogView, "_build", lambda self, *a: during.append(gc.isenabled()) or build(self, *a))
    monkeypatch.setattr(CatalogView, "_load_saved", lambda self: during.append(gc.isenabled()) or load(self))
    monkeypatch.setattr(process, "_blas", lambda: pytest.fail("an untuned process got a BLAS limit"))
    assert process.current() == process.Tuning()
    gc.unfreeze()
    with Compiler(store, config, embedder, token_counter=EstimateCounter()) as compiler:
        assert compiler.compile(TaskContext(shard="coder", task=TASK)).tools
    assert during and all(during) and gc.isenabled() and gc.get_freeze_count() == 0


def test_a_tuned_process_pauses_the_collector_for_a_build_and_freezes_the_snapshot(env, tmp_path, embedder,
                                                                                    monkeypatch):
    import gc

    from jit import process
    from jit.selection.catalog_view import CatalogView

    _, config, _, _ = env
    store = build_store(tmp_path / "own.db", config, embedder)  # this test changes its catalog: no view file yet
    during: list[bool] = []
    build = CatalogView._build
    monkeypatch.setattr(CatalogView, "_build", lambda self, *a: during.append(gc.isenabled()) or build(self, *a))
    gc.unfreeze()
    try:
        with process.tuned(), Compiler(store, config, embedder, token_counter=EstimateCounter()) as c:
            c.compile(TaskContext(shard="coder", task=TASK))
            assert during == [False] and gc.isenabled() and gc.get_freeze_count() > 0
            # A collector the host turned off stays off.
            gc.disable()
            store.record_call("fs", "notes", ok=True, latency_ms=1.0)  # usage only: no build
            store.set_server_status("gh", ServerStatus.DISCONNECTED, error="gone")  # a catalog change: a build
            c.compile(TaskContext(shard="coder", task=TASK))
            assert during == [False, False] and not gc.isenabled()
        # Leaving the owner's block thaws: the closed compiler's cyclic facts can be collected.
        assert gc.get_freeze_count() == 0 and process.current() == process.Tuning()
    finally:
        gc.enable()
        gc.unfreeze()
        store.close()


def test_closing_one_compiler_does_not_thaw_another_compilers_snapshot(env, embedder, monkeypatch):
    import gc

    from jit import process

    _, config, store, _ = env
    collections: list[int] = []
    collect = gc.collect
    monkeypatch.setattr(gc, "collect", lambda *a: collections.append(1) or collect(*a))
    gc.unfreeze()
    try:
        with process.tuned():
            a = Compiler(store, config, embedder, token_counter=EstimateCounter())
            a.compile(TaskContext(shard="coder", task=TASK))
            live = a.catalog.snapshot().by_id
            with Compiler(store, config, embedder, token_counter=EstimateCounter()) as b:
                b.compile(TaskContext(shard="coder", task=TASK))
            # b is closed: nothing thawed, a's snapshot is still out of the collector's reach.
            assert gc.get_freeze_count() > 0 and not any(o is live for o in gc.get_objects())
            assert collections == []
            # The next build, whichever compiler runs it, collects once and freezes again.
            with Compiler(store, config, embedder, token_counter=EstimateCounter()) as c:
                c.compile(TaskContext(shard="coder", task=TASK))
            assert len(collections) == 1
            assert gc.get_freeze_count() > 0 and not any(o is live for o in gc.get_objects())
            assert a.compile(TaskContext(shard="coder", task=TASK)).tools
            a.close()
    finally:
        gc.unfreeze()


def test_an_unfilled_skeleton_slot_is_a_warning(env, tmp_path, embedder):
    """The tester always gets something that runs commands; a config that denies every one of
    them leaves the slot empty, and the tool set says so (it does not silently drop it)."""
    from dataclasses import replace

    root, config, store, _ = env
    shards = dict(config.shards)
    shards["tester"] = shards["tester"].model_copy(update={"deny": ["capability:/execute"]})
    with Compiler(store, replace(config, shards=shards), embedder, token_counter=EstimateCounter()) as compiler:
        ts = compiler.compile(TaskContext(shard="tester", task="run the test suite"))
        assert "tester: no tool fills the skeleton slot 'run_command'" in ts.warnings
        assert not {"bash", "ci__run_pipeline"} & {s.name for s in ts.tools}
        with pytest.raises(ToolDeniedError) as denied:
            ts.resolve("bash")
        assert denied.value.to_dict()["reasons"] == ["denied by config: capability"]
        assert compiler.denied("tester", "ci", "run_pipeline") == ("denied by config: capability",)
        named = compiler.compile(TaskContext(shard="tester", task="run `bash` to execute the test suite"))
        assert "bash is denied for tester: denied by config: capability" in named.warnings
    untouched = Compiler(store, config, embedder, token_counter=EstimateCounter())
    with untouched:
        assert not any("skeleton slot" in w for w in untouched.compile(TaskContext(shard="tester", task=TASK)).warnings)


def test_a_compile_reads_the_tool_matrix_once_for_the_task_and_its_steps(env, embedder, monkeypatch):
    """Retrieval and the steps share one pass over the matrix: a (n, q) product with a column per
    query and per step (but the policy's file tool's), not one product each; and another shard
    spawned for the task reads none (the snapshot keeps the pass)."""
    import jit.selection.retrieve as retrieve
    from jit.selection.compiler import _queries

    _, config, store, _ = env
    products: list[tuple[int, int]] = []
    real = retrieve.matrix_product

    def counted(matrix, right):
        products.append(right.shape)
        return real(matrix, right)

    monkeypatch.setattr(retrieve, "matrix_product", counted)
    with Compiler(store, config, embedder, token_counter=EstimateCounter()) as compiler:
        ts = compiler.compile(TaskContext(shard="coder", task=TASK))
        steps = task_steps(TASK)
        assert len(steps) >= 2 and any(s.step for s in ts.tools)
        assert len(products) == 1
        assert products[0][1] == len(compiler._query_vectors(_queries(TASK))) + len([s for s in steps if embedded(s)])
        compiler.compile(TaskContext(shard="tester", task=TASK))
    assert len(products) == 1


def test_retrieval_scores_a_task_without_the_clause_that_forbids_something(env):
    """"Don't delete the repo" lifts no deleting tool: every candidate's retrieval score is the one
    of the task without that clause."""
    _, _, _, compiler = env
    told = compiler.compile(TaskContext(shard="coder", task="List the open issues of acme/shop. Don't delete the repo."))
    plain = compiler.compile(TaskContext(shard="coder", task="List the open issues of acme/shop."))
    vector = {s.name: s.vector for s in plain.tools}
    assert {s.name: s.vector for s in told.tools if s.name in vector} == vector
