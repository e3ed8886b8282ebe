"""Wordings of a task that the steps policy reads the same as its usual ones (jit.selection.steps,
jit.selection.step_words): a colon before an action, a list of names joined by "and", everyday
verbs, a file's kind said by its extension, today's date, a title followed by where it is, a log-in,
a sign-up or a submission on a page, a page's network traffic, an implied step kept with the browser
the task uses, a library's documentation, a note dropped, a dash between clauses, a pull request
looked at and the subject of what a read looks for."""

from __future__ import annotations

from jit.selection.step_words import action_free, leading_capability, name_fit, spelled, topic_free
from jit.selection.clauses import split_clauses
from jit.selection.steps import (
    BLAME_LINES,
    CURRENT_TIME,
    FILL_FORM,
    FIND_CHANNEL,
    LIBRARY_DOCS,
    LOG_COMMITS,
    OPEN_PAGE,
    READ_CHANGE,
    READ_CHANGED_FILES,
    READ_CHANNEL,
    READ_CHECKS,
    READ_CODE,
    READ_MAIL,
    READ_THREAD,
    SEARCH_MAIL,
    SHOW_COMMIT,
    SUBMIT_FORM,
    Step,
    settle,
    task_steps,
)


def test_a_colon_before_an_action_opens_a_clause_of_its_own():
    assert split_clauses("Examine the billing table in Postgres: count the rows whose owner is null.") == [
        "Examine the billing table in Postgres", "count the rows whose owner is null"]
    # a condition before the colon frames the action after it: one clause, the action's
    steps = task_steps("Once the nightly build is green: tag the release as v4.2.0.")
    assert [(s.text, s.capability) for s in steps] == [("Once the nightly build is green, tag the release as v4.2.0",
                                                        "/write")]
    # a heading, a list or a key pattern before or after a colon stays in its clause
    assert split_clauses("Release chores for the mobile app: bump the build number.") == [
        "Release chores for the mobile app: bump the build number"]
    assert split_clauses("Count the keys matching cart:* in the cache.") == ["Count the keys matching cart:* in the cache"]
    # a switch turned on or off is a change, which a colon may introduce; a title after a thing it names is no clause
    assert split_clauses("Turn on the new search for the beta: set the Redis key flag:new_search to 'on'") == [
        "Turn on the new search for the beta", "set the Redis key flag:new_search to 'on'"]
    for task in ("Find the Jira epic: turn on audit logging", "Summarize the issue: enable caching for the API"):
        assert split_clauses(task) == [task]
    assert leading_capability("Turn to the 'Errors' tab and count the rows") is None  # no switch
    assert leading_capability("Turn the meeting notes into a summary") is None
    assert leading_capability("Disable the deploy workflow") == leading_capability("turn it off") == "/write"


def test_a_comma_inside_brackets_splits_no_clause():
    task = "Build the pricing card from Figma (file 8fK2xQ, node 42:7) as src/Card.tsx, then commit it."
    assert split_clauses(task) == ["Build the pricing card from Figma (file 8fK2xQ, node 42:7) as src/Card.tsx",
                                   "commit it"]


def test_building_a_thing_as_a_file_writes_that_file():
    steps = task_steps("Build the pricing card from Figma (file 8fK2xQ, node 42:7) as src/components/Card.tsx.")
    assert [(s.capability, s.by) for s in steps] == [("/write", "file_step")]
    # a build with no file of its own, or with the file it reads, is run, not written
    for task in ("Build the project and run the tests in tests/test_x.py",
                 "Build the project with the settings in config.yaml", "Build the project as described in BUILD.md"):
        assert task_steps(task)[0].capability == "/execute", task
    # code implemented in place is read first, as any code change
    assert READ_CODE in [s.text for s in task_steps("Implement the retry logic of ENG-12 in src/net/retry.py")]
    # a bracket the sentence never closes joins nothing
    assert split_clauses("Fix the parser (see ENG-12, then rebuild the docs and deploy them.") == [
        "Fix the parser (see ENG-12", "rebuild the docs", "deploy them"]


