"""The steps of a task and the tool of each: what the Full tier holds first.

A task is split into steps (:func:`task_steps`): its clauses
(:func:`~jit.selection.clauses.split_clauses`), each with the capability of the verb it opens with
(:data:`~jit.selection.step_words.VERBS`; a question reads; otherwise the offline task analyzer's
reading, ``/read`` when it names none), a clause that tells the agent what *not* to do left out
("don't merge it"), and the steps a clause implies: reading the code before changing it in place,
opening a page in a browser before looking at it (or a local address, not a database's, that no
clause points something at) and a picture of what a clause looks at on it, filling in and
submitting a page's form to log in, sign up or submit on it, switching to the branch a change goes
on, reading a pull request and its files before reviewing it ("review PR #214", "look at PR #102"),
reading an issue before working on it by its number ("fix issue #212"), today's date for a day
still to come ("tomorrow", "on Thursday") or for today's date written or read, staging the changes
before a commit made here (and a staging clause read in git's words), pushing the branch
before proposing a change committed here, listing what a deletion gives by a pattern ("keys that start with flags:"),
searching by its title for a thing read by one ("the 'Q3 launch plan' Google Doc", "the
Confluence page 'Payments' in space ENG"), reading what a clause finds ("find the signed contract
in Drive"), reading who last changed some code's lines and the commit that brought them ("who added
the retry logic in src/net/retry.py?"), or a code's commit log and a commit's changes ("what changed
in the billing code since yesterday?"), reading a pull request's CI checks when the task asks how
they went ("whether CI is green"), searching the mailbox for a mail that should have arrived and
reading it ("check the reset email arrived"), finding a chat channel the task names by its ``#name``
and, for a clause that reads it, reading its messages ("what people said in #platform-eng on Slack"),
running a command after "run the tests" (the role's skeleton slots do the first and the last). A
clause that opens with an article, a pronoun or a preposition says how things are, and reads; so
does one that tells what happened or goes on
(:data:`~jit.selection.clauses.NARRATES`). The words a step says only as names (:func:`~jit.selection.step_words.noun_uses`: "in
my local checkout", an address) are not its action; the clauses that forbid something are left
out of retrieval too (:func:`asked`).

Each step gets the tool (:func:`step_tools`) that matches its text best (the retrieval index's
score of the step alone: dense and lexical, with how well the tool's name says the step's verb
and object, :func:`~jit.selection.step_words.name_fit`), among the tools the role may use whose
capability fits the step (a change needs a tool that writes, a read one that does not), that
are neither deprecated (``penalty_points``) nor a demonstration server's (:func:`~jit.selection.naming.demo_servers`),
and whose match clears :data:`STEP_FLOOR`. When a step's tool needs an identifier that another
tool of its server lists or resolves (``libraryId`` from ``resolve-library-id``, a
``channel_id`` from ``list_channels``), that producer is a step too (:func:`~jit.selection.producers.producers`). A
step two tools of one server do about as well takes both while Full has room (:func:`settle`).

A step no tool in reach does well enough, or that only tools the role is denied do, is a
warning that names the step and why.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Protocol

import numpy as np

from ..analysis.offline_analyzer import analyze_task
from ..config import ShardConfig
from ..text import search_tokens, split_identifier
from .clauses import ASKS, CONTINUED, NARRATES, NEGATED, QUESTION, STATEMENT, clause_action, split_clauses
from .naming import ServerNames, demo_servers, named_servers, server_names
from .producers import coordinate_producers, producers
from .retrieve import task_pieces
from .snapshot import CatalogSnapshot, label_rows
from .step_words import (LIBRARY_DOCS_SAID, OPENING, QUOTED, THING, VERBS, action_free, leading_capability, name_fit,
                         spelled, topic_free)
from .tiers import Tier

__all__ = ["REPOSITORY_WORD", "STEP_FLOOR", "Feeds", "Step", "StepTool", "asked", "demo_server", "embedded",
           "names_repository", "plan", "says_change_request", "says_sql", "settle", "step_tools", "task_servers",
           "task_steps"]

#: The least retrieval score (0–100, the step's text alone) of a step's tool: below it, no
#: tool in reach is taken to do the step.
STEP_FLOOR = 75
#: The least cosine of a step's tool to the step's text: a tool that matches by a shared word
#: alone (``run`` in ``firecrawl_monitor_run``) is not the step's tool.
DENSE_FLOOR = 0.25
#: The same for a tool whose name says the whole change a step asks for (:func:`~jit.selection.step_words.name_fit` 1).
SAID_DENSE_FLOOR = 0.20
#: The least retrieval score and cosine of a step's tool whose server the task names as a product
#: (:func:`named_servers`: "search Notion", "the Web board in Trello"): the task has said where the
#: step is done, so a tool there that matches less is still the step's.
NAMED_FLOOR = 50
NAMED_DENSE = 0.10
#: In a step's ranking, what a tool gains when the step's own clause names its server.
NAMED_WEIGHT = 40
#: What it gains when another clause of the task names its server and the step's own names none
#: ("Take Linear issue ENG-1042: …, then move the issue to In Review": the issue is Linear's).
TASK_NAMED_WEIGHT = 20
#: Tools a step keeps as its options, best first (:func:`settle` picks one or two).
OPTIONS = 3
#: In :func:`settle`, the weight of a step's own match against the whole task's final score.
STEP_WEIGHT = 0.5
#: In a step's ranking, the weight of how well the tool's name says the step (:func:`~jit.selection.step_words.name_fit`,
#: 0–1) beside its match (0–100): of a server's siblings, the one named for the step's verb and
#: object ("commit it": ``git_commit``, not ``git_cherry_pick``).
NAME_WEIGHT = 80
#: In :func:`settle`, how close (in its ranking) a step's second tool is to its first to go too:
#: a step two tools do about as well is ambiguous, and Full holds both.
CLOSE = 30
#: How much more a step's own ranking must prefer a sibling of its best option to choose it.
SURE = 10
#: Capabilities that change something; a read step's tool has none of them.
CHANGES = ("/write", "/delete", "/send", "/execute")
#: A step's capability -> the capabilities one of which its tool must have.
FITS = {"/write": ("/write",), "/delete": ("/delete", "/write"), "/send": ("/send", "/write"),
        "/execute": ("/execute",)}
#: A step's capability as what a tool does (the warnings).
DOES = {"/read": "read it", "/write": "change files or data", "/delete": "delete anything",
        "/execute": "run commands", "/send": "send messages"}

#: Words of a clause that look at a page in a browser ("the page", "the returns form"): opening it first is implied.
_PAGE = re.compile(r"\b(?:screenshot|click|console|browser|the page|the\s+(?:[\w\-]+\s+){0,2}?form|viewport"
                   r"|headless|xhr|network requests?)\b", re.I)
#: A clause that runs an audit of a page's accessibility or speed ("Run a Lighthouse accessibility audit on
#: https://…", "Record a performance trace of …"): it runs in the browser on the page it has open. Not a
#: Lighthouse step added to CI, nor a report read or downloaded.
_AUDITS = re.compile(OPENING + r"(?:run|do|perform|record|start|take|measure|audit|check)\b[^.;!?]{0,40}?\b"
                     r"(?:lighthouse|(?:accessibility|a11y|performance)\s+(?:audit|trace|check)s?|"
                     r"core\s+web\s+vitals)\b", re.I)
#: A clause that makes content ("write an overview …, save it as x.docx"): when the task names a
#: file to write, that file is where the content goes (the policy's file tool), not another store.
_MAKES = re.compile(OPENING + r"(?:help me\s+)?(?:write|create|make|draft|"
                    r"generate|compose|prepare|produce|save|export|summari[sz]e|collect|list)\b", re.I)
#: A task that forwards a port ("port-forward svc/search to localhost:9200"): its "forward" is that
#: command's, not a message forwarded.
_PORT_FORWARD = re.compile(r"\bport[- ]?forward|\bforward(?:ed|ing)?\s+(?:the\s+|a\s+)?(?:local\s+)?port\b", re.I)
_FORWARD = re.compile(_PORT_FORWARD.pattern + r"|\bthe\s+forward(?:ing)?\b(?!\s+(?:e-?mail|mail|message))", re.I)
#: A clause that builds something ("build the pricing card as src/PricingCard.tsx"): when it names a file
#: it writes, building is writing that file, not running a build.
_BUILDS = re.compile(OPENING + r"(?:build|scaffold)\b", re.I)
#: :attr:`Step.by` of a write to a local file: the policy's ``file_step`` tool does it.
FILE_STEP = "file_step"
#: How far past a clause's verb its patterns look for what the verb is about (a clause of a task is
#: far shorter): a bounded reach keeps a long task without stops read in linear time.
_REACH = 200
#: A clause that runs a project's tests or confirms a change: a command on this machine.
_RUN = re.compile(rf"\b(?:run|rerun|re-run)\b.{{0,{_REACH}}}?\b(?:tests?|suite|specs?|pytest|jest)\b|\bconfirm\b", re.I)
_URL = re.compile(r"\b(?:https?://|(?:localhost|127\.0\.0\.1|0\.0\.0\.0)[:/])\S+", re.I)
#: An address on this machine ("http://localhost:8080/health", "127.0.0.1:3000"): a local app's
#: page or endpoint, which a task names to look at it ...
_LOCAL = re.compile(r"\b(?:localhost|127\.0\.0\.1|0\.0\.0\.0)[:/]\S*", re.I)
#: ... unless it is a database's (its usual port, its scheme) or the clause points something at
#: it ("point the API client at http://localhost:5432", "connect the app to localhost:6379",
#: "port-forward svc/search to localhost:9200").
_NO_PAGE = re.compile(r"\b(?:point|points|pointed|pointing|aim|aims|aimed|connect|connects|connected|connecting|"
                      r"forward|forwards|forwarded|forwarding)\b"
                      rf"[^.;!?]{{0,{_REACH}}}?\b(?:at|to)\b|:(?:5432|3306|6379|27017|11211|9042)\b|"
                      r"\b(?:postgres(?:ql)?|mysql|mariadb|redis|mongodb)://", re.I)
#: A thing a clause names by its title in quotes, and what follows it ("the 'Q3 launch plan'
#: Google Doc", "the 'Launch tracker' board in monday.com"): reading it is finding it by that title first.
_TITLED = re.compile(QUOTED.pattern + r"(?P<kind>(?:\s+[^\s,;]+){1,8})")
#: The words before a value in quotes that is a field's, not a title ("with status 'refund_pending'", "priority
#: 'urgent'", "label: 'bug'").
_FIELD_VALUE = re.compile(r"\b(?:status|state|label|tag|priority|type|stage|severity|category|env|environment|"
                          r"column|field|value)(?:\s+(?:of|is|to|=))?\s*(?:[:=]\s*)?$", re.I)
#: The words between a determiner and a title in quotes ("the Confluence page 'Payments …'").
_WITHIN = re.compile(r"\b(?:on|in|from|of|within|inside|under)\s+(?:the|a|an|our|my|their|its)\s+(?:[\w.\-]+\s+){0,3}$",
                     re.I)
_KIND_BEFORE = re.compile(r"\b(?:the|a|an|our|my|their|its)\s+(?P<kind>(?:[\w.\-]+\s+){0,3}[\w.\-]+)\s*$", re.I)
#: A clause that finds a given thing ("find the signed contract in Drive"): reading it comes next.
_FINDS = re.compile(OPENING + r"(?:find|search\s+for|look\s+up|locate)\s+"
                    r"(?P<what>(?:the|my|our|its|their|that)\s+.{3,})", re.I)
#: A verb of reading that reads each thing of a list on its own ("check the pods, their logs", "look at the diff,
#: the CI status", "search Notion, Confluence"); not "compare" (the things together) or "find" (what it looks for).
_READS_EACH = re.compile(OPENING + r"(?:check|read|review|search|summari[sz]e|inspect|scan|list|show|get|fetch|open"
                         r"|(?:look|go)\s+(?:at|over|through|into|in))\s+"
                         r"(?!(?:me|us|that|whether|if|how|what|which|who|why|when)\b)", re.I)
#: A sentence's end within a clause ("… and Prime Video? Additionally, …"): its pieces are no one list.
_ENDS_SENTENCE = re.compile(r"[?!]|\.(?:\s|$)")
#: A name, by its capital and a small letter in it ("Confluence", "HubSpot"; not "CI", "PR").
_PROPER = r"[A-Z](?=[\w\-]*[a-z])[\w\-]*"
#: A verb that looks into a source for what the task asks ("check Confluence, my Obsidian notes") ...
_LOOKS_IN = re.compile(OPENING + r"(?:check|review|(?:look|go)\s+(?:at|over|through|into|in))\s+$", re.I)
#: ... and a source it looks into: a product by its name, with whose it is and what of it ("Confluence",
#: "my Obsidian notes", "their HubSpot company record", "the Confluence space"): searched (not "the pods", "the CI
#: status", "PR #80", "the Helm chart", "the Jira ticket": one thing, read).
_SOURCE = re.compile(rf"(?:(?:my|our|their|his|her)\s+)?{_PROPER}(?:\s+[a-z][\w\-]*){{0,2}}"
                     rf"|the\s+{_PROPER}\s+(?:space|vault|wiki|workspace|docs|notes|inbox|drive|mailbox)")
#: A later thing of such a list: one said with a determiner or a possessive, or by its name ("…, the CI status",
#: "…, Confluence"; not "…, password", "…, 375px").
_LISTED_THING = re.compile(r"(?:the|its|their|our|my|your|his|her|this|these|those)\s"
                           rf"|(?!(?:I|The|This|That|These|Those|Our|My|Their|Its|His|Her|An?)\b){_PROPER}")
#: Words in a list's first thing that make the rest of the list another word's: where or what things are taken
#: from, compared with or had ("pricing tiers from a, b", "benchmarks comparing Postgres 17, MySQL 9", "the form has
#: email, password", "its availability on Netflix, Hulu").
_LIST_OF_OTHER = re.compile(r"\b(?:from|between|comparing|compared|including|such\s+as|like|with|has|have|vs|versus"
                            r"|against|on|in|at|for|of|to|by|about|across|over|under|within|via)\b|[?!]", re.I)
#: A change whose object is "one", the kind of thing a clause before names ("Check the existing indexes, add one on
#: customerId", "if there is none, create one"); not "one of them", "one by one", "the one".
_ONE = re.compile(r"(?:^|,\s*)(?:(?:please|also|then|now|just|and)\s+)*(?P<verb>[a-z\-]+)\s+"
                  r"(?:(?P<new>a\s+new|another)\s+)?one(?=\s*(?:[,.;:!?)]|$)|\s+(?:on|for|in|under|called|named|"
                  r"that|which|with|to|at|if|and|then|so|when)\b)", re.I)
#: A clause's verb and what it acts on, to the first word that ends it ("Look for an open issue about flaky tests":
#: an open issue).
_ACTS_ON = re.compile(OPENING + r"[a-z\-]+\s+(?:(?:for|at|up|into|through|over)\s+)?" + THING, re.I)
#: A day or time said relative to now that is still to come ("the coming month", "on Thursday",
#: "tomorrow at 10"): which date it is needs today's first. A day's name in an address is a product's
#: ("monday.com").
_AHEAD = re.compile(r"\b(?:tomorrow|tonight|next\s+(?:week|month|year|monday|tuesday|wednesday|thursday|friday|"
                    r"saturday|sunday)|this\s+(?:week|weekend)|(?:on\s+|by\s+|this\s+)?(?:monday|tuesday|wednesday|"
                    r"thursday|friday|saturday|sunday)|in\s+\d+\s+(?:days|weeks))\b(?!\.\w)", re.I)
#: Today's date said as what a clause writes or reads ("put today's date in the Date column"):
#: which date it is, asked first.
_TODAY = re.compile(r"\b(?:today'?s|the current)\s+(?:date|day)\b|\bdated?\s+today\b", re.I)
#: Texts of the implied steps, in the words a tool's description uses.
CURRENT_TIME = "get the current date and time"
#: A clause that gives something to the user ("assign it to me", "assign issue #42 to myself", "with me as assignee",
#: "assignee: me", "add me as a reviewer", "make me the owner"; not "to me@example.com"): who the user is, the
#: authenticated user, is looked up first.
_TO_ME = re.compile(r"\b(?:re)?assign\s+(?:[^\s.;!?]+\s+){0,5}?to\s+(?:me|myself)\b(?!@|\.\w)|"
                    r"\bassignee\b[^.;!?]{0,40}?(?:[:=]|\bto)\s*(?:me|myself)\b(?!@|\.\w)|"
                    r"\b(?:add|set|make|put)\s+(?:me|myself)\s+(?:as|the)\b|"
                    r"\b(?:me|myself)\s+as\s+(?:the\s+|an?\s+)?(?:assignee|reviewer|owner|watcher|member)\b", re.I)
WHO_AM_I = "get information about the currently authenticated user: who am I"
LIBRARY_DOCS = "query the documentation of a programming library"
READ_CODE = "read the contents of a text file"
OPEN_PAGE = "navigate the browser page to a URL"
RUN_COMMAND = "run a shell command in a terminal"
SWITCH_BRANCH = "checkout a branch: switch branches"
PUSH_BRANCH = "push the local branch to the remote repository"
STAGE_CHANGES = "stage the changed files: add file contents to the staging area"
FIND_MATCHING = "list the items matching a pattern"
SNAPSHOT_PAGE = "take a screenshot or snapshot of the page"
READ_CHANGE = "get the details of a pull request"
READ_CHANGED_FILES = "list the files changed in a pull request"
#: A task that expects the page to show a message ("shows an error when the password is wrong", "Expect the 'Invalid
#: email or password' message", "an error should appear", "it should say 'Invalid credentials'"), in the clauses from
#: the one before the page's to the second after its form's: once the form is sent, what the page says is read.
_MESSAGE = r"(?:error|message|warning|banner|toast|alert|notice|notification|popup|modal|dialog)s?"
_SHOWN = r"(?:(?:should|must|will|is|are)\s+(?:be\s+)?)?(?:shown|displayed|appears?)"
_SHOWS_MESSAGE = re.compile(r"\b(?:show|shows|shown|display|displays|displayed|appear|appears|see|expect|expects|"
                            rf"says?)\b[^.;!?]{{0,60}}?(?:\b{_MESSAGE}\b|['\"\u201c])|\b{_MESSAGE}\s+{_SHOWN}\b", re.I)
#: What a message is read from other than the page ("the browser console shows no errors", "the server logs").
_NOT_ON_PAGE = re.compile(r"\b(?:console|logs|log\s+(?:file|output)|network\s+(?:tab|requests?|calls?)|slack|e-?mails?|"
                          r"inbox|terminal|stderr|stdout)\b", re.I)
READ_PAGE = "capture an accessibility snapshot of the current page: the text it shows"
FILL_FORM = "fill in the input fields of the form on the page"
SUBMIT_FORM = "click the submit button on the page"
PAGE_REQUESTS = "list the network requests the browser page made"
READ_REQUEST = "get a network request the browser page made: its response body and status"
#: A clause that works on an issue it names by its number or key ("fix issue #212 in acme/shop", "write
#: a regression test for bug #88", "implement ENG-412"'s ticket): what the issue says is read first.
_WORKS_ON = re.compile(OPENING + r"(?:fix|implement|address|tackle|handle|work\s+on|write|add|reproduce)\b"
                       rf"[^.;!?]{{0,{_REACH}}}?\b(?:issues?|tickets?|bugs?)\s+(?:#\d+|(?-i:[A-Z][A-Z0-9]+-\d+))", re.I)
READ_ISSUE = "get the details of an issue"
#: An error tracker a task names ("spiking in Sentry", "the Rollbar item"; not its SDK, its DSN, its alert rules or
#: its settings), and an error it holds: code fixed for it is fixed where the error's stack trace says it is thrown,
#: which the error's latest event holds.
_TRACKED = re.compile(r"\b(?:sentry|bugsnag|rollbar|honeybadger|raygun|airbrake|glitchtip|crashlytics)\b"
                      r"(?![-_\s]*(?:sdk|dsn|alerts?|rules?|settings|integration|config\w*|notif\w*|ownership|links?|"
                      r"check-?ins?|projects?)\b)", re.I)
_TRACKED_ERROR = re.compile(r"\b(?:\w+Error|exceptions?|crash(?:es|ed|ing)?|errors?|spik\w+|stack\s*traces?)\b", re.I)
#: A clause that fixes the code it calls its own ("fix the missing null check in our code", "patch the handler in
#: the repo"): code changed in place (not "fix the title of PR #12 in the repo").
_PATCHES = re.compile(OPENING + r"(?:fix|patch|repair|guard)\b", re.I)
_IN_OUR_CODE = re.compile(r"\b(?:in|to)\s+(?:our|my|the|this|your)\s+(?:local\s+)?(?:code(?:base)?|source(?:\s+code)?|"
                          r"repo(?:sitory)?|checkout)\b(?![-\s]*(?:freeze|review|snippet|block|coverage|owners|link|"
                          r"description|topics?|settings|board|name)\b)", re.I)
STACK_TRACE = "get the stack trace of the error issue's latest event"
#: A colour in hex (``#fafafa``, ``#abc``): no channel's name.
_HEX = r"(?:[0-9a-f]{8}|[0-9a-f]{6}|[0-9a-f]{4}|[0-9a-f]{3})(?![\w-])"
#: A chat channel a clause names by its ``#name`` ("post it to #deploys on Slack", "the thread in
#: #incidents"; not an issue's number, a colour, a preprocessor line, a tag or a hashtag, "tagged
#: #onboarding", "tweets tagged with #AI", an address's fragment): a chat tool takes the channel's id,
#: found by its name first; a clause that reads names it to read its messages.
_CHANNEL = re.compile(r"(?<![\w&#/.])(?<!\btag\s)(?<!\btags\s)(?<!\btagged\s)(?<!\bhashtag\s)(?<!\blabel\s)"
                      r"(?<!\bwith\s)"
                      r"(?<!\blabeled\s)(?<!\blabelled\s)#(?!" + _HEX + r"|\d+\b|(?:include|define|pragma|if|ifdef|"
                      r"ifndef|endif|import|region|todo)\b)[a-z][\w-]*", re.I)
#: What makes a ``#name`` a channel: a chat system or a channel said in the task, or the ``#name`` where
#: something is posted or read ("post the counts to #qa", "the thread in #incidents") in a clause about
#: no page and no file (not "click on #submit-btn", "add a link to #installation in README.md").
_CHAT = re.compile(r"\b(?:slack|discord|mattermost|zulip|channels?|chat)\b|(?-i:\bTeams\b)", re.I)
#: A thread of a channel a clause names by its ``#name`` ("summarise the #incidents thread", "the thread in
#: #release"): a chat's, whose replies are read too (not an email's or a forum's thread, nor "thread-safety").
_THREAD = re.compile(r"(?<![\w&#/.])#[a-z][\w-]*\s+threads?\b(?![-\u2010])|"
                     r"\bthreads?\s+(?:in|on|from|of)\s+(?:the\s+)?#[a-z][\w-]*", re.I)
_IN_CHANNEL = re.compile(r"\b(?:in|to|into|on|from|via|across)\s+(?:the\s+)?#(?!" + _HEX + r")[a-z]", re.I)
#: A clause that asks whether a mail arrived ("check the email arrived", "did the reset mail land in the
#: QA inbox?"): the mailbox is searched for it, and what it says is read.
#: A mail, said as a noun ("the reset email", "my mails").
_MAIL = r"(?:e-?mails?|mails?)"
_MAIL_ARRIVES = re.compile(r"\b" + _MAIL + r"\b(?!\.)(?:\s+\S+){0,4}?\s+(?:(?:has|have|had)\s+)?"
                           r"(?:arriv\w*|lands?|landed|landing|came|comes|come\s+in|received|got\s+through|showed\s+up|"
                           r"shown\s+up|(?:reached|delivered\s+to)\s+(?:the\s+|my\s+|our\s+)?(?:\w+\s+)?"
                           r"(?:inbox|mailbox))\b|"
                           r"\bdid\s+(?:i|we|you|they|\w+)\s+(?:get|receive)\s+(?:the|a|an|any|my|our)?\s*"
                           r"(?:[\w-]+\s+){0,3}"
                           + _MAIL + r"\b", re.I)
#: A clause that reads the reader's own mail ("check my mail from legal in the last month", "Find that
#: email", "…, my last few emails with them"): found in the mailbox and read, as a mail that arrived is.
#: Not mail a clause names as a thing of code ("where we validate email addresses"), nor one it sends.
_READS_MAIL = re.compile(OPENING + r"(?:check|find|read|search|scan|review|summari[sz]e|look\s+(?:at|through|for)|"
                         r"go\s+through|dig\s+(?:through|into)|pull\s+up|skim)\b(?:\s+[^\s.;!?]+){0,8}?\s+"
                         r"(?:(?:(?:my|our)\s+(?:[^\s.;!?]+\s+){0,3}?|(?:that|this|these|those)\s+)"
                         r"(?:" + _MAIL + r"|inbox|mailbox)\b(?![.\-_]\w)|"
                         + _MAIL + r"\s+(?:from|with|about)\s)", re.I)
#: What names a part of a form or a record, where an e-mail is a field ("check the form has email, password …").
_FORM_PART = re.compile(r"\b(?:forms?|fields?|inputs?|columns?|tables?|pages?|rows?)\b", re.I)
#: A search for places around an address ("cafés near 221B Baker Street", "hotels within 2 km of our
#: office at Av. da Liberdade 110", "within walking distance of Alexanderplatz 1"): the address's
#: coordinates first, which a place search takes as its location.
_NEAR_PLACE = re.compile(r"\b(?:caf[eé]s?|coffee\s+shops?|restaurants?|bars?|pubs?|bakery|bakeries|hotels?|"
                         r"hostels?|venues?|places|shops?|stores?|gyms?|parks?|pharmac(?:y|ies)|hospitals?|museums?|"
                         r"attractions?|co-?working\s+spaces?|parking(?:\s+(?:lots?|garages?))?)\b[^.;!?]{0,80}?\b"
                         r"(?:near(?:by)?|close\s+to|within\s+(?:walking\s+distance|[^.;!?]{0,30}?\b"
                         r"(?:km|kilometres?|kilometers?|miles?|metres?|meters?|minutes?'?\s+(?:walk|drive)))\s+of)\b",
                         re.I)
#: A clause that asks how long or far a trip is ("how long the walk is", "walking time from the hotel",
#: "travel time from the airport", "within 30 minutes' drive"): the travel time between places.
_TRAVEL = re.compile(r"\b(?:(?:walking|driving|travel|commute|transit|cycling)\s+(?:times?|distances?)|"
                     r"how\s+(?:long|far)\b[^.;!?]{0,40}?\b(?:walk|drive|ride|trip|journey|commute|on\s+foot|"
                     r"by\s+(?:car|train|bus)|to\s+get\s+(?:to|from|there|here)\b)|"
                     r"minutes?'?\s+(?:walk|drive|ride)|on\s+foot)\b", re.I)
#: A workbook or a spreadsheet a clause names ("mark the row in reports/test-matrix.xlsx", "the 'Customer Metrics'
#: Google Sheet"; not "a spreadsheet-like grid", "the workbook parser"): its sheets are looked at before a range of
#: one is read or written (:func:`_sheets_step`) ...
_WORKBOOK = re.compile(r"(?<![\w/.-])[\w./-]*\w\.(?:xlsx|xlsm|xls|ods)\b|"
                       r"(?<![/.\w-])(?:spreadsheets?|workbooks?|google\s+sheets?|gsheets?)\b"
                       r"(?![-\u2010./]|\s+(?:parser|export|library))|"
                       r"\bdocs\.google\.com/spreadsheets\b", re.I)
#: ... and a sheet or a tab named in quotes ("the 'fixtures' tab"), of a task that names a workbook (not
#: "the 'Network' tab in devtools").
_TAB = re.compile(r"\b(?:tab|sheet)\s+[\"'\u201c\u2018]|[\"'\u201d\u2019]\s+(?:tab|sheet)\b", re.I)
#: Of those, a file ("reports/q3.xlsx", "the Excel workbook") ...
_BOOK_FILE = re.compile(r"\.(?:xlsx|xlsm|xls|ods)\b|\bexcel\b", re.I)
#: ... or one kept online ("the Google Sheet", "the spreadsheet in Drive"), not a file on this machine.
_ONLINE_BOOK = re.compile(r"\bgoogle\s+(?:sheets?|spreadsheets?|drive)\b|\bgsheets?\b|\b(?:docs|sheets)\.google\.com\b|"
                          r"\b(?:in|on|from)\s+(?:my\s+|our\s+|the\s+)?drive\b", re.I)
#: A clause that makes a workbook or a spreadsheet, which has no sheets to look at yet, or that handles it as a
#: file ("commit reports/q3.xlsx", "upload report.xlsx to the bucket", "rename budget.xlsx").
_BOOK_AS_FILE = re.compile(OPENING + r"(?:create|make|generate|build|start|export|save|set\s+up|commit|stage|push|"
                           r"upload|download|move|rename|copy|attach|share|send|e-?mail|delete|remove)\b|"
                           r"\bnew\s+(?:google\s+)?(?:spreadsheet|workbook|sheet)\b", re.I)
#: A board a clause reads items of by a field ("which items on the 'Q4 Launch' board are Stuck", "who owns
#: them", "the cards past their due date"): the board's columns, which hold those fields, are read first.
#: Not a dashboard, a keyboard, a whiteboard or an onboarding, nor a board of people ("the board meeting").
_BOARD = re.compile(r"(?<![\w-])boards?\b(?!\s+(?:meetings?|members?|of\s+directors))", re.I)
_BY_FIELD = re.compile(r"\b(?:status(?:es)?|stuck|owners?|owns|owned|due(?:\s+dates?)?|overdue|columns?|"
                       r"priorit(?:y|ies)|"
                       r"assignees?|assigned)\b", re.I)
#: What a board holds, which a clause reads by a field ("which items are Stuck").
_ITEMS = re.compile(r"\b(?:items?|cards?|tasks?|tickets?|pulses?|entries)\b", re.I)
BOARD_COLUMNS = "get the board's schema: its columns and groups"
SHEET_TABS = "describe the Excel workbook file: its sheets and their used ranges"
ONLINE_SHEET_TABS = "get a Google spreadsheet's info: the names of its sheets (tabs)"
GEOCODE = "geocode an address into coordinates"
TRAVEL_TIME = "get the travel time and distance between places"
SEARCH_MAIL = "search the mailbox for emails"
READ_MAIL = "read the content of an email"
#: A clause that asks who wrote or changed some code ("who added the retry logic in src/net/retry.py?"):
#: the lines' authorship is read, and the commit that brought them.
_WHO_CHANGED = re.compile(r"\bwho\s+(?:(?:last|first|originally)\s+)?(?:wrote|added|introduced|changed|touched|"
                          r"authored|edited|modified)\b", re.I)
#: A clause that asks what a code's history holds since a time ("what changed in the billing code since
#: yesterday?"): with code named, its log is read.
_HISTORY = re.compile(r"\bwhen\s+did\s+(?:\S+\s+){1,3}?(?:last\s+|first\s+)?change\b|"
                      r"\bwhat(?:'s|\s+has)?\s+changed\s+in\s+(?:the\s+|our\s+|my\s+)?[\w./-]+(?:\s+[\w./-]+)?"
                      r"\s+since\b",
                      re.I)
#: A clause that asks which commit did something, or when a file last changed ("which commit broke the
#: login page?", "when did that file last change?"): a repository's history, whatever else it names.
_WHICH_COMMIT = re.compile(r"\bwhich\s+commits?\b(?!\s+(?:messages?|conventions?|formats?|styles?))|"
                           r"\bwhen\s+did\s+(?:that|the|this|its|my|our)\s+file\s+(?:last\s+)?change\b", re.I)
#: Code a clause points at: a path, or the words of code in a repository.
_CODE_PATH = re.compile(r"(?<![\w./-])[\w.-]++/[\w./-]*\.\w|(?<![\w.-])[\w-]++\.(?:py|ts|tsx|js|jsx|go|rs|java|rb|kt|"
                        r"cs|cpp|c|h|php|swift|md|ya?ml|json|toml)\b|"
                        r"(?<![\w./-])(?:src|lib|app|pkg|cmd|internal|tests?)/"
                        r"[\w./-]+|\b(?:Dockerfile|Makefile|Jenkinsfile)\b")
_CODE = re.compile(_CODE_PATH.pattern + r"|\b(?:logic|function|method|module|repo|repository|codebase)\b|"
                   # code, but not a discount's, a zip's or a form's field
                   r"\b(?<!discount\s)(?<!promo\s)(?<!coupon\s)(?<!zip\s)(?<!postal\s)(?<!country\s)(?<!area\s)"
                   r"(?<!error\s)(?<!status\s)(?<!qr\s)(?<!invite\s)(?<!referral\s)(?<!verification\s)(?<!access\s)"
                   r"(?<!tracking\s)(?<!security\s)code\b(?!\s+(?:field|column|box|input|format))", re.I)
#: A repository named by its owner and name where the task speaks of what only a code host keeps ("the open issues
#: in acme/shop", "PR #80 in acme/web", "the stars of the acme/sdk repo"): the task points at a code host, named or
#: not (:func:`names_repository`). Not a directory ("the issues in terraform/modules"), a branch ("a PR from
#: feature/x"), a date, nor an image or a model of another registry.
_REPOSITORY_SLUG = re.compile(r"(?:\b(?:issues?|prs?|pull\s+requests?|merge\s+requests?|mrs?)\s+#?\d+|"
                              r"\b(?:open|closed|merged|stale|recent|new|pending|unresolved|unassigned|unreviewed)\s+"
                              r"(?:issues|prs|pull\s+requests|merge\s+requests|mrs)|"
                              r"\b(?:stars|forks|discussions|milestones|contributors|repo|repository))\b"
                              r"[^.;!?\n]{0,40}?\b(?:in|of|on|from|for|at|to)\s+(?:the\s+)?(?:repo(?:sitory)?\s+)?"
                              r"(?P<owner>[A-Za-z0-9][\w.-]{0,38})/(?P<name>[A-Za-z0-9][\w.-]*)(?![\w/])"
                              r"(?!\s+(?:module|package|folder|dir(?:ectory)?|columns?)\b)", re.I)
#: The first parts of a project's own paths and of a branch's or a remote's name, which no owner of a repository
#: is taken to be.
_PROJECT_DIRS = frozenset("src lib app apps docs doc tests test spec bin config scripts packages pkg cmd internal "
                          "public assets web api services migrations infra terraform k8s charts ci tools frontend "
                          "backend data reports modules deploy ops feature feat fix bugfix hotfix release chore origin "
                          "upstream".split())
#: A tool named for finding repositories (``search_repositories``, ``list_repos``, ``list_org_repos``): the producer
#: of a repository's owner and name, which a task that names the repository so has given ...
_FINDS_REPOSITORIES = re.compile(r"(?:search|list|find|get)[_\-.]?(?:(?:my|user|org)[_\-.]?)?repo(?:sitorie)?s"
                                 r"(?![a-z])", re.I)
#: ... unless it names another by its name alone ("open an issue in the tomlkit repo").
_REPO_BY_NAME = re.compile(r"(?<![/\w.-])[\w.-]+\s+repo(?:sitory)?\b", re.I)
#: A task that names another registry of things named owner/name (an image, a chart, a model).
_OTHER_REGISTRY = re.compile(r"\b(?:docker|hugging\s*face|helm|charts?|images?|models?|npm|pypi|registry|hub)\b", re.I)
#: What the policy's rules read for a task that names a repository so (rules/policy.dl, ``system_word``): a word no
#: task's text holds.
REPOSITORY_WORD = "repo_slug"
#: A clause that asks how a change's CI checks went ("whether CI is green", "if the checks are red",
#: "the CI status"), of a task about a pull or merge request: their combined status is read.
_CHECKS = re.compile(r"(?-i:\bCI\b)\s+(?:(?:is|was|has|have)\s+)?(?:green|red|status|checks?|runs?|pass\w*|fail\w*)\b|"
                     r"\bstatus\s+checks?\b|\b(?:green|red|passing|failing)\s+checks\b|"
                     r"\b(?:checks?|builds?|pipelines?)\s+(?:are\s+|is\s+|have\s+|has\s+)?"
                     r"(?:green|red|pass|passes|passed|fail|fails|failed|passing|failing)\b", re.I)
#: A condition on what a clause does ("merge it once the checks pass", "if CI is red, …").
_CONDITION = re.compile(r"\b(?:if|once|until|unless|when|whether|after|as\s+soon\s+as)\b", re.I)
_A_CHANGE = re.compile(r"\b(?:prs?|pull\s+requests?|merge\s+requests?|mrs?)\b", re.I)
READ_CHECKS = "get the combined status of all status checks for a pull request"
#: A clause that looks at the changes made in a local checkout, not yet committed ("look over my unstaged
#: changes", "the uncommitted changes", "the working tree") ...
_LOCAL_CHANGES = re.compile(r"\b(?:unstaged|uncommitted)\s+(?:changes|files|edits|diff|work)\b|"
                            r"\bworking\s+(?:tree|copy)\b", re.I)
#: ... or the user's own changes ("review what I've staged", "everything I've changed", "my local changes") in a task
#: about a repository (not "my changes to the Notion page"): which files they touch, the working tree's status,
#: is read first.
_OWN_CHANGES = re.compile(r"\b(?:my|our)\s+(?:local\s+|staged\s+)?(?:changes|edits|modifications)\b|"
                          r"\b(?:what|everything)\s+(?:i|we)(?:'ve|\s+have|\u2019ve)?\s+"
                          r"(?:changed|staged|modified|touched)\b",
                          re.I)
#: ... or changes the user says they made in a local copy, said in one sentence ("I already bumped lodash in
#: package.json and package-lock.json in my local checkout", "we've fixed the typo locally", "I've made some changes
#: on my laptop"; not "I bumped the version on GitHub; update my local checkout"): ``_DID`` in the clause,
#: ``_DID_LOCALLY`` in the task, ``_ELSEWHERE`` in neither (a document, a spreadsheet or a server changed "locally").
_DID = re.compile(r"\b(?:i|we)(?:'ve|\u2019ve|\s+have)?\s+(?:already\s+|just\s+|now\s+)?(?:bumped|changed|edited|"
                  r"modified|updated|fixed|patched|touched|made|added|removed|deleted|renamed|upgraded|refactored)\b",
                  re.I)
_DID_LOCALLY = re.compile(_DID.pattern + r"(?:[^.;!?]|[.](?=\S)){0,200}?\b(?:locally|local\s+(?:checkout|copy|"
                          r"clone|repo(?:sitory)?|branch)|my\s+(?:checkout|clone|working\s+copy)|"
                          r"on\s+my\s+(?:laptop|machine))\b", re.I)
_ELSEWHERE = re.compile(r"\b(?:excel|(?:ms\s+|microsoft\s+)?word\s+(?:docs?|documents?|files?)|in\s+word|spreadsheets?|"
                        r"google\s+docs?|notion|confluence|on\s+the\s+(?:prod(?:uction)?\s+)?server|ssh)\b", re.I)
_REPOSITORY = re.compile(r"\b(?:commit(?:s|ted|ting)?|(?:un)?staged|git|repo(?:sitory)?|checkout|diff)\b", re.I)
TREE_STATUS = "show the working tree status: which files are changed or staged"
#: A clause that looks over the changes themselves ("look at everything I've changed", "review my unstaged changes"),
#: not only which files they touch: their diff is read after the status.
_LOOKS_OVER = re.compile(OPENING + r"(?:(?:can|could|would)\s+you\s+)?(?:look\s+(?:at|over|through)|review|"
                         r"go\s+(?:over|through)|read|inspect|examine|check|summari[sz]e|explain|describe)\b", re.I)
#: ... not a clause about their state alone ("check the working tree is clean", "which files are untracked").
_STATE_ONLY = re.compile(r"\b(?:clean|status|untracked|whether|if\s+there|which\s+files)\b", re.I)
_STAGED_ONLY = re.compile(r"(?<!un)(?<!not )(?<!n't )\bstaged\b(?!\s+(?:and|or)\s+(?:left\s+)?unstaged)", re.I)
DIFF_UNSTAGED = "show the changes in the working directory that are not yet staged: the unstaged diff"
DIFF_STAGED = "show the changes that are staged for commit: the staged diff"
BLAME_LINES = "show who last modified each line of a file and when: line-by-line authorship"
LOG_COMMITS = "view the commit history: the commit logs"
SHOW_COMMIT = "show a commit's details and the diff of changes it introduced"
#: Coordinates a task gives by their numbers: a pair of four or more decimals ("48.8584, 2.2945"), or of two or more
#: after a word that says they are coordinates ("coordinates (45.98, 7.68)", "location: 45.98, 7.68"), or a latitude
#: said so ("lat 45.83"); not scores, prices or timings ("0.923, 0.871", "priced at 19.99, 24.99").
_POINT = re.compile(r"(?<![\d.])-?\d{1,3}\.\d{4,}\s*(?:°\s*)?(?:[NS]\s*)?,\s*-?\d{1,3}\.\d{4,}(?![\d.])|"
                    r"\b(?:coordinates|coords|location|point|lat/?lo?ng?)\s*(?:[:=(]\s*)?"
                    r"-?\d{1,3}\.\d{2,}\s*(?:°\s*)?(?:[NS]\s*)?,\s*-?\d{1,3}\.\d{2,}(?![\d.])|"
                    r"\blat(?:itude)?\s*(?:[:=]\s*)?-?\d{1,3}\.\d+", re.I)
#: A clause that reads the things a directory holds ("the ADRs in docs/adr/", "all the logs under /var/log/app/",
#: "the reports in the exports folder"; not the things a system keeps, "the issues in acme/shop/", a change or a
#: search's hits, "the changes in src/", "the TODOs in src/", a web address without its scheme, "the docs in
#: docs.python.org/3/", a cluster's namespace or a bucket, "the services in the default/ namespace", "the reports
#: in my-bucket/2024/ on S3", or an app's folder, "the newsletters in the Promotions folder in Gmail"): what the
#: directory holds is listed first.
_IN_FOLDER = re.compile(r"\b(?:the|all|every|each|any)\s+(?:[\w-]+\s+){0,2}?(?!(?:issues|prs|commits|branches|tickets|"
                        r"cards|messages|e?mails|events|users|rows|columns|keys|pods|jobs|items|records|repos|requests|"
                        r"runs|releases|tags|comments|reviews|contributors|builds|changes|diffs|modifications|edits|"
                        r"todos|fixmes|usages|definitions|references|occurrences|matches|threads|newsletters)\b)"
                        r"[a-z][\w-]*s\s+(?:in|under|inside|within)\s+"
                        r"(?:the\s+)?(?:(?<![\w./:-])(?!/api/)(?:~?/)?"
                        r"(?![\w.-]*\.(?:com|org|net|io|dev|app|ai|co|edu|gov)/)"
                        r"[\w.-]+/(?:[\w.-]+/)*(?![\w./-])(?!\s+(?:namespace|pod|deployment|branch|bucket|dashboard|"
                        r"cluster|project|repo|repository)\b)|[\w.-]+\s+(?:folder|directory)\b)",
                        re.I)
#: A clause about a store that is no local disk: a bucket, or an app whose folders hold mail, notes or documents.
_NO_DISK = re.compile(r"\b(?:s3|gcs|buckets?|blob|gmail|outlook|inbox|mailbox|drive|dropbox|onedrive|apple\s+notes|"
                      r"evernote|notion|confluence|sharepoint|vault|datadog|grafana)\b", re.I)
LIST_FOLDER = "list the files and subdirectories in a directory"
#: A clause that lists them itself ("list the S3 objects under cache/", "show the files in src/").
_LISTS_ITSELF = re.compile(r"\W*(?:list|ls|(?:show|display)\s+(?:me\s+)?(?:the\s+|all\s+)?(?:files|contents|folders|"
                           r"(?:sub)?directories)\b)", re.I)
FIND_CHANNEL = "list the server's channels to find a channel's id by its name"
READ_CHANNEL = "read the recent messages of a channel"
READ_THREAD = "get the replies in a message thread"
#: A clause that logs in or signs in ("log in as qa@acme.dev with 'pw'"), or on a page opened in a
#: browser signs up, registers or submits ("register a throwaway user", "submit it", "submit the
#: form"; not "submit a review" or "register a webhook": what a tool of its own makes).
_LOGS_IN = re.compile(OPENING + r"(?:log\s*in|sign\s*in)\b", re.I)
_SENDS_FORM = re.compile(OPENING + r"(?:sign\s*up|register|submit)\b(?:\s*$|\s+(?:it|them|this|that)\b|"
                         r"\s+(?:[\w+\-]+\s+){0,3}?(?:forms?|users?|accounts?)\b)", re.I)
#: A clause that says what happens when a form is sent ("Submitting the signup form empty at http://… logs an
#: error"): to see it, the form is sent, beside what the clause reads.
_SENDING_FORM = re.compile(r"^(?:signing\s*up|registering|submitting)\s+(?:[\w+\-]+\s+){0,3}?"
                           r"(?:forms?|users?|accounts?)\b",
                           re.I)
#: A way of sending other than a page's form, or a system it is said of ("registering users via the admin API",
#: "through the bulk import job", "submitting feedback forms is tracked in Jira").
_THROUGH = re.compile(r"\b(?:via|through|using)\b|\b(?:in|on)\s+(?-i:[A-Z])\w+", re.I)
#: A form sent with nothing in it ("submitting the signup form empty"): nothing is filled in first.
_EMPTY_FORM = re.compile(r"\b(?:forms?|it|them)\s+(?:\w+\s+)?(?:empty|blank|unfilled)\b|"
                         r"\b(?:empty|blank|unfilled)\s+forms?\b|"
                         r"\bwithout\s+filling\b", re.I)
#: A search run on a page opened in the browser ("On https://app.acme.io/search, search for 'shoes'"): its
#: query typed into the page's search box, and Enter pressed.
_SEARCHES_PAGE = re.compile(OPENING + r"search\s+(?:for\s+)?[\"'\u201c\u2018][^\"'\u201d\u2019]{1,80}[\"'\u201d\u2019]"
                            r"(?![^.;!?]*\b(?:in|on|from|within|across|via|using|through|with)\s+"
                            r"(?!(?:the\s+|this\s+|that\s+)?(?:page|site|search\s+(?:box|bar|field))\b))", re.I)
TYPE_TEXT = "type text into an input field on the page"
PRESS_KEY = "press a key on the keyboard, such as Enter"
#: A clause that opens a pull or merge request ("open a PR against main"): when the task commits
#: on this machine, the branch is pushed first.
_PROPOSES = re.compile(OPENING + r"(?:open|create|raise|submit|file|send)\s+(?:an?\s+|"
                       r"the\s+)?(?:new\s+|draft\s+)*(?:prs?|pull requests?|merge requests?|mrs?)\b", re.I)
#: A clause that writes the words of a commit or of a pull request ("write a sensible commit message", "draft the
#: PR description"): in a task that commits or opens one, they are what that call is given, no step of their own.
_WORDS_FOR = re.compile(OPENING + r"(?:write|draft|compose|prepare|come\s+up\s+with|think\s+of)\s+"
                        r"(?:a|an|the|my|our)?\s*(?:[\w-]+\s+){0,2}?(?:(?P<commit>commit\s+(?:message|title))|"
                        r"(?:pr|pull\s+request|mr|merge\s+request)\s+(?:description|title|body|summary))s?\b"
                        r"(?!\s+(?:guides?|templates?|conventions?|polic(?:y|ies)|"
                        r"hooks?|rules?|format)\b)", re.I)
#: A clause that stages changes ("stage the fix", "git add the new files"): said in git's words, whatever it stages.
_STAGES = re.compile(
    OPENING + r"(?:git\s+add\b|stage\s+(?:(?:the|all|my|our|your|these|those|this|that|every|new|changed|modified|only"
    r"|updated|deleted|renamed|remaining)\s+)*(?:fix(?:es)?|changes?|files?|edits?|it|them|everything|all|hunks?|docs?"
    r"|[\w./-]+\.\w+|[\w-]+/[\w./-]*|[\w-]*file)(?![\w-])(?!.*\b(?:staging|environments?|servers?|deploy\w*|releases?"
    r"|rollouts?)\b))", re.I)
#: Changes the task says are staged already ("I already staged the files; commit them", "the changes are staged").
_STAGED = re.compile(r"\b(?:already\s+)?staged\s+(?:changes|files|hunks|edits)\b|\b(?:is|are|were)\s+(?:already\s+)?staged\b"
                     r"|\balready\s+staged\b", re.I)
#: A commit that stages nothing here: nothing committed, a plan committed to, or one made through a hosted
#: service's API.
_COMMITS_STAGED = re.compile(r"\bcommit\s+nothing\b|\bcommit\s+to\s+(?:the|a|an|our|my)\s+"
                             r"(?!(?:[\w/-]+\s+)?branch\b|fork\b|main\b|master\b|repo|remote\b|origin\b|release|develop)"
                             r"|\b(?:via|through|using)\s+(?:the\s+)?(?:\w+\s+)?api\b|\bon\s+(?:github|gitlab|bitbucket)\b",
                             re.I)
#: A clause that commits a change on this machine ("commit it and …"; not "the commit a1b2c3d").
_COMMITS = re.compile(OPENING + r"commit\b(?!\s+(?:messages?|hash(?:es)?|history|"
                      r"logs?|shas?|ids?|titles?|authors?|range|hooks?|signing|signatures?|access|rights)\b)"
                      r"(?!\s+\w+\s+(?:must|should|shall|are|is|need|needs|have|has|will|can|may)\b)", re.I)
#: Things a clause gives by a pattern rather than by name ("keys start with flags:", "branches
#: matching release/*"): which they are is found first.
_PATTERN = re.compile(r"\b(?:(?:start|begin|end)(?:s|ning|ing)?\s+with|ending\s+in|(?:prefix|suffix)ed\s+(?:with|by)|"
                      r"with\s+(?:the|a)\s+(?:prefix|suffix)|glob|matching\s+(?:(?:the|a)\s+)?(?:pattern|regexp?|"
                      r"regular expression|glob|wildcard))\b|\bmatching\s+(?=\S*\*|/\S+/|[`'\"])|"
                      # a glob: a token with a * inside it or at an end ("feature/*", "*.log"), not *emphasis*
                      # from a token's start only (once per token: linear), its opening quotes or brackets kept
                      r"(?<!\S)[(\[`'\"]*+(?!\*+[^\s*]+\*+(?:[\s.,;:!?)\]`'\"]|$))[^\s*]*(?:[^\s*(\[`'\"]\*|\*[^\s*])",
                      re.I)
#: Words between the things a deletion gives by a pattern and the pattern ("the keys that start with").
_PATTERN_GLUE = frozenset("that which whose who are is all their its the with have has".split())
#: Words that name the things of the clause before ("delete the ones that start with tmp:").
_PRO_FORMS = frozenset("ones those them these".split())
#: A read that lists things ("scan Redis for the session keys"), which "the ones" after it names.
_LISTS = re.compile(r"\b(?:list|scan|show|find|search|enumerate|get|fetch|look\s+up|which)\b", re.I)
#: What a forbidding clause goes on to ask instead ("don't merge but leave a comment").
_INSTEAD = re.compile(r"\b(?:but|instead|rather)\b", re.I)
#: What a clause looks at on a page opened in a browser ("check the form has a submit button",
#: "does the page match the design"): a picture or a snapshot of it.
_ON_PAGE = re.compile(r"\b(?:form|button|field|layout|design|looks?|renders?|appears?|displays?|shows?|visible)\b",
                      re.I)
#: A clause after the one that opened a page that is about something else: data, a system it names
#: ("in Postgres", "on GitHub").
_OFF_PAGE = re.compile(r"\b(?:tables?|database|db|query|sql|rows?|columns?|index|indices|collections?|records?|logs?|"
                       r"files?)\b|\b(?:in|on|from)\s+(?-i:[A-Z])\w+", re.I)
#: A clause about an API's answer, not a page's picture ("check the JSON shows the new field").
_API = re.compile(r"\b(?:api|json|endpoints?|response|status code|headers?|curl|wget)\b", re.I)
#: A clause that asks a command-line client for an address ("curl http://localhost:9200/_cat/indices"):
#: no page to open in a browser.
#: A clause that compares an address's page with its design ("Compare https://staging.example.com/checkout against the
#: Figma design", "check that … matches the mockup", "… looks like the approved design"; not the design system, its
#: tokens or guidelines, a design doc or spec): the page is opened in a browser and pictured.
_AGAINST_DESIGN = re.compile(r"(?:\b(?:compare|compares|comparing|match|matches|check|checks)\b"
                             r"(?:[^.;!?]|\.(?=\S)){0,160}?\b(?:against|with|to)|\blooks?\s+like)\s+"
                             r"(?:the\s+|our\s+|its\s+|a\s+)?"
                             r"(?:[\w'-]+\s+)?(?:figma\s+|sketch\s+|xd\s+)?"
                             r"(?:designs?|mock-?ups?|wireframes?|comps?|figma)\b"
                             r"(?!\s+(?:docs?|documents?|specs?|specifications?|notes?|system|tokens?|guidelines?|"
                             r"team)\b)",
                             re.I)
#: An address of a service a server of its own reads (a pull request, a ticket, a design file), not a page to look at.
_SERVICE_URL = re.compile(r"https?://(?:[\w-]+\.)*(?:github\.com|gitlab\.com|atlassian\.net|linear\.app|figma\.com|"
                          r"notion\.so|docs\.google\.com)\b", re.I)
_FETCHES = re.compile(r"\b(?:curl|wget|httpie)\b", re.I)
#: A clause that requests an address over HTTP, as a client does rather than a browser ("Hit
#: http://localhost:4000/api/health and /api/version", "GET /healthz on the forwarded port", "curl
#: https://api.example.com/v1/status"): the address's answer is fetched. A path alone ("hit /readyz")
#: is an endpoint's when the task names an address or forwards a port (:func:`task_steps`).
_HITS = re.compile(OPENING + r"(?:(?P<asks>hit|fetch|curl|wget|poll|probe|(?-i:GET)|"
                   r"get(?=\s+(?:https?://|localhost|127\.)))|"
                   r"check|verify|test)\s+(?:(?:the|both|each|all)\s+)?(?:(?:local\s+)?endpoints?\s+)?"
                   r"(?P<at>https?://|(?:localhost|127\.0\.0\.1)[:/]|/(?=[\w.-]))", re.I)
#: An address a service answers on, where a verb that is no request's ("check /_cluster/health is green",
#: "verify http://localhost:8080/readyz") asks for its answer: not a page looked at ("check
#: http://localhost:3000/version-history lists v2").
_ENDPOINT = re.compile(r"/_?(?:health\w*|ready\w*|live\w*|status|version|metrics|ping)(?=[/?#,;)]|\.?$)", re.I)
#: A path alone that is a file's, not an endpoint's ("fetch /etc/hosts from the pod", "check
#: /var/log/app/status.log"): under a system's directory, or with an extension.
_FILE_PATH = re.compile(r"/(?:etc|var|usr|home|tmp|opt|proc|root|srv|mnt|dev|sys)/|[^/\s]\.[a-z]\w{0,4}[,;)]?$", re.I)
FETCH_URL = "fetch a URL: make an HTTP request and return its response"
#: A clause about the calls a page opened in the browser makes ("which XHR failed", "whether the
#: /api/stats call returns 200", "a 401 from POST /api/session"): the page's network requests.
_CALLS = re.compile(r"\b(?:xhr|fetch\s+calls?|network\s+(?:requests?|calls?|tab|traffic)|(?:api|ajax|http)\s+calls?|"
                    r"the\s+/[\w./-]*\s+(?:call|request|endpoint)|requests?\s+(?:to|for)\s+/[\w./-]*|"
                    r"(?-i:GET|POST|PUT|PATCH|DELETE)\s+/[\w./-]*|"
                    r"(?<![\w.:/-])[1-5]\d\d\s+(?:from|response|status)\b)", re.I)
#: A clause that opens an address ("Open https://app.example.com/dashboard", "go to localhost:3000").
_OPENS_URL = re.compile(OPENING + r"(?:open|go\s+to|visit|load|navigate\s+to)\s+(?:the\s+page\s+(?:at\s+)?)?"
                        r"(?:https?://|(?:localhost|127\.0\.0\.1|0\.0\.0\.0)[:/])", re.I)
#: What such a clause asks of one call: its answer, not the list ("what its response body was", "how big
#: the response is").
_CALL_ANSWER = re.compile(r"\b(?:response|body|payload|status(?:\s+code)?|headers?|how\s+big|size)\b|"
                          r"(?<![\w.:/-])[1-5]\d\d\b", re.I)
#: A task that asks for a picture of a page itself: none is implied.
_PICTURED = re.compile(r"\b(?:screenshots?|snapshots?|screen ?(?:grab|capture)s?)\b", re.I)
#: An implied step that acts on what another implied step did -> that step: the server that did
#: the other does it when it can (Chrome DevTools cannot picture a page Playwright opened).
_SAME_SERVER = {SNAPSHOT_PAGE: OPEN_PAGE, PAGE_REQUESTS: OPEN_PAGE, READ_REQUEST: OPEN_PAGE, READ_PAGE: OPEN_PAGE}
#: A clause that pushes already ("push the branch", "git push"; "don't push" says so too).
_PUSHES = re.compile(r"^(?:(?:please|also|then|now|first|and|just|don'?t|do not|never)\s+)*(?:git\s+)?push(?:es|ed)?\b",
                     re.I)
#: A clause that reviews a proposed change or asks whether it may go in ("review PR #214", "look at
#: PR #102", "is PR #88 safe to merge?"): reading the change and the files it changes comes first.
_REVIEWS = re.compile(r"\blook\s+at\s+(?:the\s+|this\s+|that\s+)?(?:prs?|pull requests?|merge requests?|mrs?)\b|"
                      rf"\b(?:review|safe to merge|ready to merge|look over|go over)\b.{{0,{_REACH}}}?\b(?:prs?|"
                      r"pull requests?|merge requests?|mrs?)\b|\b(?:prs?|pull requests?|merge requests?|mrs?)\b"
                      rf".{{0,{_REACH}}}?\b(?:safe|ready) "
                      r"to merge\b", re.I)
#: A branch a change goes on: one the clause calls a branch, or named by the usual kind of
#: work (``release/3.1``, ``hotfix/1.2.1``, ``feature/search``).
_BRANCH = re.compile(r"\bbranch\s+[\w.\-]+/?[\w.\-]*|(?<![\w/.])(?:feature|feat|fix|bugfix|hotfix|release|chore)/"
                     r"[\w.\-]+", re.I)


@dataclass(frozen=True)
class Step:
    """One step: its text (a clause of the task, or an implied step's), its capability, and
    whether the task implies it rather than says it."""

    text: str
    capability: str
    implied: bool = False
    #: The clause an implied step comes from ("" for a clause itself): the warnings name it.
    clause: str = ""
    #: What does the step instead of a tool of its own: a skeleton slot of the role's
    #: (``run_command``: the role's command runner), or :data:`FILE_STEP` (the policy's tool for
    #: a write to a file the task names, or to the code it changes in place). "" for none.
    by: str = ""

    @cached_property
    def query(self) -> str:
        """The text the step's tool is embedded against (a compile reads it three times; worked out
        once): its abbreviations spelled out, the subject of the content it asks for left out
        (:func:`~jit.selection.step_words.topic_free`: "papers on speculative decoding" asks for a
        paper search, not a tool about decoding), and for a
        change, a title or a text in quotes left out, unless nothing else is left: what a change
        writes is content (the 'Rate limiter drops requests' of an issue to open says what the
        issue is about, not which tool opens it), while what a read quotes is what it looks for."""
        text = topic_free(self.text)
        bare = re.sub(r"\s+", " ", QUOTED.sub(" ", text)).strip(" ,:;")
        return spelled(bare if self.capability in CHANGES and len(bare.split()) >= 2 else text)

    @property
    def named(self) -> str:
        """How a warning names the step."""
        return f"{self.clause!r} ({self.text})" if self.clause else repr(self.text)


#: A planned step (:func:`plan`): its text and its options ``(tool id, match)``.
Planned = tuple[str, tuple[tuple[int, float], ...]]
class Feeds(Protocol):
    """The tools that hand out the identifiers tool ``t`` requires (:func:`~jit.selection.producers.producers`; ``ids_only``:
    only for the parameters named as identifiers; ``optional_ids``: also for the optional ones
    named as identifiers), asked only of a tool rendered in Full (a step's
    chosen tool, a tool Full by its score), whose definition is read anyway."""

    def __call__(self, t: int, ids_only: bool = False, optional_ids: bool = False) -> list[int]: ...


@dataclass(frozen=True)
class StepTool:
    """A step's tool, or why it has none (``tool`` None and ``why`` said)."""

    step: Step
    tool: int | None
    why: str = ""
    #: Every usable fitting tool over the floor, best match first, with its match: ``tool`` is
    #: the first; the compile may prefer another by the whole task's score (:func:`settle`).
    options: tuple[tuple[int, float], ...] = ()


