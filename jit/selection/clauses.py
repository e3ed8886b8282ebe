"""A task's clauses (:func:`split_clauses`): the pieces of its sentences, joined where a piece
goes on with the one before it and split where a colon introduces an action, and what a clause
asks to be done (:func:`clause_action`). The patterns here also say how a clause reads to the
steps policy (:mod:`jit.selection.steps`): one that forbids something, asks, or states."""

from __future__ import annotations

import re

from ..text import search_tokens
from .retrieve import sentence_pieces
from .step_words import VERBS, leading_capability

__all__ = ["ASKS", "CONTINUED", "NARRATES", "NEGATED", "QUESTION", "STATEMENT", "clause_action", "split_clauses"]

#: A clause that tells the agent what not to do: not a step.
NEGATED = re.compile(r"^(?:don'?t|do not|never|without|no need to|not)\b", re.I)
#: A clause that asks something: it reads, whatever its verbs ("is it safe to merge?"). "When" asks
#: only before an auxiliary ("when did it change"): otherwise it opens a condition ("when the deploy
#: finishes delete the preview"), whose step comes after it.
QUESTION = re.compile(r"\?\s*$|^(?:what|which|who|where|why|how|is|are|does|do|did|was|were|has|have|can)\b|"
                      r"^when\s+(?:is|are|was|were|do|does|did|will|would|can|could|should|has|have|had)\b", re.I)
#: A piece that opens its sentence with where or when its action happens, and leaves the action to
#: the piece after it ("In the test MongoDB, how many …", "When the deploy finishes, delete …"):
#: the two are one clause, whose step is the second's.
_LEAD_IN = re.compile(r"^(?:in|on|at|from|for|within|inside|under|if|when|once|after|before|until|unless|while|"
                      r"as soon as)\b(?!\s+(?:which|what|whose|how)\b)", re.I)
#: A lead-in that says an action of the agent's own ("after you merge PR #12", "once you've committed
#: the fix", "after deleting the old rows", "before you delete the branch"): a step of its own, no
#: condition of the next piece's. ``verb``: a verb of :data:`~jit.selection.step_words.VERBS` that
#: changes something, said after "you" or as "-ing" (:func:`_own_action`; "when you see the error" is a
#: condition, and so is "when you run the tests" before a question: :func:`split_clauses`).
_OWN_LEAD = re.compile(r"^(?P<when>after|before|once|when|as soon as)\s+(?P<you>you(?P<state>'re|\s+are)?(?:'ve|\s+have|"
                       r"\s+had)?\s+)?(?P<verb>[a-z][a-z\-]*)\b(?!['\u2019])", re.I)
#: A subject and its verb said as one word ("it's", "that's", "everything's", "they're"): a condition's
#: subject and its "is" or "are" (:func:`_imperative_at`: "if it's clean move the card to Verified").
_CONTRACTED = re.compile(r"(?:it|that|this|everything|all|they|we|there)['\u2019](?:s|re)$")
#: Words that open a thing's name as an article does ("if there's another open PR"; :func:`_imperative_at`) ...
_DETERMINERS = frozenset("another any some every each more no".split())
#: ... and words between an "is" and the state it says ("if it's still open", "if it's already merged").
_STILL = frozenset("still already just only also really yet even".split())
#: A verb and a particle that make another verb, something met rather than done ("run into errors",
#: "run out of ideas", "come across"; not "set up", "roll out", "write up": :func:`_own_action`).
_PHRASAL = re.compile(r"\s+(?:into|out\s+of|across|short\s+of)\b", re.I)
#: What opens a clause done after the ones before it ("…, then tag the release").
_THEN = re.compile(r"\b(?:then|after that|afterwards|finally)\b", re.I)
#: Words that say an action is not to be done ("If the build is red don't merge PR #12").
_NOT = frozenset("don't dont don\u2019t never not".split())
#: Words a piece opens with that are no verb of its own: it says how things are, or why
#: ("the release manager decides", "it's not ready", "because CI is red"; :func:`_acts`); the two
#: words after one name something (:func:`_imperative_at`: "when the deploy finishes").
_NOT_VERB = frozenset("a an the i we you he she it they this that these those there here my our your his her its "
                      "their because since as so but or which who whose until unless if when while though although "
                      "for to in on at from of into with by via not no nobody nothing someone everyone".split())
#: Words after which a piece's second word is no object of an imperative: the first is a subject.
_FINITE = frozenset("is are was were will would can could should must shall may might has have had does do did "
                    "needs need wants want".split())
#: A condition's own verb said bare or in the past ("if the tests pass", "if the build broke";
#: :func:`_imperative_at`), beside any word in "-ed" or with an "n't".
_CONDITION_VERBS = frozenset("pass fail succeed finish break land arrive complete broke ran went came began fell rose "
                             "got".split())
