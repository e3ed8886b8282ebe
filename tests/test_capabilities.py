"""Side-effect labels a role policy can trust (jit/analysis/capabilities.py, issue #21).

Every fixture is a real tool as its server sent it in ``tools/list`` (bench/data/catalogs/),
each expected label the hand label of bench/data/labels/labels.jsonl. Each test names the
mechanism that decides the label: the name's verb and object, a parameter, an action enum,
the description, the annotations.
"""

from __future__ import annotations

import dataclasses
import json
from functools import cache

import pytest

from bench.eval_roles import load_tools, make_pool, risky_reasons
from bench.record_sets import CATALOGS
from jit.analysis.capabilities import EFFECTS, merge_capabilities, name_effects, side_effects
from jit.analysis.offline_analyzer import OfflineAnalyzer, analyze_task
from jit.config import DEFAULT_SHARDS, AvailableTools, Config
from jit.evaluation.evaluate import build_catalog
from jit.models import ToolDef
from jit.selection.compiler import Compiler
from jit.selection.tokens import EstimateCounter

LABELS = CATALOGS.folder.parent / "labels" / "labels.jsonl"


@cache
def recorded() -> dict[str, ToolDef]:
    return {f"{t.server}/{t.name}": t for t in load_tools(CATALOGS.folder / "tools.jsonl")}


@cache
def hand_labels() -> dict[str, frozenset[str]]:
    rows = (json.loads(line) for line in LABELS.read_text(encoding="utf-8").splitlines() if line.strip())
    return {f"{r['server']}/{r['name']}": frozenset(r["labels"]) for r in rows}


@pytest.fixture(scope="module")
def offline() -> OfflineAnalyzer:
    return OfflineAnalyzer(DEFAULT_SHARDS)


def effects_of(offline: OfflineAnalyzer, key: str) -> frozenset[str]:
    """The hand-label vocabulary of the offline analysis of a recorded tool."""
    caps = offline.analyze_one(recorded()[key]).capabilities
    found = {c.lstrip("/") for c in caps if c in EFFECTS}
    return frozenset(found | {"write"}) if found else frozenset({"read"})


def check(offline: OfflineAnalyzer, key: str) -> None:
    assert effects_of(offline, key) == hand_labels()[key], (key, offline.analyze_one(recorded()[key]).capabilities)


# --------------------------------------------------------------------------- the tools issue #21 names


def test_forking_a_repository_is_a_write(offline):
    # No annotations; the name's verb "fork" is the only signal (it was read as /read).
    check(offline, "github/fork_repository")
    check(offline, "gitlab/fork_repository")


def test_checkout_changes_the_working_tree(offline):
    analysis = offline.analyze_one(recorded()["git/git_checkout"])
    assert "/write" in analysis.capabilities and "/send" not in analysis.capabilities
    check(offline, "git/git_checkout")


def test_console_messages_are_not_sent(offline):
    # "messages" after another word is a noun, not the verb "message"; the tool writes only
    # because its ``filename`` parameter saves them to a file.
    assert "/send" not in offline.analyze_one(recorded()["playwright/browser_console_messages"]).capabilities
    check(offline, "playwright/browser_console_messages")
    tool = recorded()["playwright/browser_console_messages"]
    props = {k: v for k, v in tool.input_schema["properties"].items() if k != "filename"}
    inline = dataclasses.replace(tool, input_schema={**tool.input_schema, "properties": props})
    assert side_effects(inline) == ()


# --------------------------------------------------------------------------- the name: verb and object


def test_the_names_first_verb_decides_a_read(offline):
    # "tag" and "task" named after "get" were read as writes.
    for key in ("asana/asana_get_tags_for_task", "asana/asana_get_tasks_for_tag", "github/list_commits"):
        check(offline, key)


def test_a_sent_object_makes_creating_it_a_send(offline):
    for key in ("github/create_pull_request_review", "github/add_issue_comment", "asana/asana_create_task_story",
                "linear/linear_createProjectUpdate"):
        check(offline, key)