def test_names_versions_and_paths_joined_by_and_stay_in_their_clause():
    assert split_clauses("Diff release-2.3 and release-2.4 of the ledger repo, then summarise the tickets and "
                         "the open bugs.") == ["Diff release-2.3, release-2.4 of the ledger repo",
                                               "summarise the tickets, the open bugs"]
    assert split_clauses("Benchmark Rocket, Actix and Axum under load and chart the p99 latency.") == [
        "Benchmark Rocket, Actix, Axum under load", "chart the p99 latency"]
    # a second question is a clause of its own
    assert len(split_clauses("Which invoices are overdue, and which customers owe the most?")) == 2


def test_everyday_verbs_have_the_capability_they_say():
    for clause in ("grab the worker's logs", "dump the session hash", "examine the slow query",
                   "hit the status endpoint"):
        assert leading_capability(clause) == "/read", clause
    for clause in ("fill the signup form", "click the Save button", "download the invoice PDFs",
                   "implement the retry in the client"):
        assert leading_capability(clause) == "/write", clause


def test_a_paths_extension_says_the_kind_of_file_to_match_tools_by():
    bare = action_free("reconcile the totals against finance/budget-2026.xlsx")
    assert "xlsx" in bare and "budget" not in bare  # the path's words are data; its kind is not
    assert "Excel" in spelled(bare)


def test_todays_date_written_or_read_is_asked_first():
    steps = task_steps("In ops/oncall.xlsx, set the Reviewed cell to yes and today's date next to it.")
    assert any(s.text == CURRENT_TIME and s.implied for s in steps)
    assert not any(s.text == CURRENT_TIME for s in task_steps("Set the Reviewed cell of ops/oncall.xlsx to yes."))


def test_a_title_followed_by_where_it_is_is_searched_for_by_the_kind_before_it():
    steps = task_steps("Summarise the wiki article 'Incident runbook' in the SRE space for the new hires.")
    assert "search by title for the wiki article" in [s.text for s in steps]
    # the words after the title name its kind when they are no place
    steps = task_steps("Summarise the 'Incident runbook' wiki article.")
    assert "search by title for the wiki article" in [s.text for s in steps]


def test_a_thing_found_by_its_title_is_read_beside_what_the_clause_reads_of_it():
    # the reactions to a design doc are read, and the doc they are about too
    steps = task_steps("Tally the reactions on the design doc 'Sync protocol v3' in the ARCH space.")
    assert [s.text for s in steps if s.implied] == ["search by title for the design doc",
                                                    "read the content of the design doc"]
    # one that reads the thing itself reads it once, and one that makes it reads nothing of it
    assert "read the content of the design doc" not in [
        s.text for s in task_steps("Skim the design doc 'Sync protocol v3' in the ARCH space.")]
    assert not [s for s in task_steps("I'm drafting a 'Sync protocol v4' design doc.") if s.text.startswith("read")]
    # a clause that finds it reads it next once, not twice
    found = [s.text for s in task_steps("Locate the 'Sync protocol v3' design doc.") if s.text.startswith("read")]
    assert found == ["read the content of the 'Sync protocol v3' design doc"]


def test_logging_in_on_a_page_fills_its_form_and_submits_it():
    steps = task_steps("Open https://shop.example.test/account and sign in as demo@example.test with 'hunter22', "
                       "then screenshot the greeting.")
    texts = [s.text for s in steps]
    assert texts.index(OPEN_PAGE) < texts.index(FILL_FORM) < texts.index(SUBMIT_FORM)
    assert all(s.capability == "/write" for s in steps if s.text in (FILL_FORM, SUBMIT_FORM))
    # without a page, logging in is the clause's own step
    assert FILL_FORM not in [s.text for s in task_steps("Log in to the VPN and restart the agent.")]