def task_steps(text: str, shards: Mapping[str, ShardConfig] | None = None) -> list[Step]:
    """The steps of a task, in order: each clause, and the steps it implies before or after it."""
    clauses = split_clauses(text)
    writes_files = bool(clauses) and bool(analyze_task(text, shards).file_targets)
    actions = [clause_action(c) for c in clauses]  # what each clause asks to be done, read once
    commits = any(_COMMITS.match(a) for a in actions)
    pushes = any(_PUSHES.match(a) for a in actions)
    pictured = bool(_PICTURED.search(text))
    forwards_port = bool(_PORT_FORWARD.search(text))
    page: int | None = None  # the clause that opened a page in a browser
    opened: tuple[int, int] | None = None  # a clause that opens an address (and where its steps start)
    calls: int | None = None  # the clause that reads the calls that page made
    answered = False
    steps: list[Step] = []
    acted_on = ""  # the kind of thing the clauses before act on, for a "one" after them
    for i, (clause, action) in enumerate(zip(clauses, actions, strict=True)):
        start = len(steps)
        # a condition, before the action or as a clause of its own, may name the kind ("if it has no checklist")
        at = clause.find(action) if action != clause else -1
        condition = clause[:at] if at >= 0 else clause if _IF.match(clause) else ""
        lacks = _LACKS.search(condition)
        acted_on = (_one_of(lacks.group(1)) if lacks else "") or acted_on
        one = _ONE.search(action) if acted_on else None
        if one and VERBS.get(one.group("verb").lower()):  # "add one on customerId": an index
            article = one.group("new") or ("an" if acted_on[0] in "aeiou" else "a")
            said = f"{action[:one.start('verb')]}{one.group('verb')} {article} {acted_on}{action[one.end():]}"
            clause, action = clause.replace(action, said) if action in clause else said, said
        acted_on = _kind_of(action) or acted_on
        if NEGATED.match(clause) or (NEGATED.match(action) and not _INSTEAD.search(action)):
            continue  # "don't merge it", "if the build is red, don't merge PR #12" (not "… but comment")
        profile = analyze_task(clause, shards)
        # The capability of the action itself: not of where or when it happens ("before you delete the branch")
        acted = profile if action == clause else analyze_task(action, shards)
        caps = [c for c in (*acted.capabilities, *acted.implied) if c in CHANGES]
        verb = leading_capability(action)
        asks = ASKS.search(action)
        if verb is None and caps and asks and action[:asks.start()].strip():
            # "Think through whether … should move": what it asks about, when a subject opens it
            main = analyze_task(action[:asks.start()], shards)
            caps = [c for c in (*main.capabilities, *main.implied) if c in CHANGES]
        if verb is None and not caps and len(clause.split()) < 3 and not _URL.search(clause):
            continue  # a fragment ("mind2web", "upon completion"; not "load http://…"): no step of its own
        words_for = _WORDS_FOR.match(action)
        if words_for and not _CODE_PATH.search(clause) and not profile.file_targets and (
                commits if words_for.group("commit") else any(_PROPOSES.match(a) for a in actions)):
            continue  # "write a sensible commit message and commit it": the message is the commit's, no file written
        said_so = QUESTION.search(action) or STATEMENT.match(action) or (verb is None and NARRATES.match(action))
        cap = "/read" if said_so else verb or (caps[0] if caps else "/read")
        if _PROPOSES.match(action):  # "submit a pull request", "raise an MR": it is opened
            cap = "/write"
        if _SENDING_FORM.match(action):  # "Submitting the form empty logs an error": what happens, read
            cap = "/read"
        if cap == "/send" and forwards_port and _FORWARD.search(clause):
            cap = "/write"  # "port-forward the service", "tear the forward down": a tunnel opened, no message
        if cap == "/execute" and profile.file_targets and _BUILDS.match(action):
            cap = "/write"  # "build the pricing card as src/PricingCard.tsx": the file it names is written
        if cap == "/write" and _WORKS_ON.match(action):  # an issue worked on: read first, before its code
            steps.append(Step(READ_ISSUE, "/read", implied=True, clause=clause))
        # code changed in place: said so to the analyzer, or a fix in the code a clause calls its own ("fix the missing
        # null check in our code", whose "check" the analyzer reads as what it asks)
        edits = profile.edits_code or (cap == "/write" and not profile.file_targets and bool(_PATCHES.match(action))
                                       and bool(_IN_OUR_CODE.search(action)) and not _A_CHANGE.search(action))
        if (edits and _TRACKED.search(text) and _TRACKED_ERROR.search(text)
                and not any(x.text == STACK_TRACE for x in steps)):
            steps.append(Step(STACK_TRACE, "/read", implied=True, clause=clause))  # where the tracked error is thrown
        if edits:
            steps.append(Step(READ_CODE, "/read", implied=True, clause=clause, by="read_file"))
        hits = _requests(action, text)
        local_page = bool(_LOCAL.search(clause)) and not _NO_PAGE.search(clause)
        if (_URL.search(clause) and (_PAGE.search(text) or local_page or _AUDITS.match(action)
                                     or (_AGAINST_DESIGN.search(clause) and not _SERVICE_URL.search(clause)))
                and not _FETCHES.search(clause) and not (hits and not _PAGE.search(clause))):
            steps.append(Step(OPEN_PAGE, "/read", implied=True, clause=clause))
            page = i
        if (cap == "/read" and page is not None and i - page <= 1 and (_ON_PAGE.search(clause) or (
                page == i and _AGAINST_DESIGN.search(clause))) and not _API.search(clause)
                and (i == page or not _OFF_PAGE.search(clause)) and not pictured):
            steps.append(Step(SNAPSHOT_PAGE, "/read", implied=True, clause=clause))  # the page looked at
        if _OPENS_URL.match(action) and not _FETCHES.search(clause) and not _API.search(clause):
            opened = (i, start)  # "Open https://app.example.com/dashboard": a page, if the task goes on to its calls
        asks_calls = calls is None and _CALLS.search(clause) is not None
        if asks_calls and page is None and opened is not None:
            steps.insert(opened[1], Step(OPEN_PAGE, "/read", implied=True, clause=clauses[opened[0]]))
            page = opened[0]
        if asks_calls and page is not None:
            steps.append(Step(PAGE_REQUESTS, "/read", implied=True, clause=clause))  # the calls the opened page made
            calls = i
        if calls is not None and i - calls <= 1 and _CALL_ANSWER.search(clause) and not answered:
            steps.append(Step(READ_REQUEST, "/read", implied=True, clause=clause))  # and one call's answer
            answered = True
        if cap == "/read" and _REVIEWS.search(clause):  # a change reviewed: it and its files read first
            steps += [Step(READ_CHANGE, "/read", implied=True, clause=clause),
                      Step(READ_CHANGED_FILES, "/read", implied=True, clause=clause)]
        if cap == "/write" and _BRANCH.search(clause):  # a change on a branch: switching to it first
            steps.append(Step(SWITCH_BRANCH, "/write", implied=True, clause=clause))
        if (cap == "/write" and _COMMITS.match(action) and not _COMMITS_STAGED.search(clause)
                and not _STAGED.search(text) and not any(x.text == STAGE_CHANGES for x in steps)):
            # a commit made here: its changes staged first
            steps.append(Step(STAGE_CHANGES, "/write", implied=True, clause=clause))
        if cap == "/write" and _PROPOSES.match(action) and commits and not pushes:
            steps.append(Step(PUSH_BRANCH, "/write", implied=True, clause=clause))  # a local commit proposed: pushed first
        if cap == "/delete" and _PATTERN.search(clause) and not _read_before(clause, steps):
            steps.append(Step(FIND_MATCHING, "/read", implied=True, clause=clause))  # what to delete, found first
        if cap == "/read" and LIBRARY_DOCS_SAID.search(clause):  # a library's docs read: looked up where they are kept
            steps.append(Step(LIBRARY_DOCS, "/read", implied=True, clause=clause))
        if cap == "/read" and not _A_CHANGE.search(clause) and not _ELSEWHERE.search(clause) and (
                _LOCAL_CHANGES.search(clause) or (_REPOSITORY.search(text) and (
                    _OWN_CHANGES.search(clause) or (_DID.search(clause) and _DID_LOCALLY.search(text))))):
            steps.append(Step(TREE_STATUS, "/read", implied=True, clause=clause))  # which files the changes touch
            if _LOOKS_OVER.match(action) and not _STATE_ONLY.search(clause):
                # and what they are: their diff, of what is staged or not yet
                steps.append(Step(DIFF_STAGED if _STAGED_ONLY.search(clause) else DIFF_UNSTAGED, "/read",
                                  implied=True, clause=clause))
        if (cap == "/read" and _IN_FOLDER.search(clause) and not _URL.search(clause)
                and not _LISTS_ITSELF.match(action) and not _NO_DISK.search(clause)):
            steps.append(Step(LIST_FOLDER, "/read", implied=True, clause=clause))  # what the directory holds, first
        if (_CHECKS.search(clause) and _A_CHANGE.search(text)
                and (cap == "/read" or _CONDITION.search(clause))):  # how a change's CI went: its checks' status
            steps.append(Step(READ_CHECKS, "/read", implied=True, clause=clause))
        # (the code words last: most clauses ask about no history, and those are cheap to rule out)
        if cap == "/read" and _WHO_CHANGED.search(clause) and _CODE.search(clause):
            # who wrote some code: its lines' authors, then their commit
            steps += [Step(BLAME_LINES, "/read", implied=True, clause=clause),
                      Step(SHOW_COMMIT, "/read", implied=True, clause=clause)]
        elif cap == "/read" and (_WHICH_COMMIT.search(clause) or (_HISTORY.search(clause) and _CODE.search(clause))):
            # what a code's history holds: its log, then a commit's changes
            steps += [Step(LOG_COMMITS, "/read", implied=True, clause=clause),
                      Step(SHOW_COMMIT, "/read", implied=True, clause=clause)]
        if cap == "/read" and _NEAR_PLACE.search(clause) and not _URL.search(clause) and not _CODE.search(clause):
            steps.append(Step(GEOCODE, "/read", implied=True, clause=clause))  # where "near" is, first
        if cap == "/read" and _TRAVEL.search(clause) and not _CODE.search(text):
            steps.append(Step(TRAVEL_TIME, "/read", implied=True, clause=clause))
        if cap == "/read" and (_mail_arrives(clause) or (_READS_MAIL.match(action) and not _FORM_PART.search(clause)
                                                      and not _CODE.search(clause))):
            # a mail that should have come, or mail the clause reads: found in the mailbox and read
            steps += [Step(SEARCH_MAIL, "/read", implied=True, clause=clause),
                      Step(READ_MAIL, "/read", implied=True, clause=clause)]
        if _CHANNEL.search(clause) and (_CHAT.search(text) or _THREAD.search(clause) or (
                _IN_CHANNEL.search(clause) and not _PAGE.search(clause) and not _CODE_PATH.search(clause))):
            # a chat channel named: its id found by its name, and what it says read
            steps.append(Step(FIND_CHANNEL, "/read", implied=True, clause=clause))
            if cap == "/read":
                steps.append(Step(READ_CHANNEL, "/read", implied=True, clause=clause))
            if cap == "/read" and _THREAD.search(clause):
                steps.append(Step(READ_THREAD, "/read", implied=True, clause=clause))
        if cap in CHANGES and _TO_ME.search(clause):  # the user given a thing: who the user is, first
            steps.append(Step(WHO_AM_I, "/read", implied=True, clause=clause))
        if _AHEAD.search(clause) or _TODAY.search(clause):  # a day to come, or today: today's date first
            steps.append(Step(CURRENT_TIME, "/read", implied=True, clause=clause))
        kind, within = _titled(clause) if cap == "/read" else ("", False)
        if kind:  # a thing read by its title: found by it first
            steps.append(Step(f"search by title for the {kind}", "/read", implied=True, clause=clause))
        found = _FINDS.match(clause) if cap == "/read" else None
        if kind and not found and within:  # itself read, beside what the clause reads in it
            steps.append(Step(f"read the content of the {kind}", "/read", implied=True, clause=clause))
        if (cap == "/read" and _BY_FIELD.search(clause) and _BOARD.search(text)
                and (_BOARD.search(clause) or _ITEMS.search(clause))):
            steps.append(Step(BOARD_COLUMNS, "/read", implied=True, clause=clause))  # the fields' columns, first
        sheets = _sheets_step(clause, action, text) if cap in ("/read", "/write") and not edits else None
        if sheets:  # a workbook's sheets, once it is found
            steps.append(Step(sheets, "/read", implied=True, clause=clause))
        if (_SENDING_FORM.match(action) and page is not None and i - page <= 1 and not _API.search(clause)
                and not _THROUGH.search(clause)):
            steps += _form_sent(clause)  # what a form sent does, said: the form sent, and the clause read
        if (_LOGS_IN.match(action) or _SENDS_FORM.match(action)) and any(s.text == OPEN_PAGE for s in steps):
            steps += _form_sent(clause)  # logging in, signing up or submitting on a page opened in a browser
            near = " ".join(clauses[max(0, (page if page is not None else i) - 1):i + 3])
            if _SHOWS_MESSAGE.search(near) and not _NOT_ON_PAGE.search(QUOTED.sub(" ", near)):
                steps.append(Step(READ_PAGE, "/read", implied=True, clause=clause))  # the message it should show
        elif page is not None and i - page <= 1 and _SEARCHES_PAGE.match(action) and not _API.search(clause):
            # a search on the page opened in the browser: its query typed into the page's box, and Enter pressed
            steps += [Step(TYPE_TEXT, "/write", implied=True, clause=clause),
                      Step(PRESS_KEY, "/write", implied=True, clause=clause)]
        elif cap == "/execute" and _RUN.search(clause):
            steps.append(Step(RUN_COMMAND, "/execute", implied=True, clause=clause, by="run_command"))
        elif cap == "/read" and hits and page != i:  # an address requested: its answer fetched
            steps.append(Step(FETCH_URL, cap, clause=clause))
        elif cap == "/write" and _STAGES.match(action):  # "Stage the fix when you're done": git's own words
            steps.append(Step(STAGE_CHANGES, cap, clause=clause))
        elif cap == "/write" and (edits or profile.file_targets
                                  or (writes_files and _MAKES.match(clause))):
            steps.append(Step(clause, cap, by=FILE_STEP))
        else:  # a list of things read: each read on its own
            steps += [Step(t, cap) for t in (_each_read(action) if verb == "/read" else ())] or [Step(clause, cap)]
        if found:  # a thing found is read next
            steps.append(Step(f"read the content of {found.group('what')}", "/read", implied=True, clause=clause))
    first: dict[tuple[str, str], Step] = {}
    for s in steps:
        first.setdefault((s.text, s.capability), s)  # an implied step once, where it is first implied
    return list(first.values())