def test_what_passes_mail_or_a_bill_on_to_people_sends(offline):
    # A mailbox filter's action may forward what arrives, and a finalized invoice is emailed to
    # its customer: both deliver to people though no verb of the name says send.
    for key in ("google-workspace/manage_gmail_filter", "stripe/finalize_invoice"):
        assert "/send" in offline.analyze_one(recorded()[key]).capabilities, key
        check(offline, key)
    # A port forward passes no mail, and a plain invoice is only a record until it is finalized.
    for key in ("kubernetes/stop_port_forward", "stripe/create_invoice"):
        assert "/send" not in offline.analyze_one(recorded()[key]).capabilities, key
        check(offline, key)


def test_removing_an_association_is_a_write_not_a_delete(offline):
    for key in ("asana/asana_remove_tag_from_task", "atlassian/jira_remove_watcher",
                "linear/linear_removeUserFromTeam", "trello/remove_member_from_card"):
        check(offline, key)


def test_deleting_an_association_is_a_write_whatever_the_text_says_unless_the_server_calls_it_destructive():
    # "Delete an issue relation by ID": the text's deletion is the name's, of a link between issues.
    tool = recorded()["linear/linear_deleteIssueRelation"]
    plain = dataclasses.replace(tool, annotations={**tool.annotations, "destructiveHint": False})
    assert side_effects(plain) == ("/write",)
    # As sent, with destructiveHint: true, its signals are those of memory's delete_relations, whose
    # relations are a knowledge graph's stored facts: the more dangerous reading takes both as
    # deletions, against Linear's hand label (write).
    assert "/delete" in side_effects(tool) and hand_labels()["linear/linear_deleteIssueRelation"] == {"write"}


def test_a_drop_with_no_object_is_a_drag_and_drop():
    drop = recorded()["playwright/browser_drop"]
    assert "/delete" not in side_effects(drop)
    assert "/delete" in side_effects(recorded()["mongodb/drop-collection"])


# --------------------------------------------------------------------------- parameters


def test_a_file_parameter_that_saves_makes_a_read_a_write(offline):
    # readOnlyHint: true, yet a screenshot or snapshot saved to a file the caller names is a write.
    for key in ("playwright/browser_take_screenshot", "playwright/browser_snapshot", "gmail/download_attachment"):
        check(offline, key)
    # A file name that only says what to read is no write.
    check(offline, "monday/fetch_file_content")


def test_recipients_and_notifications_send(offline):
    check(offline, "google-calendar/delete-event")  # sendUpdates
    check(offline, "stripe/update_dispute")  # submit


def test_a_comment_the_change_adds_is_sent_a_comment_describing_a_record_is_not(offline):
    check(offline, "atlassian/jira_transition_issue")  # "Comment to add during the transition"
    check(offline, "atlassian/jira_add_worklog")  # "Comment for the worklog"
    check(offline, "atlassian/confluence_upload_attachment")  # "A comment describing this attachment"


def test_content_opened_to_an_audience_is_sent(offline):
    # "anyone with the link" access; a form "published and visible to responders".
    for key in ("google-workspace/set_drive_file_permissions", "google-workspace/set_publish_settings"):
        check(offline, key)


def test_local_files_handed_to_a_web_page_are_sent(offline):
    # A browser's upload or drop gives the page files it can send anywhere; an upload to a
    # system of record stores them (checked above: confluence_upload_attachment).
    for key in ("playwright/browser_file_upload", "playwright/browser_drop"):
        check(offline, key)


def test_an_invitation_declined_sends_the_answer(offline):
    # "These special events auto-decline meeting invitations", in the description's first paragraph.
    check(offline, "google-workspace/manage_out_of_office")
    assert "/send" not in side_effects(ToolDef("s", "set_status", "Set a status.\nIt does not send notifications."))


