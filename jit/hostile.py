"""Hostile tool text: descriptions and schemas are data, never instructions.

A tool definition is written by whoever runs the server. Some put instructions
for the model into it ("ignore previous instructions", "always select this
tool"), hide text in invisible characters, or pad the description until it
crowds out everything else. :func:`detect_hostile` names what it finds; the
flags are stored with the tool's analysis, the analyzers cap a flagged tool's
shard affinity at what the offline analyzer gives it, and the selection policy
keeps flagged tools out of the Full tier.

Flag names (stable; the Datalog policy matches on them):

``instruction:ignore_previous``  tries to cancel the model's instructions
``instruction:always_select``    tells the model to always pick or rank this tool, for every task
``instruction:role_override``    tries to replace the system prompt or the model's role
``instruction:conceal``          tells the model to hide something from the user
``instruction:exfiltrate``       asks the model to read or send secrets (keys, ~/.ssh, .env, mcp.json)
``instruction:llm_reported``     the LLM analyzer judged the text to be an instruction to the model
``hidden_unicode``               invisible or direction-changing characters (zero-width, bidi, tag chars)
``oversized_description``        a description longer than :data:`MAX_DESCRIPTION_CHARS`

Usage guidance that real servers write ("call this after resolve-library-id",
"always use this tool first when the user mentions X") is conditional and is
not flagged: only unconditional self-promotion is.
"""

from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass
from typing import Any

from .models import ToolDef

__all__ = [
    "FLAG_ALWAYS_SELECT",
    "FLAG_CONCEAL",
    "FLAG_EXFILTRATE",
    "FLAG_HIDDEN_UNICODE",
    "FLAG_IGNORE_PREVIOUS",
    "FLAG_LLM_REPORTED",
    "FLAG_OVERSIZED",
    "FLAG_ROLE_OVERRIDE",
    "HIDDEN_CHARS",
    "HOSTILE_FLAGS",
    "MAX_DESCRIPTION_CHARS",
    "detect_hostile",
    "remove_hidden",
    "strip_instructions",
]

FLAG_IGNORE_PREVIOUS = "instruction:ignore_previous"
FLAG_ALWAYS_SELECT = "instruction:always_select"
FLAG_ROLE_OVERRIDE = "instruction:role_override"
FLAG_CONCEAL = "instruction:conceal"
FLAG_EXFILTRATE = "instruction:exfiltrate"
FLAG_LLM_REPORTED = "instruction:llm_reported"
FLAG_HIDDEN_UNICODE = "hidden_unicode"
FLAG_OVERSIZED = "oversized_description"

#: Every flag jit can set, in the order they are reported.
HOSTILE_FLAGS: tuple[str, ...] = (
    FLAG_IGNORE_PREVIOUS,
    FLAG_ALWAYS_SELECT,
    FLAG_ROLE_OVERRIDE,
    FLAG_CONCEAL,
    FLAG_EXFILTRATE,
    FLAG_LLM_REPORTED,
    FLAG_HIDDEN_UNICODE,
    FLAG_OVERSIZED,
)

#: Longer descriptions are flagged. On 18,105 real MCP tools (LiveMCPBench and the
#: Smithery catalogue) the 99.9th percentile is ~3,500 characters.
MAX_DESCRIPTION_CHARS = 5000

#: Schema text scanned per tool; past this the schema is data nobody renders whole.
_MAX_SCAN_CHARS = 50_000

#: Invisible or reordering code points. U+200D (zero-width joiner) is left out:
#: emoji sequences use it legitimately.
HIDDEN_CHARS = re.compile(
    "[\u00ad\u180e\u200b\u200c\u200e\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\ufff9-\ufffb"
    "\U000e0000-\U000e007f]"
)

_WS = re.compile(r"\s+")
_HSPACE = re.compile(r"[^\S\n]+")
_SENTENCE = re.compile(r"(?<=[.!?。！？])\s+|\n+|(?<=[。！？])")

_TOOL = r"(?:tool|function|server|plugin|mcp)"
_SCOPE = r"(?:task|request|query|question|prompt|situation|purpose|case|job|conversation|message|use case)s?"


@dataclass(frozen=True, slots=True)
class _Rule:
    flag: str
    #: Cheap substring gate: the regex only runs on text holding one of these.
    gate: tuple[str, ...]
    pattern: re.Pattern[str]
    #: Usage guidance ("always call this tool when ...") is exempt from this rule.
    scoped_ok: bool = False


