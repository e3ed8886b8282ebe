"""The policy's judgement on real tool lists (bench/data/roles/: 13 recorded MCP servers).

Issue #15: hosted systems need the task to point at them, Full needs evidence, a step the
task implies gets its tool, readOnlyHint false is a change, and a step no tool answers is
said. Real catalog (SQLite), the offline analyzer, the real model, the shipped rules.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from bench.eval_roles import DATA, load_tools, make_pool
from jit.analysis.offline_analyzer import OfflineAnalyzer
from jit.config import AvailableTools, Config
from jit.evaluation.evaluate import build_catalog
from jit.selection.compiler import Compiler
from jit.selection.task import TaskContext
from jit.selection.tiers import Tier
from jit.selection.tokens import EstimateCounter

HOSTED = ("github", "gitlab", "slack", "postgres")


@pytest.fixture(scope="module")
def compiler(tmp_path_factory, embedder):
    root = tmp_path_factory.mktemp("roles")
    config = replace(Config.default(root), available_tools=AvailableTools())
    store = build_catalog(make_pool(load_tools(), DATA / "tools.jsonl"), root / "roles.db", config, embedder,
                          analyzer=OfflineAnalyzer(config.shards))
    with Compiler(store, config, embedder, token_counter=EstimateCounter()) as c:
        yield c
    store.close()


def tiers(ts) -> dict[str, Tier]:
    return {f"{s.server}/{s.tool_name}": s.tier for s in ts.tools}


def test_a_local_fix_gets_local_tools_and_its_implied_edit(compiler):
    ts = compiler.compile(TaskContext(shard="coder", task="Fix the off-by-one error in src/pagination.py: the last "
                                      "page is never returned. Stage the fix when you're done."))
    full = [s for s in ts.tools if s.tier is Tier.FULL]
    # No word names GitHub, GitLab, Slack or a database: none of their tools is Full, and each
    # lost the policy's system points.
    assert not [s.name for s in full if s.server in HOSTED]
    assert all(s.points["system"] == -30 for s in ts.tools if s.server in HOSTED)
    # "fix" asks for a change no word names a tool for, and the task is about code: the step is an
    # edit of a local file (file_step 'edit'), held Full ahead of max_full_tools; "stage the fix" is
    # git's staging, read in git's words.
    step = [s for s in full if s.step]
    assert [(s.name, s.reasons[0]) for s in step] == [
        ("filesystem__edit_file", "tool of the step /write of the code the task changes"),
        ("git__git_add", "tool of the step 'stage the changed files: add file contents to the staging area'")]
    assert ts.task_facts["implied"] == ["/write"]  # a step, not a label: it scores no tool up
    # A fix that is not about code in place (a remote pull request's description) gets no such step.
    remote = compiler.compile(TaskContext(shard="coder", task="Open a pull request on GitHub from fix/csv-upload "
                                          "into main in acme/shop and describe the fix."))
    assert not [s for s in remote.tools if s.step.startswith("/")]
    # Its own step is opening the pull request (jit.selection.steps): that tool, Full.
    assert remote.get("github__create_pull_request").tier is Tier.FULL
    assert remote.get("github__create_pull_request").step.startswith("Open a pull request")


def test_naming_a_system_or_its_words_points_the_task_at_it(compiler):
    named = compiler.compile(TaskContext(shard="coder", task="Open a pull request on GitHub from fix/csv-upload "
                                         "into main in acme/shop and describe the fix."))
    assert sorted(named.task_facts["word"]) == ["github", "pr"]
    assert tiers(named)["github/create_pull_request"] is Tier.FULL
    # A pull request ('pr') points at every code host; nothing points at the chat or the database.
    points = {s.server: s.points["system"] for s in named.tools}
    assert (points["github"], points["gitlab"], points["slack"], points["postgres"]) == (0, 0, -30, -30)
    # "database" is a system word of every database system in the policy, postgres among them.
    db = compiler.compile(TaskContext(shard="tester", task="After the seed script ran, check the test database: are "
                                      "there any orders with a negative quantity?"))
    assert all(s.points["system"] == 0 for s in db.tools if s.server == "postgres")
    assert tiers(db)["postgres/query"] in (Tier.FULL, Tier.CONDENSED)
    # A channel named by its #name is a channel: it points at the chat systems, and their tool that
    # lists the channels does the step of finding its id.
    chat = compiler.compile(TaskContext(shard="tester", task="Post tonight's e2e results to #qa-nightly."))
    assert "channel" in chat.task_facts["word"]
    assert all(s.points["system"] == 0 for s in chat.tools if s.server == "slack")
    assert tiers(chat)["slack/slack_list_channels"] is Tier.FULL
    # A repository named by its owner and name, GitHub unnamed: it points at the code hosts, not the chat.
    repo = compiler.compile(TaskContext(shard="researcher", task="Which open issues in acme/shop mention 'timeout'?"))
    assert "repo_slug" in repo.task_facts["word"]
    points = {s.server: s.points["system"] for s in repo.tools}
    assert (points["github"], points["gitlab"], points["slack"]) == (0, 0, -30)


def test_full_needs_evidence(compiler, tmp_path):
    """full_match holds a tool at Condensed when neither its own match nor the task's labels
    back it. The shipped bar (10) is low; a policy that raises it to 30 shows the rule at work."""
    import shutil

    from jit.selection.logic import RuleSet, default_rules_dir

    rules = tmp_path / "rules"
    shutil.copytree(default_rules_dir(), rules)
    policy = rules / "policy.dl"
    policy.write_text(policy.read_text().replace("+ full_match(10)", "+ full_match(30)"))
    task = TaskContext(shard="researcher", task="How long is the drive from Lyon to Geneva?")
    with Compiler(compiler.store, compiler.config, compiler.embedder, token_counter=EstimateCounter(),
                  rules=RuleSet.load(rules)) as strict:
        ts = strict.compile(task)
    # (a step's tool is Full whatever its match: "how long is the drive" asks a travel time)
    held = [s for s in ts.tools if any(r.startswith("condensed: match ") for r in s.reasons)
            and not s.reasons[0].startswith("tool of the step")]
    assert held, "a tool whose score asked for Full but whose own match is weak is held at Condensed"
    for s in held:
        assert s.wanted is Tier.CONDENSED and s.match < 30 and not s.skeleton
        assert not s.points["capability"] and not s.points["category"]
    for s in ts.tools:
        if s.tier is Tier.FULL and not s.skeleton and not s.reasons[0].startswith("tool of the step"):
            assert s.match >= 30 or s.points["capability"] or s.points["category"], s.name
    assert len([s for s in ts.tools if s.tier is Tier.FULL]) < len(compiler.compile(task).tier(Tier.FULL))


def test_a_server_that_says_readonlyhint_false_makes_the_tool_a_change(compiler):
    # git_checkout says readOnlyHint: false and destructiveHint: false; the analyzer reads no
    # write in "Switches branches": the server's word decides.
    assert compiler.denied("reviewer", "git", "git_checkout") == ("read-only role: the tool can change things",)
    assert compiler.denied("reviewer", "git", "git_log") == ()
    assert compiler.denied("coder", "git", "git_checkout") == ()


def test_a_step_no_tool_in_reach_can_do_is_a_warning(compiler):
    task = "Run the test suite and tell me which tests fail."
    only_files = compiler.compile(TaskContext(shard="tester", task=task, include_servers=["filesystem", "git"]))
    assert "tester: the task asks for /execute and no tool in reach does it" in only_files.warnings
    # The whole catalog has a tool that executes, Postgres's query, of a database the task never mentions: it is
    # not the step's tool, and the step says no tool in reach can run commands.
    whole = compiler.compile(TaskContext(shard="tester", task=task))
    assert not any(s.tier is Tier.FULL and "/execute" in s.facts["capabilities"] for s in whole.tools)
    assert any(w.startswith("tester: no tool in reach can run commands for the step") for w in whole.warnings)
    # Tools the role is denied: not a gap in the catalog, but a step the role may not take. Said
    # (issue #19, item 18), and still no such tool in any tier.
    review = compiler.compile(TaskContext(shard="reviewer", task="Fix the typo in README.md and commit it."))
    assert not any("no tool in reach" in w for w in review.warnings)
    assert any(w.startswith("reviewer may not change files or data: the task asks for /write, and every tool in "
                            "reach that does it is denied to reviewer (read-only role") for w in review.warnings)
    assert not any("/write" in s.facts["capabilities"] for s in review.tools if s.tier is not Tier.EXCLUDED)


def test_a_step_the_role_may_not_take_is_a_warning_naming_it(compiler):
    # Within Slack and the web: the whole catalog also holds a demo tool the analyzer tags /send
    # (everything/get-annotated-message), which a researcher may have.
    ts = compiler.compile(TaskContext(shard="researcher", task="Post a summary of the release notes to Slack.",
                                      include_servers=["slack", "fetch", "brave-search"]))
    assert any(w.startswith("researcher may not send messages: the task asks for /send") for w in ts.warnings), \
        ts.warnings
    assert not any("/send" in s.facts["capabilities"] for s in ts.tools if s.tier is not Tier.EXCLUDED)
    coder = compiler.compile(TaskContext(shard="coder", task="Post a summary of the release notes to Slack.",
                                         include_servers=["slack", "fetch", "brave-search"]))
    assert not any("may not send" in w for w in coder.warnings)


def test_a_file_the_task_writes_gets_a_file_writer_in_full(compiler):
    """"save it to notes/x.md" names the step and where it happens: the policy's file_step gives it
    the filesystem tool nearest to writing a file, Full even when it ranks low for the task, and
    ahead of the Full cap and the budget (the step is certain: the task names the file)."""
    task = "Find out which GitHub issues in acme/shop mention flaky tests and save a list of them to notes/flaky-tests.md"
    ts = compiler.compile(TaskContext(shard="coder", task=task))
    # The file's step (a capability); the clauses' steps are named by their text (jit.selection.steps).
    step = [s for s in ts.tools if s.step.startswith("/")]
    assert [(s.server, s.tool_name, s.tier, s.step) for s in step] == [("filesystem", "write_file", Tier.FULL, "/write")]
    assert any(s.server == "github" and s.tier is Tier.FULL and s.step.startswith("Find out which GitHub issues")
               for s in ts.tools)
    assert step[0].reasons[0] == "tool of the step /write of notes/flaky-tests.md"
    assert ts.task_facts["file_target"] == ["notes/flaky-tests.md"]
    # A budget that leaves room for little: the file writer keeps Full before better-ranked tools.
    better = [s.name for s in ts.tools if s.tier is Tier.FULL and not s.skeleton and s.final > step[0].final]
    assert better  # tools that outscore it for the task
    tight = compiler.compile(TaskContext(shard="coder", task=task, budget=500))
    assert [s.name for s in tight.tools if s.tier is Tier.FULL and not s.skeleton] == ["filesystem__write_file"]
    # A read-only role may not write: nothing is made Full for the step, nothing that writes is shown.
    review = compiler.compile(TaskContext(shard="reviewer", task=task))
    assert not [s for s in review.tools if s.step.startswith("/") or s.step.startswith("save")]
    assert "filesystem/write_file" not in {f"{s.server}/{s.tool_name}" for s in review.tools
                                           if s.tier is not Tier.EXCLUDED}
    # No file named: the step is read from the verb as before, and no tool is held Full for it.
    plain = compiler.compile(TaskContext(shard="coder", task="Write a short summary of the flaky tests."))
    assert not [s for s in plain.tools if s.step.startswith("/")] and "file_target" not in plain.task_facts


def test_a_file_step_passes_over_a_writer_the_rules_keep_out_of_full(compiler, tmp_path):
    """A file writer capped below Full (a flag, a rule) cannot be the step's tool: the next
    nearest file tool that may be Full takes the step."""
    import shutil

    from jit.selection.logic import RuleSet, default_rules_dir

    rules = tmp_path / "rules"
    shutil.copytree(default_rules_dir(), rules)
    policy = rules / "policy.dl"
    policy.write_text(policy.read_text() + "\ntier_cap(T, 'condensed') <= tool(T, 'filesystem', 'write_file')\n")
    task = TaskContext(shard="coder", task="Write a short changelog entry for 2.4.1 and save it to CHANGES.md")
    with Compiler(compiler.store, compiler.config, compiler.embedder, token_counter=EstimateCounter(),
                  rules=RuleSet.load(rules)) as capped:
        ts = capped.compile(task)
    step = [s for s in ts.tools if s.step]
    assert len(step) == 1 and step[0].server == "filesystem" and step[0].tool_name != "write_file"
    assert step[0].tier is Tier.FULL and step[0].reasons[0] == "tool of the step /write of CHANGES.md"
    assert tiers(ts)["filesystem/write_file"] is not Tier.FULL
    assert [s.tool_name for s in compiler.compile(task).tools if s.step] == ["write_file"]


def test_a_skeleton_slot_goes_to_a_local_tool_before_a_hosted_system_s(compiler):
    """The reviewer's search_code slot: github's search_code fits the role better (shard points)
    than the filesystem's search_files, but the skeleton is every task's and a hosted system
    needs the task to point at it, so the local tool takes the slot."""
    ts = compiler.compile(TaskContext(shard="reviewer", task="Review my unstaged changes"))
    local, hosted = ts.get("filesystem__search_files"), ts.get("github__search_code")
    assert hosted.points["shard"] > local.points["shard"]
    assert local.skeleton and "skeleton for reviewer (slot search_code)" in local.reasons
    assert not hosted.skeleton and "not skeleton: filesystem__search_files fills the same slot" in hosted.reasons


def test_a_tool_that_needs_a_places_coordinates_brings_the_tool_that_finds_them(compiler):
    # maps_elevation requires latitude and longitude; a task names its places by name: the tool that
    # turns a name into coordinates (maps_geocode) is Full beside it, as a producer of what it needs.
    ts = compiler.compile(TaskContext(shard="researcher", task="How high above sea level are the Hörnli hut "
                                      "and the Solvay hut on the Matterhorn?"))
    assert ts.get("google-maps__maps_elevation").tier is Tier.FULL
    geocode = ts.get("google-maps__maps_geocode")
    assert geocode.tier is Tier.FULL and geocode.step == "the identifier google-maps__maps_elevation needs"
    # A task that gives the coordinates needs no geocoding for them.
    given = compiler.compile(TaskContext(shard="researcher", task="What is the elevation at 45.9822, 7.6795?"))
    assert given.get("google-maps__maps_elevation").tier is Tier.FULL
    assert not given.get("google-maps__maps_geocode").step


def test_a_test_added_to_an_existing_file_is_an_edit_of_it(compiler):
    # "Add … to tests/test_orders.py": the file is there; its step is the editor, not a writer that replaces it.
    ts = compiler.compile(TaskContext(shard="tester",
                                      task="Add a test for the empty-cart case to tests/test_orders.py"))
    step = [s for s in ts.tools if s.step.startswith("/write")]
    assert [(s.name, s.tier) for s in step] == [("filesystem__edit_file", Tier.FULL)]
    assert step[0].reasons[0] == "tool of the step /write of tests/test_orders.py"
    made = compiler.compile(TaskContext(shard="coder", task="Save the release notes to notes/release.md"))
    assert [s.name for s in made.tools if s.step.startswith("/write")] == ["filesystem__write_file"]


def test_a_repository_the_task_names_by_owner_and_name_needs_no_search_for_it(compiler):
    # get_pull_request requires its owner and repo: "acme/web" gives both, so search_repositories is no producer.
    ts = compiler.compile(TaskContext(shard="reviewer", task="Read PR #12 in acme/web and tell me what it changes"))
    assert ts.get("github__get_pull_request").tier is Tier.FULL
    assert not ts.get("github__search_repositories").step


def test_a_hosted_systems_tool_the_task_does_not_point_at_is_no_steps_tool(compiler):
    # "run the unit tests" asks for /execute; no tool in reach runs commands, and Postgres's query, the one tool
    # that executes, belongs to a database the task never mentions: it is not taken for the step.
    ts = compiler.compile(TaskContext(shard="tester", task="Run the unit tests for the parser module and tell me "
                                      "what fails"))
    query = ts.get("postgres__query")
    assert query is None or (query.tier is not Tier.FULL and not query.step)
    assert any("run commands" in w for w in ts.warnings)
    # A task that points at the database gets it for the step.
    db = compiler.compile(TaskContext(shard="tester", task="Run a SQL query on the Postgres database: count the "
                                      "orders placed today"))
    assert db.get("postgres__query").tier is Tier.FULL


def test_the_verb_pull_points_at_no_code_host_and_a_pull_request_does(compiler):
    pulled = compiler.compile(TaskContext(shard="researcher", task="Pull last quarter's signup numbers from the "
                                          "analytics database for my report"))
    assert "pr" not in pulled.task_facts.get("word", [])
    assert not [s.name for s in pulled.tools if s.tier is Tier.FULL and s.server in ("github", "gitlab")]
    review = compiler.compile(TaskContext(shard="reviewer", task="Summarize the open pull requests"))
    assert "pr" in review.task_facts["word"]
    assert all(s.points["system"] >= 0 for s in review.tools if s.server == "github")


def test_an_sql_statement_points_at_the_databases_and_a_hosted_best_is_no_steps_tool(compiler):
    ts = compiler.compile(TaskContext(shard="tester", task="Run SELECT * FROM users ORDER BY created_at DESC LIMIT 5 "
                                      "and tell me who signed up last"))
    assert "sql" in ts.task_facts["word"] and ts.get("postgres__query").tier is Tier.FULL
    # "let the team know" asks for /send, whose best tool is Slack's, a system the task does not point at: the step
    # has no tool, and a file's editor is not taken in its place.
    told = compiler.compile(TaskContext(shard="coder", task="Let everyone on the backend team know the build is fixed"))
    assert not [s.name for s in told.tools if s.step.startswith("tool of the step") or (
        s.reasons and s.reasons[0].startswith("tool of the step /"))]


def test_a_fix_the_steps_read_in_our_code_is_a_file_edit(compiler):
    # "fix the missing guard in our code": the steps read a change in place (jit.selection.steps) where the
    # analyzer reads none; the policy's edit row gives it the file editor.
    ts = compiler.compile(TaskContext(shard="coder", task="A TypeError keeps showing up in production. Find where "
                                      "it's thrown and fix the missing guard in our code."))
    editor = ts.get("filesystem__edit_file")
    assert editor.tier is Tier.FULL and editor.reasons[0] == "tool of the step /write of the code the task changes"
    assert ts.task_facts["code_edit"] == ["code"]
    # A fix made on a code host, through its API, is no local file's edit.
    remote = compiler.compile(TaskContext(shard="coder", task="Fix the missing null check in our code on GitHub in "
                                          "acme/shop via the API"))
    assert "code_edit" not in remote.task_facts