def test_a_pages_network_traffic_is_looked_at_in_a_browser():
    steps = task_steps("On https://app.example.test/orders, tell me which XHR comes back with a 500.")
    assert steps[0].text == OPEN_PAGE


def test_an_implied_step_goes_to_the_server_the_said_steps_use():
    # The page is opened (implied) and its console read (said); only browser b reads consoles.
    planned = [(OPEN_PAGE, ((1, 180.0), (2, 160.0))), ("read the console errors", ((3, 170.0),))]
    final = {1: 80, 2: 70, 3: 75}
    heads = {1: ("browser-a", "navigate"), 2: ("browser-b", "goto"), 3: ("browser-b", "console_messages")}
    chosen = settle(planned, final, {}, heads=heads, room=0, implied={OPEN_PAGE})
    assert set(chosen) == {2, 3}
    # with nothing said that a server does, the whole task's choice stands
    assert set(settle(planned[:1], final, {}, heads=heads, room=0, implied={OPEN_PAGE})) == {1}


def test_a_verb_inside_an_address_or_a_path_is_no_action_of_a_lead_in():
    """A lead-in that names a page or a folder ("On https://…/search", "In /srv/app/delete") is
    where the action happens, whatever the words of its address: the action after it joins it."""
    from jit.selection.clauses import clause_action, split_clauses

    assert split_clauses("On https://shop.example.org/search, look for 'boots' and tell me which request "
                         "failed.") == ["On https://shop.example.org/search, look for 'boots'",
                                        "tell me which request failed"]
    assert clause_action("In /srv/app/delete, list the files") == "list the files"
    # a verb said after the lead-in's words is still its action
    assert split_clauses("If the build is green merge PR #12 in acme/shop, on GitHub.") == [
        "If the build is green merge PR #12 in acme/shop, on GitHub"]


def test_a_librarys_documentation_is_looked_up_where_library_docs_are_kept():
    def implied(task: str) -> list[str]:
        return [s.text for s in task_steps(task) if s.implied]
    for task in ("Find out from pydantic's docs how validators run on defaults.",
                 "What do the docs of polars say about lazy joins?",
                 "Look up in the Django documentation how to squash migrations, then squash them in app/migrations",
                 "Summarise the upstream docs on retry backoff."):
        assert LIBRARY_DOCS in implied(task), task
    # one's own docs, a service's, a product's or an API's pages, and a docs folder, are no library's
    for task in ("Proofread our docs for the launch.", "Read the API docs of the orders service.",
                 "Open the 'Roadmap' Google Docs file.", "fix the broken link in docs/index.md",
                 "Skim the documentation for the search endpoint."):
        assert LIBRARY_DOCS not in implied(task), task
    # docs written, not read, are no lookup; a curly apostrophe is an apostrophe
    for task in ("Update the docs for the deployment pipeline.", "Rewrite the documentation for the payments module.",
                 "Read the docs for the deployment pipeline.", "Check the documentation for the billing webhook handler."):
        assert LIBRARY_DOCS not in implied(task), task
    assert LIBRARY_DOCS in implied("Check attrs’ docs… no: check attrs’s docs on slots.")


def test_a_long_run_of_joined_words_is_read_in_linear_time():
    # a pasted token, minified code or a log line: the library-docs pattern must not backtrack over it
    from jit.selection.step_words import LIBRARY_DOCS_SAID
    assert LIBRARY_DOCS_SAID.search("a-" * 16000 + " httpx's docs")
    assert [s.text for s in task_steps("read " + "a-" * 20000)]
    # nor the patterns of code and its history, of mail and of chat channels
    for lead in ("who wrote ", "when did ", "did the mail ", "post to #", "read the file ", "fix ", "if http://"):
        for run in ("a-", "a/", "a.", "a#"):
            assert task_steps(lead + run * 20000 + " change?")
    # nor a run of spaces before a dash, nor a code file's name, nor an attempt after an address
    assert task_steps("stack" + " " * 40000 + "\u2014 then") == []  # two fragments: no step
    assert task_steps("if http://" + "a" * 40000 + " try to log in")


