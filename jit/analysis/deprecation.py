"""Whether a tool's own description marks it deprecated.

Servers keep old tools for compatibility and say so in the description, not in any
MCP field: ``@modelcontextprotocol/server-filesystem``'s ``read_file`` reads
"DEPRECATED: Use read_text_file instead." A deprecated tool still works, so it is
not blocked; the policy prefers a current tool that fills the same skeleton slot and
takes logic points off it (``deprecated(T)`` in ``rules/schema.dl``).

Only a *marker* counts: the word opening the description or one of its sentences
("Deprecated: ...", "[DEPRECATED] ...", "**Deprecated.** ..."), a bracketed tag, a
``@deprecated`` doc tag, or a statement about this tool ("This tool is deprecated").
A tool that merely talks about deprecation ("replaces the deprecated v1 endpoint",
"lists deprecated dependencies") is current.
"""

from __future__ import annotations

import re

__all__ = ["is_deprecated"]

#: How much of a description is read: markers sit at the start or in a short note.
_SCAN = 2000

_MARKER = re.compile(
    # "Deprecated: …", "DEPRECATED - …", "⚠️ **Deprecated**. …", "Deprecated, use …", "(Deprecated) …" at the
    # start of the text, a line or a sentence; the word must be followed by a break, not by a noun it modifies.
    r"(?:^|[\n.!?;]\s*)[^\w\s]{0,6}\s*deprecated\b(?!\s+(?!in\b|since\b|as\b|and\b|use\b|please\b)[a-z])"
    # "[DEPRECATED]", "(deprecated)", "@deprecated" anywhere.
    r"|[\[(]\s*deprecated\s*[\])]|@deprecated\b"
    # "This tool is deprecated", "This endpoint has been deprecated", "This is now deprecated".
    r"|\bthis\s+(?:tool|function|method|endpoint|command|operation|api|action)?\s*"
    r"(?:is|has\s+been|was)\s+(?:now\s+)?deprecated\b",
    re.IGNORECASE,
)


def is_deprecated(description: str | None) -> bool:
    """True when ``description`` carries a deprecation marker for the tool itself (module docstring)."""
    if not description:
        return False
    text = description[:_SCAN]
    # Every catalog build asks this of every tool: a substring test first, the pattern only
    # for the few descriptions that hold the word at all.
    if "eprecated" not in text and "EPRECATED" not in text:
        return False
    return _MARKER.search(text) is not None
