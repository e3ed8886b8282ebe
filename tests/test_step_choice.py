"""Which tool a step takes, and what else may fill Full (jit.selection.steps, rules/policy.dl's probes).

A task that names a product ("search Notion", "the Web board in Trello") has said where a step is
done; a sibling of the step's best tool is judged beside it; a title in quotes says what a thing
is about, not which tool acts on it; and a probe of a server (its health, a job's status) does
not fill Full for a task that never points at that server.
"""

from __future__ import annotations

import pytest

from jit.analysis.offline_analyzer import analyze_task
from jit.selection.explain import RuleCitations
from jit.selection.logic import LogicEngine, RuleSet
from jit.selection.policy import Policy
from jit.selection.naming import ServerNames, named_servers
from jit.selection.scored_tool import best_first
from jit.selection.steps import NAMED_FLOOR, STEP_FLOOR, Step, settle, step_tools, undoes
from jit.selection.task import IMPLIED
from jit.selection.tiers import Tier
from tests.test_render import scored
from tests.test_task_steps import _score

SERVERS = ("notion", "trello", "context7", "mongodb", "fetch", "time", "monday", "google-calendar", "linear",
           "sentry", "github", "email")


def test_a_server_is_named_as_a_product_not_as_an_ordinary_word():
    assert named_servers("What does our Notion wiki say about the on-call rotation?", SERVERS) == {"notion"}
    assert named_servers("Sentry issue WEB-3F2 is a TypeError in checkout", SERVERS) == {"sentry"}
    assert named_servers("find httpx's library id in context7, then search MongoDB", SERVERS) == {
        "context7", "mongodb"}  # a digit or an inner capital is no ordinary word, in any case
    assert named_servers("book it in Google Calendar", SERVERS) == {"google-calendar"}
    # An ordinary word in lower case, a verb a clause opens with, a day: no product.
    assert named_servers("Fetch the page and tell me the time", SERVERS) == frozenset()
    assert named_servers("Email Dana on Monday about the linear scan", SERVERS) == frozenset()
    # An address names no product: its words are the data a tool is given.
    assert named_servers("comment https://github.com/acme/web/pull/512 on the card", SERVERS) == frozenset()


def test_a_catalogs_server_names_name_the_same_servers_as_its_list():
    # ServerNames (built once per catalog) keeps the servers that share a first word apart.
    servers = (*SERVERS, "google-drive", "google", "Monday", "sentry-c1")
    catalog = ServerNames(servers)
    assert {s for s, _pattern in catalog.by_word["google"]} == {"google", "google-calendar", "google-drive"}
    for text in ("book it in Google Calendar, then open the Google Drive folder", "ask Google",
                 "Sentry issue WEB-3F2 and sentry-c1", "Email Dana on Monday", "search MongoDB and Notion"):
        assert named_servers(text, catalog) == named_servers(text, servers)
    assert named_servers("book it in Google Calendar, then open the Google Drive folder", catalog) == {
        "google", "google-calendar", "google-drive"}


def test_a_step_takes_the_tool_of_the_server_the_task_names_though_it_matches_less():
    caps = {0: {"/write"}, 1: {"/write"}, 2: {"/write"}}
    step = Step("Open a Linear issue for the Backend team", "/write")
    # 0: the named server's tool, under the usual floor; 1: another tracker's, over it.
    table = {step.text: [(0, NAMED_FLOOR + 5, 0.13), (1, STEP_FLOOR + 5, 0.3), (2, NAMED_FLOOR - 5, 0.3)]}
    server = {0: "linear", 1: "jira", 2: "linear"}
    unnamed = step_tools([step], _score(table), caps.__getitem__, lambda r: True, lambda r: False)
    assert unnamed[0].tool == 1  # without the name, the usual floor holds
    said = step_tools([step], _score(table), caps.__getitem__, lambda r: True, lambda r: False,
                      named=lambda r, _s: 2 if server[r] == "linear" else 0)
    assert said[0].tool == 0  # the step names Linear: its tool passes a softer floor and ranks first
    # 2 is under even the softer floor, and the other tracker's goes: the named server's tool leads
    assert [r for r, _v in said[0].options] == [0]
    elsewhere = step_tools([step], _score(table), caps.__getitem__, lambda r: True, lambda r: False,
                           named=lambda r, _s: 1 if server[r] == "linear" else 0)
    # named elsewhere in the task: a smaller lift, not past a tool that matches much better
    assert [r for r, _v in elsewhere[0].options] == [1, 0]