def test_dropping_a_note_sends_it_and_dropping_a_table_deletes_it():
    for clause in ("drop a note in #releases on Discord", "then drop a quick comment on the ticket",
                   "drop a short message to the on-call channel"):
        assert leading_capability(clause) == "/send", clause
    for clause in ("drop the comments table", "drop the index on users.email", "drop the stale notes"):
        assert leading_capability(clause) == "/delete", clause
    steps = task_steps("Restart the ingest worker and drop a line in #ops on Slack.")
    assert [s.capability for s in steps if "drop" in s.text] == ["/send"]
    # letting someone know, keeping them posted, giving a heads-up: a message; "let me know" asks the user
    for clause in ("then let #deploys on Slack know", "keep the team posted", "give Dana a heads-up"):
        assert leading_capability(clause) == "/send", clause
    for clause in ("let me know when it is done", "let the tests run", "keep the old config",
                   "give an overview of the issues", "Keep the dependencies updated in package.json",
                   "Keep the changelog updated as you go", "Let the tests know about the new fixture in conftest.py"):
        assert leading_capability(clause) != "/send", clause


def test_a_dash_between_words_ends_a_clause_like_a_stop():
    assert split_clauses("Rename the flag in config/app.yaml \u2014 look up the new name in the changelog first.") == [
        "Rename the flag in config/app.yaml", "look up the new name in the changelog first"]
    # a condition after an en dash frames the action after it, as at a sentence's start
    assert split_clauses("Skim MR !41 in infra/dns \u2013 if the plan deletes records, block it with a comment.") == [
        "Skim MR !41 in infra/dns", "if the plan deletes records, block it with a comment"]
    # a range, a hyphenated word and a hyphen between words stay within the clause
    for text in ("Pick 2\u20133 candidates from the shortlist.", "Cherry-pick the fix onto release-1.2.",
                 "Open the 'Billing - v2' page in Confluence."):
        assert len(split_clauses(text)) == 1, text


def test_signing_up_or_submitting_on_a_page_fills_its_form_and_submits_it():
    for task in ("Open https://forms.example.test/join, register a new account as qa@example.test, and "
                 "screenshot what comes back.",
                 "Go to http://localhost:8080/contact, type a message for the sales team and submit it.",
                 "Visit https://beta.example.test/signup in the browser and sign up with a test user."):
        texts = [s.text for s in task_steps(task)]
        assert OPEN_PAGE in texts and FILL_FORM in texts and SUBMIT_FORM in texts, task
        assert texts.index(OPEN_PAGE) < texts.index(FILL_FORM) < texts.index(SUBMIT_FORM), task
    # what a tool of its own submits or registers is no form; without a page, no form either
    for task in ("Open https://ci.example.test/pipelines/77 in the browser and submit a review of the failing job.",
                 "Register a webhook for push events on acme/api.", "Submit it."):
        assert FILL_FORM not in [s.text for s in task_steps(task)], task
    # the submit step is a click: a browser's form filler does not say it (its object is no form to fill)
    submit = Step(SUBMIT_FORM, "/write")
    assert name_fit("click", "chrome-devtools", submit) == 1.0
    assert name_fit("fill_form", "chrome-devtools", submit) < 0.5


def test_the_current_docs_of_a_named_library_are_a_librarys_docs():
    implied = [s.text for s in task_steps("Port the cache layer \u2014 read the latest Tokio docs on "
                                          "cancellation first.") if s.implied]
    assert LIBRARY_DOCS in implied
    # the current docs of an API or of our own are where the task says, no library's
    for task in ("Check the current API docs for the orders endpoint.", "Read the latest our docs on billing."):
        assert LIBRARY_DOCS not in [s.text for s in task_steps(task) if s.implied], task


