"""How a step's words are read: the verb a clause opens with and its capability (:data:`VERBS`, :func:`leading_capability`), its abbreviations spelled out
(:func:`spelled`), the words it says only as names of things (:func:`noun_uses`,
:func:`action_free`: "my local checkout" is no ``git_checkout``), and how well a tool's name
says it (:func:`name_fit`)."""

from __future__ import annotations

import re
from collections.abc import Collection
from functools import lru_cache
from typing import Protocol

from ..text import search_tokens

__all__ = ["LIBRARY_DOCS_SAID", "OPENING", "QUOTED", "THING", "VERBS", "Said", "action_free", "leading_capability",
           "name_fit", "noun_uses", "spelled", "topic_free"]

#: A library's documentation: "httpx's docs", "the React docs", "the current FastAPI docs", "the docs
#: of pandas", "the official docs" (not our own docs, an API's, a service's or a product's pages:
#: those are where the task says).
_NOT_LIBRARY = (r"(?!(?:our|my|your|their|its|his|her|the|this|that|these|team|company|project|internal|api|"
                r"product|google|user|design|onboarding|release|endpoint|service|repo|repository|app|feature|"
                r"module|function|class|method|code)\b)")
_LIBRARY = (rf"(?<![\w.\-]){_NOT_LIBRARY}[a-z][\w.\-]{{0,40}}\b"
            r"(?!(?:\s+[\w.\-]{1,40})?\s+(?:service|endpoint|api|app|repo|project|team|page|feature|module|pipeline|cluster|"
            r"handler|system|job|workflow)\b)")
LIBRARY_DOCS_SAID = re.compile(rf"{_LIBRARY}['’]s\s+(?:official\s+|own\s+)?(?:docs|documentation)\b"
                               rf"|\bthe\s+(?:(?:current|latest|newest|up-to-date|official)\s+)?{_NOT_LIBRARY}"
                               r"(?-i:[A-Z][\w.\-]{0,40})\s+(?:docs|documentation)\b"
                               rf"|\bthe\s+(?:docs|documentation)\s+(?:of|for)\s+(?:the\s+)?{_LIBRARY}"
                               r"|\b(?:official|upstream|library|package|framework)(?:'s)?\s+(?:docs|documentation)\b",
                               re.I)


class Said(Protocol):
    """What :func:`name_fit` reads of a step (:class:`~jit.selection.steps.Step`)."""

    @property
    def text(self) -> str: ...

    @property
    def capability(self) -> str: ...

#: The verb a step opens with -> its capability: what a change, a deletion, a run or a message
#: is said with. A clause opening with none of them takes the task analyzer's reading.
VERBS = {
    **dict.fromkeys(("read", "check", "look", "find", "list", "show", "get", "search", "review", "compare",
                     "inspect", "research", "count", "describe", "fetch", "see", "summarize", "summarise",
                     "explain", "open", "screenshot", "query", "browse", "verify", "grab", "pull", "dump", "hit",
                     "go", "investigate", "examine"), "/read"),
    **dict.fromkeys(("fix", "change", "add", "create", "make", "put", "write", "update", "edit", "set", "rename",
                     "move", "bump", "switch", "checkout", "commit", "push", "merge", "stash", "rebase", "reset",
                     "revert", "restore", "stage", "cherry-pick", "tag", "log", "file", "register", "mark", "assign",
                     "refund", "book",
                     "schedule", "upload", "insert", "record", "save", "apply", "resolve", "close", "hop", "implement",
                     "refactor", "replace", "append", "fill", "press", "click", "submit", "download",
                     "enable", "disable"),
                    "/write"),
    **dict.fromkeys(("delete", "remove", "clear", "drop", "purge", "wipe", "archive"), "/delete"),
    **dict.fromkeys(("send", "tell", "leave", "post", "email", "mail", "reply", "comment", "notify", "message",
                     "forward", "announce", "ping", "dm"), "/send"),
    **dict.fromkeys(("run", "deploy", "rollback", "restart", "execute", "trigger", "roll"), "/execute"),
}
#: The words a clause may open with before its verb ("please also check …", "then commit …"): a
#: pattern's piece, for the patterns that read a clause's verb.
OPENING = r"^(?:(?:please|also|then|now|first|and|just|try\s+to)\s+)*"
#: A verb addressed to the user ("tell me when it renews", "show us") is no step of its own.
_LEADING = re.compile(OPENING + r"([a-z\-]+)\b(?!\s+(?:me|us)\b)", re.I)
#: What "drop" delivers when it sends, not deletes ("drop a note in #deploys", "drop a comment on
#: the issue"; not "drop the comments table").
_DROPS_MESSAGE = re.compile(r"\s+(?:(?:me|us|them|him|her)\s+)?(?:an?\s+|the\s+|our\s+|my\s+)?(?:(?:quick|short|brief|"
                            r"small|friendly)\s+)?(?:notes?|lines?|messages?|msgs?|comments?|replies|reply|words?|"
                            r"heads-up|e-?mails?|mails?|dms?)\b"
                            r"(?!\s+(?:tables?|columns?|index(?:es)?|collections?|fields?|keys?|rows?|records?|"
                            r"databases?|schemas?|views?|files?)\b)", re.I)
