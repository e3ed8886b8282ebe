"""The side effects of a tool: whether it writes, deletes, executes or sends: what a read-only role may be given.

A read-only role is given only tools with none of ``/write``, ``/delete``, ``/execute``,
``/send`` (rules/policy.dl, ``changing``), so a missed effect is a privilege leak. The
lexical capability scores of :mod:`jit.analysis.offline_analyzer` rank what a tool is *for*;
this module decides what it can *do*, from four signals, each read on its own:

1. **Annotations.** ``readOnlyHint: false`` or ``destructiveHint: true`` say the tool
   changes things. ``readOnlyHint: true`` outweighs a plain write verb of the name, and
   nothing else: a name that deletes, runs or sends, a parameter that saves a file, or a
   description that states an effect still count.
2. **The tool's own verb and object**, parsed from its name: the first verb of the name
   (``git_checkout``, ``fork_repository``, ``asana_get_tags_for_task``), and what it acts
   on (a *comment* or *review* created is sent; a *tab* or *page* closed is session state;
   a *label* removed is an association, not a deletion).
3. **Parameters**, also inside option objects and action lists: content to store (``body``,
   ``content``), code or commands to run (``script``, ``code``, ``function``, ``command``),
   launch options that name a program, recipients and notification switches (``recipients``,
   ``sendUpdates``, ``send_notification``, ``webhook``), a lease on what is read
   (``visibilityTimeout``), a file the result is saved to (``filename``, ``savePath``), a
   switch that deletes, and the values of an ``action``/``operation`` enum or of an action
   list's ``type`` (``create``, ``delete``, ``executeJavascript``).
4. **The description**: its leading verb when the name has none, and the effects it names
   (``permanently``, "executes ... JavaScript", "send ... email", "CRUD", "saves it to local
   disk"), in its first sentence or as an operation its first paragraph lists.

The signals add up: where they disagree, the more dangerous reading wins (a name that reads
and a parameter that saves a file is a write). ``delete``, ``execute`` and ``send`` are kinds
of ``write``; :func:`side_effects` returns them without ``/write`` when one of them is the
whole story.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from ..models import ToolDef
from ..text import first_sentence, split_identifier, stem

__all__ = ["EFFECTS", "merge_capabilities", "name_effects", "name_reading", "side_effects"]

#: The capabilities that are side effects, most dangerous first (the order of :func:`side_effects`).
EFFECTS = ("/delete", "/execute", "/send", "/write")

_W, _D, _X, _S = "/write", "/delete", "/execute", "/send"


def _stems(words: str) -> frozenset[str]:
    return frozenset(stem(w) for w in words.split())


#: Verbs of a change that do not say which.
_GENERIC_VERBS = _stems("handle manage use change")
#: Verbs that only read: a name that starts with one reads, unless another signal says otherwise.
_READ_VERBS = _stems(
    "get list read search find fetch retrieve describe show view lookup look resolve count check inspect "
    "explain validate analyze analyse compare summarize diff status log blame browse scan preview ping whoami "
    "navigate go hover wait scroll screenshot snapshot take capture emulate resize query info detail "
    "details load open peek calculate compute convert parse extract translate render "
    "estimate test verify detect suggest recommend generate download export think is has can "
    "exists lint grep head tail sample tree stat login connect reconnect disconnect switch "
    "listen poll"
)
#: Verbs of lasting change.
_WRITE_VERBS = _stems(
    "create add write update set edit modify insert append put patch rename move copy commit push merge fork "
    "checkout reset restore apply assign unassign mark approve reject archive unarchive upload attach import "
    "enable disable configure install deploy scale start stop restart pause resume tag label watch unwatch "
    "star unstar pin unpin lock unlock close reopen transition transfer duplicate clone sync init initialize "
    "save store record register rollback revert cherry rebase stash replace upsert increment incr decr "
    "decrement expire persist link unlink sort fill click press drag select toggle schedule "
    "reschedule mute unmute follow unfollow subscribe unsubscribe favorite complete finalize "
    "void refund pay activate deactivate rotate grant share invite publish unpublish "
    "post send reply respond comment forward notify submit trigger draft "
    "launch kill terminate cancel undo redo use manage cordon drain uncordon "
    "revoke logout join leave ack claim acknowledge "
    "unsnooze snooze hide unhide rsvp accept decline handle change bump promote demote format customize "
    "adjust highlight upgrade downgrade detach"
)
#: Verbs whose purpose is removal. ``remove`` of an association is a write (see :data:`_ASSOCIATIONS`).
_DELETE_VERBS = _stems(
    "delete del remove drop purge clear destroy erase uninstall trash expunge flush revoke logout rem pop "
    "trim wipe prune discard cleanup clean"
)
#: Verbs that are as often nouns: after another word they name a thing ("console_messages",
#: "issue_comments", "project_update"), so they count as the verb only when a name starts with them.
_NOUNS = _stems(
    "comment post reply message email update tag label record log status test sample tree stat head tail scan "
    "check review share draft link pin star lock schedule change store export download info detail details "
    "merge commit patch fill sort query type issue branch stash trigger feedback filter event alarm"
)
#: Verbs that start something, and what they run when they start it: a process, a job, a workflow.
_STARTS = _stems("start launch spawn trigger")
_RUNNABLE = _stems("process processes job jobs workflow workflows agent agents pipeline pipelines build "
                   "builds test tests script scripts command commands program")
#: HTTP's methods that say nothing of the operation (a search sent as POST), leading a generic API tool's name.
_HTTP_METHODS = _stems("post put patch")
#: Verbs that end or reverse something: with a destructive hint, what they end is gone.
_ENDS = _stems("cancel terminate void abort undo revert")
#: Verbs that run something the caller chooses.
_EXECUTE_VERBS = _stems("run exec execute evaluate eval invoke spawn")
#: Verbs that deliver content to someone.
_SEND_VERBS = _stems(
    "send post reply respond comment forward notify invite share publish broadcast submit tweet rsvp"
)
#: Head nouns of an object that, created or added, is delivered to people: a comment, a reply, a
#: review, a status update, a form submission.
_SENT_OBJECTS = _stems("comment comments reply review story message messages post invitation invite "
                       "notification webhook update updates feedback status submission")
#: A bill to a customer: issued or finalized, it is delivered to them (a finalized invoice is emailed).
_BILLS = _stems("invoice invoices receipt receipts bill bills quote quotes")
#: Verbs that issue a bill (:data:`_BILLS`) to its customer.
_ISSUES = _stems("finalize finalise issue")
#: Objects whose setting passes mail on to other people: a mailbox's filter (its action may forward
#: what arrives) or its forwarding itself.
_PASSES_MAIL = _stems("forward forwarding autoforward autoforwarding")
_MAILBOX = _stems("mail email gmail inbox mailbox outlook")
#: Objects a removal (:data:`_DETACHES`) takes away from another object while both stay (the guideline: a write).
_ASSOCIATIONS = _stems("label labels tag tags watcher watchers member members assignee assignees link links "
                       "relation relations reaction reactions dependency dependencies dependent dependents "
                       "follower followers collaborator collaborators user users project projects domain "
                       "parent parents permission permissions subscriber subscribers flag flags access "
                       "trigger triggers")
#: Verbs that, of an association, take it away and leave both ends.
_DETACHES = _stems("remove revoke detach")
#: Objects that are associations whatever the verb: deleting a relation removes no record.
_LINKS = _stems("relation relations link links reaction reactions dependency dependencies")
#: Objects of a browser, client or pub/sub session: opening, closing or resizing them, or
#: subscribing to them, changes nothing lasting.
_SESSION_OBJECTS = _stems("tab tabs page pages browser session connection dialog viewport window console "
                          "media network active channel channels pattern patterns")
#: What a clean empties (``git_clean``, ``clean_cache``); cleaning anything else tidies content.
_CLEANED = _stems("cache caches dir directory directories folder folders workspace file files tmp temp build "
                  "builds log logs artifact artifacts repo repository branch branches untracked")
#: Verbs that act on a session when their object is one of :data:`_SESSION_OBJECTS` or missing.
_SESSION_VERBS = _stems("close open resize switch subscribe unsubscribe")
#: Verbs that act on a session only when their object is one of :data:`_SESSION_OBJECTS`.
_SESSION_OBJECT_VERBS = _stems("select set use")
#: Verbs that keep what they are given: a message with recipients saved is not sent.
_KEEPS = _stems("save store")
#: Verbs that hand local files to something, and what marks a browser's tool: a web page
#: given files can send them on (not a system of record an upload stores them in).
_HANDS_FILES = _stems("upload drop")
_BROWSERS = _stems("browser puppeteer playwright")
_ON_PAGE = re.compile(r"\b(?:web page|webpage|element)\b", re.IGNORECASE)
#: Words that end a name's object: what follows is where it happens ("remove_tag_from_task").
_PREPOSITIONS = _stems("to from on in for of into by with at")
#: Words of a name that are no verb: a server or product prefix, HTTP's method on its own.
_PREFIXES = _stems("api mcp browser puppeteer playwright kubectl git github gitlab jira confluence asana linear trello "
                   "discord slack notion monday airtable hubspot stripe redis mongo mongodb obsidian excel "
                   "gmail google firecrawl tavily exa brave sentry cloudflare azure wfp d1 kv r2 do")

#: Parameter names (stemmed, underscores dropped) that carry code or a command to run.
_EXEC_PARAMS = _stems("script code function command commands initscript javascript js sql")
#: Parameter names, at any depth, of code to run (an action's ``script`` inside ``scrapeOptions``);
#: the looser names of :data:`_EXEC_PARAMS` ("code", "function") count only at the top, where
#: they are not a shader's code or an aggregate's function.
_NESTED_EXEC_PARAMS = _stems("script scripts initscript javascript js")
#: Parameter names that start a program of the caller's choosing: a browser's launch options
#: name its executable and arguments.
_LAUNCH_PARAMS = _stems("launchoptions executablepath")
#: Parameter names (lower case, unstemmed: "webhooks" lists them) of a URL the tool posts to:
#: a crawl's webhook; a callback URL, even a reading tool's (a scan's results posted there).
_WEBHOOK_PARAMS = frozenset({"webhook", "webhookurl", "callbackurl"})
#: Parameter names of a lease: a message pulled is hidden from other consumers meanwhile.
_LEASE_PARAMS = _stems("visibilitytimeout leaseduration ackdeadline ackdeadlineseconds")
#: Parameter names that deliver: recipients, notifications, webhooks, a switch that submits.
_SEND_PARAMS = _stems("recipients recipient to cc bcc sendupdates sendnotification notify notifyusers "
                      "webhook webhookurl sharewith submit send")
#: Parameter names of content that, added by the change, is delivered to people.
_SENT_FIELDS = _stems("comment comments reply")
#: Parameter names of a file the tool writes its result to, whatever their description.
_SAVE_PARAMS = _stems("savepath outputpath outputfile downloadpath savedir outputdir savefile savelocation")
#: Endings of parameter names that may name a file to write: their description decides (:data:`_SAVES`).
_FILE_PARAMS = ("filename", "file", "path", "dir", "directory", "folder", "output", "destination", "location")
#: Parameter names that switch deletion on.
_DELETE_PARAMS = _stems("droptarget forcedelete clearvalues trashed intrash purge delete deletelocaldata")
#: Enum parameters whose values name the tool's operations.
_ACTION_PARAMS = _stems("action actions operation operations mode op subcommand")
#: Fields of an item in a list of operations that name the item's operation.
_OPERATION_TYPES = _stems("operationtype actiontype optype")
#: Fields of an item of an action list that name its kind (``actions: [{"type": "click"}]``).
_KINDS = _stems("type kind")

_WORD = re.compile(r"[a-z]+")
#: A field name a description quotes in backticks ("Pass any subset of fields: `name`, `webhook`").
_FIELDS = re.compile(r"`([A-Za-z_][A-Za-z0-9_]{1,40})`")
_QUOTED = re.compile(r"[\"'`]([a-z][a-z_ -]{1,30})[\"'`]")
#: An operation a description lists, one a line: "- delete: Delete a comment."
_LISTED = re.compile(r"^[ \t]*[-*•][ \t]*([a-z][a-z_]{1,30}):", re.MULTILINE)
_SAVES = re.compile(r"\b(?:save|saves|saved|saving|write|writes|written|store|stores|stored|download)\w*\b",
                    re.IGNORECASE)
#: A description's statement that the tool deletes: a verb of removal in the present ("deletes",
#: "deleting", "permanently removes"), not a past participle ("list deleted items").
_DELETES = re.compile(r"\b(?:delet(?:e|es|ing)|purg(?:e|es|ing)|eras(?:e|es|ing)|destroy(?:s|ing)?|"
                      r"revok(?:e|es|ing)|invalidat(?:e|es|ing)|discard(?:s|ing)?|"
                      r"(?:permanently|immediately)\s+remov\w*|cannot be undone|"
                      r"(?:is|are|be|get|gets)\s+(?:deleted|purged|erased|destroyed|revoked|invalidated))\b",
                      re.IGNORECASE)
#: Words just before an effect that deny it: "without erasing", "never deletes".
_NEGATED = re.compile(r"(?:\b(?:without|not|never|no|nor)|n't)\s+(?:\w+\s+)?$", re.IGNORECASE)
#: A parameter's description saying its content is added or posted (a comment, a reply).
_ADDED = re.compile(r"\b(?:add|adds|added|post|posts|posted|send|sends|sent)\b", re.IGNORECASE)
#: A code parameter's description saying it is run (a container's command), not stored.
_TO_RUN = re.compile(r"\bto (?:run|execute)\b", re.IGNORECASE)
#: A parameter that opens content to an audience: link sharing, publication.
_PUBLISHES = re.compile(r"\banyone with the link\b|"
                        r"\bpublish(?:ed|es)?\b[^.]{0,40}?\b(?:visible|available|accessible)\b", re.IGNORECASE)
#: A statement that the tool runs code, commands, queries or tests: a verb (not "evaluation
#: workflows", a noun) and what it runs a few words on ("Execute an INSERT, UPDATE, or DELETE query").
_RUNS_CODE = re.compile(r"\b(?:execut(?:e|es|ing)|run(?:s|ning)?|evaluat(?:e|es|ing))\s+((?:[\w-]+,?\s+){0,5}?)"
                        r"(?:javascript|js|code|script|scripts|sql|command|commands|shell|workflow|workflows|job|jobs|"
                        r"quer(?:y|ies)|statements?|tests?)\b", re.IGNORECASE)
#: SQL's statements that change: a query that names one runs a change.
_MODIFYING = re.compile(r"\b(?:INSERT|UPDATE|DELETE|DROP|CREATE|ALTER|MERGE|UPSERT|TRUNCATE|REPLACE)\b")
#: Words between running and what is run that keep it to reading ("Execute a SELECT query",
#: "Run a find query", "Execute read-only GraphQL queries").
_ONLY_READS = re.compile(r"\b(?:read|reads|read-only|readonly|select|find|search)\b", re.IGNORECASE)
#: A statement that the tool runs whatever command or query of a system the caller writes
#: (not "any read-only query").
_RUNS_ANY = re.compile(r"\b(?:any|arbitrary)\s+(?:[\w-]+\s+){0,2}?(?:commands?|quer(?:y|ies)|sql|statements?)\b",
                       re.IGNORECASE)
#: A statement that the tool writes a file of its own: "saves it to local disk", "Returns the
#: generated report file path".
_SAVES_FILE = re.compile(r"\b(?:saves?|writes?|stores?)\b[^.\n]{0,30}?\b(?:to|on)\s+(?:the\s+)?(?:local\s+)?"
                         r"(?:disk|filesystem|file system)\b|"
                         r"\breturns\s+the\s+(?:generated|saved|written|output)\s+(?:[\w-]+\s+){0,2}?file(?:'s)?\s+path\b",
                         re.IGNORECASE)
#: A protocol that delivers mail: a tool that runs its commands can send.
_MAIL_PROTOCOL = re.compile(r"\bSMTP\b")
#: "CRUD operations": creating, reading, updating and deleting, the last a deletion.
_CRUD = re.compile(r"\bCRUD\b")
#: An acronym a sentence was glued onto: "SMS" of "SMSThis".
_GLUED = re.compile(r"\b([A-Z]{2,})(?=[A-Z][a-z])")
_SENDS = re.compile(r"\b(?:send|sends|sending|forward|forwards|notif(?:y|ies))\s+(?:[\w-]+\s+){0,3}?"
                    r"(?:e-?mails?|messages?|notifications?|sms|invitations?|replies|reply|comments?|updates?|feedback)\b|"
                    r"\b(?:accept|decline)s?\s+(?:[\w-]+\s+){0,2}?invitations?\b",  # an RSVP goes to the organizer
                    re.IGNORECASE)


def _name_words(name: str) -> list[str]:
    """The stemmed words of a tool name, without product prefixes."""
    words = [stem(w) for w in split_identifier(name)]
    while len(words) > 1 and words[0] in _PREFIXES:
        words = words[1:]
    return words


def _is_verb(word: str) -> bool:
    return any(word in verbs for verbs in (_READ_VERBS, _WRITE_VERBS, _DELETE_VERBS, _EXECUTE_VERBS, _SEND_VERBS))


def _verb(words: Iterable[str]) -> tuple[str | None, list[str]]:
    """The first verb of ``words`` and the words after it (its object). A word that is as often a
    noun (:data:`_NOUNS`: "comment", "message", "update") is a verb only as the first word."""
    words = list(words)
    if len(words) > 1 and words[0] in _HTTP_METHODS and _is_verb(words[1]) and words[1] not in _NOUNS:
        words = words[1:]  # a POST that searches ("post_search") does what its second verb says
    for i, w in enumerate(words):
        if _is_verb(w) and (i == 0 or w not in _NOUNS):
            return w, words[i + 1:]
    return None, words


def _head(obj: list[str]) -> list[str]:
    """The object's own words: those before a preposition ("tag" of "tag_from_task")."""
    for i, w in enumerate(obj):
        if w in _PREPOSITIONS:
            return obj[:i]
    return obj


