"""A task's clauses (:func:`split_clauses`): the pieces of its sentences, joined where a piece
goes on with the one before it and split where a colon introduces an action, and what a clause
asks to be done (:func:`clause_action`). The patterns here also say how a clause reads to the
steps policy (:mod:`jit.selection.steps`): one that forbids something, asks, or states."""

from __future__ import annotations

import re

from ..text import search_tokens
from .retrieve import sentence_pieces
from .step_words import leading_capability

__all__ = ["ASKS", "CONTINUED", "NEGATED", "QUESTION", "STATEMENT", "clause_action", "split_clauses"]

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
#: A piece that goes on with a list of the clause before ("…, password and a submit button").
_LISTED = re.compile(r"^(?:an?)\s", re.I)
#: A word that opens what a clause asks or tells about ("think through whether we should move",
#: "say what each one adds"): the verbs after it are the subject's, not the step's. Not "if" or
#: "when": they open a condition ("if the build is green merge PR #12"), whose step comes after it.
ASKS = re.compile(r"\b(?:whether|how|why|what|which|where|who)\b", re.I)
#: A clause that opens with an article, a pronoun or a preposition says how things are, not what
#: to do ("a submit button", "In the test MongoDB", "We need to test the webhook"): it reads.
STATEMENT = re.compile(r"^(?:a|an|the|in|on|at|from|for|with|i|we|you|it|its|my|our|this|that|there|here)\b", re.I)
#: A piece within a sentence that opens with what the clause before is about rather than with
#: an action: a determiner or a possessive ("…the commits and the diff under src/"), a name, a
#: version or a path said mid-sentence ("…between v1.8.0 and v1.9.0", "…Deno and Node.js 22",
#: "…in src/a.ts and src/b.ts"): the two are one clause.
_NAMES_ON = re.compile(r"^(?:the|its|their|our|my|your|his|her|these|those|both|each|either)\s|"
                       r"^(?!I\b)[A-Z][\w.\-]*(?:\s|$)|^\S*[\d/(]", re.U)
#: A piece that opens by asking something ("…, and which companies are they tied to?").
_ASKS_FIRST = re.compile(r"^(?:what|which|who|whom|whose|where|why|how|when|whether|is|are|does|do|did|was|were)\b",
                         re.I)
#: A clause that goes on with the one before it ("…, in tests/test_x.py").
CONTINUED = re.compile(r"^(?:in|on|at|to|into|for|from|with|by|as|under|inside)\b", re.I)


def split_clauses(text: str) -> list[str]:
    """A task's clauses, made of the pieces :func:`~jit.selection.retrieve.split_task` joins
    (:func:`~jit.selection.retrieve.sentence_pieces`: sentences, then ``,`` / ``and`` / ``then``), but a short piece is a clause of its own when it opens with a verb
    (:data:`~jit.selection.step_words.VERBS`: "… and merge it"); a piece that opens with a preposition, or within
    a sentence with "a" or "an", goes on with the clause before it ("…, in tests/test_x.py", "…, password and a
    submit button"), as does one without a verb of its own after a clause that forbids something ("don't merge it,
    Dana reviews first": why it is forbidden); and one that opens its sentence with where or when the action happens goes on into the piece
    after it ("In the test MongoDB, how many users …?", "When the deploy finishes, delete …")."""
    clauses: list[str] = []
    for pieces in sentence_pieces(text):
        pieces = [part for piece in pieces for part in _at_colons(piece)]
        lead = ""
        for j, piece in enumerate(pieces):
            if lead:
                piece, lead = f"{lead}, {piece}", ""
            elif j == 0 and len(pieces) > 1 and _LEAD_IN.match(piece) and not QUESTION.search(piece):
                lead = piece
                continue
            elif clauses and (CONTINUED.match(piece) or (j and _LISTED.match(piece))
                              or (j and leading_capability(piece) is None and not _ASKS_FIRST.match(piece)
                                  and _NAMES_ON.match(piece))
                              or (j and NEGATED.match(clauses[-1]) and leading_capability(piece) is None)
                              or (len(search_tokens(piece, drop_stopwords=True)) < 2
                                  and leading_capability(piece) is None)):
                clauses[-1] = f"{clauses[-1]}, {piece}"
                continue
            clauses.append(piece)
    return list(dict.fromkeys(clauses))


def _at_colons(piece: str) -> list[str]:
    """A piece split where a colon introduces a verb ("Verify the cache in Redis: list the
    session keys", "Before I commit: review my changes"): what follows is a clause of its own. A
    colon before anything else (a list, a title, ``session:*``) stays in the piece."""
    parts = re.split(r":\s+", piece)
    out = [parts[0]]
    for part in parts[1:]:
        if leading_capability(part) is not None and (leading_capability(out[-1]) is not None
                                                     or _LEAD_IN.match(out[-1])):
            out.append(part)
        else:
            out[-1] = f"{out[-1]}: {part}"
    return out


def clause_action(clause: str) -> str:
    """What a clause asks to be done, after where or when it happens (:data:`_LEAD_IN`: "In the
    ENG space, create a page" creates a page)."""
    lead = _LEAD_IN.match(clause)
    return clause[clause.index(",") + 1:].strip() if lead and "," in clause else clause