def _kind_of(action: str) -> str:
    """The kind of thing a clause acts on, one of it ("Check the existing indexes": index); "" when it says none
    that a verb or a pronoun would not."""
    m = _ACTS_ON.match(action)
    if not m or leading_capability(action) is None or _SOUGHT.search(action, m.end("thing")):
        return ""
    return _one_of(m.group("thing").split()[-1])


def _one_of(word: str) -> str:
    """A noun said of things, one of them ("indexes": index); "" for a word that names no kind."""
    word = word.lower()
    if not word.isalpha() or word in _NO_KIND or VERBS.get(word):
        return ""
    for plural, one in (("ies", "y"), ("xes", "x"), ("ches", "ch"), ("shes", "sh"), ("sses", "ss")):
        if word.endswith(plural):
            return word[:-len(plural)] + one
    return word[:-1] if word.endswith("s") and not word.endswith(("ss", "us", "is")) else word


#: A thing looked for in what a clause acts on ("Check the calendar for a free slot"): the kind is the slot's, so
#: the clause says none for a "one" after it.
_SOUGHT = re.compile(r"\bfor\s+(?:a|an|any)\s", re.I)
#: A condition that names the kind a "one" after it is, the last word of what it has none of ("if it has no
#: checklist, add one": a checklist; "if there is a failing test in CI": a test).
_LACKS = re.compile(r"\b(?:no|any|an?)\s+(?:[a-z][\w\-]*\s+){0,2}?([a-z][\w\-]*)(?=\s+(?:in|on|for|to|at|of|with|yet|"
                    r"today|tomorrow|now|here|there|that|which|open|left)\b|\s*[,.;:!?]|\s*$)", re.I)