def test_looking_at_a_pull_request_reads_it_and_its_files():
    texts = [s.text for s in task_steps("Look at PR #318 in acme/ledger and tell me if the migration is safe.")]
    assert READ_CHANGE in texts and READ_CHANGED_FILES in texts
    # looking at something else, then opening a change, reads no change
    assert READ_CHANGE not in [s.text for s in task_steps("Look at the flaky test logs and open a PR with a fix.")]


def test_a_clause_that_tells_what_happened_reads():
    for task in ("The export-worker pods have been crashlooping since Friday. Find out why.",
                 "ledger-sync keeps timing out on CI in acme/ledger, check the last runs.",
                 "Someone on the sales team emailed support about a double charge; find the mail.",
                 "tests/test_invoices.py started failing after the merge. Read the diff."):
        assert task_steps(task)[0].capability == "/read", task
    # an order keeps its verb's capability, whatever it says about how things went
    for task, cap in (("Fix the export job that has been failing since Friday.", "/write"),
                      ("Restart the worker that keeps crashing.", "/execute")):
        assert task_steps(task)[-1].capability == cap, task


def test_an_issue_worked_on_by_its_number_is_read_first():
    from jit.selection.steps import READ_ISSUE
    for task in ("Fix issue #57 in acme/ledger: rounding drops cents on refunds.",
                 "Write a failing test for bug #1203 in my checkout, then fix it.",
                 "Implement the ticket PAY-88 on a new branch."):
        texts = [s.text for s in task_steps(task)]
        assert texts[0] == READ_ISSUE, task
    # acting on the issue itself, or a fix that names no issue, reads none first
    for task in ("Close issue #57 in acme/ledger.", "Comment on ticket PAY-88 that it shipped.",
                 "Fix the rounding bug in src/money.py."):
        assert READ_ISSUE not in [s.text for s in task_steps(task)], task


def test_the_subject_of_what_a_read_looks_for_does_not_choose_its_tool():
    # "papers on speculative decoding for LLM inference": a paper search, not a tool about LLMs.
    step = Step("find recent papers on speculative decoding for LLM inference", "/read")
    assert step.query == "find recent papers"
    assert name_fit("brave_llm_context", "brave", step) == 0  # "LLM" is the subject, not the object
    assert name_fit("firecrawl_research_search_papers", "firecrawl", step) > 0.5
    # The subject ends at punctuation, "then", or where a name says where it is read.
    assert topic_free("search the news about the merger in the Financial Times") == (
        "search the news in the Financial Times")
    assert topic_free("find emails about the invoice from legal, then reply") == "find emails, then reply"
    assert topic_free("find papers on in-context learning") == "find papers"
    # a possessive is no quote: "night's" does not make the subject a title
    assert topic_free("Summarise the thread about last night's Redis outage (root cause)") == (
        "Summarise the thread (root cause)")
    # What is not a subject: a thing named (its owner, a title, an address), where it is read, and
    # what one writes about, a text that opens with no verb of reading; a subject too long to be one.
    for text in ("read the review threads on PR #57", "find the discussion on issue #123",
                 "find messages on Slack about the outage", "show the results on the Grafana dashboard",
                 "read the article on the 'Causes of the Fall'", "read the docs on https://docs.python.org/3/",
                 "I am writing an article on the Fall of Rome", "Write a blog post about our launch",
                 "find papers on " + " ".join(["word"] * 13), "papers on decoding"):
        assert topic_free(text) == text, text
    assert Step("Write a blog post about our launch", "/write").query == "Write a blog post about our launch"


