"""The steps of a task and their tools (jit.selection.steps), and the Full tier keeping them."""

from __future__ import annotations

import subprocess
import sys

import numpy as np

from jit.models import ServerStatus, StoredTool, ToolAnalysis, ToolDef
from jit.selection.budget import Estimates, cap_full, fit_budget
from jit.selection.budget import fed, unfed
from jit.selection.step_words import action_free, leading_capability, name_fit, noun_uses, spelled
from jit.selection.clauses import clause_action, split_clauses
from jit.selection.naming import demo_servers
from jit.selection.steps import (
    BOARD_COLUMNS,
    CURRENT_TIME,
    FETCH_URL,
    FILE_STEP,
    FILL_FORM,
    FIND_MATCHING,
    GEOCODE,
    LIST_FOLDER,
    ONLINE_SHEET_TABS,
    OPEN_PAGE,
    PAGE_REQUESTS,
    PRESS_KEY,
    PUSH_BRANCH,
    READ_CHANGE,
    READ_CHANGED_FILES,
    READ_CHECKS,
    READ_CODE,
    READ_PAGE,
    READ_REQUEST,
    RUN_COMMAND,
    SHEET_TABS,
    SNAPSHOT_PAGE,
    STACK_TRACE,
    STAGE_CHANGES,
    SUBMIT_FORM,
    SWITCH_BRANCH,
    TREE_STATUS,
    DIFF_STAGED,
    DIFF_UNSTAGED,
    TYPE_TEXT,
    WHO_AM_I,
    TRAVEL_TIME,
    Step,
    _POINT,
    asked,
    settle,
    step_tools,
    task_servers,
    task_steps,
)
from jit.selection.producers import coordinate_producers, producers
from jit.selection.tiers import Tier
from jit.selection.tokens import EstimateCounter
from tests.test_render import scored


def test_a_task_is_its_clauses_with_the_steps_they_imply_and_without_what_it_forbids():
    steps = task_steps("Fix the bug in src/calc.py where divide() returns an int, then run the tests. Don't push it.")
    texts = [s.text for s in steps]
    assert texts[0] == READ_CODE and steps[0].implied  # the code is read before it is changed
    assert any(s.capability == "/write" and "Fix the bug" in s.text for s in steps)
    assert any(s.text == RUN_COMMAND and s.implied and s.clause == "run the tests" for s in steps)
    assert not any("push" in t for t in texts)  # a clause that forbids is not a step


def test_putting_something_into_a_named_source_file_is_an_edit_of_it_read_first():
    steps = task_steps("Check httpx's docs for how per-request timeouts work, then give the client in "
                       "src/http_client.py a 10 second timeout.")
    edit = next(s for s in steps if s.text.startswith("give the client"))
    assert (edit.capability, edit.by) == ("/write", FILE_STEP)  # the policy's file editor does it
    assert any(s.text == READ_CODE and s.clause == edit.text for s in steps)
    steps = task_steps('Add a health endpoint: new file src/routes/health.py returning {"status": "ok"}, '
                       "registered in src/app.py next to the other routes.")
    assert [s.by for s in steps if s.capability == "/write"] == [FILE_STEP, FILE_STEP]


def test_looking_at_a_page_implies_opening_it_first():
    steps = task_steps("Open http://localhost:8000/login in a headless browser and look for console errors.")
    assert steps[0].text == OPEN_PAGE and steps[0].implied and steps[0].capability == "/read"
    assert all(s.text != OPEN_PAGE for s in task_steps("Summarise https://example.com/post for me."))
    # an address on this machine is a local app's page or endpoint: the task names it to look at it
    steps = task_steps("Is the API on my machine up? http://localhost:8080/health should say ok.")
    assert [s.text for s in steps if s.implied] == [OPEN_PAGE]
    # a bare address with a port is one too; a database's, or one the clause points a client at, is no page
    assert [s.text for s in task_steps("Check that 127.0.0.1:3000 loads") if s.implied] == [OPEN_PAGE]
    for task in ("Point the API client at http://localhost:8000", "Back up the users table at localhost:5432",
                 "Query postgres://app@localhost/shop for the open orders"):
        assert all(s.text != OPEN_PAGE for s in task_steps(task)), task
    assert all(s.text != OPEN_PAGE for s in task_steps("Comment the PR link https://github.com/acme/web/pull/5 on it"))


def test_looking_at_what_a_page_opened_in_a_browser_shows_implies_a_picture_of_it():
    steps = task_steps("Load http://127.0.0.1:5173/cart and verify the checkout button appears below the total.")
    assert [(s.text, s.implied) for s in steps] == [
        (OPEN_PAGE, True), ("Load http://127.0.0.1:5173/cart", False),  # an address is no fragment
        (SNAPSHOT_PAGE, True), ("verify the checkout button appears below the total", False)]
    assert steps[2].capability == "/read"
    # no page opened, or nothing on it looked at: no picture
    assert all(s.text != SNAPSHOT_PAGE for s in task_steps("Check the signup form's validation in src/forms.py"))
    assert all(s.text != SNAPSHOT_PAGE for s in task_steps("Open http://localhost:8000/login and read the console"))


def test_a_picture_of_a_page_is_implied_only_by_the_page_opened_in_a_browser_and_not_asked_already():
    steps = task_steps("Open http://localhost:3000/signup in the browser and check the form shows an error for an "
                       "empty email.")
    assert [s.text for s in steps if s.implied] == [OPEN_PAGE, SNAPSHOT_PAGE]
    steps = task_steps("Does the pricing page at http://localhost:3000/pricing look like the Figma file?")
    assert [s.text for s in steps if s.implied] == [OPEN_PAGE, SNAPSHOT_PAGE]  # the page compared with another
    # a later clause about data or another system, a command-line client's answer, a picture asked already
    for task in ("Open http://localhost:3000 in the browser, then query the users table in Postgres and tell me "
                 "which field is null.",
                 "Curl http://localhost:9200/_cat/indices and tell me which index looks largest.",
                 "Take a screenshot of http://localhost:3000/pricing and check the layout."):
        assert SNAPSHOT_PAGE not in [s.text for s in task_steps(task)], task
    assert OPEN_PAGE not in [s.text for s in task_steps("Curl http://localhost:9200/_cat/indices")]  # no browser


def test_a_picture_of_a_page_is_taken_by_the_server_that_opened_it():
    # Chrome DevTools (3, 4) cannot picture a page Playwright (1, 2) opened, however the task scores them.
    planned = [(OPEN_PAGE, ((1, 180.0), (3, 170.0))), (SNAPSHOT_PAGE, ((4, 180.0), (2, 170.0)))]
    heads = {1: ("playwright", "browser_navigate"), 2: ("playwright", "browser_take_screenshot"),
             3: ("chrome-devtools", "navigate_page"), 4: ("chrome-devtools", "take_screenshot")}
    final = {1: 90, 2: 40, 3: 60, 4: 90}
    chosen = settle(planned, final, {}, heads=heads, room=0, implied={OPEN_PAGE, SNAPSHOT_PAGE})
    assert chosen == {1: OPEN_PAGE, 2: SNAPSHOT_PAGE}
    # a server that has no option for the picture leaves it to the task's choice
    assert settle([(OPEN_PAGE, ((1, 180.0),)), (SNAPSHOT_PAGE, ((4, 180.0), (3, 100.0)))], final, {}, heads=heads,
                  room=0, implied={OPEN_PAGE, SNAPSHOT_PAGE}) == {1: OPEN_PAGE, 4: SNAPSHOT_PAGE}


def test_reviewing_a_pull_request_implies_reading_it_and_the_files_it_changes():
    for task, checks in (("Review PR #214 in acme/shop and leave your comments on it as a review.", []),
                         ("is PR #88 in acme/payments safe to merge? check its status checks too",
                          [(READ_CHECKS, "/read")])):
        implied = [(s.text, s.capability) for s in task_steps(task) if s.implied]
        assert implied == [(READ_CHANGE, "/read"), (READ_CHANGED_FILES, "/read"), *checks], task
    # A page under review is no pull request, and opening one is a change, not a review.
    for task in ("Review the 'Payments v2 architecture' page on Confluence and list the open questions.",
                 "Open a PR against main in acme/shop."):
        assert not any(s.text in (READ_CHANGE, READ_CHANGED_FILES) for s in task_steps(task)), task


def test_a_change_on_a_branch_implies_switching_to_it_first():
    steps = task_steps("Cherry-pick the fix a1b2c3d from main onto release/3.1 and push release/3.1.")
    assert (steps[0].text, steps[0].capability, steps[0].implied) == (SWITCH_BRANCH, "/write", True)
    assert [s.text for s in steps].count(SWITCH_BRANCH) == 1  # once, where it is first implied
    assert steps[0].clause == "Cherry-pick the fix a1b2c3d from main onto release/3.1"
    assert SWITCH_BRANCH in [s.text for s in task_steps("Put the fix on a new branch called wip, then commit it")]
    # Reading a branch, or a repository named owner/name, switches nothing.
    assert all(s.text != SWITCH_BRANCH for s in task_steps("Review deploy.sh on the fix/registry branch of infra/x"))
    assert all(s.text != SWITCH_BRANCH for s in task_steps("open a PR against main in acme/shop"))


def _tool(i: int, server: str, name: str, description: str = "", required: tuple[str, ...] = (),
          optional: tuple[str, ...] = ()) -> StoredTool:
    schema = {"type": "object", "properties": {p: {"type": "string"} for p in (*required, *optional)},
              "required": list(required)}
    return StoredTool(id=i, tool=ToolDef(server=server, name=name, description=description, input_schema=schema),
                      definition_hash=str(i), server_status=ServerStatus.CONNECTED, analysis=ToolAnalysis())


def _feeds(table: dict[int, list[int]], optional: dict[int, list[int]] | None = None):
    """:class:`~jit.selection.steps.Feeds` from a table of producers (``optional``: those of the
    optional identifiers, asked with ``optional_ids``)."""
    def feeds(t: int, ids_only: bool = False, optional_ids: bool = False) -> list[int]:
        return table.get(t, []) + ((optional or {}).get(t, []) if optional_ids else [])
    return feeds


def _lines(siblings: list[tuple[int, StoredTool]]) -> list[tuple[int, str, str]]:
    """Siblings as :func:`producers` takes them: id, name and the line the snapshot keeps."""
    return [(i, st.tool.name, st.tool.description or "") for i, st in siblings]


def test_a_tool_that_needs_an_identifier_brings_the_tool_that_hands_it_out():
    docs = _tool(1, "context7", "query-docs", "Query a library's docs", ("libraryId", "query"))
    siblings = [(2, _tool(2, "context7", "resolve-library-id", "Resolve a package name to a library ID")),
                (3, _tool(3, "context7", "get-version", "Version of the server"))]
    assert producers(docs, _lines(siblings)) == [2]
    post = _tool(4, "chat", "post_message", "Post a message", ("channel_id", "text"))
    chat = [(5, _tool(5, "chat", "get_users", "List users")), (6, _tool(6, "chat", "list_channels", "List channels"))]
    assert producers(post, _lines(chat)) == [6]
    assert producers(_tool(7, "x", "get_thing", "", ("q",)), _lines(chat)) == []  # no identifier: no producer


def test_a_demonstration_server_is_known_by_its_descriptions():
    demo = ["Echoes back the input string", "Demonstrates how annotations can be used",
            "Returns the sum of two numbers",
            "Simulates a research query", "Returns a tiny MCP logo image."]
    real = ["Read a file", "Write a file", "Simulates nothing: moves a file"]
    assert demo_servers({"demo": demo, "files": real}) == frozenset({"demo"})
    # With its tools' names: a reference server's echo, sum or environment tool is needed too, so a
    # simulator, or a router whose descriptions name MCP servers in passing, is none.
    names = {"demo": ["echo", "annotated-message", "get-sum", "simulate-research-query", "get-tiny-image"],
             "sim": ["ui_tap", "screenshot", "simulate_traffic"], "azure": ["storage", "monitor"]}
    simulator = ["Simulates a tap on the iOS simulator", "Takes a screenshot of the simulator", "Simulates traffic"]
    router = ["Storage operations, routed to MCP servers", "Monitor operations, routed to MCP servers"]
    assert demo_servers({"demo": demo, "sim": simulator, "azure": router}, names) == frozenset({"demo"})
    assert demo_servers({"sim": simulator, "azure": router}) == frozenset({"sim", "azure"})  # the words alone