#: What "let", "keep" and "give" say when they tell someone something ("let #deploys on Slack know", "keep the
#: team posted", "give Dana a heads-up"): a message sent to a person, a group or a channel (not "keep the
#: changelog updated", "let the tests know about the fixture").
_TOLD = re.compile(r"\s+(?:#[\w-]+|(?-i:[A-Z])[\w.-]*|me|us|them|him|her|everyone|everybody|(?:the|our|my|your)\s+"
                   r"(?:[\w-]+\s+){0,2}?(?:team|channel|stakeholders|users|customers|folks|people|on-?call|owners?|"
                   r"reviewers?|clients?|managers?|leads?|group))(?:\s+[^\s.,;!?]+){0,3}?\s+"
                   r"(?:know|posted|updated|informed|in\s+the\s+loop|(?:a\s+)?heads[- ]up)\b", re.I)
_OPENS_RECORD = re.compile(r"\s+(?:a|an|the)?\s*(?:new\s+)?(?:\w+\s+){0,2}(?:issue|pr|pull request|merge request|"
                           r"ticket|bug|incident|card|task)\b", re.I)
#: Abbreviations a tool's description spells out: a step is matched with both.
_ABBREVIATIONS = {"pr": "pull request", "prs": "pull requests", "mr": "merge request", "repo": "repository",
                  "db": "database", "k8s": "kubernetes", "env": "environment", "docs": "documentation"}
#: A document's extension spelled as the kind of file it is: a path's extension says which tool
#: opens the file ("compare with reports/q3.xlsx": a spreadsheet tool's). Not ``pdf``: a task
#: names one most often as what it makes ("a PDF report in /root/pdf"), which no reader does.
_FILE_KINDS = {"xlsx": "Excel workbook spreadsheet", "xls": "Excel workbook spreadsheet",
               "docx": "Word document", "pptx": "PowerPoint presentation slides"}
_ABBREVIATIONS.update(_FILE_KINDS)
_ABBREVIATION = re.compile(r"\b(" + "|".join(_ABBREVIATIONS) + r")\b", re.I)
#: A title or a text in quotes.
QUOTED = re.compile(r"(?<!\w)['\"\u201c\u2018][^'\"\u201c\u201d\u2018\u2019]{3,80}['\"\u201d\u2019](?!\w)")


def leading_capability(clause: str) -> str | None:
    """The capability of the verb a clause opens with (:data:`VERBS`; "open" a page reads, "open"
    an issue writes; "drop" a table deletes, "drop" a note sends; "turn on" or "off" writes), None when it opens
    with none of them."""
    m = _LEADING.match(clause)
    if not m:
        return None
    verb = m.group(1).lower()
    if verb == "open":
        return "/write" if _OPENS_RECORD.match(clause[m.end():]) else "/read"
    if verb == "drop" and _DROPS_MESSAGE.match(clause, m.end()):
        return "/send"
    if verb in ("let", "keep", "give") and _TOLD.match(clause, m.end()):
        return "/send"
    if verb == "turn" and _ON_OFF.match(clause, m.end()):
        return "/write"  # "turn on the new search": a switch set; not "turn to page 3", "turn the notes into a summary"
    return VERBS.get(verb)