def test_a_chat_channel_named_by_its_hash_name_is_found_by_it_first():
    """A chat tool takes a channel's id: a ``#name`` the task says is looked up first, and a clause
    that reads it reads its messages; an issue's number, a tag and an address's fragment are no channel."""
    posts = task_steps("Post the top 3 links to the #research channel on our Discord.")
    assert [(s.text, s.capability) for s in posts][:1] == [(FIND_CHANNEL, "/read")]
    assert READ_CHANNEL not in [s.text for s in posts]  # what it posts is not read there
    reads = [s.text for s in task_steps("What are people saying in #platform-eng on Slack about Postgres 17?")]
    assert reads.index(FIND_CHANNEL) < reads.index(READ_CHANNEL)
    for task in ("Fix issue #212 in acme/shop.", "Find our onboarding notes in the vault (tagged #onboarding).",
                 "Open https://docs.example.test/guide#install and read it.", "Set the background to #abcdef in a.css",
                 "Add a #todo comment above the loop in utils.py", "Add the #include <stdio.h> line to main.c",
                 "Count tweets tagged with #AI", "Write a tweet with the hashtag #launchday",
                 "Set the Slack theme colour to #abcdef", "Count tweets tagged #AI and post the count to Slack",
                 "Add a link to #installation in README.md"):
        assert FIND_CHANNEL not in [s.text for s in task_steps(task)], task
    # a channel whose name starts as a colour's would is still one
    assert FIND_CHANNEL in [s.text for s in task_steps("Post to #ec2-alerts on Slack that the scan finished.")]
    # a thread in a channel read: the channel found, and the thread's replies read
    thread = [s.text for s in task_steps("Summarise the #incidents thread about last night's outage")]
    assert thread.index(FIND_CHANNEL) < thread.index(READ_THREAD)
    for task in ("Read the email thread with Acme and summarise it",
                 "Summarise the forum thread on discuss.python.org about #pep-8",
                 "Read the Twitter thread from @dan about #rustlang"):
        assert READ_THREAD not in [s.text for s in task_steps(task)], task
        assert FIND_CHANNEL not in [s.text for s in task_steps(task)], task


def _implies(task: str, first: str, then: str) -> bool:
    """Whether ``task``'s steps hold ``first`` and, after it, ``then``."""
    texts = [s.text for s in task_steps(task)]
    return first in texts and then in texts[texts.index(first) + 1:]


def test_a_mail_that_should_have_arrived_is_searched_for_and_read():
    assert all(_implies(task, SEARCH_MAIL, READ_MAIL) for task in (
        "Did the password-reset mail for qa+reset@acme.dev arrive in the last hour? Open it.",
        "I just triggered a password reset for test+1@myapp.io. Check the email arrived.",
        "Trigger a password reset and check that the reset mail lands in the QA inbox."))
    assert _implies("Did I get the verification email from GitHub?", SEARCH_MAIL, READ_MAIL)
    assert _implies("Has the invoice email come in yet?", SEARCH_MAIL, READ_MAIL)
    # a mail to send, or one that names no arrival, is no search of the mailbox
    for task in ("Mail the report to finance@acme.test when it lands in Drive.", "Email the team the release notes.",
                 "Send an email to the team when the new hire arrives.",
                 "Could you email Bob when the invoice arrives?",
                 "Forward the email to legal once the signed contract is received.",
                 "Check the email.sender setting landed in config.yaml.",
                 "Which email campaign reached the most subscribers?",
                 "Check the email settings page once the new hire arrives."):
        assert SEARCH_MAIL not in [s.text for s in task_steps(task)], task


def test_mail_a_clause_reads_is_searched_for_and_read():
    """"check my mail from legal in the last month", "Find that email", a list of things to check that
    ends with the mails: the mailbox searched, the mail read. An address, a column, a template or a
    setting named for e-mail is no mail, and neither is one the clause sends."""
    assert all(_implies(task, SEARCH_MAIL, READ_MAIL) for task in (
        "Look through my inbox for anything from the auditors about the Q3 close.",
        "Somebody from Initech wrote to support yesterday; find that email and summarise it.",
        "Check the CRM record, the open invoices and my recent mails with Globex."))
    for task in ("Find the email address of our contact at Globex in the CRM.",
                 "Review the email template in src/templates/invoice.html.",
                 "Check the mail.smtp_host value in settings.py.", "Check the e-mail field of the signup form.",
                 "Read the release notes and mail them to the team.",
                 "Check the signup form rejects an empty email.",
                 "Check the users table for rows with a blank email.",
                 "Search the codebase for where we validate email addresses.",
                 "Find all places that log the user's email in plain text.",
                 "Search Jira for tickets about email verification."):
        assert SEARCH_MAIL not in [s.text for s in task_steps(task)], task