#: A clause that is a condition.
_IF = re.compile(r"(?:if|unless|when|in\s+case)\b", re.I)
#: Words that end what a verb acts on without naming a kind of thing.
_NO_KIND = frozenset("it them this that these those one ones all everything something anything me us you".split())


def _each_read(action: str) -> list[str]:
    """The reads of a clause that reads a list of things with one verb, one per thing, each with the verb
    ("Check Confluence, my Obsidian notes": "Check Confluence", "Check my Obsidian notes"; :func:`split_clauses`
    joins a piece that names a thing onto the clause before it); none when the clause is no such list."""
    m = _READS_EACH.match(action)
    if not m:
        return []
    parts = action[m.end():].split(", ")
    if (len(parts) < 2 or not parts[0].strip() or _LIST_OF_OTHER.search(parts[0]) or _ENDS_SENTENCE.search(action)
            or not all(_LISTED_THING.match(p) for p in parts[1:])
            or any(p.count("(") != p.count(")") or p.count('"') % 2 for p in parts)):
        return []
    verb = action[:m.end()]
    return [f"search {p}" if _LOOKS_IN.match(verb) and _SOURCE.fullmatch(p) else verb + p for p in parts]


def _form_sent(clause: str) -> list[Step]:
    """The steps of sending a page's form: filled in (unless the clause sends it empty), then submitted."""
    fill = [] if _EMPTY_FORM.search(clause) else [Step(FILL_FORM, "/write", implied=True, clause=clause)]
    return [*fill, Step(SUBMIT_FORM, "/write", implied=True, clause=clause)]


