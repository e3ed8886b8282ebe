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
from jit.models import ToolDef
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


def test_a_servers_destructive_hint_is_a_write_whatever_the_name_says_it_does(offline):
    # A generator from an OpenAPI document calls every POST destructive, searches too; the server's
    # word stands: a name or a description is no proof of what a call does (a search that charges,
    # one whose later paragraph deletes what it finds). A role that needs one is granted it by name.
    def api(name: str, description: str = "Tickets | search", properties: dict | None = None) -> ToolDef:
        return dataclasses.replace(_tool(name, description, properties), annotations={"destructiveHint": True})
    for tool in (api("API-post-search"), api("API-post-search-pages", "Search pages by title"),
                 api("API-post-search-and-charge"), api("API-post-search", "Search tickets.\n\nEvery ticket found is deleted."),
                 api("API-post-search-items", "Search items.", {"purge": {"type": "boolean"}})):
        assert side_effects(tool), tool.name
    assert side_effects(_tool("API-post-search", "Search by title")) == ()  # no hint: its name's verb reads


def test_a_router_may_change_what_its_service_holds_whatever_its_first_sentence_says(offline):
    # A router's subcommands are learnt at call time and never seen here: its prose is no proof that
    # every command reads ("querying ... The query command accepts any SQL", a later list of deletes).
    check(offline, "azure/datadog")  # "for managing and monitoring": managing may change things
    router = {"command": {"type": "string"}, "parameters": {"type": "object"}}
    for description in ("Billing operations - Commands for listing and inspecting invoices.",
                        "Commands for querying Azure virtual machines.\n\nAvailable commands: list_vms, delete_vm",
                        "Commands for querying and truncating tables.",
                        "Commands for querying Cosmos DB. The query command accepts any SQL.",
                        "Ledger operations."):
        assert side_effects(_tool("router", description, router)) == ("/write",), description


# --------------------------------------------------------------------------- what the rules above must not catch
# Real definitions from public tool sets (Smithery, RapidAPI through StableToolBench, LiveMCPBench),
# description text as the servers send it, trimmed to the part that matters.


def _tool(name: str, description: str, properties: dict | None = None) -> ToolDef:
    return ToolDef(server="s", name=name, description=description,
                   input_schema={"type": "object", "properties": properties or {}})


@pytest.mark.parametrize("name, description", [
    # running as a noun, an instruction to the caller, a parameter's prose, a query's context
    ("getFailuresInLastRun", "Use this tool to debug failures in the last run of the test suite on BrowserStack."),
    ("get_logs", "Gets logs for a Supabase project by service type. Use this to help debug problems with your "
                 "app. If the logs you are looking for are older than 1 minute, re-run your test to reproduce them."),
    ("get-ai-context", "WHEN TO USE: - Before executing AI queries to understand available data structure - "
                       "When needing to know the schema of datasets in a workspace"),
    ("querySubgraph", "Execute a GraphQL query against a specified subgraph.\n\n    Args:\n        query (str): "
                      "The GraphQL query string to execute."),
    ("get_feature_analytics_count", "Get comprehensive feature analytics data from Velt, showing CRUD operation "
                                    "counts for each feature."),
])
def test_prose_that_names_running_or_crud_without_the_tool_doing_it_is_no_effect(name, description):
    assert side_effects(_tool(name, description)) == ()


def test_a_statement_past_the_first_sentence_counts_as_a_listed_operation_only():
    testrail = _tool("Add a new test result", "Add a new test result. Args: test_id: The ID of the test "
                     "elapsed: The time it took to execute the test, e.g. '30s' or '1m 45s' (optional)")
    assert side_effects(testrail) == ("/write",)
    w3 = _tool("w3_space_create", "Creates a new space with a user-friendly name. NOTE: `w3 space create` cannot "
               "be run via MCP due to interactive recovery key prompts. Please run this command manually.")
    assert side_effects(w3) == ("/write",)


def test_crud_the_description_names_of_a_reading_tool_deletes_nothing(offline):
    # "This is not a workspace-wide OAuth application admin listing and does not work as generic scope CRUD."
    assert side_effects(recorded()["linear/linear_getManagedOAuthApplications"]) == ()


def test_kql_queries_a_router_runs_are_no_code_of_the_callers(offline):
    check(offline, "azure/kusto")  # "executing KQL queries": only a modifying statement makes a query run code


def test_code_nested_in_a_design_note_is_not_run_and_webhooks_listed_by_a_read_are_not_posted_to():
    design = _tool("gamedesignthinking", "A tool for designing game mechanics.", {
        "thought": {"type": "string"},
        "shaders": {"type": "array", "items": {"type": "object", "properties": {
            "type": {"type": "string", "description": "Shader type"},
            "code": {"type": "string", "description": "Shader code"}}}}})
    assert side_effects(design) == ()
    listing = _tool("get_webhooks", "List webhooks", {"webhooks": {"type": "string"}, "team_id": {"type": "string"}})
    assert side_effects(listing) == ()
    scan = _tool("Get Scan ID", "Run a scan against a target URL and receive a scan ID. Provide an optional callback "
                 "URL to receive scan results automatically once the scan is completed",
                 {"target": {"type": "string"}, "callback_url": {"type": "string"}})
    assert side_effects(scan) == ("/send",)  # results posted to the caller's URL


def test_cleaning_content_rewrites_it_cleaning_a_cache_empties_it():
    html = _tool("html_cleaner", "Clean HTML by removing unnecessary tags and attributes",
                 {"inputPath": {"type": "string"}, "outputDir": {"type": "string"}})
    assert side_effects(html) == ("/write",)
    cache = _tool("clean_mutmut_cache", "Clean mutmut cache using the mutmut CLI (if available), otherwise "
                  "remove .mutmut-cache file.")
    assert side_effects(cache) == ("/delete",)