def test_who_wrote_some_code_or_what_its_history_holds_reads_git_s_history():
    who = "Who added the retry logic in src/queue/worker.ts, and why?"
    assert _implies(who, BLAME_LINES, SHOW_COMMIT) and LOG_COMMITS not in [s.text for s in task_steps(who)]
    assert all(_implies(task, LOG_COMMITS, SHOW_COMMIT) for task in (
        "When did src/net/retry.py last change?",
        "What changed in the billing code since yesterday? Fix it and re-run the tests.",
        "In which commit did the backoff cap get into src/net/retry.go?", "Which commit broke the login page?",
        "What has changed in the auth code since Monday?", "When did that file last change?",
        "What changed in src/auth since Monday?"))
    assert _implies("Who changed the Dockerfile?", BLAME_LINES, SHOW_COMMIT)
    # who changed a thing that is not code, and what changed in the news, are no history of a repository
    for task in ("Who changed the pricing page copy on the website?", "What changed in the EU AI Act since May?",
                 "Who edited the file permissions on the shared drive folder?",
                 "Who changed the discount code on the pricing page?", "Which commit message convention do we use?"):
        assert not {BLAME_LINES, LOG_COMMITS} & {s.text for s in task_steps(task)}, task


def test_how_a_pull_requests_ci_went_reads_its_checks():
    for task in ("Is PR #214 on acme/web-app safe to merge? Look at what it changes and whether CI is green.",
                 "Look at PR #102 on acme/api: if CI failed, request changes with a short review.",
                 "PR #77 in acme/docs should have green checks by now. Verify that and squash-merge it."):
        assert READ_CHECKS in [s.text for s in task_steps(task)], task
    assert READ_CHECKS in [s.text for s in task_steps("Merge PR #5 once the checks pass.")]
    # CI set up, or checks of something that is no change proposed, are not a pull request's checks
    for task in ("Set up CI for the repo.", "Check the build is green on the nightly dashboard.",
                 "Write a CI workflow in .github/workflows/ci.yml and open a PR.",
                 "Add a CI badge to the README, then open a PR.",
                 "Add a CI status badge to the README, then open a PR.",
                 "Make sure the build passes locally, then open a PR."):
        assert READ_CHECKS not in [s.text for s in task_steps(task)], task


def test_a_port_forward_is_no_message_and_opens_no_page():
    steps = task_steps("Port-forward svc/search-es to localhost:9200, check /_cluster/health, then tear the "
                       "forward down.")
    assert OPEN_PAGE not in [s.text for s in steps]
    assert [s.capability for s in steps if "forward" in s.text] == ["/write", "/write"]
    assert task_steps("Forward the invoice to legal@acme.test")[0].capability == "/send"  # a mail's forward sends
    logs = task_steps("Port-forward the api pod to localhost:8080, then forward the error log to oncall@acme.test.")
    assert [s.capability for s in logs if s.text.startswith("forward")] == ["/send"]


