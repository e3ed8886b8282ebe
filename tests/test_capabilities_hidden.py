"""Side effects a tool's name does not show (jit/analysis/capabilities.py): code inside option
objects and action lists, a router's stated operations, launch options, webhooks, leases, files
the description says the tool saves.

Every fixture is a real tool as its server sent it in ``tools/list`` (bench/data/catalogs/), each
expected label its hand label in bench/data/labels/labels.jsonl.
"""

from __future__ import annotations

import dataclasses

import pytest

from jit.analysis.capabilities import side_effects
from jit.analysis.offline_analyzer import OfflineAnalyzer
from jit.config import DEFAULT_SHARDS
from tests.test_capabilities import check, recorded


@pytest.fixture(scope="module")
def offline() -> OfflineAnalyzer:
    return OfflineAnalyzer(DEFAULT_SHARDS)


def test_code_inside_an_option_object_or_an_action_list_is_run(offline):
    # firecrawl_scrape: actions: [{"type": "executeJavascript" | "click" | ..., "script": ...}];
    # firecrawl_search nests the same list in scrapeOptions, under a reading verb.
    check(offline, "firecrawl/firecrawl_scrape")
    check(offline, "firecrawl/firecrawl_search")
    assert "/execute" in side_effects(recorded()["firecrawl/firecrawl_search"])


def test_an_aggregate_function_inside_a_list_runs_nothing(offline):
    # monday's aggregations[].function names sum or count: "function" counts as code only at the top.
    check(offline, "monday/board_insights")


def test_a_webhook_parameter_sends_whatever_the_verb_and_a_free_body_that_lists_one(offline):
    check(offline, "firecrawl/firecrawl_crawl")  # a crawl posts its results to the caller's URL
    check(offline, "firecrawl/firecrawl_monitor_update")  # body: "Pass any subset of fields ... `webhook`"
    tool = recorded()["firecrawl/firecrawl_monitor_update"]
    plain = dataclasses.replace(tool, description=tool.description.replace("`webhook`, ", ""))
    assert "/send" not in side_effects(plain)


def test_launch_options_start_a_program_of_the_callers(offline):
    check(offline, "puppeteer/puppeteer_navigate")
    tool = recorded()["puppeteer/puppeteer_navigate"]
    props = {k: v for k, v in tool.input_schema["properties"].items() if k != "launchOptions"}
    assert side_effects(dataclasses.replace(tool, input_schema={**tool.input_schema, "properties": props})) == ()


def test_a_lease_on_what_is_read_is_a_write(offline):
    check(offline, "cloudflare/queue_get_message")  # visibilityTimeout hides the message from the others


def test_a_file_the_description_says_the_tool_saves_is_a_write_whatever_read_only_hint_says(offline):
    # Both claim readOnlyHint: true; "saves it to local disk", "Returns the generated report file path".
    check(offline, "google-workspace/get_drive_file_download_url")
    check(offline, "azure/extension_azqr")


def test_a_routers_stated_operations_count_anywhere_in_its_first_paragraph(offline):
    check(offline, "azure/mysql")  # "Includes operations for ... executing SQL queries"
    check(offline, "azure/loadtesting")  # "... executing performance tests"
    check(offline, "azure/eventhubs")  # "Includes CRUD operations": deleting among them
    check(offline, "azure/communication")  # "supports sending SMSThis tool is ...": the glued sentence parted


def test_evaluation_as_a_noun_runs_nothing(offline):
    check(offline, "azure/foundry")  # "read, create, modify ... Evaluation workflows"


def test_a_query_of_modifying_statements_is_run_a_select_or_read_only_one_is_not(offline):
    check(offline, "sqlite/write_query")  # "Execute an INSERT, UPDATE, or DELETE query"
    check(offline, "sqlite/read_query")  # "Execute a SELECT query"
    check(offline, "mongodb/find")  # "Run a find query"
    check(offline, "monday/all_api_read")  # "Execute read-only GraphQL queries"


def test_feedback_sent_to_a_vendor_is_sent(offline):
    check(offline, "firecrawl/firecrawl_search_feedback")  # "Send structured feedback on ..."


def test_commands_of_a_mail_protocol_the_caller_writes_send(offline):
    check(offline, "email/email_command")  # "Execute IMAP or SMTP primitives"


def test_cleaning_and_discarding_remove(offline):
    check(offline, "cyanheads-git/git_clean")  # "Remove untracked files": the verb clean removes
    check(offline, "cyanheads-git/git_reset")  # "discard commits (mixed), or discard all changes (hard)"


def test_a_switch_whose_description_deletes_is_a_delete(offline):
    check(offline, "notion/API-update-a-block")  # archived: "Set to true to archive (delete) a block"
    check(offline, "kubernetes/kubectl_delete")


def test_a_link_the_server_calls_destructive_to_delete_is_deleted_one_removed_is_detached(offline):
    check(offline, "memory/delete_relations")  # a knowledge graph's relations are its stored facts
    check(offline, "atlassian/jira_remove_issue_link")  # removed, both issues stay: a write


def test_a_name_that_spells_an_http_request_posts_no_message(offline):
    check(offline, "notion/API-post-page")  # POST /pages creates a page
    check(offline, "notion/API-create-a-comment")  # a comment created is still sent