def _score(table: dict[str, list[tuple[int, float, float]]]):
    def score(_i: int, text: str):
        rows = table[text]
        return (np.array([r for r, _v, _d in rows]), np.array([v for _r, v, _d in rows], dtype=np.float32),
                np.array([d for _r, _v, d in rows], dtype=np.float32))
    return score


def test_a_step_gets_the_best_tool_that_fits_its_capability_and_the_role_else_a_reason():
    caps = {0: {"/read"}, 1: {"/write"}, 2: {"/write"}, 3: {"/send"}, 4: {"/execute"}}
    steps = [Step("change the file", "/write"), Step("read the file", "/read"), Step("post it", "/send"),
             Step("run it", "/execute")]
    table = {"change the file": [(0, 99, 0.6), (1, 90, 0.5), (2, 80, 0.5)],  # the reader does not change files
             "read the file": [(1, 95, 0.6), (0, 90, 0.5)],  # a writer is not a read step's tool
             "post it": [(3, 90, 0.6)],
             "run it": [(4, 60, 0.2)]}  # below the floor: no tool does it
    found = step_tools(steps, _score(table), caps.__getitem__, lambda r: r != 3, lambda r: r == 3)
    assert [(f.tool, f.why) for f in found] == [(1, ""), (0, ""), (None, "denied"), (None, "none")]
    assert [r for r, _v in found[0].options] == [1, 2]


def test_of_a_steps_options_the_whole_tasks_score_settles_which_comes_first_and_a_near_tie_keeps_both():
    planned = [("do it", ((1, 90.0), (2, 88.0)))]
    feeds = _feeds({1: [], 2: [3], 3: []})
    assert list(settle(planned, {1: 40, 2: 80, 3: 10}, {1: "a", 2: "b"}, feeds).items()) == [
        (2, "do it"), (3, "the identifier b needs"), (1, "do it")]
    assert settle(planned, {1: 40}, {1: "a"}, feeds) == {1: "do it"}  # an option that is not a candidate is not taken
    apart = [("do it", ((1, 95.0), (2, 30.0)))]  # the second is far behind: the step is no tie
    assert settle(apart, {1: 60, 2: 20}, {1: "a", 2: "b"}) == {1: "do it"}
    # The second goes only while Full has room: here Full holds two already and has room for three.
    assert settle(planned, {1: 40, 2: 80, 3: 10}, {1: "a", 2: "b"}, feeds, full={7, 8}, room=3) == {
        2: "do it", 3: "the identifier b needs"}
    assert 1 in settle(planned, {1: 40, 2: 80, 3: 10}, {1: "a", 2: "b"}, feeds, full={7}, room=4)
    # Two servers' tools for the same thing are no ambiguity: the best one does the step.
    heads = {1: ("files", "read_file"), 2: ("other", "read_file"), 3: ("other", "list")}
    assert settle(planned, {1: 40, 2: 80, 3: 10}, {1: "a", 2: "b"}, feeds, heads) == {2: "do it",
                                                                                        3: "the identifier b needs"}


def test_an_implied_steps_tool_is_its_own_best_of_the_server_the_whole_task_prefers():
    # "Review PR #214": the task scores the reviews (2) far over the pull request itself (1), which
    # the implied step "get the details of a pull request" ranks first; another host's (3) is behind.
    planned = [("get the details of a pull request", ((1, 180.0), (2, 156.0), (3, 150.0)))]
    final = {1: 60, 2: 96, 3: 40}
    heads = {1: ("github", "get_pull_request"), 2: ("github", "get_pull_request_reviews"),
             3: ("gitlab", "get_merge_request")}
    assert next(iter(settle(planned, final, {}, heads=heads, room=0))) == 2  # a step the task says
    assert next(iter(settle(planned, final, {}, heads=heads, room=0,
                            implied={"get the details of a pull request"}))) == 1
    # The server is still the whole task's: one it prefers wins over the step's best elsewhere.
    elsewhere = [("get the details of a pull request", ((3, 180.0), (1, 150.0), (2, 140.0)))]
    assert next(iter(settle(elsewhere, {1: 60, 2: 96, 3: 10}, {}, heads=heads, room=0,
                            implied={"get the details of a pull request"}))) == 1


def test_a_tools_name_that_says_the_steps_verb_and_object_fits_it_better_than_a_siblings():
    commit = Step("commit it", "/write")
    assert name_fit("git_commit", "git", commit) == 1.0
    # another change's verb counts half: merging is not committing
    assert name_fit("git_merge", "git", commit) == 0.5
    assert name_fit("git_cherry_pick", "cyanheads-git", commit) == 0.25
    find = Step("Find the signed contract in Drive", "/read")  # ways of reading are near alike
    assert name_fit("search_drive_files", "google-workspace", find) > name_fit("check_drive_file_public_access",
                                                                               "google-workspace", find)
    # the step's verb counts as the name's second word too: adding a comment is commenting
    assert name_fit("add_comment", "trello", Step("comment the PR link on it", "/send")) == 0.5
    review = Step("Review PR #214 in acme/shop", "/read")  # the step's verb names no object
    assert name_fit("get_pull_request", "github", review) > name_fit("get_pull_request_reviews", "github", review)
    status = Step("check its status checks too", "/read")  # a word only the task says counts half
    task = frozenset({"pull", "request", "pr", "statu", "check"})
    assert name_fit("get_pull_request_status", "github", status, task) == 0.75
    assert name_fit("get_pull_request_status", "github", status) == 0.5


def test_an_api_operations_name_fits_by_what_it_does_not_by_its_http_method():
    # Tools generated from an OpenAPI document: "API-" and the method that carries the request
    # are no words a step says; a method followed by no verb is the operation's verb itself.
    look = Step("look for the onboarding checklist by its title", "/read")
    assert name_fit("API-post-search", "wiki", Step("search the wiki for the release checklist", "/read")) == 1.0
    assert name_fit("API-post-search", "wiki", look) == name_fit("search", "wiki", look) > 0
    assert name_fit("API-retrieve-a-page", "wiki", Step("retrieve the page", "/read")) == 1.0
    assert name_fit("API-post-page", "wiki", Step("create a page", "/write")) == 0.5  # "post" is its verb


def test_a_steps_options_are_ranked_by_match_and_name_fit_over_the_floor():
    caps = {0: {"/write"}, 1: {"/write"}, 2: {"/write"}}
    table = {"commit it": [(0, 100, 0.6), (1, 94, 0.6), (2, 70, 0.6)]}  # 2 is below the floor: no option
    fits = {0: 0.0, 1: 1.0, 2: 1.0}
    found = step_tools([Step("commit it", "/write")], _score(table), caps.__getitem__, lambda r: True,
                       lambda r: False, lambda r, _s: fits[r])
    assert [r for r, _v in found[0].options] == [1, 0] and found[0].tool == 1


def test_a_name_that_says_the_whole_step_needs_a_little_less_of_the_cosine():
    # "add a compound index if it's doing a COLLSCAN": create-index's cosine is diluted by the
    # condition's words; a name that says the step whole passes at a lower cosine, one that does not stays out.
    caps = {0: {"/write"}, 1: {"/write"}}
    table = {"add an index": [(0, 80, 0.22), (1, 83, 0.34)]}
    fits = {0: 1.0, 1: 0.2}
    found = step_tools([Step("add an index", "/write")], _score(table), caps.__getitem__, lambda r: True,
                       lambda r: False, lambda r, _s: fits[r])
    assert found[0].tool == 0
    half = step_tools([Step("add an index", "/write")], _score(table), caps.__getitem__, lambda r: True,
                      lambda r: False, lambda r, _s: {0: 0.5, 1: 0.2}[r])
    assert [r for r, _v in half[0].options] == [1]
    low = {"add an index": [(0, 80, 0.15)]}
    assert step_tools([Step("add an index", "/write")], _score(low), caps.__getitem__, lambda r: True,
                      lambda r: False, lambda r, _s: 1.0)[0].tool is None


def test_a_server_another_clause_names_does_a_step_that_names_none_against_the_whole_tasks_favourite():
    # "Pick up the ticket in Tracker: …, then close the ticket": the ticket is Tracker's, though a
    # desk's close_case matches the step a little better and scores higher for the whole task.
    caps = {r: {"/write"} for r in range(4)}
    server = {0: "desk", 1: "tracker", 2: "desk", 3: "tracker"}
    table = {"close the ticket": [(0, 96, 0.5), (1, 85, 0.5), (2, 90, 0.5), (3, 80, 0.5)]}
    step = Step("close the ticket", "/write")

    def found(named: dict[str, int]):
        return step_tools([step], _score(table), caps.__getitem__, lambda r: True, lambda r: False,
                          lambda r, _s: 0.5, lambda r, _s: named.get(server[r], 0), server.__getitem__)[0]
    assert [r for r, _v in found({"tracker": 1}).options] == [1, 3]  # the task's server only: settle keeps it
    assert [r for r, _v in found({}).options] == [0, 2, 1]  # no server said: every system's
    far = {"close the ticket": [(0, 100, 0.6), (1, 76, 0.3), (2, 99, 0.6)]}
    step_far = step_tools([step], _score(far), caps.__getitem__, lambda r: True, lambda r: False,
                          lambda r, _s: 0.5, lambda r, _s: 1 if server[r] == "tracker" else 0, server.__getitem__)
    assert step_far[0].options[0][0] == 0 and len(step_far[0].options) == 3  # named, but far behind: all stay


def test_a_clause_a_file_tool_does_still_names_the_server_of_the_steps_after_it():
    steps = task_steps("For Tracker ticket T-9, rename load to fetch in src/io.py, then close the ticket.")
    # the clause that names it is a file's step, and the code read before it a skeleton slot's
    assert [s.by for s in steps if "Tracker" in (s.clause or s.text)] == ["read_file", FILE_STEP]
    assert task_servers(steps, ["tracker", "desk"]) == {"tracker"}
    assert task_servers([s for s in steps if not s.by], ["tracker", "desk"]) == frozenset()


def test_a_steps_tool_keeps_its_place_in_full_past_both_caps():
    tools = [scored("a", f"t{i}", Tier.FULL, 90 - i) for i in range(5)]
    for s in tools[2:]:
        s.step = f"step {s.tool_name}"  # three steps, the lowest scores, and the count has room for two
    warnings: list[str] = []
    cap_full(tools, 2, 1.0, Estimates("anthropic"), warnings)
    assert [s.tier for s in tools[2:]] == [Tier.FULL] * 3
    assert [s.tier for s in tools[:2]] == [Tier.CONDENSED] * 2  # the extras make room


def test_a_required_object_is_handed_out_by_the_tool_that_lists_it():
    tasks = _tool(1, "tracker", "get_my_tasks", "My tasks in a workspace", ("workspace",))
    siblings = [(2, _tool(2, "tracker", "list_workspaces", "List workspaces")),
                (3, _tool(3, "tracker", "add_workspace_member", "Add a member")),  # no listing verb
                (4, _tool(4, "tracker", "get_workspace", "One workspace"))]  # gets one: hands out no identifiers
    assert producers(tasks, _lines(siblings)) == [2]
    card = _tool(5, "board", "move_card", "Move a card", ("idList",))
    lists = [(6, _tool(6, "board", "add_card_to_list", "Add a card to a list")),
             (7, _tool(7, "board", "get_lists", "Lists"))]
    assert producers(card, _lines(lists)) == [7]
    # A name that adds before it lists hands out nothing; the lister of fewest words goes first.
    more = [(8, _tool(8, "board", "add_list_to_board", "Add a list to a board")),
            (9, _tool(9, "board", "get_lists_archived", "Archived lists")), *lists]
    assert producers(card, _lines(more)) == [7]
    assert producers(_tool(1, "linear", "linear_createIssue", "", ("teamId",)),
                     _lines([(2, _tool(2, "linear", "linear_getTeams", "Teams"))])) == [2]  # after its server's name
    # One kept to the caller's own (the cards assigned to me) is no general lister of the thing.
    moved = _tool(10, "board", "move_card", "Move a card", ("cardId",))
    cards = [(11, _tool(11, "board", "get_my_cards", "Cards assigned to me")),
             (12, _tool(12, "board", "get_cards_by_list_id", "Cards of a list"))]
    assert producers(moved, _lines(cards)) == [12]
    assert producers(moved, _lines(cards[:1])) == [11]  # the only one there is still hands it out