#: What "turn" says when it sets a switch ("turn on the flag", "turn it off").
_ON_OFF = re.compile(r"\s+(?:(?:it|them|this|that)\s+)?(?:on|off)\b", re.I)


#: Words after which a word names a thing: a determiner or a possessive ("the login page", "my local checkout").
_DETERMINERS = "a an the my our your their its his her this that these those".split()
_DETERMINER = re.compile(rf"(?:{'|'.join(_DETERMINERS)})\b", re.I)

#: A kind of content a tool may specialise in reading, and the word that opens its subject: "papers on
#: speculative decoding", "news about the merger", "docs on retries", "videos about sourdough".
_ABOUT = re.compile(
    r"\b(?:papers?|articles?|news|stories|story|docs|documentation|tutorials?|guides?|videos?|books?|blogs?"
    r"|blog\s+posts?|posts?|studies|study|publications?|literature|pages?|notes?|e-?mails?|mails?|messages?"
    r"|tweets?|discussions?|threads?|questions?|reports?|images?|photos?|podcasts?|courses?|lectures?|talks?)"
    r"\s+(?P<prep>on|about|regarding|concerning|covering|related\s+to)\s+", re.I)
#: Where a subject ends: punctuation, "then" or "but", or a word that says where, from what or how
#: followed by a name ("… in arXiv", "… from Legal", "… on GitHub", "… via #incidents").
_SUBJECT_END = re.compile(
    r"[,;!?()]|[.:](?=\s|$)|\s(?:then|but)(?=\s|$)"
    rf"|\s(?:in|from|into|via|using|within|inside|at|on|to|through)\s+(?:{_DETERMINER.pattern}\s+)?"
    r"(?=[#@]|\S*[A-Z0-9])")
#: What a subject holding it names: a thing to act on, not what to look for (a title in quotes, an
#: address, a pull request, an issue, a channel …).
_NAMES_A_THING = re.compile(
    r"[#@/\"‘“”]|(?<![A-Za-z])['’]|['’](?![A-Za-z])|[A-Za-z]\.[A-Za-z]"  # a quote, not a possessive's "'s"
    r"|\b(?:PRs?|MRs?|pull\s+requests?|merge\s+requests?|issues?|tickets?"
    r"|channels?|repos?|repositor(?:y|ies)|branch(?:es)?|commits?|boards?|cards?|projects?|files?|folders?)\b", re.I)
#: The most words a subject is read as one.
_SUBJECT_WORDS = 12


@lru_cache(maxsize=1024)
def topic_free(text: str) -> str:
    """``text`` without the subject of the content it asks to read ("find recent papers on speculative
    decoding for LLM inference" is "find recent papers"): the subject is what the tool is given to look
    for, not which tool looks (a paper search, not a tool about LLMs). The subject runs from "on",
    "about", "regarding" … after a kind of content (:data:`_ABOUT`) to :data:`_SUBJECT_END`. Kept: a
    subject that names a thing (:data:`_NAMES_A_THING`: "threads on PR #57", "a page about
    'Q3 launch'"), one after "on" that opens with a capital or a determiner ("messages on Slack", "the
    results on the Grafana dashboard": where, not what), one of more than :data:`_SUBJECT_WORDS` words, and
    the whole text when it opens with no verb of reading (:func:`leading_capability`: what one writes
    about is the content written)."""
    if leading_capability(text) != "/read":
        return text
    cuts: list[tuple[int, int]] = []
    for m in _ABOUT.finditer(text):
        if cuts and m.start() < cuts[-1][1]:
            continue
        # A subject is a few words: its end is looked for that far only (a text of repeated cues stays linear).
        reach = min(len(text), m.end() + 40 * _SUBJECT_WORDS)
        end = _SUBJECT_END.search(text, m.end(), reach)
        stop = end.start() if end is not None else reach
        subject = text[m.end():stop]
        if (not subject.strip() or (end is None and reach < len(text)) or len(subject.split()) > _SUBJECT_WORDS
                or _NAMES_A_THING.search(subject)
                or (m.group("prep").lower() == "on" and (subject[:1].isupper() or _DETERMINER.match(subject)))):
            continue
        cuts.append((m.start("prep"), stop))
    if not cuts:
        return text
    out = text
    for start, stop in reversed(cuts):
        # a space where the subject stood, but before the punctuation that ended it ("papers, then …")
        gap = " " if stop < len(text) and text[stop] not in ",;:.!?)" else ""
        out = out[:start].rstrip() + gap + out[stop:].lstrip()
    return re.sub(r"\s+", " ", out).strip()