def _verb_effects(verb: str, obj: list[str], *, exact: bool = True) -> set[str]:
    """What ``verb`` does to ``obj`` (empty for a read). ``exact``: the verb is the name's, whose
    object is deliberate; prose objects are loose, so there removal is taken as deletion."""
    head = _head(obj)
    out: set[str] = set()
    if obj[:1] and obj[0] in _stems("or and") and len(obj) > 1 and _is_verb(obj[1]):
        out |= _verb_effects(obj[1], obj[2:], exact=exact)  # get_or_create_label, search_and_replace
    if (verb in _SESSION_VERBS and not head) or (verb in _SESSION_VERBS | _SESSION_OBJECT_VERBS
                                                 and set(head) & _SESSION_OBJECTS):
        return out
    if verb in _DELETE_VERBS:
        if exact and (set(head) & _LINKS or (verb in _DETACHES and set(head) & _ASSOCIATIONS)):
            out.add(_W)
        elif verb == stem("clean") and (not exact or (head and not set(head) & _CLEANED)):
            out.add(_W)  # cleaning content ("Clean HTML by removing tags") rewrites it
        elif not (verb == stem("clear") and set(head) & _SESSION_OBJECTS) and (verb != stem("drop") or head):
            out.add(_D)  # a drop with no object is a drag and drop
    if (verb in _EXECUTE_VERBS and exact) or (verb in _STARTS and set(head) & _RUNNABLE):
        out.add(_X)
    if verb in _SEND_VERBS and (verb != stem("forward") or head):
        out.add(_S)
    if verb in _ISSUES and set(head) & _BILLS:
        out.add(_S)  # an invoice finalized or issued goes to the customer
    if exact and verb in _WRITE_VERBS and (
            (set(head) & _PASSES_MAIL and stem("port") not in head)  # a port forward passes no mail
            or (stem("filter") in head and set(obj) & _MAILBOX)):
        out.add(_S)  # a mail filter's action or a forwarding setting sends mail on
    if verb in _WRITE_VERBS and not out:
        out.add(_W)
        if verb in _stems("create add write post make") and head[-1:] and head[-1] in _SENT_OBJECTS:
            out.add(_S)
    return out