def test_a_draft_is_not_sent(offline):
    check(offline, "gmail/draft_email")
    check(offline, "google-workspace/draft_gmail_message")
    check(offline, "email/save_to_mailbox")  # recipients, saved to a folder


def test_action_values_name_the_operations(offline):
    # The quoted values of ``action``'s description ("create", "update", "delete" ...).
    check(offline, "google-workspace/manage_event")


def test_an_operation_named_by_its_verb_alone_acts_on_the_tools_object(offline):
    # "remove" of email flags, email tags, an agent's triggers or Drive access (revoke) detaches
    # an association; "remove" of an account deletes it.
    for key in ("email/set_email_flags", "email/set_email_tags", "monday/manage_agent_triggers",
                "google-workspace/manage_drive_access", "google-calendar/manage-accounts"):
        check(offline, key)


def test_operations_listed_by_the_description_or_typed_in_a_list_of_operations(offline):
    # An untyped ``action`` whose values only the description's list names ("- delete: ..."),
    # a list of operations each of whose kinds has a constant ``operation_type`` ("delete_blocks",
    # "add_comment"), an action object whose fields are its operations ("forward").
    for key in ("google-workspace/manage_document_comment", "monday/update_doc", "gmail/create_filter"):
        check(offline, key)


def test_a_switch_that_drops_makes_a_rename_a_delete(offline):
    check(offline, "mongodb/rename-collection")  # dropTarget


# --------------------------------------------------------------------------- description and annotations


def test_the_description_names_code_it_runs(offline):
    check(offline, "cloudflare/d1_query")
    check(offline, "cloudflare/workflow_execute")
    # "Run inference on a model" runs no code of the caller's.
    check(offline, "cloudflare/ai_inference")


def test_a_destructive_hint_is_a_delete_only_when_nothing_names_another_change(offline):
    # What the hint may mean instead: the rollout's sub-commands (pause, restart, undo), the
    # text's "change the constant ... and store it", the name's "upgrade". A tool that runs
    # raw protocol commands names no such change, and "manage" or "handle" name none.
    for key in ("kubernetes/kubectl_rollout", "excel/goal_seek", "kubernetes/upgrade_helm_chart"):
        check(offline, key)
    assert "/delete" in side_effects(recorded()["email/email_command"])  # "Execute IMAP or SMTP primitives"
    for text in ("Handles things.", "Manage the thing."):
        assert "/delete" in side_effects(ToolDef("s", "thing_tool", text, annotations={"destructiveHint": True}))


def test_a_deletion_the_first_paragraph_states_counts_unless_denied_or_of_a_session(offline):
    # "To delete an email, add the TRASH label"; "Linear revokes those existing tokens";
    # "existing client-credentials tokens may be invalidated".
    for key in ("google-workspace/modify_gmail_message_labels", "linear/linear_createOAuthClientCredentialsToken",
                "linear/linear_rotateManagedOAuthApplicationSecret"):
        check(offline, key)
    # "... without erasing what's already there" (an overwrite); "revoke its connectionId" (a session's).
    for key in ("obsidian/obsidian_put_content", "mongodb/disconnect"):
        check(offline, key)


def test_a_destructive_cancel_or_undo_is_a_delete(offline):
    for key in ("stripe/cancel_subscription", "monday/undo_action"):
        check(offline, key)
    assert "/delete" not in side_effects(dataclasses.replace(recorded()["stripe/cancel_subscription"],
                                                             annotations={"destructiveHint": False}))


def test_a_command_a_created_resource_runs_is_executed_stored_code_is_not(offline):
    # kubectl_create's ``command``: "Command to run in the container"; a Worker's ``script``
    # ("The Worker script content") is deployed to run on later requests.
    check(offline, "kubernetes/kubectl_create")
    assert "/execute" not in side_effects(recorded()["cloudflare/worker_put"])


