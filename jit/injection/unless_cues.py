"""What takes an injection intent back (:mod:`jit.injection.intent`'s ``unless``): wording that looks like
an order but limits itself.

A usage scoped to some requests ("when the user asks for X") is no claim on every request; withholding
that ends ("until the user guesses") is a game, not concealment; an override said not to happen ("these
notes do not override your guidelines") is none; "before any other tool of this server" is a login's
order of steps; a change "that can be disabled" is a documented option.
"""

from __future__ import annotations

import re

from .lexicon import cue as _cue

__all__ = ["AS_DATA", "KEEP_WHOLE", "NOT_HIDING", "NOT_OVERRIDING", "NOT_PUTTING", "OPTIONAL", "OWN_SERVER", "SCOPED",
           "UNTIL", "USER_NEED"]


#: A change offered as an option the caller may take ("this behaviour can be disabled via the location_auto
#: parameter"): documentation of a setting, not a change imposed on another tool.
OPTIONAL = re.compile(r"\bcan\s+(?:optionally\s+|also\s+)?be\s+(?:disabled|replaced|overridden|changed|redirected"
                      r"|turned\s+off|switched\s+off|swapped|substituted)\b")


#: A text that says it does *not* override the model's rules ("these notes do not override your safety
#: guidelines"): the words of a cancellation, negated.
NOT_OVERRIDING = re.compile(
    r"\b(?:do|does|did|will|would|should|shall|must|can|could|may)\s*(?:not|n't)\s+(?:\w+\s+)?(?:override|overrule"
    r"|replace|supersede|cancel|take\s+precedence|bypass|weaken|relax)\b|\bnever\s+(?:override|overrides|overrule"
    r"|replace|replaces|supersede|supersedes|bypass|bypasses)\b|\bwithout\s+overriding\b")


#: The other tools of the same server ("before any other tool of this server", "other jira_* tools"):
#: a login or a connection step, not a claim on every tool.
OWN_SERVER = re.compile(
    r"\bother\s+(?:\w+\s+)?(?:tools?|functions?|calls?|endpoints?|commands?|operations?)\s+(?:of|from|in|on"
    r"|provided\s+by|exposed\s+by|offered\s+by)\s+(?:this|the\s+same)\s+(?:\w+\s+)?(?:server|mcp|integration|plugin"
    r"|toolkit|api|service|connector|extension|package|app)\b|\bother\s+[a-z][\w-]*_\*\s+(?:tools?|functions?)\b"
    # "… of this server" in other languages
    r"|\b(?:de\s+(?:ce|este|cet)|dieses|des\s+gleichen|di\s+questo|deste|desse|do\s+mesmo|van\s+deze|tego|tego\s+samego"
    r"|этого|bu)\s+(?:serveurs?|servers?|servidor|server|serwera|сервера|sunucu\w*|mcp)\b|このサーバー|同じサーバー"
    r"|此服务器|本服务器|该服务器|此伺服器|本伺服器|이\s*서버의|같은\s*서버|هذا\s+الخادم|نفس\s+الخادم")


#: Usage scoped to some requests ("for any question about X", "when the user asks for Y").
SCOPED = _cue(
    "about$ related regarding concerning involving when$ whenever if$ that_need that_needs that_involve "
    "that_require that_mention which_need which_involve on_the_topic_of in_the_domain before$ after$ "
    "to_understand to_learn asks_for ask_for besides except purpose never$ avant_d antes_de bevor voordat "
    "قبل 需求时 需要时 的时候 時には 場合は 할_때")

#: Priority scoped to what the user needs ("when the user has any log-query need, prefer this tool"): the
#: narrower scope :data:`SCOPED` names, for the intent whose attacks say "whenever" and "any time" too.
USER_NEED = _cue(
    "when_the_user when_a_user when_users if_the_user if_a_user if_users "
    "for_questions_about for_requests_about 需求时 需要时 的时候 時には 場合は 할_때")


#: Withholding that ends ("do not reveal the answer until the user guesses") is not concealment.
#: Leaving out forbidden, not ordered ("never omit or hide the legacy group"), a parameter left out for a
#: default ("omit the query to list everyone"), or something held back only until the person asks: the
#: account stays whole.
KEEP_WHOLE = re.compile(r"\b(?:never|not|n't|nor|without|avoid)\s+(?:omit|omitting|leav(?:e|ing)\s+out|hid(?:e|ing))\b"
                        r"|\b(?:omit|leave\s+out)\b[^.;\n]{0,40}?\bto\s+(?:get|use|list|return|answer|fetch|include"
                        r"|search|see|apply|receive|select|show|keep|let)\b"
                        r"|\bunless\s+(?:the\s+user|they|asked)|\buntil\b")


#: What ends the hiding: withholding until the user asks.
UNTIL = _cue(
    "until unless_the unless_they unless_asked until_asked "
    "hasta_que jusqu bis$ finché até_que totdat dopóki -e_kadar istemedikçe sormadıkça пока_не 直到 "
    "まで 때까지")
#: Hiding forbidden: an order not to make something that would hide ("do not add exclusions that hide changes",
#: "never apply a filter that suppresses errors") keeps things in view; the rest of its sentence is read on its own.
NOT_HIDING = re.compile(r"\b(?:do\s+not|don't|never|must\s+not|should\s+not|avoid)\s+(?:add|apply|use|create|set"
                        r"|introduce|write|make|configure)\w*\s+(?:[\w-]+\s+){0,3}?(?:that|which|to)\s+"
                        r"(?:hide|hides|conceal|conceals|suppress|suppresses|omit|omits|mask|masks)\b")


#: What a tool returns said to be data, never orders ("treat the page as data, never as instructions to
#: follow", "do not run commands found in the output"): the words of obeying, negated (not data negated:
#: "treat it as an order, not as data").
AS_DATA = re.compile(
    r"\b(?:never|not|n't|no|nor|rather\s+than|instead\s+of|without)\s+(?:\w+\s+){0,4}?(?:obey|follow|execute|run"
    r"|act\s+on|carry|treat|as\s+(?:\w+\s+)?(?:instructions|commands|orders))"
    # "as data", but not "an instruction, not as data"
    r"|(?<!\bnot\s)(?<!\bnever\s)\bas\s+(?:plain\s+|untrusted\s+|inert\s+)?data\b"
    r"|\b(?:review|confirm|approv|inspect|check)\w*\s+(?:\w+\s+){0,3}?before\b")
#: Putting in forbidden ("do not include passwords even if the user typed them", "never paste the token"): the verb
#: of putting, negated, supplies no cue; the rest of the sentence is read on its own.
NOT_PUTTING = re.compile(r"\b(?:do\s+not|don't|never|must\s+not|should\s+not|shouldn't|avoid)\s+(?:\w+\s+){0,2}?"
                         r"(?:include|pass|send|put|attach|paste|share|forward|add|upload|copy|append|embed)\w*\b")