def test_the_siblings_of_a_steps_best_tool_are_judged_beside_it():
    caps = {0: {"/read"}, 1: {"/read"}, 2: {"/read"}}
    step = Step("Review PR #214 in acme/shop", "/read")
    # get_pull_request_reviews matches best; get_pull_request, its sibling, says the step better
    # but is under the usual floor; another server's tool is as far under it.
    table = {step.text: [(0, 100, 0.47), (1, STEP_FLOOR - 1, 0.36), (2, STEP_FLOOR - 1, 0.36)]}
    fits = {0: 0.5, 1: 1.0, 2: 1.0}
    server = {0: "github", 1: "github", 2: "gitlab"}
    alone = step_tools([step], _score(table), caps.__getitem__, lambda r: True, lambda r: False,
                       lambda r, _s: fits[r])
    assert [r for r, _v in alone[0].options] == [0]
    beside = step_tools([step], _score(table), caps.__getitem__, lambda r: True, lambda r: False,
                        lambda r, _s: fits[r], server_of=server.__getitem__)
    assert [r for r, _v in beside[0].options] == [1, 0]


def test_a_title_in_quotes_is_not_what_a_changes_tool_is_found_by():
    step = Step('Open a Linear issue for the Backend team: "Rate limiter drops requests at exactly the limit"',
                "/write")
    assert step.query == "Open a Linear issue for the Backend team"
    assert Step("open a PR titled 'Fix it'", "/write").query == "open a PR (pull request) titled"
    assert Step("'Launch tracker'", "/write").query == "'Launch tracker'"  # nothing else: the text itself
    read = Step("I am writing an article on 'Causes of the Fall of Rome'", "/read")
    assert read.query == read.text  # what a read quotes is what it looks for


@pytest.fixture(scope="module")
def policy():
    rules = RuleSet.load()
    with LogicEngine(rules) as engine:
        yield Policy(engine, RuleCitations(rules))


def test_a_probe_of_a_server_the_task_does_not_point_at_fills_no_full_place(policy):
    def tool(server: str, name: str, line: str, final: int, system: int = -30):
        st = scored(server, name, Tier.FULL, final, description=line)
        st.points = {"system": system}  # -30: a hosted system the task does not point at
        return st

    health = tool("trello", "get_health", "Get quick system health status for monitoring and load balancing", 80)
    job = tool("firecrawl", "firecrawl_agent_status", "Check the status of an agent job and retrieve results.", 92, 0)
    limits = tool("linear", "linear_getRateLimitStatus", "Get the shared MCP-side Linear rate-limit cooldown.", 91)
    checks = tool("github", "get_pull_request_status", "Get the combined status of all status checks for a pull "
                  "request", 85, 0)
    tree = tool("git", "git_status", "Shows the working tree status", 84, 0)  # the task's own things: no probe
    stepped = tool("trello", "get_health_detailed", "Get comprehensive system health diagnostic.", 76)
    stepped.step = "request the health endpoint"
    cards = tool("trello", "get_cards_by_list_id", "Fetch cards from a specific Trello list", 75)
    out = [health, job, limits, checks, tree, stepped, cards]
    policy.probes(out, named={"linear"})
    assert [s.tier for s in out] == [Tier.CONDENSED, Tier.CONDENSED] + [Tier.FULL] * 5
    assert health.reasons[-1].startswith("condensed: a probe of trello (health), a server the task does not point at")
    assert "policy.dl" in health.reasons[-1]  # the rule that says it is cited
    # A hosted system's probe goes Full when the task points at the system, and not otherwise.
    server = tool("linear", "linear_getServerStatus", "Get MCP Linear server runtime status and counts.", 86, 0)
    unpointed = tool("linear", "linear_getServerStatus", "Get MCP Linear server runtime status and counts.", 86)
    policy.probes([server, unpointed], named=set())
    assert (server.tier, unpointed.tier) == (Tier.FULL, Tier.CONDENSED)