def test_a_new_thing_is_made_and_a_thing_said_to_exist_is_not():
    """"a new Linear issue" says createIssue's verb though the clause opens with "put"; a thing said after a
    preposition with a determiner of one that exists ("for the Web team", "in the Test Runs table") is where
    the step acts, so a change of that thing (createTeam, update_table) does not say the step."""
    put = Step("put the failing audits in a new Linear issue for the Web team", "/write")
    assert name_fit("linear_createIssue", "linear", put) == 1.0
    assert name_fit("linear_createTeam", "linear", put) < 0.5
    log = Step("log the result in the Test Runs table of our QA base", "/write")
    assert name_fit("create_table", "airtable", log) < 0.5
    # a change of the place may be the step ("set the status on the issue to Done": update_issue)
    assert name_fit("update_issue", "linear", Step("set the status on the issue to Done", "/write")) > 0.5
    # "the new issues" exist: listing them makes none
    assert name_fit("create_issue", "linear", Step("close the new duplicate issues", "/write")) < 1.0
    # a thing the step adds to a place it names is said whole; the place in the name's own words counts
    add = Step("add a card to the Bugs list on my Trello board", "/write")
    assert name_fit("add_card_to_list", "trello", add) == 1.0
    # the direct object is made even if the place shares its word; a read of the place reads it
    assert name_fit("create_branch", "github", Step("create a branch from the main branch", "/write")) == 1.0
    assert name_fit("get_lists", "trello", Step("find the card in the Bugs list", "/read")) > 0
    # a new thing said apart from the name's object says no verb of it
    assert name_fit("create_project", "asana", put) == 0.25


def test_a_thing_named_by_its_identifier_says_a_names_by_id():
    """"read ENG-512" names one issue by its key: getIssueById's "by id" is said; a read of the latest
    issues names none, and a tool that takes no identifier fits as before."""
    for text in ("read Linear issue ENG-512", "read issue #88"):
        assert name_fit("linear_getIssueById", "linear", Step(text, "/read")) == 1.0, text
    assert name_fit("get_run_by_id", "ci", Step("get the run 3f2a9c1e-8b7d-4e21-9a0c-55d2e1f0b7aa", "/read")) == 1.0
    assert name_fit("linear_getIssueById", "linear", Step("read the latest issues", "/read")) < 1.0
    # an anchor or an entity is no identifier
    assert name_fit("linear_getIssueById", "linear", Step("read the issue's #details", "/read")) < 1.0
    assert name_fit("linear_getIssueById", "linear", Step("read issue &#38", "/read")) < 1.0
    # nor is a standard's name
    assert name_fit("linear_getIssueById", "linear", Step("find the issue about ISO-8601 dates", "/read")) < 1.0


def test_a_step_that_says_its_way_of_reading_fits_a_tool_that_reads_that_way():
    search = Step("search my Obsidian notes", "/read")
    assert name_fit("search_notes", "obsidian", search) == 1.0
    assert name_fit("get_notes", "obsidian", search) == 0.75  # another way of reading says it half
    assert name_fit("pods_list", "kubernetes", Step("list the pods", "/read")) == 1.0
    assert name_fit("get_pods", "kubernetes", Step("list the pods", "/read")) == 0.75
    # a read that says no way of its own: any reading verb says it ("find the note": get or search alike)
    find = Step("find the note", "/read")
    assert name_fit("get_note", "obsidian", find) == name_fit("search_note", "obsidian", find) == 1.0


def test_a_verb_right_after_with_or_via_names_the_tool_it_is_done_with():
    step = Step("confirm with explain that find({customerId: 'c_981'}) uses it", "/read")
    assert name_fit("explain", "mongodb", step) == 1.0
    assert "explain" in action_free(step.text)
    # after a determiner, or a word past the preposition, it is a thing's name as before
    assert name_fit("git_checkout", "git", Step("fix the bug with the checkout", "/write")) == 0
    assert name_fit("git_checkout", "git", Step("fix the bug in my local checkout", "/write")) == 0


def test_a_things_name_after_with_and_a_search_by_query_stay_as_they_were():
    assert name_fit("git_checkout", "git", Step("Test the flow with checkout disabled", "/read")) == 0
    assert name_fit("git_reset", "git", Step("Run the migration with reset flag", "/write")) == 0
    # a search says a query tool's verb whole: only a plain read's is half
    assert name_fit("query", "postgres", Step("search the orders table", "/read")) == 1.0