def test_a_plain_name_of_an_existing_thing_is_handed_out_by_the_sibling_that_lists_such_things():
    def named(i: int, name: str, description: str, said: str) -> StoredTool:
        st = _tool(i, "cluster", name, description, ("kind", "name"))
        st.tool.input_schema["properties"]["name"]["description"] = said
        return st
    # "Name of the node": a sibling behind the tools' shared prefix lists nodes in its line
    drain = named(1, "ctl_drain", "Drain a node", "Name of the node to drain")
    siblings = [(2, _tool(2, "cluster", "ctl_get", "Get or list cluster nodes, volumes and services")),
                (3, _tool(3, "cluster", "ctl_status", "Status of the control plane"))]
    assert producers(drain, _lines(siblings)) == [2]
    # a name the tool gives (it makes the thing), or one whose description says not whose: none
    assert producers(named(4, "ctl_create_volume", "Create a volume", "Name of the volume"), _lines(siblings)) == []
    assert producers(named(5, "ctl_label", "Label it", "A label to set"), _lines(siblings)) == []
    assert producers(drain, _lines(siblings), ids_only=True) == []  # a name is no identifier


def test_a_plainly_named_parameter_said_to_be_an_id_is_an_identifier():
    def tool(i: int, name: str, param: str, said: str, required: bool = True) -> StoredTool:
        st = _tool(i, "shop", name, "", (param,) if required else (), () if required else (param,))
        st.tool.input_schema["properties"][param]["description"] = said
        return st
    siblings = [(2, _tool(2, "shop", "list_warehouses", "List the warehouses")),
                (3, _tool(3, "shop", "list_shipments", "List shipments"))]
    restock = tool(1, "restock", "warehouse", "The ID of the warehouse to restock.")
    # a Full tool's identifiers only (the producer of a plain name is the task's to say): it is one
    assert producers(restock, _lines(siblings), ids_only=True) == [2]
    # and so is an optional one, asked of a producer's own needs
    shipments = tool(4, "list_parcels", "shipment", "The ID of the shipment to list parcels of", required=False)
    assert producers(shipments, _lines(siblings), optional_ids=True) == [3]
    # a plain parameter said to be anything else is none
    note = tool(5, "restock_note", "warehouse", "Where the goods go (free text)")
    assert producers(note, _lines(siblings), ids_only=True) == []


def test_a_prefix_two_tools_share_is_no_verb_of_the_one_that_hands_out_identifiers():
    # Tools of server "acme-helpdesk" all named "desk_…": desk_search hands out ticket keys.
    ticket = _tool(1, "acme-helpdesk", "desk_get_ticket", "One ticket with its history", ("ticket_key",))
    siblings = [(2, _tool(2, "acme-helpdesk", "desk_search", "Search tickets by a query")),
                (3, _tool(3, "acme-helpdesk", "other_search", "Search tickets of another desk"))]
    assert producers(ticket, _lines(siblings)) == [2]


def test_a_tool_full_by_its_score_brings_the_tool_that_hands_out_its_identifier():
    docs = _tool(1, "context7", "query-docs", "Query a library's docs", ("libraryId", "query"))
    resolve = _tool(2, "context7", "resolve-library-id", "Resolve a package name to a library ID")
    files = _tool(3, "forge", "get_file", "A file of a repository", ("repo", "path"))
    repos = _tool(4, "forge", "search_repos", "Search repositories")
    assert producers(files, _lines([(4, repos)])) == [4]
    assert producers(files, _lines([(4, repos)]), ids_only=True) == []  # a repository is said, not looked up
    assert producers(docs, _lines([(2, resolve)]), ids_only=True) == [2]
    feeds = {1: [2], 3: [], 5: [6], 7: [8]}
    tools = [scored("context7", "query-docs", Tier.FULL, 90),
             scored("context7", "resolve-library-id", Tier.CONDENSED, 50),
             scored("chat", "reply", Tier.FULL, 45), scored("chat", "list_channels", Tier.CONDENSED, 40),
             scored("maps", "details", Tier.FULL, 80), scored("maps", "search", Tier.EXCLUDED, 10)]
    for i, s in enumerate(tools, 1):
        s.id = i
    tools[2].id, tools[3].id, tools[4].id, tools[5].id = 5, 6, 7, 8
    tools[1].reasons += ["condensed: match 5 is below full_match 10",  # kept out of Full by the score's rule,
                         "demoted full -> condensed: max_full_tools=10"]  # and by a cap
    fed(tools, lambda t, ids_only=False: feeds.get(t, []) if ids_only else [], 70)
    assert tools[1].tier is Tier.FULL and tools[1].step == "the identifier context7__query-docs needs"
    assert tools[1].reasons[0] == "tool of the step 'the identifier context7__query-docs needs'"
    assert not any(r.startswith(("demoted", "condensed")) for r in tools[1].reasons)  # none says it is out of Full
    assert tools[3].tier is Tier.CONDENSED  # its consumer is Full below full_threshold, not by its score
    assert tools[5].tier is Tier.EXCLUDED  # a producer the compile does not render stays out


def test_a_producer_made_full_for_a_tool_the_budget_takes_out_of_full_goes_back_to_its_tier():
    """On a budget too tight for both definitions, the producer (a step's tool, first in line)
    keeps Full and the tool it feeds is Condensed: the producer goes back to Condensed then, and
    the rendering still fits."""
    long = "Query a library's docs. " + "It reads every page of the docs and answers from them. " * 40
    docs = scored("context7", "query-docs", Tier.FULL, 90, description=long)
    resolve = scored("context7", "resolve-library-id", Tier.CONDENSED, 50, description=long)
    docs.id, resolve.id, resolve.wanted = 1, 2, Tier.CONDENSED
    est, counter = Estimates("anthropic", EstimateCounter()), EstimateCounter()
    promoted = fed([docs, resolve], lambda t, ids_only=False: [2] if t == 1 and ids_only else [], 70)
    assert resolve.tier is Tier.FULL
    budget = est.cost(docs, Tier.FULL) + est.cost(resolve, Tier.CONDENSED) + est.meta_overhead() - 1
    fit_budget([docs, resolve], budget, "anthropic", counter, estimates=est)
    assert docs.tier is not Tier.FULL
    assert unfed(promoted, est.cost) == [resolve]
    assert (resolve.tier, resolve.wanted, resolve.step) == (Tier.CONDENSED, Tier.CONDENSED, "")
    assert est.measure([docs, resolve], counter) <= budget
    # a producer whose consumer kept Full keeps Full
    docs.tier = Tier.FULL
    promoted = fed([docs, resolve], lambda t, ids_only=False: [2] if t == 1 and ids_only else [], 70)
    assert unfed(promoted, est.cost) == [] and resolve.tier is Tier.FULL


def test_a_chosen_producer_that_needs_an_identifier_brings_its_own_producer():
    cards = _tool(1, "board", "get_cards_by_list_id", "Cards of a list", ("listId",))
    lists = _tool(2, "board", "get_lists", "Lists of a board", ("boardId",))
    siblings = [(2, lists), (3, _tool(3, "board", "list_boards", "Boards"))]
    assert producers(cards, _lines(siblings)) == [2]
    assert producers(lists, _lines([(1, cards), (3, siblings[1][1])])) == [3]
    feeds = _feeds({1: [2], 2: [3], 3: []})
    assert settle([("cards of the list", ((1, 90.0),))], {1: 50, 2: 20, 3: 10}, {1: "c", 2: "l", 3: "b"}, feeds) == {
        1: "cards of the list", 2: "the identifier c needs", 3: "the identifier l needs"}


def test_a_chosen_producer_whose_identifier_is_optional_still_brings_its_producer():
    # A server that falls back on an active board takes the board of its lists as optional: the
    # task's board, said by its name, is still looked up first.
    move = _tool(1, "board", "move_card", "Move a card to a list", ("cardId", "listId"))
    lists = _tool(2, "board", "get_lists", "Lists of a board", optional=("boardId", "filter"))
    boards = _tool(3, "board", "list_boards", "Boards")
    assert producers(lists, _lines([(1, move), (3, boards)])) == []
    assert producers(lists, _lines([(1, move), (3, boards)]), optional_ids=True) == [3]
    assert producers(_tool(4, "board", "get_cards", "Cards", optional=("filter",)),
                     _lines([(5, _tool(5, "board", "list_filters", "Saved filters"))]), optional_ids=True) == []
    feeds = _feeds({1: [2], 2: [], 3: []}, optional={2: [3]})
    assert settle([("move it", ((1, 90.0),))], {1: 50, 2: 20, 3: 10}, {1: "m", 2: "l", 3: "b"}, feeds) == {
        1: "move it", 2: "the identifier m needs", 3: "the identifier l needs"}
    # the tool a step takes is fed by its required identifiers alone
    assert settle([("list them", ((2, 90.0),))], {2: 50, 3: 10}, {2: "l", 3: "b"}, feeds) == {2: "list them"}


def test_a_steps_capability_is_its_leading_verbs_and_a_question_reads():
    steps = task_steps("PR #77 in acme/shop looks good to me. Check that CI passed and merge it.")
    assert [(s.text, s.capability) for s in steps][-2:] == [("Check that CI passed", "/read"), ("merge it", "/write")]
    assert [s.capability for s in task_steps("is PR #88 in acme/payments safe to merge?") if not s.implied] == [
        "/read"]
    assert leading_capability("open a GitHub issue describing the bug") == "/write"
    assert leading_capability("Open http://localhost:8000/login in a headless browser") == "/read"
    assert leading_capability("Tell the team in #qa that the run failed") == "/send"
    assert leading_capability("tell me when it renews") is None  # addressed to the user: the analyzer reads it
    assert split_clauses("Write tests for parse() in src/p.py, in tests/test_p.py, and run them") == [
        "Write tests for parse() in src/p.py, in tests/test_p.py", "run them"]
    assert spelled("open a PR") == "open a PR (pull request)"
    # a fragment that names neither a verb nor a change is no step of its own: names listed after
    # a clause go on with it, another fragment is left out
    assert [s.text for s in task_steps("Read the paper webarena, mind2web and mind2web2")] == [
        "Read the paper webarena, mind2web, mind2web2"]
    assert [s.text for s in task_steps("Read the paper webarena. upon completion")] == ["Read the paper webarena"]
    # the verbs of what a clause asks about are not its step's: thinking whether to move, saying what one adds
    assert [s.capability for s in task_steps("Think through whether our services should move from REST to gRPC")] == [
        "/read"]
    assert task_steps("List the PRs merged this week and say what each one adds")[-1].capability == "/read"
    assert task_steps("Move the card to Done")[-1].capability == "/write"  # a verb of its own
    # a condition ("if", "when") or a clause opening with what it asks keeps the change it says: its verb's
    assert [(s.capability, s.implied) for s in task_steps("If the build is green merge PR #12")] == [
        ("/read", True), ("/write", False)]  # whether the build is green: the change's checks read first
    assert [s.capability for s in task_steps("If the tests pass merge PR #12 into main")] == ["/write"]
    # a subject and its "is" said as one word: the condition ends there too
    assert [(s.text, s.capability) for s in task_steps("if it's clean move the card to Verified")] == [
        ("if it's clean move the card to Verified", "/write")]
    assert clause_action("if they're all passing tag the release") == "tag the release"
    assert clause_action("if the user's cart is empty create one") == "create one"  # a possessive, then "is"
    # the state after the "is" and a thing named after it are no action: the close is
    for task in ("If it's still open, close it", "if it's still open close it",
                 "If there's another open PR, close this one"):
        assert [s.capability for s in task_steps(task)] == ["/write"], task
    assert [s.capability for s in task_steps("Let me know if you can delete the old branch")] == ["/delete"]
    # "give" says no change of its own: an overview reads, feedback sends, a summary of a document reads
    assert [(s.capability, s.by) for s in task_steps("Give an overview of the open issues in acme/web")] == [
        ("/read", "")]
    assert [s.capability for s in task_steps("Give feedback on PR #12")] == ["/send"]
    assert [(s.text, s.capability, s.by) for s in task_steps("Give a short summary of README.md")] == [
        ("Give a short summary of README.md", "/read", "")]