def test_a_steps_second_tool_goes_to_full_only_when_the_whole_task_wants_it_there():
    planned = [("find the board", ((1, 150.0), (2, 140.0)))]
    names = {1: "a", 2: "b"}
    # Both close for the step: the second goes along while its final score reaches Full's threshold.
    assert settle(planned, {1: 90, 2: 75}, names, least=70) == {1: "find the board", 2: "find the board"}
    # A second the task scores low ("one for the title" matching an encyclopedia) is no ambiguity.
    assert settle(planned, {1: 90, 2: 55}, names, least=70) == {1: "find the board"}
    # Nor is one that deletes when the task asks for no deletion (drop-index beside create-index).
    assert settle(planned, {1: 90, 2: 75}, names, least=70, unasked={2}.__contains__) == {1: "find the board"}
    # Nor one whose name undoes what the first's does (git_reset beside the git_add of "stage the changes").
    staged = [("stage the changed files", ((1, 150.0), (2, 140.0)))]
    assert settle(staged, {1: 90, 2: 90}, {1: "git__git_add", 2: "git__git_reset"}, least=70) == {
        1: "stage the changed files"}
    assert settle(staged, {1: 90, 2: 90}, {1: "git__git_add", 2: "git__git_add_all"}, least=70) == {
        1: "stage the changed files", 2: "stage the changed files"}
    # The step's own verb says which way: git_add is no second of "unstage the fixtures", whichever came first.
    unstaged = [("unstage the fixtures I added by mistake", ((1, 150.0), (2, 140.0)))]
    assert settle(unstaged, {1: 90, 2: 90}, {1: "git__git_reset", 2: "git__git_add"}, least=70) == {
        1: "unstage the fixtures I added by mistake"}
    assert not undoes("open-meteo__close_session", "open-meteo__get_forecast")  # the server's name is no verb
    # A second is said to be one, with a producer only it needs: the budget gives every step's first tool its
    # tokens before them.
    hedges: set[int] = set()
    chosen = settle(planned, {1: 90, 2: 75, 4: 60}, {**names, 4: "list_boards"}, least=70, hedges=hedges,
                    feeds=lambda t, ids_only=False, optional_ids=False: [4] if t == 2 else [])
    assert chosen == {1: "find the board", 2: "find the board", 4: "the identifier b needs"}
    assert hedges == {2, 4}
    first, second = scored("s", "read_it", Tier.FULL, 60), scored("s", "search_it", Tier.FULL, 95)
    first.step, second.step, second.hedge = "read the trace", "find the board", True
    assert sorted([second, first], key=best_first) == [first, second]
    second.step = "/write"  # a file's step is no second, whatever settle took it for
    assert sorted([first, second], key=best_first) == [second, first]


def test_a_step_whose_best_tool_another_step_took_takes_a_sibling_it_ranks_higher():
    # "Find the contract in Drive and read it": the search is the find's; the read takes the reader.
    planned = [("find the contract", ((1, 140.0), (2, 130.0))),
               ("read the contract", ((1, 135.0), (3, 150.0), (4, 145.0)))]
    names = {1: "search_files", 2: "list_items", 3: "get_file_content", 4: "other_read"}
    heads = {1: ("drive", "search_files"), 2: ("drive", "list_items"), 3: ("drive", "get_file_content"),
             4: ("elsewhere", "read")}
    final = {1: 95, 2: 60, 3: 65, 4: 60}
    assert settle(planned, final, names, heads=heads, least=70) == {1: "find the contract", 3: "read the contract"}
    # Another server's tool is no stand-in: the step keeps the taken tool when its server has none near.
    far = [planned[0], ("read the contract", ((1, 135.0), (4, 145.0), (3, 60.0)))]
    assert settle(far, final, names, heads=heads, least=70) == {1: "find the contract"}
    # Nor is a sibling the step itself ranks below the taken tool: the step is that tool's too.
    same = [planned[0], ("read the contract", ((1, 135.0), (2, 125.0)))]
    assert settle(same, final, names, heads=heads, least=70) == {1: "find the contract"}