def _sheets_step(clause: str, action: str, text: str) -> str | None:
    """The step that looks at the sheets of a workbook a clause reads or writes in (:data:`_WORKBOOK`, :data:`_TAB`):
    of the file's tool, or of the online spreadsheet's; None for none, a book made or handled as a file
    (:data:`_BOOK_AS_FILE`), or one a change under review adds ("review the PR that adds spreadsheet export")."""
    if not (_WORKBOOK.search(clause) or (_TAB.search(clause) and _WORKBOOK.search(text))):
        return None
    if _BOOK_AS_FILE.search(action) or _REVIEWS.search(clause):
        return None
    online = _ONLINE_BOOK.search(clause) or (not _BOOK_FILE.search(clause) and _ONLINE_BOOK.search(text))
    return ONLINE_SHEET_TABS if online else SHEET_TABS


#: A pull request said in words ("review the pull request"; a merge request is GitLab's own word).
_CHANGE_REQUEST = re.compile(r"\bpull\s+requests?\b", re.I)


#: An SQL statement a task gives ("Run SELECT * FROM users ORDER BY created_at", "INSERT INTO audit …"): a database's;
#: its keywords in capitals, or ``select *`` / ``select count(*)`` (not "select the best option from the list").
_SQL = re.compile(r"\bSELECT\s+(?:\*|DISTINCT\b|COUNT\(|[\w.]+(?:\s*,\s*[\w.]+)*)\s+FROM\s+\w|"
                  r"\b(?i:select)\s+(?:\*|(?i:count)\(\*\))\s+(?i:from)\s+\w|\bINSERT\s+INTO\s+\w|\bDELETE\s+FROM\s+\w|"
                  r"\bUPDATE\s+\w+\s+SET\s+\w+\s*=")