def _plain(raw: Any) -> str:
    return re.sub(r"[^a-z0-9]", "", str(raw).lower())


def _param_name(raw: Any) -> str:
    return stem(_plain(raw))


def _variants(p: dict[str, Any]) -> list[dict[str, Any]]:
    """The object shapes an action parameter's items may take (one, or each of anyOf / oneOf)."""
    items = p.get("items")
    if not isinstance(items, dict):
        return []
    shapes = items.get("anyOf") or items.get("oneOf") or [items]
    return [v for v in shapes if isinstance(v, dict) and isinstance(v.get("properties"), dict)]


def _action_values(p: dict[str, Any], tool_description: str) -> list[str]:
    """The operations an action parameter offers: its enum; the names of an object's fields
    (``{"forward": ..., "addLabelIds": ...}``); the operation type or kind of each item of a list
    of operations (a constant, or the values its enum offers: ``{"type": "executeJavascript"}``); else the quoted words of its description, else the operations the
    tool's description lists (``- delete: Delete a comment``)."""
    items = p.get("items")
    values = p.get("enum") or (items.get("enum") if isinstance(items, dict) else None)
    if not values and isinstance(p.get("properties"), dict):
        values = list(p["properties"])
    if not values:
        values = [c for v in _variants(p) for k, f in v["properties"].items()
                  if isinstance(f, dict) and _param_name(k) in _ACTION_PARAMS | _OPERATION_TYPES | _KINDS
                  for c in ([f.get("const")] if "const" in f else f.get("enum") or ())]
    if not values and isinstance(p.get("description"), str):
        values = _QUOTED.findall(p["description"].lower())
    if not values:
        values = _LISTED.findall(tool_description[:3000])
    return [v for v in values or () if isinstance(v, str)]