def test_the_steps_own_clause_chooses_among_near_siblings_and_the_task_among_servers():
    # "Rename the column, then close the ticket": the whole task's words lean to the ticket's
    # comment tool, the step's own clause clearly to closing it; both of the tracker, near.
    rename = ("rename the column", ((9, 170.0),))
    planned = [rename, ("close the ticket", ((1, 150.0), (2, 136.0), (3, 160.0)))]
    names = {1: "close_ticket", 2: "comment_ticket", 3: "close_window", 9: "rename_column"}
    heads = {1: ("tracker", "close_ticket"), 2: ("tracker", "comment_ticket"), 3: ("desktop", "close_window"),
             9: ("sheets", "rename_column")}
    final = {1: 50, 2: 70, 3: 20, 9: 90}
    assert settle(planned, final, names, heads=heads, room=0) == {9: "rename the column", 1: "close the ticket"}
    # The task still chooses the server: another system's tool the clause prefers does not win.
    assert 3 not in settle(planned, final, names, heads=heads, room=0)
    # A sibling the clause prefers by a hair is the task's to choose, one far below by the whole
    # task's score is no contender, and a task of this one step is its clause: its score decides.
    hair = [rename, ("close the ticket", ((1, 137.0), (2, 136.0)))]
    assert 2 in settle(hair, final, names, heads=heads, room=0)
    assert 2 in settle(planned, {1: 5, 2: 90, 3: 20, 9: 90}, names, heads=heads, room=0)
    assert settle(planned[1:], final, names, heads=heads, room=0) == {2: "close the ticket"}


def test_the_words_of_a_clusters_objects_point_at_kubernetes(policy):
    """A task about pods and namespaces is a Kubernetes task though it never says "Kubernetes":
    its tools keep their place (no system_points), while a task that says none of it does not."""
    pods = policy.task_words("payments-api pods in the prod namespace keep restarting since the deploy")
    assert "kubernetes" not in policy.task_tables(pods)["system_points"]
    plain = policy.task_words("the payments api keeps failing since the deploy")
    assert policy.task_tables(plain)["system_points"]["kubernetes"] == -30
    rbac = policy.task_words("Security review: list the ClusterRoleBindings that grant cluster-admin")
    assert "kubernetes" not in policy.task_tables(rbac)["system_points"]


def test_a_mongo_collection_or_an_inbox_points_at_its_system(policy):
    """What people call the systems ("the staging Mongo", "my inbox", "the reset mail") points at them as
    their names do; an e-mail address's column or a collection of papers does not."""
    for text, system in (("In the product analytics Mongo, split sessions by client.os", "mongodb"),
                         ("Somewhere in my inbox is the renewal quote", "gmail"),
                         ("Check the reset mail arrived and open the link", "gmail")):
        assert system not in policy.task_tables(policy.task_words(text))["system_points"], text
    for text in ("Summarise the README and list the open questions", "Summarise this collection of papers",
                 "Update the email column of the users table"):
        plain = policy.task_tables(policy.task_words(text))["system_points"]
        assert plain["mongodb"] == plain["gmail"] == -30, text


def test_a_sibling_another_step_has_taken_is_no_choice_of_the_step_its_clause_prefers_it_for():
    # "Update the title of ENG-7, then assign it to Bob": the whole task's score puts the assignment
    # first for the second step and its own clause prefers the update, which the first step took; the
    # second step keeps its own tool rather than sharing the first's, also when one tool more fits.
    heads = {1: ("linear", "update_issue"), 2: ("linear", "assign_issue"), 3: ("linear", "list_issues")}
    names = {k: v[1] for k, v in heads.items()}
    final = {1: 60.0, 2: 80.0, 3: 50.0}
    planned = [("update the title of ENG-7", ((1, 90.0), (2, 40.0))),
               ("assign ENG-7 to Bob", ((2, 60.0), (1, 75.0)))]
    both = {1: "update the title of ENG-7", 2: "assign ENG-7 to Bob"}
    assert settle(planned, final, names, heads=heads) == both
    assert settle(planned, final, names, heads=heads, room=1) == both