def says_sql(text: str) -> bool:
    """Whether a task gives an SQL statement: what the policy reads as the word ``sql`` (rules/policy.dl)."""
    return bool(_SQL.search(text))


def says_change_request(text: str) -> bool:
    """Whether a task says a pull request in words: what the policy reads as the word ``pr`` (rules/policy.dl,
    ``system_word``), not the verb "pull" ("pull the monthly totals", "pull the latest main")."""
    return bool(_CHANGE_REQUEST.search(text))


def names_repository(text: str) -> bool:
    """Whether a task names a code host's repository by its owner and name (:data:`_REPOSITORY_SLUG`)."""
    if _OTHER_REGISTRY.search(text):
        return False
    return any(m.group("owner").lower() not in _PROJECT_DIRS and not re.search(r"\.\w{1,5}$", m.group("name"))
               and not any(re.fullmatch(r"\d+|[A-Z]{1,3}\d?", part) for part in (m.group("owner"), m.group("name")))
               for m in _REPOSITORY_SLUG.finditer(text))


def _requests(action: str, text: str) -> bool:
    """Whether a clause's action requests an address over HTTP (:data:`_HITS`): a path alone only in a task
    that names an address or forwards a port ("fetch /etc/hosts" reads a file), and after a verb that is no
    request's, only an endpoint's address (:data:`_ENDPOINT`: "check http://localhost:3000/pricing renders"
    looks at a page)."""
    hits = _HITS.match(action)
    if hits is None:
        return False
    at = hits.start("at")
    end = action.find(" ", at)
    end = len(action) if end < 0 else end
    if hits.group("at") == "/" and (not (_URL.search(text) or _PORT_FORWARD.search(text))
                                    or _FILE_PATH.search(action, at, end)):
        return False
    if hits.group("asks"):
        return True
    return (_ENDPOINT.search(action, at, end) is not None and not _ON_PAGE.search(action)
            and not _PAGE.search(action))


def _mail_arrives(clause: str) -> bool:
    """Whether ``clause`` asks whether a mail arrived (:data:`_MAIL_ARRIVES`), a mail it names as a
    thing: not one it opens with as its verb ("mail the report when it lands in Drive", "could you
    email Bob when the invoice arrives?")."""
    m = _MAIL_ARRIVES.search(clause)
    if m is None or m.group(0)[:3].lower() == "did":
        return m is not None
    return not _ASKS_TO.fullmatch(clause[:m.start()])


#: What may open a clause before its verb: the usual openings, and a request put as a question.
_ASKS_TO = re.compile(OPENING + r"(?:(?:could|can|would|will)\s+you\s+(?:please\s+)?)?\s*", re.I)


def embedded(step: Step) -> bool:
    """Whether a compile embeds ``step``'s text: not for a step the policy's file tool does
    (:data:`FILE_STEP`: the tool nearest to the policy's text, whatever the task says). A step a
    skeleton slot may do is embedded (:func:`plan` leaves it to the slot when the role has one):
    its text is one of jit's, whose vector the query cache keeps, and the texts of a task stay the
    same for every shard, so shards spawned for one task share one batch."""
    return step.by != FILE_STEP


#: A file's absolute path ("/root/markdown/report.md", "~/figs/sale.png", "/root/a/b.md:12"; not "src/auth/login.py",
#: whose directories name a repository's modules, a path under a dot-directory, "~/.ssh/…", an address's or a query's
#: path, nor an API's route, "GET /api/v1/users.json", "/v2/orders/export.csv endpoint").
_PATH = (r"(?<![\w:/.\-=#~?&])(?-i:(?<!GET\s)(?<!PUT\s)(?<!POST\s)(?<!HEAD\s)(?<!PATCH\s)(?<!DELETE\s))~?/"
         r"(?:(?!\.)[\w.\-]+/)+[\w\-][\w.\-]*\.(?P<ext>[A-Za-z][A-Za-z0-9]{0,7})"
         r"(?::\d+(?::\d+)?|#[\w\-]+)?\b(?!/|\s+(?:endpoint|route|api)\b)")