def _schema_effects(schema: Any, verb: str | None, subject: list[str], description: str) -> set[str]:
    """Effects the parameters imply: code to run, recipients, a file to save, a deleting switch, actions."""
    props = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(props, dict):
        return set()
    # Code handed to a tool that creates or updates something is stored, not run (a Worker deployed).
    stores = verb is not None and verb in _WRITE_VERBS and verb not in _EXECUTE_VERBS
    # A read verb's operation parameter asks about an operation (a permission check), and its
    # switches choose what to read; a tool without a verb in its name is judged by them.
    changes = verb is None or verb not in _READ_VERBS
    named_change = verb is not None and verb not in _READ_VERBS
    # A router's ``command`` names one of the tool's own operations, its ``parameters`` hold the
    # operation's arguments: no program of the caller's, but any change the service allows.
    router = any(_param_name(k) == stem("parameters") for k in props)
    out: set[str] = set()
    for name, p in _nested(props):
        if name in _NESTED_EXEC_PARAMS and p.get("type") in (None, "string") and not p.get("enum") and not stores:
            out.add(_X)  # code inside an option object or an action list: run before the tool reads
    if any(_plain(k) in _WEBHOOK_PARAMS and (changes or _plain(k) == "callbackurl") for k in props) or (
            changes and _free_object(props) and
            {_plain(f) for f in _FIELDS.findall(description[:3000])} & _WEBHOOK_PARAMS):
        out.add(_S)  # results posted to a URL the caller names, or a body that may set one
    for raw, p in list(props.items())[:60]:
        name = _param_name(raw)
        p = p if isinstance(p, dict) else {}
        desc = p.get("description") if isinstance(p.get("description"), str) else ""
        if name in _LAUNCH_PARAMS:
            out.add(_X)  # launch options name the program to start and its arguments
        if name in _LEASE_PARAMS:
            out.add(_W)  # what is read is hidden from the others that read it, for a while
        if name in _EXEC_PARAMS and p.get("type") in (None, "string", "array") and not p.get("enum"):
            if router:
                out.add(_W)  # one of the service's operations: it may change whatever the service holds
            elif not stores or _TO_RUN.search(desc[:200]):
                out.add(_X)  # code or a command to run; stored code runs only when the text says it runs
        if named_change and (name in _SEND_PARAMS or (name in _SENT_FIELDS and _ADDED.search(desc[:200]))
                             or _PUBLISHES.search(desc[:300])):
            # recipients, a comment the change adds ("Comment to add during the transition"),
            # content opened to an audience ("anyone with the link", "published and visible to")
            out.add(_S)
        plain = _plain(raw)
        if name in _SAVE_PARAMS or (plain.endswith(_FILE_PARAMS) and _SAVES.search(desc[:200])):
            out.add(_W)
        if changes and (name in _DELETE_PARAMS or (p.get("type") == "boolean" and any(
                _states_a_deletion(m) for m in _DELETES.finditer(desc[:300])))):
            out.add(_D)  # a switch that deletes: "Set to true to archive (delete) a block"
        if name in _ACTION_PARAMS and changes:
            out |= _operation_effects(_action_values(p, description), subject)
    return out