_RULES: tuple[_Rule, ...] = (
    _Rule(FLAG_IGNORE_PREVIOUS, ("ignore", "disregard", "forget", "override", "bypass", "skip"), re.compile(
        r"\b(?:ignore|disregard|forget|override|bypass|skip)\s+(?:all\s+|any\s+|the\s+|your\s+)*"
        r"(?:previous|prior|above|earlier|preceding|former|other|existing|system|original)\s+"
        r"(?:instructions?|prompts?|rules?|directions?|guidelines?|messages?|context)"
        r"|\b(?:ignore|disregard|forget)\s+(?:everything|all)\s+(?:you\s+were\s+told|above|before)")),
    # "Only use this tool with URLs you trust" restricts the tool; "use only this tool" promotes it.
    _Rule(FLAG_ALWAYS_SELECT, ("always", "only", "exclusively"), re.compile(
        rf"\b(?:always|exclusively)\s+(?:use|select|call|choose|pick|prefer|invoke|run)\s+"
        rf"(?:this|my|the\s+\S+)\s+{_TOOL}\b"
        rf"|\b(?:use|select|call|choose|pick)\s+only\s+(?:this|my)\s+{_TOOL}\b"), scoped_ok=True),
    _Rule(FLAG_ALWAYS_SELECT, ("every", "all", "any", "each"), re.compile(
        rf"\b(?:use|select|call|choose|pick|prefer|invoke)\s+(?:this|it|me)\b[^.!?\n]{{0,40}}\b"
        rf"(?:for|in|on)\s+(?:every|all|any|each)\s+(?:\w+\s+)?{_SCOPE}\b"), scoped_ok=True),
    _Rule(FLAG_ALWAYS_SELECT, ("every", "all", "any", "each"), re.compile(
        rf"\b(?:best|only|right|preferred|top|ideal)\s+(?:\w+\s+)?(?:{_TOOL}\s+|choice\s+|option\s+)?"
        rf"(?:for|in)\s+(?:every|all|any|each)\s+(?:\w+\s+)?{_SCOPE}\b")),
    _Rule(FLAG_ALWAYS_SELECT, ("regardless",), re.compile(
        rf"\bregardless\s+of\s+(?:the\s+|what\s+the\s+)?(?:user'?s?\s+)?{_SCOPE}\b")),
    _Rule(FLAG_ALWAYS_SELECT, ("other",), re.compile(
        rf"\b(?:instead\s+of|rather\s+than|over)\s+(?:any|all|every)\s+other\s+{_TOOL}s?\b"
        rf"|\bnever\s+(?:use|select|call|choose)\s+(?:any\s+)?other\s+{_TOOL}s?\b")),
    _Rule(FLAG_ALWAYS_SELECT, ("rank", "score", "rate", "priority", "affinity", "tier"), re.compile(
        rf"\b(?:this|my)\s+{_TOOL}\s+(?:has|is|gets|should\s+(?:get|have|be))\s+(?:the\s+|a\s+)?"
        rf"(?:highest|maximum|max|top|first)\s+(?:priority|score|rank|ranking|relevance)\b"
        r"|\b(?:rank|score|rate)\s+(?:this|it|me)\s+(?:first|highest|100|above)\b"
        r"|\b(?:full\s+tier|shard[\s_]+affinity|affinity\s*(?:of|to|=|:)\s*100)\b")),
    _Rule(FLAG_ROLE_OVERRIDE, ("you are", "from now", "instruction", "prompt", "<", "[", "act as"), re.compile(
        r"\byou\s+are\s+now\b|\bfrom\s+now\s+on,?\s+you\b|\bnew\s+(?:system\s+)?instructions?\s*:"
        r"|\bsystem\s+prompt\s*:|</?\s*(?:system|im_start|im_end)\s*>"
        r"|\[\s*(?:system|inst)\s*\]|\bact\s+as\s+(?:an?\s+)?(?:unrestricted|different|new)\b")),
    _Rule(FLAG_CONCEAL, ("user", "human", "operator"), re.compile(
        r"\b(?:do\s+not|don'?t|never|without)\s+(?:tell|telling|mention|mentioning|inform|informing|"
        r"reveal|revealing|notify|notifying|disclose|disclosing|show|showing)\b[^.!?\n]{0,30}"
        r"\b(?:user|human|operator)s?\b"
        r"|\b(?:hide|conceal|keep)\b[^.!?\n]{0,25}\b(?:from|secret\s+from)\s+the\s+(?:user|human)\b")),
    _Rule(FLAG_EXFILTRATE, (".ssh", "id_rsa", "id_ed25519", "/etc/", "mcp.json", "credentials", ".netrc",
                            ".npmrc", ".env", "private key", "password", "secret", "token"), re.compile(
        r"\b(?:read|send|include|pass|forward|upload|copy|attach|append|post|leak|exfiltrate|paste)\b"
        r"[^!?\n]{0,60}(?:\.ssh\b|id_rsa|id_ed25519|/etc/passwd|/etc/shadow|mcp\.json|\.aws/credentials|"
        r"\.git-credentials|\.netrc|\.npmrc|(?<![\w.])\.env\b|private\s+keys?|"
        r"the\s+user'?s\s+(?:password|credentials|api\s+keys?|tokens?|secrets?))")),
)