#: A piece that goes on with a list of the clause before ("…, password and a submit button").
_LISTED = re.compile(r"^(?:an?)\s", re.I)
#: A word that opens what a clause asks or tells about ("think through whether we should move",
#: "say what each one adds"): the verbs after it are the subject's, not the step's. Not "if" or
#: "when": they open a condition ("if the build is green merge PR #12"), whose step comes after it.
ASKS = re.compile(r"\b(?:whether|how|why|what|which|where|who)\b", re.I)
#: A clause that opens with an article, a pronoun or a preposition says how things are, not what
#: to do ("a submit button", "In the test MongoDB", "We need to test the webhook"): it reads.
STATEMENT = re.compile(r"^(?:a|an|the|in|on|at|from|for|with|i|we|you|it|its|my|our|this|that|there|here)\b", re.I)
#: A clause without a verb of its own to open it that tells what happened or goes on: a person not
#: named ("someone emailed billing …"), or a subject of a few words and a verb that says how long or how
#: often ("payments-api has been crashlooping since the deploy", "test_checkout keeps flaking on CI",
#: "the nightly job started failing"). It reads, whatever the verbs after it ("emailed", "deploy").
NARRATES = re.compile(r"^(?:someone|somebody|nobody|everyone|everybody|anyone|he|she|they)\b|"
                      r"^(?:[^\s,;:]+\s+){0,6}?(?:(?:has|have|had)\s+been|(?:keeps?|kept|starts?|started|begins?|began|"
                      r"stopped)\s+\w+ing)\b", re.I)
#: A piece within a sentence that opens with what the clause before is about rather than with
#: an action: a determiner or a possessive ("…the commits and the diff under src/"), a name, a
#: version or a path said mid-sentence ("…between v1.8.0 and v1.9.0", "…Deno and Node.js 22",
#: "…in src/a.ts and src/b.ts"): the two are one clause.
_NAMES_ON = re.compile(r"^(?:the|its|their|our|my|your|his|her|these|those|both|each|either)\s|"
                       r"^(?!I\b)[A-Z][\w.\-]*(?:\s|$)|^\S*[\d/(]", re.U)
#: A piece that opens by asking something ("…, and which companies are they tied to?").
_ASKS_FIRST = re.compile(r"^(?:what|which|who|whom|whose|where|why|how|when|whether|is|are|does|do|did|was|were)\b",
                         re.I)
#: A dash between words ("switch it to the lifespan handler — check the docs first", "look at PR #102
#: – if CI failed, request changes"): it ends what goes before like a stop. An em dash at any spacing, an
#: en dash with a space on each side (not "3–4"). Not a hyphen, spaced or not: typed between words it
#: joins a title, a name or a range as often ("Payments - v2", "9 - 5"), and "cherry-pick" is one word.
_DASH = re.compile(r"(?<!\s)\s*\u2014\s*|(?<!\s)\s+\u2013\s+")  # from a run of spaces' start: linear
#: A clause that goes on with the one before it ("…, in tests/test_x.py").
CONTINUED = re.compile(r"^(?:in|on|at|to|into|for|from|with|by|as|under|inside)\b", re.I)