def _nested(props: dict[str, Any], depth: int = 3) -> Iterable[tuple[str, dict[str, Any]]]:
    """The parameters inside object parameters and inside the items of list parameters, to
    ``depth`` levels (the top level's own parameters excluded), as (stemmed name, schema)."""
    if depth <= 0:
        return
    for p in list(props.values())[:60]:
        if not isinstance(p, dict):
            continue
        for inner in (p, p.get("items")):
            sub = inner.get("properties") if isinstance(inner, dict) else None
            if isinstance(sub, dict):
                yield from ((_param_name(k), v) for k, v in list(sub.items())[:60] if isinstance(v, dict))
                yield from _nested(sub, depth - 1)


def _free_object(props: dict[str, Any]) -> bool:
    """Whether one parameter is an object whose fields the schema leaves open (a ``body``)."""
    return any(isinstance(p, dict) and p.get("type") == "object" and not p.get("properties")
               for p in props.values())


def _operation_effects(values: Iterable[str], subject: list[str]) -> set[str]:
    """Effects of the operations a tool offers by name; an operation named by its verb alone
    ("add", "remove") acts on ``subject``, the object of the tool's name."""
    out: set[str] = set()
    for value in values:
        v, obj = _verb([stem(w) for w in split_identifier(value)])
        if v is not None:
            out |= _verb_effects(v, obj or subject)
    return out