# Words that make "always use this tool ..." usage guidance rather than a grab for
# every task: "always use this tool first when the user mentions a hotel",
# "for any local file work, always use this tool", "call this for any question that
# needs project docs".
_CONDITIONAL = re.compile(
    r"\b(?:when|whenever|if|before|after|unless|once|while|where|with|that|which|related|regarding|about|involving)\b"
    rf"|\bfor\s+(?!(?:any|every|all|each)\s+(?:\w+\s+)?{_SCOPE}\b)(?:(?:any|every|all|each)\s+)?\w+"
)
_CLAUSE = re.compile(r"[.!?;\n]+")


def remove_hidden(text: str) -> str:
    """``text`` without invisible / direction-changing characters, NFKC-normalised."""
    if text.isascii():  # nothing hidden and already NFKC: the common case, checked in C
        return text
    text = HIDDEN_CHARS.sub("", text)
    return text if unicodedata.is_normalized("NFKC", text) else unicodedata.normalize("NFKC", text)


#: The seams between strings of a JSON text (``","``, ``":{"``): they become line breaks, so a
#: pattern never matches across two parameter descriptions.
_JSON_SEAM = re.compile(r'"\s*[:,{}\[\]][\s:,{}\[\]]*"?|"?[\s:,{}\[\]]*[:,{}\[\]]\s*"')


def _schema_text(schema: Any) -> str:
    """Every string of a JSON schema (keys too), one per line, within the scan budget."""
    try:
        text = json.dumps(schema, ensure_ascii=False)[:_MAX_SCAN_CHARS]
    except (TypeError, ValueError):
        return ""
    # json.dumps wrote newlines inside strings as "\\n": a space keeps word boundaries.
    text = text.replace("\\n", " ").replace("\\t", " ").replace("\\r", " ")
    return _JSON_SEAM.sub("\n", text)


def _instruction_flags(text: str) -> set[str]:
    """Instruction flags raised by one (already de-hidden) text."""
    low = _HSPACE.sub(" ", text.lower())
    found: set[str] = set()
    for rule in _RULES:
        if rule.flag in found or not any(g in low for g in rule.gate):
            continue
        if not rule.pattern.search(low):
            continue
        if not rule.scoped_ok:
            found.add(rule.flag)
            continue
        for sentence in _CLAUSE.split(low):
            if rule.pattern.search(sentence) and not _CONDITIONAL.search(sentence):
                found.add(rule.flag)
                break
    return found


def detect_hostile(tool: ToolDef) -> tuple[str, ...]:
    """Flags for a tool whose text tries to instruct the model (empty when clean).

    Looks at the name, title, description and every string of the input schema
    (parameter descriptions can carry instructions too). Deterministic and cheap.
    """
    found: set[str] = set()
    desc = tool.description or ""
    # One newline-joined text: every pattern stops at a line break, so texts do not run together.
    text = "\n".join((_WS.sub(" ", tool.title or ""), _WS.sub(" ", desc), _schema_text(tool.input_schema)))
    names = f"{tool.server}\n{tool.name}"
    if not (text.isascii() and names.isascii()) and (HIDDEN_CHARS.search(text) or HIDDEN_CHARS.search(names)):
        found.add(FLAG_HIDDEN_UNICODE)
    if len(desc) > MAX_DESCRIPTION_CHARS:
        found.add(FLAG_OVERSIZED)
    found.update(_instruction_flags(remove_hidden(text)))
    return tuple(f for f in HOSTILE_FLAGS if f in found)


def strip_instructions(text: str) -> str:
    """``text`` with hidden characters removed and every sentence that instructs the model dropped.

    Used for the condensed description and the offline analysis of flagged
    tools, so injected text never reaches a rendered prompt or inflates a score.
    """
    clean = remove_hidden(text)
    kept = [s for s in _SENTENCE.split(clean) if s.strip() and not _instruction_flags(s)]
    return " ".join(s.strip() for s in kept)