def test_a_word_the_task_says_as_a_name_is_not_its_action():
    # "checkout" after a possessive, "staging" in a host, "login" after an article: names of things
    assert {"checkout", "local"} <= noun_uses("fix the bug in my local checkout")
    assert "stag" in noun_uses("check the link goes to staging.acme.dev")
    assert "login" in noun_uses("check the login page")
    assert "commit" not in noun_uses("commit it")  # the leading verb is the action
    fix = Step("fix the bug in my local checkout", "/write")
    assert name_fit("git_checkout", "git", fix) == 0.0
    assert name_fit("git_checkout", "git", Step("checkout the release branch", "/write")) == 1.0
    # lexical matching leaves out the action words said as names, and addresses but a server's name
    assert "checkout" not in action_free("fix the bug in my local checkout")
    assert action_free("stage the fix").split() == ["stage", "the"]
    kept = action_free("comment the PR link https://github.com/acme/web/pull/512 on it", {"github"}).split()
    assert "github" in kept and "acme" not in kept and "pull" not in kept
    # a title in quotes is the thing's name, not what a tool does
    kept = action_free("Log this bug in our QA Airtable base: 'Export button does nothing', severity high")
    assert "Export" not in kept and "Airtable" in kept and "severity" in kept
    # git's verbs said as names: a password-reset mail
    mail = Step("Did the password-reset mail arrive in the last hour?", "/read")
    assert name_fit("git_reset", "git", mail) == 0.0
    assert "reset" not in action_free(mail.text)
    assert name_fit("git_reset", "git", Step("reset the branch to origin/main", "/write")) == 1.0
    # git's "staged" describes its changes: kept ("show me the staged changes" is the staged diff)
    assert "staged" in action_free("Show me the staged changes")
    # adding a thing is creating it: "add an Asana task" is create_task, as much as a tool named for adding
    add = Step("add an Asana task 'Migrate billing' to my 'Client: Acme' project", "/write")
    assert name_fit("asana_create_task", "asana", add) == 1.0
    # ... what it adds, not where: adding someone to a channel creates no channel
    to = Step("Add bob@acme.test to the #eng channel on Slack", "/write")
    assert name_fit("slack_create_channel", "slack", to) < name_fit("slack_create_channel", "slack",
                                                                      Step("Add a channel #eng on Slack", "/write"))


def test_a_clause_that_says_how_things_are_reads():
    steps = task_steps("In the test MongoDB, how many users have no email field?")
    assert all(s.capability == "/read" for s in steps)
    steps = task_steps("Open the login page, check the form has email, password and a submit button.")
    assert [s.capability for s in steps] == ["/read", "/read"]


def test_where_or_when_a_sentence_opens_with_goes_on_into_the_action_after_it():
    # A place or a condition said first is one clause with the action it frames, whose step it is.
    assert split_clauses("In the staging Postgres, which tables have no primary key?") == [
        "In the staging Postgres, which tables have no primary key?"]
    assert [s.capability for s in task_steps("In the Platform space on Confluence, create a page called Runbook.")] == [
        "/write"]
    assert [s.capability for s in task_steps("When the migration is done, remove the backup table.")] == ["/delete"]
    # "when" without an auxiliary opens a condition, not a question
    assert [s.capability for s in task_steps("Once the nightly build finishes remove the old artifacts")] == ["/delete"]
    assert [s.capability for s in task_steps("When the nightly build finishes remove the old artifacts")] == [
        "/delete"]
    assert [s.capability for s in task_steps("When did the config last change?")] == ["/read"]
    # a question that opens with a preposition asks on its own
    assert split_clauses("In which file is parse() defined, and who wrote it?") == [
        "In which file is parse() defined", "who wrote it?"]
    # a piece that opens with "a" or "an" goes on with the list of the clause before
    assert split_clauses("Check the signup form has a name field, an email field and a checkbox for the terms.") == [
        "Check the signup form has a name field, an email field, a checkbox for the terms"]


def test_the_action_of_a_clause_a_condition_opens_is_what_follows_the_condition_itself():
    # the condition holds the action before the piece after it ("…, on GitHub" is where, not what)
    steps = task_steps("If the build is green merge PR #12 in acme/shop, on GitHub.")
    assert [(s.text, s.capability) for s in steps if not s.implied] == [
        ("If the build is green merge PR #12 in acme/shop, on GitHub", "/write")]
    steps = task_steps("When the deploy finishes delete the preview environment, in the staging cluster.")
    assert [s.capability for s in steps] == ["/delete"]


def test_a_lead_in_that_says_the_agents_own_action_is_a_step_of_its_own_in_the_order_it_is_done():
    assert [(s.text, s.capability) for s in task_steps("After you merge PR #12, delete the branch.")] == [
        ("After you merge PR #12", "/write"), ("delete the branch", "/delete")]
    assert [s.capability for s in task_steps("After deleting the old rows, insert the new ones into the users "
                                              "table.")] == ["/delete", "/write"]
    # the commit said in the lead-in is made here: its changes staged, the branch pushed before the pull request
    assert [s.text for s in task_steps("Once you've committed the fix, open a PR.")] == [
        STAGE_CHANGES, "Once you've committed the fix", PUSH_BRANCH, "open a PR"]
    # "before you delete it, back it up": the backup first, and the deletion is the lead-in's step alone
    assert split_clauses("Before you delete the branch, back it up to S3.") == [
        "back it up to S3", "Before you delete the branch"]
    steps = task_steps("Before you delete the branch, back it up to S3.")
    assert steps[-1].capability == "/delete" and steps[0].capability != "/delete"
    # a place or a condition is still no step of its own, nor is what the agent sees or a login
    assert split_clauses("Once the fix is committed, open a PR.") == ["Once the fix is committed, open a PR"]
    assert split_clauses("When you see the error, restart the worker.") == [
        "When you see the error, restart the worker"]
    assert [s.capability for s in task_steps("After logging in, check the dashboard shows the chart.")
            if not s.implied] == ["/read"]


def test_staging_is_said_in_gits_words_and_a_commit_stages_its_changes_first():
    """"Stage the fix when you're done" has few words a staging tool's text shares: its step is
    read in git's words. A commit made here stages what it commits first, once."""
    steps = task_steps("Fix the off-by-one error in src/pagination.py. Stage the fix when you're done.")
    assert [(s.text, s.capability, s.implied) for s in steps][-1] == (STAGE_CHANGES, "/write", False)
    texts = [s.text for s in task_steps("Look at what I've changed, then commit all of it and push.")]
    assert texts.index(STAGE_CHANGES) == texts.index("commit all of it") - 1
    assert [s.text for s in task_steps("Stage the fix, then commit it")].count(STAGE_CHANGES) == 1
    # "git add" a file is staging it, not editing it, and stages once; git's other forms and objects too
    assert [(s.text, s.by) for s in task_steps("git add src/app.py and commit it")] == [
        (STAGE_CHANGES, ""), ("commit it", "")]
    for task in ("git add . and commit", "Fix the bug in app.py, then git add -A and commit", "Stage only the docs",
                 "Stage the Dockerfile", "Stage the updated files"):
        assert [s.text for s in task_steps(task)].count(STAGE_CHANGES) == 1, task
    # a commit stages first though "staged", "already" or "commit to" is said of something else
    for task in ("Fix the bug in app.py and commit it, then trigger the staged rollout",
                 "Fix the bug in app.py and just commit it already", "Fix the bug in app.py and commit to the feature branch"):
        assert STAGE_CHANGES in [s.text for s in task_steps(task)], task
    # other stages: a staging environment, a play, a rollout, data, nothing
    for task in ("Stage the release on the staging server", "Stage the play for Friday's matinee",
                 "Stage the rollout for the EU region", "Stage the user data in a temp table before the migration",
                 "Stage nothing; show the diff", "Show me the commit history of main"):
        assert STAGE_CHANGES not in [s.text for s in task_steps(task)], task
    # a commit that stages nothing here: staged already, a plan committed to, or through a hosted service's API
    for task in ("Commit the staged changes", "I already staged the files; commit them", "The changes are staged; commit them",
                 "Commit to the plan and write up the schedule in plan.md",
                 "Commit the fix to main on GitHub via the API"):
        assert STAGE_CHANGES not in [s.text for s in task_steps(task)], task


def test_proposing_a_local_commit_implies_pushing_its_branch_first():
    steps = task_steps("Bump the version in pyproject.toml, commit that and raise a merge request on GitLab.")
    texts = [s.text for s in steps]
    assert PUSH_BRANCH in texts and texts.index(PUSH_BRANCH) == texts.index("raise a merge request on GitLab") - 1
    assert next(s for s in steps if s.text == PUSH_BRANCH).capability == "/write"
    # pushed already, or no commit made here ("the commit a1b2c3d" names one): nothing implied
    assert PUSH_BRANCH not in [s.text for s in task_steps("Commit the change, push it and open a PR")]
    assert PUSH_BRANCH not in [s.text for s in task_steps("Open a PR for the commit a1b2c3d on GitHub")]


def test_a_commit_proposed_in_any_words_is_pushed_first_unless_a_clause_pushes_it():
    for task in ("In the repo, commit the change and open a PR.", "Commit the fix, then submit a pull request.",
                 "Commit the fix, then send a PR to upstream.", "Commit the fix and raise an MR.",
                 "Commit the fix for push notifications and open a PR."):
        steps = task_steps(task)
        assert PUSH_BRANCH in [s.text for s in steps], task
        assert steps[-1].capability == "/write", task  # a pull request is opened, whatever the verb
    # "commit messages" name no commit made here
    assert PUSH_BRANCH not in [s.text for s in task_steps(
        "Commit messages must follow Conventional Commits. Open a PR with the fix from my fork.")]


def test_what_a_forbidding_clause_goes_on_to_say_is_no_step():
    assert [s.text for s in task_steps("Open a PR against main. Don't merge it, the release manager decides.")] == [
        "Open a PR against main"]
    assert [s.text for s in task_steps("Don't merge it, leave a comment instead")] == ["leave a comment instead"]


def test_an_imperative_after_a_forbidding_clause_is_a_step_whatever_its_verb():
    assert [s.text for s in task_steps("Don't close the issue, label it as stale.")] == ["label it as stale"]
    assert [s.text for s in task_steps("Never edit the lockfile, regenerate it with npm install.")] == [
        "regenerate it with npm install"]
    # a subject before its verb says whose the decision is, or why: no step
    for task in ("Don't merge it, Dana reviews first.", "Don't merge it, it's not ready.",
                 "Don't book anything, just give me options."):
        assert task_steps(task) == [], task


def test_deleting_things_given_by_a_pattern_finds_them_first():
    steps = task_steps("Remove the cached sessions in Memcached (their keys begin with sess:)")
    assert [(s.text, s.capability, s.implied) for s in steps][0] == (FIND_MATCHING, "/read", True)
    assert FIND_MATCHING in [s.text for s in task_steps("Delete the local branches matching feature/*")]
    assert FIND_MATCHING not in [s.text for s in task_steps("Delete the branch fix/login")]  # named: no search