def test_a_command_that_names_one_of_the_tools_own_operations_runs_nothing():
    def tool(**props) -> ToolDef:
        return ToolDef("s", "service", "Manage the service.", input_schema={"type": "object", "properties": props})

    command = {"type": "string", "description": "The command to run."}
    assert "/execute" in side_effects(tool(command=command))
    # A router: ``parameters`` holds the arguments of the operation ``command`` names, which may
    # change whatever the service holds.
    plain = ToolDef("s", "service", "Tools of the service.", input_schema={"type": "object", "properties": {
        "command": command, "parameters": {"type": "object"}}})
    assert side_effects(plain) == ("/write",)
    # A fixed set of commands is a set of operations.
    assert "/execute" not in side_effects(tool(command={"type": "string", "enum": ["list", "show"]}))


def test_running_any_command_of_a_system_can_delete(offline):
    check(offline, "kubernetes/kubectl_generic")  # "Execute any kubectl command"
    assert "/delete" not in side_effects(ToolDef("s", "sql", "Run any read-only SQL query."))


def test_read_only_false_is_a_write_and_destructive_without_a_verb_a_delete():
    plain = ToolDef("s", "thing_tool", description="Does the thing.")
    assert side_effects(plain) == ()
    assert side_effects(dataclasses.replace(plain, annotations={"readOnlyHint": False})) == ("/write",)
    assert "/delete" in side_effects(dataclasses.replace(plain, annotations={"destructiveHint": True}))
    # A destructive tool whose name says how (an overwrite) is a write, not a delete.
    write = ToolDef("s", "write_file", "Write content to a file.", annotations={"destructiveHint": True})
    assert side_effects(write) == ("/write",)


CHANGES = ("read-only role: the tool can change things",)


def judged(tmp_path, embedder, keys: tuple[str, ...], shard: str,
           allow: tuple[str, ...] = ()) -> tuple[dict[str, tuple], dict[str, bool]]:
    """The shipped role policy on a real SQLite catalog of the recorded tools ``keys``: why each is
    denied to ``shard`` (given the ``allow`` selectors), and whether bench/eval_roles.py counts it as
    risky for a read-only role."""
    tools = [recorded()[k] for k in keys]
    config = dataclasses.replace(Config.default(tmp_path), available_tools=AvailableTools())
    if allow:
        shards = dict(config.shards)
        shards[shard] = shards[shard].model_copy(update={"allow": list(allow)})
        config = dataclasses.replace(config, shards=shards)
    store = build_catalog(make_pool(tools, tmp_path / "tools.jsonl"), tmp_path / "catalog.db", config,
                          embedder, analyzer=OfflineAnalyzer(config.shards))
    try:
        with Compiler(store, config, embedder, token_counter=EstimateCounter()) as compiler:
            denied = {k: compiler.denied(shard, *k.split("/")) for k in keys}
            assert all(compiler.denied("coder", t.server, t.name) == () for t in tools)
        caps = {st.tool.name: st.analysis.capabilities for st in store.tools()}
    finally:
        store.close()
    return denied, {k: bool(risky_reasons(t.annotations, caps[t.name])) for k, t in zip(keys, tools)}


def test_a_read_only_hint_hides_no_effect_the_analyzer_found_from_a_read_only_role(tmp_path, hashing_embedder):
    """Annotations add danger, never remove it: both tools claim ``readOnlyHint: true``, one saves
    a screenshot to a file the caller names, the other files feedback with monday.com. The role
    policy denies both to a reviewer, as bench/eval_roles.py counts them; a plain read with the
    same claim stays allowed."""
    keys = ("playwright/browser_take_screenshot", "monday/submit_bug_or_feature_request", "monday/get_board_schema")
    assert all(recorded()[k].annotations["readOnlyHint"] is True for k in keys)
    denied, risky = judged(tmp_path, hashing_embedder, keys, "reviewer")
    assert denied == {keys[0]: CHANGES, keys[1]: CHANGES, keys[2]: ()}
    assert risky == {keys[0]: True, keys[1]: True, keys[2]: False}