#: An address with its scheme, whose path is its own, else such a path: one pass, each address from its word's
#: start (linear in the text however long its words).
_PATH_OR_ADDRESS = re.compile(rf"(?P<address>(?<!\S)\S+?://\S+)|{_PATH}", re.I)
#: What a document's, a picture's or a recording's extension says it is; a file of other kinds (a configuration,
#: a log, code, a key) is named by its own name, which is left as written.
_KINDS = {"md": "Markdown", "markdown": "Markdown", "xlsx": "Excel spreadsheet", "xls": "Excel spreadsheet",
          "csv": "CSV spreadsheet", "pptx": "PowerPoint presentation", "ppt": "PowerPoint presentation",
          "docx": "Word document", "doc": "Word document", "pdf": "PDF document", "png": "PNG image",
          "jpg": "JPEG image", "jpeg": "JPEG image", "gif": "GIF image", "svg": "SVG image", "html": "HTML page",
          "htm": "HTML page", "txt": "text", "wav": "WAV audio", "mp3": "MP3 audio", "mp4": "MP4 video"}


def _kinds(text: str) -> str:
    """``text`` with each document's absolute path read as its kind (:data:`_PATH`, :data:`_KINDS`), addresses
    left as written."""
    def kind(m: re.Match[str]) -> str:
        said = None if m.group("address") else _KINDS.get(m.group("ext").lower())
        return f"{said} file" if said else m.group(0)

    return _PATH_OR_ADDRESS.sub(kind, text)


def asked(text: str) -> str:
    """A task without the clauses that tell the agent what not to do ("Don't merge it, Dana
    reviews first"): what retrieval scores it by, so the words of what the task forbids do not
    lift the tools that would do it, and with a file's absolute path read as its kind ("/root/markdown/x.md":
    "Markdown file"; :data:`_PATH`). The task itself when nothing else is left."""
    out = text
    for piece in task_pieces(text):
        if NEGATED.match(piece):
            out = out.replace(piece, " ")
    out = _kinds(out)
    out = re.sub(r"\s*,\s*(?=[.;!?])", "", re.sub(r"\s+", " ", out))  # "options, ." -> "options."
    out = re.sub(r"([.;!?])(?:\s*[.,;!?])+", r"\1", out)  # "shop. ." and "main. ," -> "shop." and "main."
    return out.strip(" ,;") or text


def _read_before(clause: str, steps: Sequence[Step]) -> bool:
    """Whether a step before a deletion by a pattern reads the same things: the things it names
    before the pattern ("the keys that start with flags:": keys) or the pattern's own words."""
    m = _PATTERN.search(clause)
    if m is None:
        return False
    before = [w for w in re.findall(r"[\w\-]+", clause[:m.start()]) if w.lower() not in _PATTERN_GLUE]
    # the pattern: a glob itself, else the word after "start with", "matching the pattern" …
    pattern = [m.group(0)] if "*" in m.group(0) else clause[m.end():].split()[:1]
    if before and before[-1].lower() in _PRO_FORMS:  # "…, then delete the ones that …": what the read before listed
        return (bool(steps) and steps[-1].capability == "/read" and not steps[-1].implied
                and _LISTS.search(steps[-1].text) is not None)
    things = set(search_tokens(" ".join([*before[-1:], *pattern]), drop_stopwords=True))
    return any(s.capability == "/read" and not s.implied and things & set(search_tokens(s.text, drop_stopwords=True))
               for s in steps)


def _titled(clause: str) -> tuple[str, bool]:
    """What a clause names by a title in quotes: the words after the title ("the 'Q3 launch plan'
    Google Doc"), or, when a preposition follows the title, the words before it ("the Confluence
    page 'Payments API design' in space ENG": a Confluence page); "" for none. And whether the
    clause reads something in or of that thing ("the comments on the Confluence page 'Payments'",
    "the numbers in the 'Churn' sheet"), not the thing itself ("review the 'Payments' page") nor
    one it makes ("build a 'create post' page")."""
    # the first title in quotes that is no field's value ("tickets of type 'Incident' from the 'Ops' board")
    titled = next((m for q in QUOTED.finditer(clause) if not _FIELD_VALUE.search(clause, max(0, q.start() - 40),
                                                                                    q.start())
                   and (m := _TITLED.match(clause, q.start()))), None)
    if titled is None:
        return "", False
    kind = titled.group("kind").strip(" ?.!")
    if CONTINUED.match(kind) or kind.lower().startswith("of "):
        before = _KIND_BEFORE.search(clause[:titled.start()])
        kind = before.group("kind") if before else ""
    return kind, bool(_WITHIN.search(clause[:titled.start()]))


def task_servers(steps: Sequence[Step], names: Collection[str] | ServerNames) -> frozenset[str]:
    """The servers the task of ``steps`` names as products (:func:`named_servers`), in any of its
    clauses: a file's step and a skeleton slot's too ("Take Linear issue ENG-7: rename foo in
    src/a.ts" names Linear for the steps after it, though a file tool does that clause)."""
    return named_servers(" ".join(dict.fromkeys(s.clause or s.text for s in steps)), names)


def _fits(cap: str, has: set[str]) -> bool:
    if cap in FITS:
        return any(c in has for c in FITS[cap])
    return not any(c in has for c in ("/write", "/delete", "/execute"))


def step_tools(steps: Sequence[Step], score: Callable[[int, str], tuple[np.ndarray, ...]],
               caps_of: Callable[[int], set[str]], usable: Callable[[int], bool], denied: Callable[[int], bool],
               fit: Callable[[int, Step], float] | None = None,
               named: Callable[[int, Step], int] | None = None,
               server_of: Callable[[int], str] | None = None) -> list[StepTool]:
    """The tool of each step. ``score(i, text)`` gives ``(rows, vector, dense)`` of the best-matching
    rows for the ``i``-th step alone (:func:`plan`: dense and lexical, as the retrieval index scores); ``caps_of(row)`` a tool's capabilities; ``usable(row)``: in reach, the role
    may have it, not deprecated, not a demonstration; ``denied(row)``: the role may not;
    ``fit(row, step)``: how well the tool's name says the step (:func:`~jit.selection.step_words.name_fit`), which ranks a
    tool over the floor by its match + :data:`NAME_WEIGHT` × its fit. ``named(row, step)``: 2 when the
    step's own text names the tool's server as a product (:func:`named_servers`), which adds
    :data:`NAMED_WEIGHT` to its ranking, 1 when the rest of the task does; either way the tool
    needs only :data:`NAMED_FLOOR` and :data:`NAMED_DENSE`. ``server_of(row)``: a tool's server;
    the siblings of the step's best tool over the floor need only those too (of "read the pull
    request", ``get_pull_request`` matches less than ``get_pull_request_reviews`` but says the step
    better)."""
    out: list[StepTool] = []
    for i, step in enumerate(steps):
        rows, vector, dense = score(i, step.text)
        said = np.array([named(int(r), step) for r in rows.tolist()]) if named else np.zeros(len(rows), dtype=int)
        fits = np.array([fit(int(r), step) for r in rows.tolist()]) if fit else np.zeros(len(rows))
        ranked = vector + NAME_WEIGHT * fits
        ranked = ranked + NAMED_WEIGHT * (said == 2) + (TASK_NAMED_WEIGHT * (said == 1) if not (said == 2).any() else 0)
        order = np.argsort(-ranked, kind="stable")
        # a change that a tool's name says whole needs a little less of the cosine ("add a compound
        # index if it's doing a COLLSCAN": create-index, whose cosine the condition dilutes); a read's
        # name is said whole too easily (any verb of reading, one word of its object) to count
        said_whole = (fits >= 1.0) & (step.capability != "/read")
        over = (vector >= STEP_FLOOR) & (dense >= np.where(said_whole, SAID_DENSE_FLOOR, DENSE_FLOOR))
        soft = said > 0
        if server_of is not None:
            lead = next((j for j in order.tolist() if over[j] and usable(int(rows[j]))
                         and _fits(step.capability, caps_of(int(rows[j])))), None)
            if lead is not None:
                home = server_of(int(rows[lead]))
                soft = soft | np.array([server_of(int(r)) == home for r in rows.tolist()], dtype=bool)
        over = over | (soft & (vector >= NAMED_FLOOR) & (dense >= NAMED_DENSE))
        options: list[tuple[int, float]] = []
        # A read step's tool that also changes things (a browser's navigate that can launch an
        # executable): taken only when no tool reads without changing anything, never one that
        # deletes, and only where the role may have it (``usable``), so a read-only role never gets
        # it this way.
        changing: list[tuple[int, float]] = []
        # A run of an analysis ("run a Lighthouse audit") is a tool that analyzes: taken for a step
        # that runs only when no tool in reach runs anything for it, and it asks less of the role.
        analyzing: list[tuple[int, float]] = []
        refused = None
        # When the best option is of a server the task names, the others are of it too: the whole
        # task's score (settle) must not hand the step to another system that does the same.
        lead_said = False
        for i in order.tolist():
            if len(options) == OPTIONS:
                break
            r = int(rows[i])
            if not over[i]:
                continue
            if not _fits(step.capability, caps_of(r)):
                if (step.capability not in FITS and usable(r) and "/delete" not in caps_of(r)
                        and len(changing) < OPTIONS):
                    changing.append((r, float(ranked[i])))
                elif (step.capability == "/execute" and "/analyze" in caps_of(r) and usable(r)
                      and "/delete" not in caps_of(r) and len(analyzing) < OPTIONS):
                    analyzing.append((r, float(ranked[i])))
                continue
            if usable(r):
                if not (options and lead_said and not said[i]):  # the named server's first: its options only
                    options.append((r, float(ranked[i])))
                    lead_said = lead_said if len(options) > 1 else bool(said[i])
            elif refused is None and denied(r):
                refused = r
        options = options or changing or analyzing
        if options:
            out.append(StepTool(step, options[0][0], options=tuple(options)))
        elif step.capability in FITS and (refused is not None or _only_denied(rows, vector, dense, step, caps_of,
                                                                              denied)):
            out.append(StepTool(step, None, "denied"))
        else:
            out.append(StepTool(step, None, "none"))
    return out


def _only_denied(rows: np.ndarray, vector: np.ndarray, dense: np.ndarray, step: Step,
                 caps_of: Callable[[int], set[str]], denied: Callable[[int], bool]) -> bool:
    """Whether a tool the role is denied would do the step, below the floor or not (the role's
    policy took it away, so the step is the role's to refuse, not the catalog's to lack)."""
    return any(dense[i] >= DENSE_FLOOR and _fits(step.capability, caps_of(int(r))) and denied(int(r))
               for i, r in enumerate(rows.tolist()) if vector[i] >= STEP_FLOOR - 15)