def test_a_tool_brought_as_another_steps_producer_is_still_a_steps_own_choice():
    # "Update ENG-7, then list the open issues": list_issues came in as what update_issue needs;
    # it is still the listing step's own best tool, so the step adds no search beside it.
    heads = {1: ("linear", "update_issue"), 2: ("linear", "search_issues"), 3: ("linear", "list_issues")}
    names = {k: v[1] for k, v in heads.items()}
    planned = [("update ENG-7", ((1, 90.0),)), ("list the open issues", ((2, 60.0), (3, 80.0)))]
    got = settle(planned, {1: 80, 2: 80, 3: 50}, names, heads=heads, room=2,
                 feeds=lambda t, **_: [3] if t == 1 else [])
    assert got == {1: "update ENG-7", 3: "the identifier update_issue needs"}


def test_a_tool_whose_name_deletes_takes_no_full_place_by_score_unless_the_task_asks_to_delete(policy):
    """A delete beside a read or a change of the same system (``delete-many`` next to
    ``create-index``) is what a slip would call: Condensed unless the task asks to delete."""
    def out() -> list:
        drop = scored("mongodb", "drop-index", Tier.FULL, 88)
        many = scored("mongodb", "delete-many", Tier.FULL, 80)
        worker = scored("cloudflare", "worker_delete", Tier.FULL, 78)
        create = scored("mongodb", "create-index", Tier.FULL, 90)
        write = scored("sqlite", "write_query", Tier.FULL, 85)  # it may DELETE, its name writes
        stepped = scored("redis", "delete", Tier.FULL, 76)
        stepped.step = "delete the flags:* keys"
        named = scored("mongodb", "delete-one", Tier.FULL, 77)
        named.reasons.append("named in the task")
        return [drop, many, worker, create, write, stepped, named]

    read_and_write = out()
    assert policy.unasked(read_and_write, [("task_capability", "/write"), ("task_capability", "/read")]) == {
        s.id for s in read_and_write[:3]}
    assert [s.tier for s in read_and_write] == [Tier.CONDENSED] * 3 + [Tier.FULL] * 4
    assert read_and_write[0].reasons[-1].startswith(
        "condensed: its name says it does /delete, which the task does not ask for")
    assert "policy.dl" in read_and_write[0].reasons[-1]  # the rule that says it is cited
    asked = out()
    assert not policy.unasked(asked, [("task_capability", "/delete")])
    assert all(s.tier is Tier.FULL for s in asked)
    # The task analyzer reads the verbs a name is read with ("prune", "flush", "wipe") as asking to delete.
    pruned = out()
    pruning = analyze_task("Prune the dangling images").capabilities
    assert not policy.unasked(pruned, [("task_capability", c) for c in pruning])
    # The skeleton's tool keeps its place, and so does a name that also says what the task asks.
    skeleton = scored("harness", "delete_file", Tier.FULL, 60, skeleton=True)
    both = scored("tracker", "delete_or_update_item", Tier.FULL, 80)
    assert not policy.unasked([skeleton, both], [("task_capability", "/write")])
    assert (skeleton.tier, both.tier) == (Tier.FULL, Tier.FULL)


def test_a_step_the_task_implies_takes_a_tool_the_unasked_rule_sent_down_only_when_no_other_can(policy):
    purge = scored("db", "purge_rows", Tier.FULL, 88)
    write = scored("db", "insert_rows", Tier.CONDENSED, 70)
    facts = [(IMPLIED, "/write")]  # "Fix the totals in the orders table"
    out = [purge, write]
    unasked = policy.unasked(out, facts)
    assert unasked == {purge.id} and purge.tier is Tier.CONDENSED
    holders = {"/write": frozenset({purge.id, write.id})}
    policy.step_tools(out, facts, holders, {}, None, unasked)
    assert (write.tier, purge.tier) == (Tier.FULL, Tier.CONDENSED)  # the other writer takes the step
    alone = scored("db", "purge_rows", Tier.FULL, 88)
    unasked = policy.unasked([alone], facts)
    policy.step_tools([alone], facts, {"/write": frozenset({alone.id})}, {}, None, unasked)
    assert alone.tier is Tier.FULL and alone.reasons[0] == "tool of the step /write the task implies"
    assert not any(r.startswith("condensed: its name says") for r in alone.reasons)  # no reason against it left
    # A step the task's words state ("Insert the missing totals") is said to be asked for.
    stated = [("task_capability", "/write")]
    again = scored("db", "purge_rows", Tier.FULL, 88)
    policy.step_tools([again], stated, {"/write": frozenset({again.id})}, {}, None, policy.unasked([again], stated))
    assert again.reasons[0] == "tool of the step /write the task asks for"