def spelled(text: str) -> str:
    """A step's text with its abbreviations spelled out beside them ("open a PR (pull request)")."""
    return _ABBREVIATION.sub(lambda m: f"{m.group(0)} ({_ABBREVIATIONS[m.group(0).lower()]})", text)


_VERB_CAPS = {search_tokens(v)[0]: c for v, c in VERBS.items() if search_tokens(v)}
#: HTTP's methods, which a tool generated from an API's operations may be named by.
_METHODS = frozenset({"get", "post", "put", "patch", "delete"})
#: Words after which a word names a thing, not the action: a determiner, a possessive, a
#: preposition ("the login page", "my local checkout", "goes to staging").
_NOUN_AFTER = frozenset([*_DETERMINERS, *"in on at to into from of for with by via".split()])
#: Words before a tool or a command named as what something is done with.
_BY_TOOL = frozenset({"with", "via", "using"})
#: Such a word said alone, before punctuation, the end or a word that goes on with the sentence ("with explain
#: that …"; not "with checkout disabled", "with reset flag": a thing's name before its noun).
_WITH_TOOL = re.compile(rf"\b(?:{'|'.join(sorted(_BY_TOOL))})\s+([a-z]+)(?=\s*(?:[,.;:!?)]|$)|\s+(?:that|to|on|in|"
                        r"for|and|then|whether|if|of)\b)", re.I)
#: A word joined to others by ``.``, ``/``, ``@`` or ``:``: part of an address, a path or a host.
_ADDRESS = re.compile(r"(?<![\w\-])[\w\-]++(?:[./@:][\w\-]++)+")
_WORD = re.compile(r"[\w\-]+")


def noun_uses(text: str) -> frozenset[str]:
    """The search tokens of the words a text uses as a name rather than as its action: a word of
    an address, a path or a host (``staging.acme.dev``, ``src/login.py``), and a word at most two
    words after a determiner, a possessive or a preposition ("my local checkout", "the login page",
    "a TypeError in checkout"), unless the text also says it as its leading verb, or it is a verb right after
    "with", "via" or "using" (:data:`_BY_TOOL`: "confirm with explain", the tool it is done with). A tool name's
    verb that the text says only this way is not the text's action (:func:`name_fit`,
    :func:`action_free`)."""
    found: set[str] = set()
    for m in _ADDRESS.finditer(text):
        found.update(search_tokens(m.group(0)))
    rest = _ADDRESS.sub(" ", text)
    words = _WORD.findall(rest)
    after = 3  # words since the last determiner or preposition
    before = ""
    tools = {m.group(1).lower() for m in _WITH_TOOL.finditer(rest)} & _VERB_CAPS.keys()
    for w in words:
        low = w.lower()
        if low in _NOUN_AFTER:
            after, before = 0, low
            continue
        after += 1
        # a verb right after "with", "via" or "using" names the tool or command it is done with ("confirm with
        # explain that find() uses the index"): said as the thing's name, it says the tool's
        if after <= 2 and not (after == 1 and before in _BY_TOOL and low in tools):
            found.update(search_tokens(w))
        before = low
    m = _LEADING.match(text)
    if m:
        found.difference_update(search_tokens(m.group(1)))
    return frozenset(found)


def action_free(text: str, keep: Collection[str] = ()) -> str:
    """A step's text for lexical matching without what it says only as names of things: an
    address, a path or a host (the data a tool is given, not what the tool is: the words of
    ``https://github.com/acme/web/pull/512`` do not ask for a GitHub tool), a title or a text in
    quotes ("the 'Q3 launch plan' Google Doc" asks for no planning tool), and an action word
    (:data:`VERBS`) it uses as a noun or a modifier (:func:`noun_uses`: "the fix in my local
    checkout" does not match ``git_checkout`` by its name's verb). ``keep``: search tokens kept
    wherever they are (the servers' names: "the board in monday.com" still points at monday)."""
    nouns = {w for w in noun_uses(text) if w in _VERB_CAPS}
    keep_set = keep if isinstance(keep, (set, frozenset)) else frozenset(keep)  # thousands: not copied per word

    def word(m: re.Match[str]) -> str:
        toks = set(search_tokens(m.group(0)))
        return m.group(0) if toks & keep_set or not toks & nouns else " "

    def address(m: re.Match[str]) -> str:
        kept = [w for w in search_tokens(m.group(0)) if w in keep_set or w in _FILE_KINDS]
        return f" {' '.join(kept)} "

    return _WORD.sub(word, _ADDRESS.sub(address, QUOTED.sub(address, text)))