def test_only_a_real_pattern_of_things_not_read_before_is_listed_before_deleting_them():
    for task in ("Delete **only** the branch wip in acme/shop on GitHub.",
                 "Remove the user *bob* from the admins group",
                 "Delete the event that matches the invite I sent yesterday",
                 "Delete the branch matching the PR number",
                 "List the keys in Redis, then delete the keys that start with flags:"):
        assert FIND_MATCHING not in [s.text for s in task_steps(task)], task
    for task in ("Check the Redis memory usage, then delete the keys that start with flags:",
                 "Delete the logs matching *.log in /var/tmp", "Remove the branches prefixed with wip-",
                 "Purge the keys matching the pattern sess_[0-9]+"):
        assert FIND_MATCHING in [s.text for s in task_steps(task)], task


def test_a_days_name_in_an_address_is_no_day_to_come():
    assert all(s.text != CURRENT_TIME for s in task_steps("List the open cards on the Roadmap board in monday.com"))
    assert task_steps("Book a room on Monday for the retro")[0].text == CURRENT_TIME


def test_retrieval_leaves_out_what_the_task_forbids():
    task = "Commit it and open a PR against main. Don't merge it, Dana reviews first."
    assert asked(task) == "Commit it and open a PR against main. Dana reviews first."
    assert asked("Find a slot next week. Just give me options, don't book anything.") == (
        "Find a slot next week. Just give me options.")
    assert asked("List the open issues. Don't delete the repo.") == "List the open issues."
    assert asked("Don't do anything") == "Don't do anything"  # nothing else is left: the task itself


def test_retrieval_reads_an_absolute_paths_file_by_its_kind():
    # the machine's directories say where, the extension what: "/root/markdown/x.md" asks for no markdown tool
    assert asked("Summarise NCT04280705 and save it to /root/markdown/NCT04280705.md.") == (
        "Summarise NCT04280705 and save it to Markdown file.")
    assert asked("Plot /root/excel/sales.xlsx and save it in ~/figs/sale.png") == (
        "Plot Excel spreadsheet file and save it in PNG image file")
    assert asked("see /root/a/b.md:12 and /root/notes/todo.md#tasks") == "see Markdown file and Markdown file"
    # a repository's path names its modules, an address's path or an API's route is theirs, a configuration, a
    # log or a key is named by its own name, and so is a file under a dot-directory
    for text in ("Fix the bug in src/auth/login.py", "Open https://github.com/acme/web/blob/main/src/a.py",
                 "Read notes/todo.txt", "Call GET /api/v1/users.json", "POST to /v2/orders/export.csv endpoint",
                 "open https://app.example.com/#/reports/q3.pdf", "curl http://h/x?f=/data/in/y.csv",
                 "read /etc/nginx/nginx.conf", "tail /var/log/postgresql/postgresql-15-main.log",
                 "show ~/.ssh/id_rsa.pub", "edit /repo/.github/workflows/ci.yml"):
        assert asked(text) == text
    # one long word, with or without a scheme's colon and slashes: each address is tried from its word's start only
    subprocess.run([sys.executable, "-c", "from jit.selection.steps import asked; asked('/a' * 20_000 + '.'); "
                    "asked('/' + 'a/' * 20_000 + 'b'); asked('a' * 400_000); asked('x:/' * 130_000)"],
                   check=True, timeout=60)


def test_a_thing_read_by_its_title_is_searched_for_first_and_a_thing_found_is_read_next():
    steps = task_steps("Review the 'Q3 launch plan' Google Doc and leave a comment about the risks section.")
    assert (steps[0].text, steps[0].capability, steps[0].implied) == (
        "search by title for the Google Doc", "/read", True)
    steps = task_steps("Find the signed Contoso contract in Drive and tell me when it renews.")
    assert [(s.text, s.implied) for s in steps][:2] == [
        ("Find the signed Contoso contract in Drive", False),
        ("read the content of the signed Contoso contract in Drive", True)]
    # a title to make is no thing to find; a possessive's apostrophe is no quote; "find out" finds nothing
    assert not any(s.implied for s in task_steps('Open a Linear issue titled "Rate limiter drops requests" now'))
    assert not any(s.implied for s in task_steps("Read Dana's notes and Bob's review of the doc"))
    assert not any(s.implied for s in task_steps("Find out why the pods restart"))


def test_a_day_still_to_come_needs_todays_date_first():
    steps = task_steps("Put 'Cache design sync' on my calendar for Thursday at 10:00 with ana@acme.dev.")
    assert (steps[0].text, steps[0].capability, steps[0].implied) == (CURRENT_TIME, "/read", True)
    assert CURRENT_TIME in [s.text for s in task_steps("Find a 30 minute slot next week when we are both free")]
    assert all(s.text != CURRENT_TIME for s in task_steps("Summarise the meeting notes in notes.md"))


def test_a_read_step_takes_a_tool_that_also_changes_things_only_when_none_reads_and_the_role_may_have_it():
    # Every browser's navigate has a side effect (its launch options name an executable, its server
    # says readOnlyHint false): "open the page" still gets one for a role that may use it.
    caps = {0: {"/read", "/execute"}, 1: {"/read", "/write"}, 2: {"/read"}}
    open_page = Step("open the page", "/read")
    table = {"open the page": [(0, 95, 0.6), (1, 90, 0.6)]}
    found = step_tools([open_page], _score(table), caps.__getitem__, lambda r: True, lambda r: False)
    assert (found[0].tool, [r for r, _v in found[0].options]) == (0, [0, 1])
    # a tool that only reads comes first, however it ranks
    table = {"open the page": [(0, 95, 0.6), (2, 85, 0.6)]}
    found = step_tools([open_page], _score(table), caps.__getitem__, lambda r: True, lambda r: False)
    assert [r for r, _v in found[0].options] == [2]
    # a role that may not have it (a read-only role) is not given it as a read step's tool
    table = {"open the page": [(0, 95, 0.6)]}
    found = step_tools([open_page], _score(table), caps.__getitem__, lambda r: False, lambda r: True)
    assert (found[0].tool, found[0].why) == (None, "none")


def test_a_long_task_without_stops_is_split_into_steps_in_linear_time():
    """What a clause's verb is about is looked for within its next 200 characters: looked for to the
    clause's end from every verb, 16 KiB of "run run " took over a second and 128 KiB over a minute.
    Tasks of 128 KiB with no stop or comma, each verb's object never said: a bounded wait, which the
    unbounded reach cannot meet."""
    code = ("from jit.selection.steps import task_steps; "
            "[task_steps(u * (131072 // len(u))) for u in ('run run ', 'point localhost:80 ', 'review review ', "
            "'pr pr ')]; assert task_steps('Run the pytest suite')[-1].capability == '/execute'")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_a_run_of_spaces_in_a_task_is_cut_into_pieces_in_linear_time():
    """A joining word ("and", "then") is looked for after a run of spaces, not inside it: tried from
    every space of the run, 64 KiB of spaces took 23 s to cut into pieces. A bounded wait on 128 KiB,
    which the backtracking cannot meet."""
    code = ("from jit.selection.retrieve import task_pieces; "
            "assert list(task_pieces('Fix the bug' + ' ' * 131072 + 'now open an issue')) == "
            "['Fix the bug' + ' ' * 131072 + 'now open an issue']; "
            "assert list(task_pieces('Fix the bug   and   open an issue')) == ['Fix the bug', 'open an issue']")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=20)


def test_a_verb_within_a_lead_ins_name_is_no_action_of_the_agent():
    """A verb of a lead-in counts as the agent's action only after the condition's own verb: "when
    the nightly export job run fails" names a run, it orders none; a phrasal verb or a state after
    "you" is a condition too ("when you bump into a timeout", "after you're logged on")."""
    for task in ("When the hourly sync job run fails, open the runbook.",
                 "In the billing service deploy history, find the last rollback.",
                 "When the monthly invoice email arrives, summarize it.",
                 "Once you've run out of retries, read the error log.",
                 "After you're set up, look at the onboarding notes."):
        steps = task_steps(task)
        assert [s.capability for s in steps if not s.implied] == ["/read"], (task, steps)
    assert [s.capability for s in task_steps("When the nightly ETL finishes delete the temp bucket.")] == ["/delete"]


def test_a_dont_after_a_lead_in_is_no_step():
    """ "If the canary is unhealthy don't promote release 7, just post in #ops": the promotion is
    forbidden, not a step; the post after it is."""
    steps = task_steps("If the canary is unhealthy don't merge PR #88, just comment on it.")
    assert [(s.text, s.capability) for s in steps] == [("just comment on it", "/send")]
    assert task_steps("If there are open blockers, don't delete the release branch.") == []


def test_before_moves_its_action_past_the_clause_it_comes_before_only():
    """ "Before you rotate the key, export the config, then restart the service": the export, then
    the rotation, then the restart (not the rotation last)."""
    steps = [s.text for s in task_steps("Before you drop the staging table, dump it to a file and then create "
                                        "the replacement table.") if not s.implied]
    assert steps.index("Before you drop the staging table") == 1 and steps[-1] == "create the replacement table"


def test_a_glob_in_a_deletion_is_found_in_linear_time():
    """The glob of a deletion by a pattern is looked for from a token's start only: from every
    opening bracket or quote of a run, 64 KiB took 30 s. A bounded wait, which that cannot meet."""
    code = ("from jit.selection.steps import task_steps, FIND_MATCHING; "
            "[task_steps('remove the files ' + u * (131072 // len(u))) for u in ('(', \"'\", '`', '(a')]; "
            "assert any(s.text == FIND_MATCHING for s in task_steps('Delete the logs matching (tmp/*.log) now'))")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=20)


def test_the_ones_a_read_just_listed_need_no_second_listing():
    """ "List the S3 objects under cache/, then remove the ones ending in .bak": the read before
    listed them; no implied listing."""
    steps = task_steps("List the S3 objects under cache/, then remove the ones ending in .bak.")
    assert not any(s.implied for s in steps), steps
    assert any(s.implied for s in task_steps("Remove the S3 objects under cache/ ending in .bak."))


def test_a_lead_in_reads_as_a_person_means_it():
    """What a second reading of lead-ins found: a "don't … but …" still asks for the "but"; a
    negation within the condition ("has never run") is the condition's; a condition's verb in the
    past or bare ("dropped", "pass") comes before the order; "when you merge …, delete …" is two
    actions, "when you run the tests, what fails?" one question; "set up" and "roll out" are done."""
    def said(task):
        return [(s.text, s.capability) for s in task_steps(task) if not s.implied]

    assert said("On the staging box, don't restart nginx but reload its config.") != []
    assert said("If the nightly export has never run start it by hand.") == [
        ("If the nightly export has never run start it by hand", "/execute")]
    assert said("If the coverage dropped leave a comment on PR #31.")[0][1] == "/send"
    assert said("If the checks pass merge PR #31.")[0][1] == "/write"
    assert said("When you merge PR #31, delete its branch.") == [("When you merge PR #31", "/write"),
                                                                ("delete its branch", "/delete")]
    assert len(said("When you run the linter, what does it flag?")) == 1
    assert said("After you set up the sandbox repo, open an issue for the flaky test.")[0] == (
        "After you set up the sandbox repo", "/write")


def test_before_a_list_comes_after_the_whole_list():
    """ "Before you drop the index, snapshot it and verify the snapshot": both first, then the drop;
    a "then" ends what it comes after."""
    steps = [s.text for s in task_steps("Before deleting the stale indices, take a snapshot and verify it.")
             if not s.implied]
    assert steps[-1] == "Before deleting the stale indices"


def test_the_ones_after_a_read_that_lists_nothing_are_still_listed():
    """ "Count the keys, then delete those matching tmp:*": the count listed nothing, so the listing
    of what matches is still implied."""
    steps = task_steps("Tell me how many keys there are, then delete those matching tmp:*.")
    assert any(s.implied and s.capability == "/read" for s in steps), steps