def test_a_read_step_falls_back_on_a_tool_that_changes_things_but_never_on_one_that_deletes():
    step = Step("worker pods in prod keep restarting since the rollout", "/read")
    # over the floor: a delete of pods (it restarts them), a scale, no tool that only reads
    table = {step.text: [(0, STEP_FLOOR + 20, 0.5), (1, STEP_FLOOR + 10, 0.4)]}
    caps = {0: {"/delete", "/write"}, 1: {"/write"}}
    got = step_tools([step], _score(table), caps.__getitem__, lambda r: True, lambda r: False)
    assert [r for r, _v in got[0].options] == [1]
    caps[1] = {"/delete"}
    assert step_tools([step], _score(table), caps.__getitem__, lambda r: True, lambda r: False)[0].tool is None


def test_a_demonstration_servers_tool_takes_no_full_place_by_score_unless_the_task_names_it_or_mcp(policy):
    """``everything/get-env`` for a task about environment variables shows how MCP works and does
    none of the task's work: Condensed, unless the task names its server or speaks of MCP."""
    def out() -> list:
        env = scored("everything", "get-env", Tier.FULL, 74)
        stepped = scored("everything", "echo", Tier.FULL, 80)
        stepped.step = "echo the string"
        real = scored("desktop-commander", "get_config", Tier.FULL, 72)
        return [env, stepped, real]

    demo = {"everything"}.__contains__
    tools = out()
    assert policy.demos(tools, "Which environment variables does the app read at startup?", set(), demo) == {
        tools[0].id}
    assert [s.tier for s in tools] == [Tier.CONDENSED, Tier.FULL, Tier.FULL]
    assert tools[0].reasons[-1] == "condensed: everything demonstrates the protocol, and the task does not name it"
    for task, named in (("Smoke-test the MCP server we just built with its echo tool", set()),
                        ("Call get-env on the everything server", {"everything"})):
        kept = out()
        assert not policy.demos(kept, task, named, demo)
        assert all(s.tier is Tier.FULL for s in kept), task
    # MCP as a topic is no test of a server: the demonstration stays out.
    for task in ("Search GitHub for popular Rust crates that implement MCP servers",
                 "Check the latest news about MCP and summarize it", "Checkout the mcp branch and fix the bug",
                 "Check which MCP servers are popular", "Check the MCP server docs for the sampling spec"):
        topic = out()
        assert policy.demos(topic, task, set(), demo), task
        assert topic[0].tier is Tier.CONDENSED, task
    for task in ("I just built an MCP server, smoke-test it", "Test the Model Context Protocol server we built",
                 "Verify the MCP server works", "Test the new local 'weather' MCP server"):
        assert not policy.demos(out(), task, set(), demo), task
    # A step never takes a demonstration tool, Full or Condensed by its score, though no other tool has the
    # step's capability.
    zipper, writer = scored("everything", "zip", Tier.CONDENSED, 70), scored("fs", "write_file", Tier.CONDENSED, 60)
    demoted = policy.demos([zipper, writer], "Write the report to out.md", set(), demo)
    policy.step_tools([zipper, writer], [("task_capability", "/write")], {"/write": frozenset({zipper.id, writer.id})},
                      {}, None, (), demoted)
    assert (zipper.tier, writer.tier) == (Tier.CONDENSED, Tier.FULL)


def test_what_only_mongodb_says_points_at_it(policy):
    """A query plan's COLLSCAN or IXSCAN is MongoDB's word, though the task does not name it; an ObjectId or
    BSON is also a name in code (mongoose, a Go struct's bson tag), so it points nowhere."""
    def system_points(text: str) -> dict[str, int]:
        return policy.task_tables(policy.task_words(text))["system_points"]

    for text in ("It runs find({customerId}) on shop.orders; add an index if the plan shows a COLLSCAN",
                 "The explain plan shows an IXSCAN on the wrong index"):
        assert "mongodb" not in system_points(text), text
    for text in ("The orders query is slow; add an index on customer_id",
                 "In models/user.js change the author field from ObjectId to a plain string"):
        assert system_points(text)["mongodb"] == -30, text