#: Verbs that say the same change: adding a thing is creating it ("add an Asana task": ``create_task``),
#: when the name's object is what the step adds, not where ("add bob to the #eng channel" is no
#: ``create_channel``).
_SAME_VERB = {"add": "create", "create": "create", "new": "create"}
#: A name's first word that makes its object ("createIssue"; not "add_card_to_list", which adds to a list).
_CREATES = frozenset({"create", "new"})
#: Where a clause's direct object ends: a preposition.
_OBJECT_END = re.compile(r"\b(?:to|in|into|on|onto|for|from|at|with|under|inside|within|via|as|by)\b", re.I)
#: Up to four words that name a thing (its group ``thing``), and where the name ends: a preposition, a conjunction,
#: a word that opens a clause of its own, punctuation.
THING = (r"(?P<thing>(?:[\w\-]+\s+){0,3}?[\w\-]+)"
         r"(?=\s+(?:to|in|into|on|onto|for|from|at|with|under|via|as|by|about|of|and|that|which|who|if|when)\b"
         r"|\s*[,.;:!?(]|\s*$)")
#: A thing the step makes, said as a new one ("put the audits in a new Linear issue"; not "the new issues",
#: which exist).
_NEW_THING = re.compile(r"\b(?:an?|another)\s+new\s+" + THING, re.I)
#: A thing said after a preposition as one that exists: "for the Web team", "in our Test Runs table".
_EXISTING = re.compile(r"\b(?:to|in|into|on|onto|for|from|at|under|inside|within)\s+"
                       r"(?:the|our|my|your|their|its|this|that)\s+" + THING, re.I)


#: A thing named by its identifier: a tracker's key ("ENG-512"), a number ("#57"), a UUID.
_AN_ID = re.compile(r"(?-i:\b(?!(?:UTF|HTTP|SHA|ISO|RFC|TLS|SSL|MD|AES|RSA|IPV|ECMA|ES|PEP|CVE|CWE|GPT|H|X)-)"
                    r"[A-Z][A-Z0-9]{1,9}-\d+\b)|(?<![\w&])#\d+\b|"
                    r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I)
#: A name's words that say it takes a thing by its identifier (``getIssueById``).
_ID_WORDS = frozenset({"id", "identifier"})


@lru_cache(maxsize=1024)
def _reading(text: str) -> tuple[str, frozenset[str], frozenset[str], frozenset[str], frozenset[str], frozenset[str],
                                 bool]:
    """A step's text as :func:`name_fit` reads it against every candidate's name: its leading
    verb's token, the words it says only as names (:func:`noun_uses`), its other words but the
    subject of what it reads (:func:`topic_free`), the words of what its verb acts on, up to the
    first preposition ("add an Asana task 'Migrate' to my project": asana, task), the words of what
    it says is new ("a new Linear issue": linear, issue), the words it says only of a thing
    that exists, after a preposition ("for the Web team": web, team), and whether it names a thing
    by its identifier (:data:`_AN_ID`)."""
    m = _LEADING.match(text)
    verb = search_tokens(m.group(1))[0] if m and search_tokens(m.group(1)) else ""
    rest = text[m.end():] if m else text
    end = _OBJECT_END.search(rest)
    direct = frozenset(search_tokens(rest[:end.start()] if end else rest, drop_stopwords=True))
    new = frozenset(w for g in _NEW_THING.findall(text) for w in search_tokens(g, drop_stopwords=True))
    existing = frozenset(w for g in _EXISTING.findall(rest) for w in search_tokens(g, drop_stopwords=True))
    return (verb, noun_uses(text), frozenset(search_tokens(spelled(topic_free(text)), drop_stopwords=True)) - {verb},
            direct, new, existing - direct - new, bool(_AN_ID.search(text)))