def test_the_calls_a_page_opened_in_the_browser_makes_are_its_network_requests():
    """A clause about the calls of a page the task opens ("which fetch call 500s", "the /api/cart
    request", "a 403 from PUT /api/profile") lists the page's network requests, and one that asks
    for a call's answer (its body, status or size) reads that request; an address opened only to
    read its calls is a page opened in the browser."""
    def texts(task: str) -> list[str]:
        return [s.text for s in task_steps(task)]

    got = texts("Load http://localhost:4200/cart, add two items, and tell me which fetch call 500s.")
    assert got.index(OPEN_PAGE) < got.index(PAGE_REQUESTS) and READ_REQUEST not in got
    got = texts("Go to https://shop.example.test/profile and see whether the /api/profile request returns 403; "
                "I need its response headers too.")
    assert got.index(OPEN_PAGE) < got.index(PAGE_REQUESTS) < got.index(READ_REQUEST)
    got = texts("On http://localhost:8080/settings save the form, then check the status of PUT /api/settings.")
    assert PAGE_REQUESTS in got and READ_REQUEST in got
    # no page opened, an API's address opened, or a call named without a page: no browser requests
    for task in ("Check that PUT /api/settings returns 200 in the staging logs.",
                 "Open https://api.example.test/v2/orders and check it returns 200.",
                 "curl http://localhost:9200/_cat/indices and tell me which index is red.",
                 "Open https://arxiv.org/abs/2401.00001 and summarise the abstract.",
                 "Open https://tracker.example.test/issues/123 and see how many 500 errors it had."):
        assert PAGE_REQUESTS not in texts(task) and READ_REQUEST not in texts(task), task


def test_an_attempt_asked_for_after_where_it_happens_is_the_action():
    """"On my dev server (…) try to log in as …" asks to log in there: the page's form is filled in
    and submitted; "when you try to log in, …" says when something happens, no action, and "don't
    try to delete any pods" forbids."""
    from jit.selection.clauses import clause_action
    assert clause_action("On the staging site (https://staging.example.test/login) try to sign in as "
                         "qa@example.test") == "try to sign in as qa@example.test"
    assert clause_action("In prod don't try to delete any pods") == "In prod don't try to delete any pods"
    texts = [s.text for s in task_steps("On my laptop (http://localhost:5000/login) try to log in as "
                                        "admin@example.test with a wrong password and screenshot the result.")]
    assert texts.index(OPEN_PAGE) < texts.index(FILL_FORM) < texts.index(SUBMIT_FORM)
    for clause in ("When you try to log in, the page hangs", "When users try to pay, checkout fails",
                   "When admins try to reset a password the app returns 403"):
        assert not clause_action(clause).startswith("try"), clause


def test_an_audit_of_a_page_opens_it_in_the_browser_and_runs_on_the_tool_that_analyzes():
    """Lighthouse and a performance trace audit the page the browser has open: the page is opened
    first. "Run" asks for a tool that runs; when none in reach runs anything for the step, one that
    analyzes it does (it asks less of the role), never one that deletes."""
    for task in ("Run a Lighthouse accessibility audit on https://shop.example.test/checkout.",
                 "Record a performance trace of https://shop.example.test/ and list the slowest requests."):
        assert task_steps(task)[0].text == OPEN_PAGE, task
    for task in ("Run an accessibility audit of src/components/Nav.tsx.",
                 "Add a Lighthouse CI step to .github/workflows/ci.yml that audits https://preview.example.test",
                 "Summarize the accessibility audit report at https://wiki.example.test/pages/42"):
        assert OPEN_PAGE not in [s.text for s in task_steps(task)], task
    caps = {0: {"/analyze", "/read", "/write"}, 1: {"/analyze", "/delete"}, 2: {"/execute"}}
    step = Step("run the Lighthouse audit", "/execute")
    table = {step.text: [(1, 99, 0.6), (0, 95, 0.6)]}
    found = step_tools([step], _score(table), caps.__getitem__, lambda r: True, lambda r: False)
    assert found[0].tool == 0
    table = {step.text: [(0, 99, 0.6), (2, 90, 0.6)]}  # a tool that runs goes first
    assert step_tools([step], _score(table), caps.__getitem__, lambda r: True, lambda r: False)[0].tool == 2


def test_places_near_an_address_are_found_from_its_coordinates_and_a_trips_length_is_a_travel_time():
    """"bakeries near Karl-Marx-Allee 90" and "a gym within 1 km of our office" search around a place:
    its address is geocoded first; "how long the drive is" and "walking time" ask a travel time."""
    def texts(task: str) -> list[str]:
        return [s.text for s in task_steps(task)]

    got = texts("Find two bakeries near Karl-Marx-Allee 90, Berlin, and tell me how long the walk is from the U-Bahn.")
    assert got.index(GEOCODE) < got.index(TRAVEL_TIME)
    assert GEOCODE in texts("Look for gyms within 1 km of our office at 5 Market Street, San Francisco.")
    assert TRAVEL_TIME in texts("What is the driving time from the airport to the venue?")
    assert TRAVEL_TIME in texts("Find a hotel near the venue and how long it takes to get there from the airport.")
    # places in code, a page's address, a time of day: no map
    for task in ("Find the places in src/parser.py near the tokenizer call that still use the old API.",
                 "Check the logs around midnight for errors.",
                 "Search the logs for errors around the time of the outage.",
                 "Find alerts within an hour of the release.", "List the Jira tickets near the sprint deadline.",
                 "How long does it take to get a response from the payments API?",
                 "The commute widget shows wrong travel times; fix src/widgets/commute.ts.",
                 "Open https://maps.example.test/shops near the station and screenshot it."):
        assert GEOCODE not in texts(task) and TRAVEL_TIME not in texts(task), task


def test_a_workbook_or_spreadsheet_a_clause_works_in_has_its_sheets_looked_at_first():
    """A range of a workbook read or written ("mark the Login row in reports/test-matrix.xlsx", "the
    'Customer Metrics' Google Sheet") is one of its sheets: which sheets it has is asked first, of the
    file's tool or of the online spreadsheet's, once it is found."""
    def texts(task: str) -> list[str]:
        return [s.text for s in task_steps(task)]

    assert texts("In reports/test-matrix.xlsx, mark the Login row as Passed") == [
        SHEET_TABS, "In reports/test-matrix.xlsx, mark the Login row as Passed"]
    got = texts("Pull the Q3 churn numbers from the 'Customer Metrics' Google Sheet and compare them with "
                "reports/q3.xlsx")
    assert got.index("search by title for the Google Sheet") < got.index(ONLINE_SHEET_TABS)  # found, then its tabs
    assert got.index(ONLINE_SHEET_TABS) < got.index(SHEET_TABS)  # each book by its own kind
    assert ONLINE_SHEET_TABS in texts("do the numbers on the Totals tab of the budget spreadsheet in Drive add up?")
    assert texts("Add a row to https://docs.google.com/spreadsheets/d/1AbC/edit")[0] == ONLINE_SHEET_TABS
    # a book made or handled as a file, one a change adds, a tab of something else, no book at all
    for task in ("Create a new spreadsheet for the budget in Google Drive",
                 "Export the orders to a workbook at out/o.xlsx",
                 "Put the results in a new Google Sheet", "Save the query results to out/results.xlsx",
                 "Commit reports/q3.xlsx and push", "Upload report.xlsx to the s3://acme-reports bucket",
                 "Rename budget.xlsx to budget-2025.xlsx", "Implement a spreadsheet-like grid component in React",
                 "Write unit tests for the workbook parser in lib/workbook.py",
                 "Review the PR that adds spreadsheet export to the dashboard",
                 'Switch to the "Network" tab in devtools', "Check the 'Actions' tab of acme/web",
                 "Read the React hooks cheat sheet and summarise it", "Update the style sheet in src/app.css"):
        assert SHEET_TABS not in texts(task) and ONLINE_SHEET_TABS not in texts(task), task


def test_a_boards_items_read_by_a_field_have_the_boards_columns_read_first():
    """"which items on the 'Q4 Launch' board are Stuck", "which cards are past their due date": the board's columns
    hold the status, the owner, the date."""
    def texts(task: str) -> list[str]:
        return [s.text for s in task_steps(task)]

    assert BOARD_COLUMNS in texts("Look at our 'Q4 Launch' board on monday.com - which items are Stuck, who owns them?")
    assert BOARD_COLUMNS in texts("Which cards on the Sprint 12 Trello board are past their due date?")
    for task in ("Check the status of the deploy, and post it to the team board",  # no item of the board read
                 "Prepare the agenda for the board meeting and list the owners of each item",
                 "Check the dashboard status for errors", "Move the card to Done on the board"):
        assert BOARD_COLUMNS not in texts(task), task


def test_an_address_requested_over_http_is_fetched_not_opened_in_a_browser():
    """"Hit http://localhost:4000/api/health", "GET /healthz on the forwarded port", "check /_cluster/health is
    green" after a port-forward: a client's request, whose answer a fetch tool gets, not a page to open."""
    def texts(task: str) -> list[str]:
        return [s.text for s in task_steps(task)]

    assert texts("Hit http://localhost:4000/api/health and /api/version") == [FETCH_URL]
    got = texts("Port-forward svc/search-es to localhost:9200, check /_cluster/health is green, then stop the forward")
    assert FETCH_URL in got and OPEN_PAGE not in got
    assert texts("verify http://localhost:8080/readyz returns 200") == [FETCH_URL]
    assert texts("Port-forward to service/api on 8080 and hit /healthz and /readyz")[1] == FETCH_URL
    assert texts("GET /healthz on the forwarded port") == [FETCH_URL]
    assert texts("Get http://localhost:8080/health") == [FETCH_URL]
    # a file's path, a page looked at or opened in a browser: no request
    assert FETCH_URL not in texts("fetch /etc/hosts and show it")
    for task in ("Port-forward svc/api to localhost:8080, then fetch /etc/hosts from the pod",
                 "Port-forward svc/api to localhost:8080 and check /var/log/app/status.log for errors",
                 "Port-forward svc/api to localhost:8080 and check /app/config/version.json matches the tag",
                 "Check http://localhost:3000/version-history lists v2",
                 "Check http://localhost:3000/status renders the status page correctly"):
        assert FETCH_URL not in texts(task), task
    assert texts("check http://localhost:3000/pricing renders the banner")[0] == OPEN_PAGE
    assert texts("Hit http://localhost:3000/login in the browser and screenshot the form")[0] == OPEN_PAGE


def test_a_tool_named_as_its_server_is_named_for_what_it_does():
    # the fetch server's ``fetch``: its server's words are all its name has
    assert name_fit("fetch", "fetch", Step("fetch a URL", "/read")) == 1.0
    assert name_fit("fetch", "fetch", Step("search the mailbox", "/read")) == 0.0  # not any read: its own verb
    assert name_fit("git_fetch", "git", Step("fetch a URL", "/read")) == 1.0  # "git" left out as before


def test_local_changes_looked_at_have_the_working_trees_status_read_first():
    """"look over my unstaged changes", "review what I've staged", "everything I've changed" before a commit: which
    files the changes touch is the working tree's status."""
    def texts(task: str) -> list[str]:
        return [s.text for s in task_steps(task)]

    for task in ("Before I commit, look over my unstaged changes and flag anything odd.",
                 "Before I commit, review what I've staged in the local repo.",
                 "Look at everything I've changed, write a sensible commit message and commit all of it.",
                 # changes the user says they made in a local copy, in a task about a repository
                 "I already bumped lodash in package.json and package-lock.json in my local checkout. Commit them.",
                 "We fixed the typo locally; commit it"):
        assert texts(task)[0] == TREE_STATUS, task
    assert texts("I've made some changes on my laptop, commit them")[0] == TREE_STATUS
    # changes looked over are read as well: their diff, of what is staged or not yet
    assert texts("Look at everything I've changed and commit it")[:2] == [TREE_STATUS, DIFF_UNSTAGED]
    assert texts("Before I commit, review what I've staged in the local repo.")[:2] == [TREE_STATUS, DIFF_STAGED]
    assert DIFF_UNSTAGED not in texts("We fixed the typo locally; commit it")  # said, not looked over
    assert texts("Review what I've changed but not staged in the repo")[:2] == [TREE_STATUS, DIFF_UNSTAGED]
    assert texts("Summarise my uncommitted changes")[:2] == [TREE_STATUS, DIFF_UNSTAGED]
    # their state alone asked: the status, no diff; a document's "working copy" is no git's
    assert DIFF_UNSTAGED not in texts("Check the working tree is clean before tagging")
    assert TREE_STATUS not in texts("Inspect the working copy of the contract in Google Docs")
    assert texts("Review my unstaged changes to the server code before I commit")[0] == TREE_STATUS  # a repo's server
    for task in ("Summarise my changes to the config in the Notion page",  # no repository
                 "Review my changes to the contract's commitments section",
                 "Look over my changes to the Q3 budget before the staging review",
                 "Review the changes in PR #12", "Commit the fix",
                 "I updated the README on GitHub",  # not in a local copy
                 "I fixed the bug in PR #12 locally, commit it",  # a change under review is read as one
                 "I changed the thermostat locally to 19 degrees",  # no repository
                 # the change made elsewhere, the local copy only in another sentence or a document's
                 "I already bumped the version on the release branch on GitHub; update my local checkout and tag it",
                 "I've updated the spreadsheet locally in Excel. Commit the README in the repo"):
        assert TREE_STATUS not in texts(task), task