def split_clauses(text: str) -> list[str]:
    """A task's clauses, made of the pieces :func:`~jit.selection.retrieve.split_task` joins
    (:func:`~jit.selection.retrieve.sentence_pieces`: sentences, then ``,`` / ``and`` / ``then``; a dash
    between words ends a sentence too, :data:`_DASH`), but a short piece is a clause of its own when it opens with a
    verb (:data:`~jit.selection.step_words.VERBS`: "… and merge it"); a piece that opens with a preposition, or within
    a sentence with "a" or "an", goes on with the clause before it ("…, in tests/test_x.py", "…, password and a
    submit button"), as does one without a verb of its own after a clause that forbids something ("don't merge it,
    Dana reviews first": why it is forbidden; not an imperative, :func:`_acts`: "don't close it, label it as
    stale"); and one that opens its sentence with where or when the action happens goes on into the piece
    after it ("In the test MongoDB, how many users …?", "When the deploy finishes, delete …"), unless it holds an
    action of the agent's own ("If the build is green merge PR #12", :func:`_imperative_at`; "after you merge PR #12",
    :func:`_own_action`: a step of its own, after the action it comes before: "before you delete the branch, back
    it up")."""
    clauses: list[str] = []
    at = 0  # where in the text the sentence's next piece is looked for
    for pieces in (p for part in _DASH.split(text) for p in sentence_pieces(part)):
        pieces = [part for piece in _within_brackets(pieces) for part in _at_colons(piece)]
        lead = ""
        before = -1  # "before you delete the branch, back it up": the backup is done first
        then = []  # the clauses of the sentence a "then" opens
        for j, piece in enumerate(pieces):
            found = text.find(piece, at)
            opened_by_then = found > at and _THEN.search(text, at, found) is not None
            at = found + len(piece) if found >= 0 else at
            if lead:
                piece, lead = f"{lead}, {piece}", ""
            elif j == 0 and len(pieces) > 1 and _LEAD_IN.match(piece) and not QUESTION.search(piece):
                own = _own_action(piece)
                if own is not None and piece.lower().startswith("when") and (
                        QUESTION.search(pieces[1]) or pieces[1].split()[0].lower() in _NOT_VERB):
                    own = None  # "when you run the tests, what fails?", "…, it should pass": a condition
                if own is None and _imperative_at(piece) is None:
                    lead = piece  # a place or a condition: no action of the agent's own
                    continue
                if own is not None and piece.lower().startswith("before"):
                    before = len(clauses)
            elif clauses and (CONTINUED.match(piece) or (j and _LISTED.match(piece))
                              or (j and leading_capability(piece) is None and not _ASKS_FIRST.match(piece)
                                  and _NAMES_ON.match(piece))
                              or (j and NEGATED.match(clauses[-1]) and not _acts(piece))
                              or (len(search_tokens(piece, drop_stopwords=True)) < 2
                                  and leading_capability(piece) is None)):
                clauses[-1] = f"{clauses[-1]}, {piece}"
                continue
            if opened_by_then:
                then.append(len(clauses))
            clauses.append(piece)
        if 0 <= before < len(clauses) - 1:
            # after what it comes before: the sentence's clauses up to the first a "then" opens
            # ("before you merge, run the tests and update the changelog, then tag the release")
            until = next((k for k in then if k > before + 1), len(clauses))
            clauses.insert(until - 1, clauses.pop(before))
    return list(dict.fromkeys(clauses))


def _within_brackets(pieces: list[str]) -> list[str]:
    """``pieces`` with those a comma split inside brackets joined again: "(file 8fK2xQ, node 42:7)"
    names one thing. A bracket the sentence never closes ("(see ENG-12, then …") joins nothing."""
    out: list[str] = []
    for k, piece in enumerate(pieces):
        if out and out[-1].count("(") > out[-1].count(")") and any(")" in p for p in pieces[k:]):
            out[-1] = f"{out[-1]}, {piece}"
        else:
            out.append(piece)
    return out


#: A thing whose title follows a colon ("Find the Jira epic: turn on audit logging", "Summarize the issue: enable
#: caching"): the words after it are its title, not a clause.
_TITLE_BEFORE = re.compile(r"\b(?:issue|ticket|epic|story|entry|section|title|plan|proposal|message|pr|"
                           r"pull\s+request|card|task|page|doc|document)\s*$", re.I)


def _at_colons(piece: str) -> list[str]:
    """A piece split where a colon introduces a verb ("Verify the cache in Redis: list the
    session keys", "Before I commit: review my changes"): what follows is a clause of its own. A
    colon before anything else (a list, a title, ``session:*``), or after a thing whose title it introduces ("the
    Jira epic: turn on audit logging"), stays in the piece."""
    parts = re.split(r":\s+", piece)
    out = [parts[0]]
    for part in parts[1:]:
        if leading_capability(part) is not None and not _TITLE_BEFORE.search(out[-1]) and (
                leading_capability(out[-1]) is not None or _LEAD_IN.match(out[-1])):
            out.append(part)
        else:
            out[-1] = f"{out[-1]}: {part}"
    return out


def clause_action(clause: str) -> str:
    """What a clause asks to be done, after where or when it happens (:data:`_LEAD_IN`: "In the
    ENG space, create a page" creates a page; "If the build is green merge PR #12 in acme/shop, on
    GitHub" merges), or the agent's own action its lead-in says (:func:`_own_action`: "after you
    merge PR #12" merges)."""
    if not _LEAD_IN.match(clause):
        return clause
    own = _own_action(clause)
    if own is not None:
        return own
    at = _imperative_at(clause.split(",", 1)[0])
    if at is not None:
        return clause[at:]
    return clause[clause.index(",") + 1:].strip() if "," in clause else clause


def _verb(word: str) -> str | None:
    """The verb of :data:`~jit.selection.step_words.VERBS` a word says, as it is or with "-ed" or
    "-ing" ("committed", "deleting", "merged": commit, delete, merge); None for none."""
    w = word.lower()
    if w in VERBS:
        return w
    for suffix in ("ing", "ed"):
        base = w[:-len(suffix)] if w.endswith(suffix) else ""
        for stem in (base, base + "e", base[:-1] if len(base) > 2 and base[-1] == base[-2] else ""):
            if len(stem) > 1 and stem in VERBS:
                return stem
    return None