@lru_cache(maxsize=1 << 14)
def _name_words(name: str, server: str) -> tuple[str, ...]:
    """A tool name's search tokens, its server's left out (:func:`name_fit`, asked of the same
    candidates by every step)."""
    own = set(search_tokens(server))
    words = tuple(w for w in search_tokens(name, drop_stopwords=True) if w not in own)
    if words[:1] == ("api",) and len(words) > 1 and (re.match(r"api[^\w\s]", name, re.I) or words[1] in _METHODS):
        # an API's operation ("API-retrieve-a-page"), and one spelled by its HTTP method
        # ("API-post-search"): the method says what it does only when no verb follows ("API-post-page")
        words = words[2:] if len(words) > 2 and words[1] in _METHODS and words[2] in _VERB_CAPS else words[1:]
    return words


#: Verbs of reading that say which way a tool reads ("search my notes", "list the pods"): another way's verb
#: says them half.
_KINDS_OF_READ = frozenset({"search", "list"})
#: Verbs that read one thing or every thing as it is, another way than a search's or a list's (not "query" or
#: "find", which search).
_PLAIN_READS = frozenset({"get", "list", "fetch", "read", "show", "view", "retrieve"})


def name_fit(name: str, server: str, step: Said, task_words: frozenset[str] = frozenset()) -> float:
    """How well a tool's name says a step, 0–1: the share of its name's words (its server's name left out) that the
    step says, the first one as the step's verb, the others as its object; a word only the rest of the task says
    (``task_words``), or only the subject of what the step reads (:func:`topic_free`: "LLM" of "papers on LLM
    inference"), counts half when the task's words hold it. The step's verb counts as the name's first or second
    word (``add_comment`` for "comment on it"); another verb of the step's capability as the name's first word
    counts whole for a read (``get`` or ``search`` for "find …": ways of reading are near alike) but half when the
    step says its own way and the name's verb is a plain read's (:data:`_KINDS_OF_READ`, :data:`_PLAIN_READS`:
    ``get_notes`` for "search my notes"), half for a
    change when the step says a verb of its own (``git_merge`` for "commit it": changes differ), whole when it
    says none. The step's own verb names no object ("review the PR" is ``get_pull_request``, not
    ``get_pull_request_reviews``), and a word the step says only as a name (:func:`noun_uses`: "in my local
    checkout") is no verb of a tool's name."""
    words = _name_words(name, server)
    verb, names, objects, direct, new, existing, has_id = _reading(step.text)
    if not words:
        # a tool named as its server (``fetch`` of the fetch server): it fits a step that says its name's
        # words as its own verb or object ("fetch the URL"), not any read because its name is a reading verb
        said = search_tokens(name, drop_stopwords=True)
        return sum(w == verb or w in objects for w in said) / len(said) if said else 0.0
    if has_id and not _ID_WORDS.isdisjoint(words):
        objects = objects | _ID_WORDS  # "read ENG-512" says getIssueById's "by id"
    # A creation whose name makes the place the step puts its thing in ("for the Web team": createTeam)
    # does not say the step; a change of that place may ("set the status on the issue": update_issue).
    creates = words[0] in _CREATES and step.capability != "/read"
    got = 0.0
    for i, w in enumerate(words):
        if (w == verb or (_SAME_VERB.get(w) == _SAME_VERB.get(verb, verb) and not direct.isdisjoint(words))) and i <= 1:
            got += 1
        elif i == 0 and creates and not new.isdisjoint(words):
            got += 1  # "a new Linear issue" says createIssue's verb
        elif i > 0 and creates and w in existing and direct.isdisjoint(words[1:]) and new.isdisjoint(words[1:]):
            continue  # "for the Web team" is a team that exists: no createTeam
        elif i == 0 and w in _VERB_CAPS and w in names:
            continue  # the tool's verb, which the step says as a name
        elif i == 0 and _VERB_CAPS.get(w, "") == step.capability:
            got += 0.5 if verb in _VERB_CAPS and (step.capability != "/read" or (
                verb in _KINDS_OF_READ and w in _PLAIN_READS)) else 1
        elif w in objects:
            got += 1
        elif w in task_words:
            got += 0.5
    return got / len(words)