def test_the_words_of_a_commit_or_a_pull_request_are_what_its_call_is_given():
    """"write a sensible commit message and commit it": the message goes into the commit, no file is written."""
    steps = task_steps("Look at everything I've changed, write a sensible commit message and commit all of it.")
    assert [s.text for s in steps if not s.implied] == ["Look at everything I've changed", "commit all of it"]
    assert "open a pull request against main" in [
        s.text for s in task_steps("Draft the PR description and open a pull request against main")]
    assert len(task_steps("Draft the PR description and open a pull request against main")) == 1
    # words written on their own, or another text a commit holds: a step
    assert [s.text for s in task_steps("Write a commit message for these changes")] == [
        "Write a commit message for these changes"]
    assert "write the release notes" in [s.text for s in task_steps("write the release notes and commit them")]
    # a file written, a guide to the words, a pull request's words in a task that opens none: steps
    for task in ("Write a commit message guide in CONTRIBUTING.md and commit it",
                 "Write the PR description in docs/pr.md and commit it",
                 "Prepare the PR title and summary for review, then commit the fix"):
        assert task.split(" and ")[0].split(", then")[0] in [s.text for s in task_steps(task)], task


def test_a_repository_named_by_its_owner_and_name_points_at_a_code_host():
    """"the open issues in acme/shop", "PR #80 in acme/web": a code host's repository, GitHub named or not; a
    project's directory or file is none."""
    from jit.selection.steps import names_repository

    for task in ("Which open issues in acme/shop mention 'timeout'?", "Review PR #88 in acme/payments",
                 "Read issue #77 in acme/shop and PR #80", "Count the stars of the acme/sdk repo"):
        assert names_repository(task), task
    for task in ("List the commits to src/payments since Monday", "Read the ADRs in docs/adr/ and summarise them",
                 "fix the bug in src/money.py", "what changed in lib/utils.py", "Move the card to Done",
                 "Fix the issues in terraform/modules and rerun the plan", "Open a PR from feature/x to main",
                 "Check which tags of library/nginx are available on Docker Hub", "check the releases of bitnami/redis",
                 "Read the README of meta-llama/Llama-3-8B on Hugging Face", "issues at 3/4 of the route",
                 "The release is on 11/30; post the release notes to #releases on Slack"):
        assert not names_repository(task), task


def test_code_fixed_for_an_error_a_tracker_holds_has_the_errors_stack_trace_read_first():
    """"TypeError … is spiking in Sentry. Find it, fix the missing null check in our code": the code to fix is where
    the error's stack trace says it is thrown, and "in our code" is a fix of code, whatever "check" says to the
    analyzer."""
    steps = task_steps("TypeError: Cannot read properties of undefined is spiking in Sentry for acme/web. Find it, fix "
                       "the missing null check in our code, and mark the issue resolved.")
    texts = [s.text for s in steps]
    assert texts.index(STACK_TRACE) < texts.index(READ_CODE)
    assert [s.by for s in steps if s.text == "fix the missing null check in our code"] == [FILE_STEP]
    # no tracker, no error of one, or no code fixed: no trace
    for task in ("Fix the missing null check in src/cart.ts", "Find the top Sentry issue and mark it resolved",
                 "Upgrade the sentry-sdk and fix the import",
                 "Fix the Sentry alert rule so it only fires for production",
                 "Fix the Sentry integration in our code", "Fix the stack trace formatting in our logger"):
        assert STACK_TRACE not in [s.text for s in task_steps(task)], task
    # a fix of something else than the code one calls one's own: no file edit
    for task in ("Fix the discount code on the checkout page", "Fix the Slack message about the code freeze",
                 "Fix the title of PR #12 in the repo", "Fix the exit code of the cron job in Kubernetes"):
        assert FILE_STEP not in [s.by for s in task_steps(task)], task


def test_an_element_taken_from_the_page_snapshot_brings_the_snapshot():
    """Playwright's ``browser_click`` takes "Exact target element reference from the page snapshot", Chrome
    DevTools' ``click`` "The uid of an element on the page from the page content snapshot": the snapshot hands
    them out, whatever its verb ("take"), but a sibling that changes something does not."""
    click = _tool(1, "playwright", "browser_click", "Click on a web page", ("target",))
    click.tool.input_schema["properties"]["target"]["description"] = (
        "Exact target element reference from the page snapshot, or a unique element selector")
    siblings = [(2, _tool(2, "playwright", "browser_snapshot", "Capture accessibility snapshot of the current page")),
                (3, _tool(3, "playwright", "browser_navigate", "Navigate to a URL"))]
    assert producers(click, _lines(siblings)) == [2]
    fill = _tool(4, "chrome-devtools", "fill", "Type into an input", ("uid",))
    fill.tool.input_schema["properties"]["uid"]["description"] = (
        "The uid of an element on the page from the page content snapshot")
    assert producers(fill, _lines([(5, _tool(5, "chrome-devtools", "take_snapshot", "Take a text snapshot")),
                                   (6, _tool(6, "chrome-devtools", "delete_snapshot", "Delete a snapshot"))])) == [5]
    # a database's or a disk's snapshot is no page's: its maker hands nothing out
    restore = _tool(7, "rds", "restore_db_instance", "Restore an instance", ("source",))
    restore.tool.input_schema["properties"]["source"]["description"] = "Restore the instance from the DB snapshot"
    assert producers(restore, _lines([(8, _tool(8, "rds", "copy_db_snapshot", "Copy a snapshot"))])) == []


def test_a_search_run_on_an_opened_page_types_its_query_and_a_form_said_sent_is_sent():
    """"On https://app.acme.io/search, search for 'shoes'": the page's box takes the query and Enter is pressed;
    "Submitting the signup form empty at http://… logs an error": to see it, the form is sent, empty."""
    texts = [s.text for s in task_steps("On https://app.acme.io/search, search for 'shoes' and tell me which XHR "
                                        "failed.")]
    assert texts.index(OPEN_PAGE) < texts.index(TYPE_TEXT) < texts.index(PRESS_KEY)
    steps = task_steps("Submitting the signup form empty at http://localhost:3000/signup logs an error in the "
                       "browser console. Find out what it is.")
    texts = [s.text for s in steps]
    assert SUBMIT_FORM in texts and FILL_FORM not in texts
    assert [s.capability for s in steps if s.text.startswith("Submitting")] == ["/read"]  # what happens, read
    # a web search after a page opened, an unquoted search, a search of another place: no typing on the page
    for task in ("Open https://example.com in the browser. Then search the web for its owner",
                 "Search for httpx docs on the web",
                 "Open https://news.ycombinator.com in the browser. Search for 'rust' in my Slack messages.",
                 "Take a screenshot of https://example.com. Then search for 'example' in the codebase."):
        assert TYPE_TEXT not in [s.text for s in task_steps(task)], task
    # a form sent through something else, or a field of it empty: no form sent, or one filled in
    for task in ("Open https://app.acme.io in the browser. Registering users via the admin API is broken; find the bug "
                 "in src/users.py.", "Open https://app.acme.io in the browser. Submitting user feedback forms is "
                 "tracked in Jira."):
        assert SUBMIT_FORM not in [s.text for s in task_steps(task)], task
    assert FILL_FORM in [s.text for s in task_steps("Open http://localhost:3000/signup. Submitting the form with an "
                                                    "empty email field shows 'Email required' in the form.")]


def test_a_tool_that_needs_coordinates_is_fed_by_the_sibling_that_geocodes():
    def point_tool(i: int, name: str, schema: dict) -> StoredTool:
        return StoredTool(id=i, tool=ToolDef(server="maps", name=name, description="", input_schema=schema),
                          definition_hash=str(i), server_status=ServerStatus.CONNECTED, analysis=ToolAnalysis())

    def needs(name: str, *required: str, **props: dict) -> StoredTool:
        return point_tool(10, name, {"type": "object", "required": list(required),
                                     "properties": {p: props.get(p, {"type": "number"}) for p in required}})
    point = {"type": "object", "properties": {"latitude": {"type": "number"}, "longitude": {"type": "number"}}}
    siblings = [(3, "maps_reverse_geocode", "Convert coordinates into an address"),
                (4, "maps_geocode", "Convert an address into geographic coordinates"),
                (5, "maps_search_places", "Search for places using Google Places API")]
    # A list of points, a latitude by any of its names, a point behind anyOf (an Optional's schema).
    assert coordinate_producers(needs("maps_elevation", "locations", locations={"type": "array", "items": point}),
                                siblings) == [4]
    for required in (("lat", "lon"), ("from_latitude", "to_latitude"), ("originLat", "originLng")):
        assert coordinate_producers(needs("route", *required), siblings) == [4], required
    wrapped = {"anyOf": [point, {"type": "null"}]}
    assert coordinate_producers(needs("forecast", "where", where=wrapped), siblings) == [4]
    # Said by its name's word of geocoding or by its line, whatever its name; never one that changes things.
    assert coordinate_producers(needs("forecast", "lat"), [(6, "lookup_address", "Turn a street address to lat/lng")]
                                ) == [6]
    assert coordinate_producers(needs("forecast", "lat"), [(8, "forward_geocoding", "Forward lookups")]) == [8]
    assert coordinate_producers(needs("forecast", "lat"), [(9, "search_location", "Find a place by name to get "
                                                             "its coordinates")]) == [9]
    for other in ((7, "create_marker", "Add a marker: converts a place into coordinates"),
                  (11, "create_geocoding_job", "Queue a batch geocoding job"),
                  (12, "get_map_center", "Get the map center and return its coordinates")):
        assert coordinate_producers(needs("forecast", "lat"), [other]) == [], other
    # A point that is optional, a word that merely holds "lat", or a reverse geocoder itself asks for nothing.
    nearby = point_tool(8, "maps_search_places", {"type": "object", "required": ["query"], "properties": {
        "query": {"type": "string"}, "location": point}})
    assert coordinate_producers(nearby, siblings) == []
    assert coordinate_producers(needs("set_format", "flat", "format"), siblings) == []
    assert coordinate_producers(needs("maps_reverse_geocode", "latitude", "longitude"), siblings) == []
    # A task that gives its coordinates by their numbers: four decimals, or two after a word of place.
    for said in ("What is the elevation at 45.9822, 7.6795?", "weather at lat 45.98 lon 7.68",
                 "coordinates (45.98, 7.68)", "location: 45.98, 7.68"):
        assert _POINT.search(said), said
    for unsaid in ("compare versions 1.25, 2.10 and 3.0", "the classifier scored 0.923, 0.871", "lat 3",
                   "priced at 19.99, 24.99", "timings at 12.34, 15.67 ms"):
        assert not _POINT.search(unsaid), unsaid