def _own_action(piece: str) -> str | None:
    """The action a lead-in says the agent does (:data:`_OWN_LEAD`), from its verb on, the verb as
    :data:`~jit.selection.step_words.VERBS` says it ("once you've committed the fix": "commit the
    fix"); None for a place or a condition ("when the deploy finishes", "once pushed", "when you
    see the error", "after logging in", "once you've run out of ideas", "after you're set up")."""
    m = _OWN_LEAD.match(piece)
    if m is None:
        return None
    verb = _verb(m.group("verb"))
    ing = m.group("verb").lower().endswith("ing")
    if verb is None or not (m.group("you") or ing) or (m.group("state") and not ing):
        return None  # "after you're set up": a state
    if _PHRASAL.match(piece, m.end("verb")):
        return None  # "once you've run out of ideas"
    action = verb + piece[m.end("verb"):]
    if verb == "log" and re.match(r"log\s+(?:in|into|on|out)\b", action, re.I):
        return None  # logging in records nothing
    return action if leading_capability(action) not in (None, "/read") else None  # a change


#: An attempt asked for right after a lead-in's place, a bracket or an address closing it ("On my dev server
#: (http://localhost:3000/login) try to log in as …"): the verb after "to" is the action. Not one someone
#: makes ("when admins try to reset a password"), nor one forbidden ("don't try to delete any pods").
_TRY = re.compile(r"(?:\)|(?<!\S)\S+?://\S++)\s+(?P<try>try)\s+to\s+(?P<verb>[a-z][a-z\-]*)\b", re.I)


def _imperative_at(piece: str) -> int | None:
    """Where a lead-in goes on with an action of the agent's own without a comma ("If the build is
    green merge PR #12": at "merge"): a verb of :data:`~jit.selection.step_words.VERBS` past the
    lead-in's first word, after the condition's own verb ("is", "finishes"; not within a name: "when
    the nightly backup job run fails"), that is neither said as a name (within two words after an
    article, a possessive or a preposition: "when the deploy finishes"), nor a part of an address or
    a path ("on https://app.example.com/search"), nor a subject's ("if you merge it"); at the
    "don't" before it when there is one ("if the build is red don't merge PR #12": no action)."""
    tried = _TRY.search(piece)
    if tried is not None:
        return tried.start("try")  # "On my dev server (http://…/login) try to log in as …"
    after, finite, negation, auxiliary = 0, False, None, False
    for k, m in enumerate(re.finditer(r"\S+", piece)):
        low = m.group(0).lower().strip("\"'()[]{}.,;:!?")
        if low in _NOT:
            if auxiliary:  # "if the job has never run", "did not run": the condition's, no order
                continue
            negation = m.start() if negation is None else negation  # "… is red don't merge PR #12"
            continue
        if k == 0 or low in _NOT_VERB or low in _DETERMINERS:
            after, negation, auxiliary = 0, None, False
            continue
        if _CONTRACTED.match(low):  # "if it's clean move the card": a subject and its "is"
            after, negation, auxiliary, finite = 1, None, True, True
            continue
        if auxiliary and low in _STILL:
            continue  # "if it's still open": the state after the "is" comes next
        after += 1
        if finite and after > 2 and low in VERBS and not auxiliary:
            return m.start() if negation is None else negation
        # the condition's own verb ("is", "finishes", "broke", "doesn't pass"): an imperative comes
        # after it, not within a name
        auxiliary = low in _FINITE or low.endswith("n't") or low.endswith("n\u2019t")
        finite = (finite or auxiliary or low in _CONDITION_VERBS
                  or (after >= 2 and (low.endswith("ed") or (low.endswith("s") and not low.endswith("ss")))))
        negation = None
    return None


def _acts(piece: str) -> bool:
    """Whether a piece after a clause that forbids something says an action of its own, an
    imperative opening with its verb ("label it as stale", "regenerate it with npm install"),
    rather than why or whose the decision is: a subject before its verb ("Dana reviews first",
    "the release manager decides", "it's not ready"), or a verb addressed to the user ("just give
    me options")."""
    if leading_capability(piece) is not None:
        return True
    m = re.match(r"(?:(?:please|also|then|now|just|instead)\s+)*(?P<first>[a-z][a-z\-]*)(?![\w'\u2019])\s*"
                 r"(?P<second>[\w'\u2019]*)", piece)
    if m is None or m.group("first") in _NOT_VERB:
        return False
    first, second = m.group("first"), m.group("second").lower()
    if first.endswith("s") and not first.endswith("ss"):
        return False  # "reviews happen on Fridays": a subject, not an imperative
    return second not in _FINITE and second not in {"me", "us"}