def _description_effects(description: str, named: bool) -> set[str]:
    """Effects the description states; its leading verb counts when the name has none."""
    out: set[str] = set()
    lead = first_sentence(description.strip()[:600])
    if not named:
        words = [stem(w) for w in _WORD.findall(lead.lower())[:8]]
        verb, obj = _verb(words[:1])
        if verb is not None:
            out |= _verb_effects(verb, obj, exact=False)
    paragraph = _first_paragraph(description)
    if any(_runs(m) and (m.start() < len(lead) or re.match(r"\w+ing\b", m.group(0)))
           for m in _RUNS_CODE.finditer(paragraph)):
        out.add(_X)  # the first sentence's verb, or an operation listed later ("Includes ... executing SQL queries")
    if any("read" not in m.group(0).lower() for m in _RUNS_ANY.finditer(lead)):
        out |= {_X, _D}  # any command of a system, its deleting ones among them
    if any(not _NEGATED.search(m.string[:m.start()]) for m in _SENDS.finditer(paragraph)):
        out.add(_S)
    if any(_states_a_deletion(m) for m in _DELETES.finditer(paragraph)):
        out.add(_D)
    if _SAVES_FILE.search(paragraph):
        out.add(_W)
    return out


def _runs(m: re.Match[str]) -> bool:
    """Whether a running statement says the tool runs something: not "run" as a noun ("the last
    run of the test suite") or a rerun the caller is told to do, not a query kept to reading, and a
    query or statement only when a modifying statement is named ("an INSERT, UPDATE, or DELETE
    query"; "AI queries", "KQL queries" and "a GraphQL query" say nothing of changing)."""
    before = m.string[max(0, m.start() - 20):m.start()].lower()
    if re.search(r"(?:\b(?:the|a|an|last|each|every|this|that|previous|first|next)\s+|re-?)$", before):
        return False
    if _ONLY_READS.search(m.group(1)):
        return False
    return not re.search(r"(?:quer(?:y|ies)|statements?)$", m.group(0), re.IGNORECASE) or bool(
        _MODIFYING.search(m.group(1)))