def test_the_things_a_directory_holds_are_listed_before_they_are_read():
    for task in ("Read docs/architecture.md and the ADRs in docs/adr/ and summarise what was decided",
                 "Check all the log files under /var/log/app/ for OOM kills", "Summarise the notes in ~/notes/",
                 "Summarise the reports in the exports folder", "What do the tests in tests/checkout/ cover?",
                 "Show me the errors in the logs under /var/log/nginx/"):
        texts = [s.text for s in task_steps(task)]
        assert texts.count(LIST_FOLDER) == 1 and texts.index(LIST_FOLDER) == 0, task
    # A file, a diff or a history under a directory, the things a system keeps, a change or a search's hits, a
    # web address (with its scheme or without), a cluster's namespace, a bucket, an app's folder, a clause that
    # lists them itself: no listing.
    for task in ("Summarize the commits and the diff under src/auth/", "Read src/auth/session.py",
                 "Open the issues in acme/shop/ please", "Read the pull requests in org/repo/",
                 "Read the releases in vercel/next.js/", "Review the changes in src/ before I commit",
                 "Find the TODOs in src/", "Compare the pages in https://docs.x.com/guide/ with ours",
                 "Read the docs in docs.python.org/3/library/", "Describe the services in the default/ namespace",
                 "Read all the reports in my-bucket/2024/ on S3",
                 "Read the newsletters in the Promotions folder in Gmail",
                 "Read the docs in the Engineering folder on Google Drive", "Show the files in src/",
                 "List the S3 objects under cache/", "Move the images in public/img/ to assets/",
                 "Read the secrets in kv/myapp/ in Vault", "Describe the endpoints in /api/v2/",
                 "Check the history of src/auth/ over the last month"):
        assert LIST_FOLDER not in [s.text for s in task_steps(task)], task


def test_the_directory_and_coordinate_patterns_read_in_linear_time():
    """Runs of spaces between a number and its comma, or after "lat" or "at", and long paths: each pattern reads a
    40 KB text in milliseconds; one that backtracked over the spaces took 18 to 33 s. A bounded wait in a process
    of its own, which a backtracking pattern (seconds to minutes per text) cannot meet."""
    code = ("from jit.selection.steps import _IN_FOLDER, _POINT\n"
            "for t in ('1.111' + ' ' * 40_000 + 'x', 'lat' + ' ' * 40_000 + 'x', 'at' + ' ' * 40_000 + '1.11' + "
            "' ' * 4000, 'at (' + ' ' * 40_000 + '1', ('at ' + ' ' * 10 + '1.1 ') * 2000):\n"
            "    _POINT.search(t)\n"
            "for t in ('the ' + 'ab ' * 20_000 + 'x', 'the files in ' + 'a/' * 20_000 + '.', 'all xs in ' + 'a.' * "
            "20_000, 'the xs in ' + 'a/' * 20_000 + ' ' * 20_000 + 'n'):\n"
            "    _IN_FOLDER.search(t)\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_a_page_compared_with_its_design_is_opened_and_pictured():
    texts = [s.text for s in task_steps("Compare https://staging.example.com/checkout against the Figma design "
                                        "(file 8fK2xQ, node 77:12) and list the visual differences.")]
    assert texts[:2] == [OPEN_PAGE, SNAPSHOT_PAGE]
    for task in ("Compare https://staging.example.com/checkout against the designers' mockup",
                 "Compare https://acme.com/pricing against the Figma mockup"):
        assert [s.text for s in task_steps(task)][:2] == [OPEN_PAGE, SNAPSHOT_PAGE], task
    # An API compared with its spec, a design document or system, a service's own address: no page.
    for task in ("Compare https://api.x.com/v1/users with the OpenAPI spec",
                 "Compare the response of https://api.x.com/v1 with the design doc",
                 "Check https://github.com/acme/web/pull/91 against the design system guidelines",
                 "Match the Jira ticket https://acme.atlassian.net/browse/UI-77 to the Figma design"):
        assert OPEN_PAGE not in [s.text for s in task_steps(task)], task


def test_a_thing_given_to_the_user_looks_up_who_the_user_is_first():
    for task in ("File a Linear issue in the Platform team: the TLS cert expires soon. Assign it to me.",
                 "Create a Jira bug with me as assignee", "Add me as a reviewer on PR #12",
                 "Create the ticket and assign to me", "Make me the owner of the repo", "File a bug, assignee: me"):
        texts = [s.text for s in task_steps(task)]
        assert WHO_AM_I in texts and texts.index(WHO_AM_I) < len(texts) - 1, task
    # What the user reads, or what is sent to them: no lookup.
    for task in ("Tell me what was assigned to me", "Send the report to me", "Show me my open issues",
                 "Assign the ticket to me@example.com"):
        assert WHO_AM_I not in [s.text for s in task_steps(task)], task


def test_a_fields_value_in_quotes_is_no_title_to_search_for():
    texts = [s.text for s in task_steps("find orders in Postgres with status 'refund_pending' older than 7 days")]
    assert not [t for t in texts if t.startswith("search by title")], texts
    for task in ("set the priority to 'urgent' on the card", "list the issues with label: 'bug'"):
        assert not [s for s in task_steps(task) if s.text.startswith("search by title")], task
    assert task_steps("Read the 'Q3 launch plan' Google Doc")[0].text == "search by title for the Google Doc"
    # a field's value first, a title after it: the title's
    assert [s.text for s in task_steps("Get the tickets of type 'Incident' from the 'Ops' board in Jira")
            if s.text.startswith("search by title")] == ["search by title for the board in Jira"]
    subprocess.run([sys.executable, "-c", "from jit.selection.steps import _FIELD_VALUE, _titled; "
                    "_FIELD_VALUE.search('status' + ' ' * 40_000 + 'x'); _titled(\"status 'abcd' \" * 2857)"],
                   check=True, timeout=60)


def test_a_message_a_sent_form_should_show_is_read_from_the_page():
    for task in ("Check that https://staging.acme.io/login shows an error when the password is wrong: log in as "
                 "qa@acme.io with 'wrongpass' and screenshot the result.",
                 "Open http://localhost:3000/login and log in as qa@acme.test with a wrong password. Expect the "
                 "'Invalid email or password' message."):
        texts = [s.text for s in task_steps(task)]
        assert texts.index(READ_PAGE) == texts.index(SUBMIT_FORM) + 1, texts
    for task in ("Open http://localhost:3000/login and log in as bob with a wrong password; an error message should "
                 "be displayed", "Open http://localhost:3000/login and log in as bob; it should say 'Welcome back'"):
        assert READ_PAGE in [s.text for s in task_steps(task)], task
    # A login that expects nothing shown, or a message read elsewhere (the console): no read of the page's text.
    for task in ("Log in on http://localhost:3000/login as admin and open the settings",
                 "Open http://localhost:3000/login, log in as admin, then check that the browser console shows no "
                 "errors"):
        assert READ_PAGE not in [s.text for s in task_steps(task)], task


def test_a_path_under_a_module_or_a_folder_names_no_repository():
    from jit.selection.steps import names_repository

    assert names_repository("Read PR #4 in acme/web")
    assert not names_repository("Fix issue #12 in the payments/ledger module")
    assert not names_repository("Summarize the open issues in todo/done columns")


def test_a_list_of_things_read_with_one_verb_is_one_read_each():
    steps = [(s.text, s.capability) for s in task_steps("Check the pods and their logs in namespace shop")]
    assert steps == [("Check the pods", "/read"), ("Check their logs in namespace shop", "/read")]
    texts = [s.text for s in task_steps("Look at PR #12 in acme/web: look at the changed files and the CI status.")]
    assert {"look at the changed files", "look at the CI status"} <= set(texts)  # no product: read as said
    # sources looked into for what the task asks are searched, each on its own
    texts = [s.text for s in task_steps("What did we decide on the data retention policy? "
                                        "Check Confluence and my Obsidian notes.")]
    assert texts[1:] == ["search Confluence", "search my Obsidian notes"]
    # a list that is another word's, of fields, of what one thing has or of where it comes from: one step
    for task in ("check the form has email, password and a submit button",
                 "Pull the pricing tiers from linear.app/pricing, atlassian.com/pricing and asana.com/pricing",
                 "Compare Vercel, Netlify and Cloudflare Pages pricing for a team of five",
                 "Find recent benchmarks comparing Postgres 17, MySQL 9 for OLTP",
                 "Screenshot https://staging.acme.dev/pricing at mobile width, 375px",
                 "Show me the orders, the refunds"):
        assert len([s for s in task_steps(task) if not s.implied]) == 1, task
    subprocess.run([sys.executable, "-c", "from jit.selection.steps import _each_read; "
                    "_each_read('check ' + 'the a, ' * 8000); _each_read('check Foo' + ' a' * 20000 + ', the x')"],
                   check=True, timeout=60)


def test_a_list_after_a_preposition_or_across_sentences_is_no_list_of_reads():
    task = ("Can you recommend a popular movie and check its streaming availability on Netflix, Hulu, and Prime Video? "
            "Additionally, provide details about the movie's cast and crew.")
    texts = [s.text for s in task_steps(task)]
    assert not [t for t in texts if t.startswith("search") or t == "check Prime Video?"], texts
    texts = [s.text for s in task_steps("Read issue #77 in acme/shop and PR #80")]
    assert texts == ["Read issue #77 in acme/shop, PR #80"]


def test_one_after_a_thing_said_is_one_of_that_kind():
    texts = [s.text for s in task_steps("Check the existing indexes, add one on customerId")]
    assert texts == ["Check the existing indexes", "add an index on customerId"]
    texts = [s.text for s in task_steps("Find the Jira ticket for the login bug; if there is none, create one.")]
    assert texts[-1] == "if there is none, create a ticket"
    texts = [s.text for s in task_steps("Look for an open issue about flaky tests in acme/shop, and if there is not "
                                        "one, open one.")]
    assert texts[-1] == "open an issue"
    # one of several, one by one, a pronoun's or a verb's object: as said
    for task, last in (("List the branches and delete one of them", "delete one of them"),
                       ("Read the tickets, then close them one by one", "close them one by one"),
                       ("Check it and fix one", "fix one")):
        assert task_steps(task)[-1].text == last, task
    subprocess.run([sys.executable, "-c", "from jit.selection.steps import _ONE, _kind_of; "
                    "_kind_of('Check the' + ' ' * 40_000 + 'x'); _ONE.search(', ' * 20_000 + 'add one')"],
                   check=True, timeout=60)


def test_what_a_list_of_reads_and_a_one_leave_as_said():
    # one thing of a product is read, not searched; a clause after "that"; a sentence's list; values
    assert [s.text for s in task_steps("Check the Redis cache, the Postgres replica and the Kafka lag")] == [
        "Check the Redis cache", "Check the Postgres replica", "Check the Kafka lag"]
    for task in ("Check that the header, the footer and the sidebar render on mobile",
                 "Look at the PR. The tests, the lint and the build all need to pass.",
                 "Check the env vars DB_URL, REDIS_URL and the API key"):
        assert not [s for s in task_steps(task) if s.text.startswith(("search", "Check the footer", "Look at the build",
                                                                       "Check REDIS"))], task
    # "one" as a number, and a kind the clause looks for rather than acts on
    assert task_steps("create one Jira ticket per error")[-1].text == "create one Jira ticket per error"
    assert task_steps("Check the calendar for a free slot on Thursday and book one")[-1].text == "book one"
    # a condition that names the kind
    assert task_steps("Open the PR description, and if it has no checklist, add one")[-1].text == "add a checklist"


def test_a_condition_names_the_kind_by_its_last_word():
    texts = [s.text for s in task_steps("If there is a failing test in CI, open one")]
    assert texts[-1] == "If there is a failing test in CI, open a test"
    timeout = "from jit.selection.steps import _LACKS; _LACKS.search('if there is no ' + 'a ' * 20_000 + '-')"
    subprocess.run([sys.executable, "-c", timeout], check=True, timeout=60)


def test_a_named_form_at_an_address_is_opened_in_the_browser():
    task = "Please test the returns form on staging: https://staging.shop.example/returns/new"
    texts = [s.text for s in task_steps(task)]
    assert OPEN_PAGE in texts
    # a form's words elsewhere, with no address, open nothing
    assert OPEN_PAGE not in [s.text for s in task_steps("Update the contact form copy in src/Contact.tsx")]