def plan(view: CatalogSnapshot, steps: Sequence[Step], sims: np.ndarray,
         lexical_weight: float, allowed: np.ndarray, denied: np.ndarray | None, shard: str,
         warnings: list[str], slots: Mapping[str, bool], names: ServerNames | None = None,
         scores: dict[tuple, tuple[np.ndarray, ...]] | None = None) -> tuple[list[Planned], Feeds]:
    """Per step of a task on ``view`` that some tool does: its text and its options (tool id,
    match); and the producers of the identifiers a tool needs (:func:`~.producers.producers`, among the
    tools the step could use), for :func:`settle` to ask of the tool it chooses. A step
    without a tool is a warning in ``warnings``. ``sims``: the cosine of every row with each
    step's :attr:`Step.query` (column ``j`` for the ``j``-th of ``steps``
    that is :func:`embedded`; the compile's one pass over the
    matrix, :meth:`~jit.selection.retrieve.RetrievalIndex.similarities`). ``allowed``: rows in
    reach that the role may have; ``denied``: rows the role's policy denies (None: none);
    ``slots``: the role's skeleton slots, each with whether a tool fills it (a step its slot
    names is the slot's tool's). ``names``: the catalog's :class:`ServerNames`, or those
    :meth:`ServerNames.within` the task (default: :func:`server_names`). ``scores``: what each
    step's column scored, kept for the next compile on the same ``sims`` (another shard of the
    task: none of it depends on the role)."""
    column = {id(s): j for j, s in enumerate(s for s in steps if embedded(s))}
    for step in steps:
        if step.by in slots and not slots[step.by]:
            warnings.append(f"{shard}: no tool in reach can {DOES[step.capability]} for the step {step.named} "
                            f"(no tool fills the role's {step.by} slot)")
    # A step a skeleton slot of the role's or the policy's file tool does needs no tool of its own.
    every = steps
    steps = [s for s in steps if embedded(s) and s.by not in slots]
    if not steps or not view.rows or not view.index.has_vector.any():
        return [], _no_feeds
    labels = view.labels["capability"]
    penalty = view.points.get("penalty_points", {})
    servers = _server_tools(view)

    def caps_of(r: int) -> set[str]:
        t = view.rows[r]
        return {c for c, ids in labels.items() if t in ids}

    def usable(r: int) -> bool:
        t = view.rows[r]
        return (bool(allowed[r]) and not penalty.get(t, 0) and view.tier_cap.get(t, Tier.FULL) is Tier.FULL
                and not demo_server(view, view.heads[t][0]))

    def score(i: int, text: str) -> tuple[np.ndarray, ...]:
        """The index's score of one query (``RetrievalIndex.score``: min-max normalised cosine and
        BM25, mixed by ``lexical_weight``), for every row at once, the best :data:`STEP_POOL` kept
        and the tools of the servers the step names (:func:`named_servers`), or when it names none,
        the task: those it has said where it is done are scored whatever their rank."""
        where = in_step[id(steps[i])] or in_task
        key = (column[id(steps[i])], text, where, lexical_weight)
        found = None if scores is None else scores.get(key)
        if found is not None:
            return found
        dense = sims[:, column[id(steps[i])]]
        lo, hi = float(dense.min()), float(dense.max())
        lexical = index.lexical.scores(spelled(action_free(topic_free(text), servers_said)))
        hybrid = ((1 - lexical_weight) * (dense - lo) / max(hi - lo, 1e-6)
                  + lexical_weight * lexical / max(float(lexical.max()), 1e-6))
        top = np.argpartition(-hybrid, min(STEP_POOL, len(hybrid) - 1))[:STEP_POOL]
        said = [r for server in where for r in rows_of[server]]
        if said:
            top = np.union1d(top, np.array(said, dtype=top.dtype))
        found = (top, np.clip(hybrid[top] * 100.0, 0, 100), dense[top])
        if scores is not None:
            for a in found:
                a.flags.writeable = False
            scores[key] = found
        return found

    refused = [s for s in steps if s.capability in FITS and _role_refuses(view, s.capability, allowed, denied)]
    # A change a refused clause implies (the push before a pull request) is refused with it: the
    # clause's own warning says it. A read it implies stays a step: what it reads is still what the
    # task is about (the date of an event the role may not create, the files a deletion would take).
    gone = {s.text for s in refused if not s.implied}
    for step in refused:  # every tool in reach that could take it is denied to the role
        if not (step.implied and step.clause in gone):
            warnings.append(f"{shard} may not {DOES[step.capability]}: the step {step.named} needs a tool the "
                            f"policy denies to {shard}")
    steps = [s for s in steps if s not in refused]
    if not steps:
        return [], _no_feeds
    index = view.index
    servers_said = index.server_words
    task_words = frozenset(w for s in steps for w in search_tokens(spelled(s.clause or s.text), drop_stopwords=True))
    in_task = task_servers(every, server_names(view) if names is None else names)
    in_step = {id(s): named_servers(s.clause or s.text, in_task) for s in steps}
    rows_of = {server: [view.row_of[t] for t in servers.get(server, ())] for server in in_task}

    def named(r: int, s: Step) -> int:
        server = view.heads[view.rows[r]][0]
        return 2 if server in in_step[id(s)] else 1 if server in in_task else 0

    planned: list[Planned] = []
    for found in step_tools(steps, score, caps_of, usable, lambda r: denied is not None and bool(denied[r]),
                            lambda r, s: name_fit(view.heads[view.rows[r]][1], view.heads[view.rows[r]][0], s,
                                                  task_words), named, lambda r: view.heads[view.rows[r]][0]):
        step = found.step
        if found.tool is None:
            if found.why == "denied":
                warnings.append(f"{shard} may not {DOES[step.capability]}: the step {step.named} needs a tool "
                                f"the policy denies to {shard}")
            elif step.implied or step.capability in CHANGES:
                warnings.append(f"{shard}: no tool in reach can {DOES[step.capability]} for the step {step.named}")
            continue
        planned.append((step.text, tuple((view.rows[r], v) for r, v in found.options)))

    # A task that gives its places by their numbers needs no sibling to turn their names into them, and one that
    # names its repository by its owner and name needs no search for repositories.
    said = " ".join(dict.fromkeys(s.clause or s.text for s in every))
    points_said = bool(_POINT.search(said))
    repository_said = names_repository(said) and not _REPO_BY_NAME.search(said)

    def siblings(t: int) -> list[tuple[int, str, str]]:
        # The siblings by name and Condensed line, which the snapshot holds: a compile reads the
        # definitions of the tools it renders and no others (tests/test_candidate_reads.py).
        return [(i, view.heads[i][1], view.memo.summaries.get(i, ""))
                for i in servers.get(view.heads[t][0], ()) if i != t]

    def feeds(t: int, ids_only: bool = False, optional_ids: bool = False) -> list[int]:
        # What a tool's producers are depends on the snapshot alone: kept in its memo.
        key = (t, ids_only, optional_ids)
        found = view.memo.producers.get(key)
        if found is None:
            found = view.memo.producers[key] = producers(view.by_id[t], siblings(t), ids_only, optional_ids)
        if not optional_ids and not points_said:  # a tool that needs a place's coordinates
            points = view.memo.points.get(t)
            if points is None:
                points = view.memo.points[t] = coordinate_producers(view.by_id[t], siblings(t))
            found = found + [p for p in points if p not in found]
        if repository_said:
            found = [p for p in found if not _FINDS_REPOSITORIES.search(view.heads[p][1])]
        return [p for p in found if usable(view.row_of[p])]

    return planned, feeds


def _no_feeds(t: int, ids_only: bool = False, optional_ids: bool = False) -> list[int]:
    return []


#: A verb -> the verbs of the tools that undo what it does: a step whose first tool adds is not also done by the one
#: that resets (``git_add``, ``git_reset``), nor one that creates by the one that deletes.
_UNDONE_BY = {"add": {"reset", "remove", "unstage", "delete", "drop"}, "stage": {"reset", "unstage"},
              "reset": {"add", "stage"}, "unstage": {"add", "stage"}, "delete": {"create", "add"},
              "remove": {"create", "add"}, "close": {"open", "reopen"}, "stop": {"start"},
              "create": {"delete", "remove", "drop", "archive", "destroy"}, "enable": {"disable"},
              "disable": {"enable"}, "open": {"close"}, "start": {"stop", "kill"}, "lock": {"unlock"},
              "assign": {"unassign"}, "subscribe": {"unsubscribe"}, "follow": {"unfollow"},
              "commit": {"reset", "revert"}, "merge": {"revert", "close"}, "push": {"reset", "revert"},
              "set": {"delete", "unset", "remove"}}


def undoes(second: str, first: str, step: str = "") -> bool:
    """Whether the tool named ``second`` undoes what ``step`` asks, by their verbs (:data:`_UNDONE_BY`: ``git_reset``
    for "stage the changes", ``git_add`` for "unstage the fixtures"), or, when the step says none of them, what
    the tool named ``first`` does: no second of a step, which the step's own ranking may put near its first."""
    # the names' own words, after the server's prefix ("open-meteo__close_session")
    first_words, second_words = (set(split_identifier(n.split("__", 1)[-1])) for n in (first, second))
    said = [v for v in split_identifier(step) if v in _UNDONE_BY]
    return any(not second_words.isdisjoint(_UNDONE_BY[verb]) and verb not in second_words
               for verb in (said or [v for v in first_words if v in _UNDONE_BY]))


def settle(planned: Sequence[Planned], final: Mapping[int, float], names: Mapping[int, str],
           feeds: Feeds = _no_feeds, heads: Mapping[int, tuple[str, str]] | None = None,
           full: Collection[int] = (), room: int | None = None, least: float = 0,
           implied: Collection[str] = (), said: int | None = None,
           unasked: Callable[[int], bool] = lambda t: False, hedges: set[int] | None = None) -> dict[int, str]:
    """Tool id -> the step it is the tool of: per step of :func:`plan`, of its options that are
    candidates the step may take (``final``: their final score for the whole task; a hosted
    system's tool the task does not point at is left out by the caller), the best by
    ``STEP_WEIGHT`` × its ranking for the step (:func:`step_tools`) + the rest × its final
    score, or, when another step has taken that one, an option of the same server within
    :data:`CLOSE` of it that the step's own ranking puts higher; for a step the task implies (its
    text in ``implied``, settled after the steps the task says), the option the step's own ranking
    puts first of that best's server, or of a server a said step's tool is of when such an option is
    within :data:`CLOSE` of the best by both rankings (the page opened in the browser whose console
    is read), or, for one that acts on what another implied step did, that one's server when it has
    an option (:data:`_SAME_SERVER`: the picture of the page a navigate opened); each with
    the producers of the identifiers it needs. Then, while Full has room (fewer
    than ``room`` tools in ``full``, the tools Full holds already, and the chosen), the second
    best of a step whose second is within :data:`CLOSE` of its best and of the same server
    (``heads``: another server's tool for the same thing is no ambiguity), and whose final score
    is at least ``least`` (a second the whole task does not want in Full is no ambiguity either),
    and that is not ``unasked`` (a name that deletes when the task asks to delete nothing:
    ``drop-index`` beside the ``create-index`` a step takes); ``hedges``, when given, receives those
    seconds and the producers only they bring (the budget gives every step's first tool its tokens before them).
    Of a task that says several steps (``said``: how many; default: the planned ones not implied),
    a sibling of a step's best option within :data:`CLOSE` of it that the step's own ranking
    prefers by :data:`SURE` goes first: the task chooses the server, the step's clause its tool."""
    chosen: dict[int, str] = {}
    stepped: set[int] = set()  # the tools chosen as a step's own (not as another's producer)
    seconds: list[tuple[int, str]] = []

    def take(t: int, text: str) -> None:
        chosen.setdefault(t, text)
        stepped.add(t)
        for p in feeds(t):
            if p in final and p not in chosen:
                chosen[p] = f"the identifier {names[t]} needs"
                # A producer that needs an identifier itself (the lists of a board): its producer too.
                for q in feeds(p, optional_ids=True):
                    if q in final and q != t:
                        chosen.setdefault(q, f"the identifier {names[p]} needs")

    # The steps the task says first, then those it implies: an implied step goes to a server the
    # said steps' tools are of (the page opened in the browser whose console is read next).
    for text, options in sorted(planned, key=lambda p: p[0] in implied):
        ranked = sorted(((STEP_WEIGHT * v + (1 - STEP_WEIGHT) * final[t], -i, t)
                         for i, (t, v) in enumerate(options) if t in final), reverse=True)
        if not ranked:
            continue
        own = dict(options)
        if text in implied and heads is not None:
            # An implied step's text is jit's, in the words of the tool that does it ("get the
            # details of a pull request"); the whole task, which does not say it, scores higher the
            # tools of what it does say ("review PR #214": the reviews). The task chooses the server,
            # the step's own ranking the tool of it.
            used = {heads[t][0] for t in chosen}
            best = max(own[r[2]] for r in ranked)
            lead = next((heads[r[2]][0] for r in ranked if heads[r[2]][0] in used and r[0] >= ranked[0][0] - CLOSE
                         and own[r[2]] >= best - CLOSE), heads[ranked[0][2]][0])
            # A step on what another implied step did (a picture of the page a navigate opened):
            # the server that did it, when it can.
            did = next((heads[t][0] for t, of in chosen.items() if of == _SAME_SERVER.get(text)), None)
            if did is not None and any(heads[r[2]][0] == did for r in ranked):
                lead = did
            same = sorted((r for r in ranked if heads[r[2]][0] == lead), key=lambda r: -own[r[2]])
            ranked = same + [r for r in ranked if heads[r[2]][0] != lead]
        elif heads is not None and (said if said is not None else sum(p[0] not in implied for p in planned)) > 1:
            # Of a task of several steps, a sibling of the best option near it (CLOSE) that the
            # step's own clause clearly prefers (by SURE) goes first: the whole task's score, which
            # speaks of every step at once, chooses the server, the step's clause the tool of it
            # ("move the issue to In Review" on Linear is its update, not the assignment the rest
            # of the task leans to); one another step has taken is no choice of this one's. A task of
            # one step is its clause: its score decides.
            lead = ranked[0]
            sure = max((r for r in ranked if r[2] not in stepped and heads[r[2]][0] == heads[lead[2]][0]
                        and r[0] >= lead[0] - CLOSE and own[r[2]] >= own[lead[2]] + SURE),
                       key=lambda r: own[r[2]], default=None)
            if sure is not None:
                ranked.remove(sure)
                ranked.insert(0, sure)
        # Two steps said apart are rarely one call: a step whose best tool another step has taken,
        # and that another tool of the same server matches better by the step's own ranking (the
        # whole task's score put the taken one first), takes that one when it is near (CLOSE).
        other = next((r for r in ranked[1:] if r[2] not in chosen and r[0] >= ranked[0][0] - CLOSE
                      and own[r[2]] > own[ranked[0][2]] and (
            heads is None or heads[r[2]][0] == heads[ranked[0][2]][0])), None) if ranked[0][2] in chosen else None
        if other is not None:
            ranked.remove(other)
            ranked.insert(0, other)
        take(ranked[0][2], text)
        if len(ranked) > 1 and ranked[1][0] >= ranked[0][0] - CLOSE and final[ranked[1][2]] >= least and (
                heads is None or heads[ranked[1][2]][0] == heads[ranked[0][2]][0]) and not unasked(ranked[1][2]) and (
                not undoes(names.get(ranked[1][2], ""), names.get(ranked[0][2], ""), text)):
            seconds.append((ranked[1][2], text))
    for text, _options in planned:  # the seconds, in the steps' order, while Full has room
        for t, of in seconds:
            if of == text and (room is None or len(set(full) | set(chosen)) < room):
                before = set(chosen)
                take(t, text)
                if hedges is not None:
                    hedges |= set(chosen) - before  # the second and the producers only it needs
    return chosen


#: Tools scored per step: the step's tool is among the best few of its own text.
STEP_POOL = 30


def _role_refuses(view: CatalogSnapshot, capability: str, allowed: np.ndarray, denied: np.ndarray | None) -> bool:
    """Whether the tools in reach with a capability that fits the step are all denied to the role."""
    if denied is None:
        return False
    rows = np.concatenate([label_rows(view, "capability", c) for c in FITS[capability]])
    return bool(len(rows)) and not allowed[rows].any() and bool(denied[rows].any())


def _server_tools(view: CatalogSnapshot) -> dict[str, list[int]]:
    found = view.memo.server_tools
    if found is None:
        found = {}
        for t in view.rows:
            found.setdefault(view.heads[t][0], []).append(t)
        view.memo.server_tools = found
    return found


def demo_server(view: CatalogSnapshot, server: str) -> bool:
    """Whether ``server`` of the snapshot demonstrates the protocol (its tools say so and it has
    an echo, a sum or an environment tool: :func:`~jit.selection.naming.demo_servers`). Read once
    per snapshot."""
    known = view.memo.demo.get(server)
    if known is None:
        ids = _server_tools(view).get(server, ())
        # Condensed lines (the snapshot holds one per tool): no definition is read for the check.
        lines = [view.memo.summaries.get(i, "") for i in ids]
        known = view.memo.demo[server] = bool(demo_servers({server: lines}, {server: [view.heads[i][1] for i in ids]}))
    return known