def _states_a_deletion(m: re.Match[str]) -> bool:
    """Whether a deleting word of a description states what the tool does: not denied ("without
    erasing") and not of a session's object ("revoke its connectionId")."""
    if _NEGATED.search(m.string[:m.start()]):
        return False
    after = {stem(w) for w in split_identifier(" ".join(m.string[m.end():].split()[:3]))}
    return not after & _SESSION_OBJECTS


def _first_paragraph(description: str) -> str:
    """The description up to its first blank line (600 characters at most), with a sentence glued
    to an acronym parted from it ("supports sending SMSThis tool ..." reads "SMS This")."""
    head = re.split(r"\n\s*\n", description.strip()[:600], maxsplit=1)[0]
    return _GLUED.sub(r"\1 ", head)


def _names_a_write(description: str) -> bool:
    """Whether the description's first sentence names a change that is no removal ("change the
    constant ... and store it", "create ... a browser tab"): what a destructive hint may mean
    instead. "Manage" or "handle" names none."""
    words = (stem(w) for w in _WORD.findall(first_sentence(description.strip()[:600]).lower()))
    return any(w in _WRITE_VERBS and w not in _DELETE_VERBS | _GENERIC_VERBS for w in words)


@lru_cache(maxsize=65536)
def name_effects(name: str) -> frozenset[str]:
    """What a tool's name alone says it does to its object, of the side effects (:data:`EFFECTS`):
    ``delete-many`` and ``worker_delete`` delete, ``write_query`` writes, ``list_indexes``
    nothing. Neither the annotations nor the description count: this is the tool's own word for
    what it does, not every effect it may have (:func:`side_effects`)."""
    verb, obj = _verb(_name_words(name))
    return frozenset(_verb_effects(verb, obj)) if verb is not None else frozenset()


_JOINS = _stems("or and")