def test_a_servers_destructive_hint_denies_a_read_only_role_its_search_by_post_until_the_user_grants_it(
        tmp_path, hashing_embedder):
    """Annotations add danger, never remove it: a generator from an OpenAPI document calls every POST
    destructive, the search sent as POST included, and jit does not second-guess the server from a
    tool's name (a name and a description are no proof of what a call does). A researcher is denied
    all three Notion tools; ``shards.researcher.allow`` grants the search by name, and only it."""
    keys = ("notion/API-post-search", "notion/API-post-page", "notion/API-patch-block-children")
    assert all(recorded()[k].annotations["destructiveHint"] is True for k in keys)
    denied, risky = judged(tmp_path, hashing_embedder, keys, "researcher")
    assert denied == {keys[0]: CHANGES, keys[1]: CHANGES, keys[2]: CHANGES}
    assert risky == {keys[0]: True, keys[1]: True, keys[2]: True}
    granted, _ = judged(tmp_path / "granted", hashing_embedder, keys, "researcher", allow=("tool:notion/API-post-search",))
    assert granted == {keys[0]: (), keys[1]: CHANGES, keys[2]: CHANGES}


# --------------------------------------------------------------------------- merging with the lexical labels


def test_merge_keeps_lexical_labels_and_makes_effects_exact():
    assert merge_capabilities(["/read", "/send"], (), 4) == ["/read"]
    assert merge_capabilities(["/send"], (), 4) == ["/read"]
    assert merge_capabilities(["/search", "/write"], ("/delete", "/write"), 4) == ["/search", "/write", "/delete"]
    assert merge_capabilities(["/navigate", "/list", "/search"], ("/execute", "/send", "/write"), 4) == [
        "/navigate", "/execute", "/send", "/write"]
    assert merge_capabilities([], ("/write",), 4) == ["/write"]


def _asks(text: str) -> set[str]:
    profile = analyze_task(text)
    return set(profile.capabilities) | set(profile.implied)


def test_a_name_says_what_it_does_and_a_task_says_it_with_the_same_verbs():
    """``name_effects`` reads a tool's own word for what it does; the task analyzer's lexicon
    reads a task with the same deleting verbs, so every verb that makes a name a deletion makes a
    task ask for one (what ``asked_only('/delete')`` checks)."""
    assert name_effects("delete-many") == name_effects("worker_delete") == name_effects("clear_cache") == {"/delete"}
    assert name_effects("write_query") == {"/write"} and name_effects("list_indexes") == frozenset()
    assert name_effects("git_branch") == frozenset()  # a noun: no verb, no effect
    for verb in ("delete", "remove", "drop", "purge", "clear", "prune", "flush", "wipe", "trash", "expunge",
                 "discard", "cleanup", "erase", "destroy", "uninstall"):
        assert "/delete" in name_effects(f"{verb}_things"), verb
        assert "/delete" in _asks(f"Please {verb} the old things"), verb
    # "clean up" and "truncate" delete what is removed, not code or text tidied
    for text in ("Clean up the code in utils.py", "Truncate the summary to 200 characters",
                 "Clean up the wording of the README.md"):
        assert "/delete" not in _asks(text), text
    for text in ("Clean up the template in index.html", "Clean up the imports in these files",
                 "Read the truncated logs", "Call truncateTable on the sessions table"):  # (no crash on the last)
        assert "/delete" not in _asks(text), text
    for text in ("Truncate the audit_log table", "Clean up the finished test pods in namespace qa",
                 "Clean up the untracked build artifacts in the repo", "Clean up the database", "Truncate audit_log",
                 "Clean up my inbox"):
        assert "/delete" in _asks(text), text
    assert "/delete" not in _asks("Check what indexes exist, then create one on email")
    assert "/delete" not in _asks("Read the README and list the open issues")
    # Hyphenated, quoted or inflected, the verb still asks.
    for text in ("Please clean-up stale branches", "Please clean up stale branches", "“Prune” the dangling images",
                 "If so, flush the cache", "Make sure the dangling images are pruned"):
        assert "/delete" in _asks(text), text