@lru_cache(maxsize=65536)
def name_reading(name: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The stems of the verbs of a tool's name that change things and of the rest, its object:
    ``git_push`` -> (``push``), (); ``add_comment`` -> (``add``), (``comment``);
    ``get_or_create_label`` -> (``creat``), (``label``): a verb after "or" or "and" is the name's
    too, a reading verb none, and "to", "for", "and" are no object. No verb for a name without one
    (``git_branch``), whose words are then all object."""
    verb, obj = _verb(_name_words(name))
    if verb is None:
        return (), tuple(obj)
    verbs, rest = [verb], []
    i = 0
    while i < len(obj):
        if obj[i] in _JOINS and i + 1 < len(obj) and _is_verb(obj[i + 1]):
            verbs.append(obj[i + 1])
            i += 2
            continue
        if obj[i] not in _PREPOSITIONS | _JOINS:  # "to", "for", "and" name nothing
            rest.append(obj[i])
        i += 1
    return tuple(v for v in verbs if v not in _READ_VERBS), tuple(rest)


def side_effects(tool: ToolDef) -> tuple[str, ...]:
    """The tool's side effects, most dangerous first (:data:`EFFECTS`); empty when it only reads.

    ``/write`` is listed when the tool writes beyond deleting, running or sending (or when it is
    the only effect found)."""
    ann = tool.annotations if isinstance(tool.annotations, dict) else {}
    effects: set[str] = set()
    if ann.get("readOnlyHint") is False or (ann.get("destructiveHint") is True and ann.get("readOnlyHint") is not True):
        effects.add(_W)
    words = _name_words(tool.name)
    verb, obj = _verb(words)
    named: set[str] = set()
    if verb is not None:
        named = _verb_effects(verb, obj)
        if verb in _HTTP_METHODS and split_identifier(tool.name)[:1] == ["api"]:
            named -= {_S}  # "API-post-page" spells a request: POST is its method, no message
        # Annotations first: a server's readOnlyHint outweighs a plain write verb of the name
        # ("trigger", "toggle"), not a verb that deletes, runs or sends, nor a parameter or
        # description that says what else the tool does.
        effects |= named - {_W} if ann.get("readOnlyHint") is True else named
    description = tool.description or ""
    given = _schema_effects(tool.input_schema, verb, obj, description)
    effects |= given
    stated = _description_effects(description, verb is not None)
    if verb in _DELETE_VERBS and _D not in named:
        stated.discard(_D)  # the removal the text states is the name's: of an association
    effects |= stated
    destructive = ann.get("destructiveHint") is True and ann.get("readOnlyHint") is not True
    if destructive and verb is None and stated <= {_W} and _W not in given and not _names_a_write(description):
        effects.add(_D)  # destructive, and neither the name nor the text says how: the more dangerous reading
    if (verb is None or verb not in _READ_VERBS) and _CRUD.search(_first_paragraph(description)):
        effects.add(_D)  # "Includes CRUD operations": deleting among them (a read's "counts of CRUD operations" is not)
    if destructive and verb in _DELETE_VERBS - _DETACHES and set(_head(obj)) & _LINKS:
        effects.add(_D)  # a link the server calls destructive to delete is stored content (a graph's relation)
    if destructive and verb in _ENDS:
        effects.add(_D)  # a destructive cancel or undo removes what it ends: it cannot be restarted
    if verb in _HANDS_FILES and ({stem(w) for w in split_identifier(tool.name)} & _BROWSERS
                                 or _ON_PAGE.search(description[:300])):
        effects.add(_S)  # local files handed to a web page, which can send them anywhere
    if _X in effects and _MAIL_PROTOCOL.search(_first_paragraph(description)):
        effects.add(_S)  # commands of a mail protocol the caller writes: SMTP's deliver mail
    if (stem("draft") in words or verb in _KEEPS) and verb not in _SEND_VERBS:
        effects.discard(_S)  # a draft, or a message saved to a folder, is stored, not sent
    return tuple(e for e in EFFECTS if e in effects)


def merge_capabilities(lexical: Iterable[str], effects: tuple[str, ...], limit: int) -> list[str]:
    """The lexical capabilities with the side effects made exact: a side effect the analysis did
    not find is added (most dangerous first, after the lexical labels that stay), one it found
    that :func:`side_effects` rules out is dropped, ``/read`` when nothing is left."""
    keep = [c for c in lexical if c not in EFFECTS or c in effects]
    out = keep + [e for e in effects if e not in keep]
    for c in reversed(keep):
        if len(out) <= limit:
            break
        if c not in EFFECTS:
            out.remove(c)
    return out or ["/read"]
