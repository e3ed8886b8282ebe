"""Untrusted text made safe to show: the one home of jit's output escaping.

Tool names, titles and descriptions, server errors and stderr tails, and the
names and versions a server reports are written by whoever runs that server.
Printed raw, an ``ESC [`` sequence in a description can recolour, move the
cursor, clear the screen, set the window title or plant a hyperlink; a NUL or
a carriage return can hide text; a bidi override (U+202E) or a zero-width
character can make the text read differently from what it is; and ``[bold]``
or ``[link=…]`` would be interpreted by rich's markup. Every human-facing output
of jit passes such text through this module:

* :func:`visible` replaces every control, format and invisible character with a
  visible escape (``\\x1b``, ``\\x00``, ``\\u202e``), keeping newlines and tabs
  where the layout uses them;
* :func:`markup` is :func:`visible` plus rich markup escaping, for text placed
  inside a rich markup string (tables, panels, ``console.print``);
* :func:`json_text` is :func:`json.dumps` that writes those same characters as
  JSON ``\\uXXXX`` escapes: the data parse back exactly, the bytes on the
  terminal are harmless (``ensure_ascii=False`` alone leaves DEL, C1 controls,
  bidi overrides and lone surrogates raw);
* :class:`VisibleLogFormatter` does the same for log records (``jit serve``
  writes its logs to stderr, and they quote upstream errors).

What counts as unsafe (:func:`unsafe`): Unicode categories Cc (C0 controls,
DEL, C1 controls), Cf (format: bidi embeddings/overrides/isolates, zero-width
space/joiners, word joiner, soft hyphen, BOM, tag characters), Cs (lone
surrogates, which would also fail to encode), Zl/Zp (line and paragraph
separators), the variation selectors that carry no presentation meaning (all
but U+FE0E/U+FE0F, which emoji use), and the Hangul fillers that render as
blank letters.
"""

from __future__ import annotations

import json
import logging
import re
import unicodedata
from typing import Any

__all__ = ["VisibleLogFormatter", "json_text", "log_to_stderr", "markup", "unsafe", "visible"]

_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
#: Not in those categories, yet invisible: variation selectors other than the text/emoji
#: presentation pair (VS1-14, VS17-256 carry hidden payloads), the combining grapheme
#: joiner, the Mongolian free variation selectors, and letters that render as blanks.
_INVISIBLE = frozenset(
    [*range(0xFE00, 0xFE0E), *range(0xE0100, 0xE01F0), 0x034F, *range(0x180B, 0x1810),
     0x115F, 0x1160, 0x3164, 0xFFA0]
)
#: ASCII controls, DEL and everything beyond ASCII: the only characters :func:`unsafe` can be true for.
_CANDIDATE = re.compile("[\x00-\x1f\x7f-\U0010ffff]")
#: Fast path: text made only of these is returned unchanged without a per-character scan.
_PLAIN_ASCII = re.compile(r"[\x20-\x7e\n\t]*")


def unsafe(ch: str) -> bool:
    """True if ``ch`` (one character) must not reach a terminal or log as is."""
    return unicodedata.category(ch) in _UNSAFE_CATEGORIES or ord(ch) in _INVISIBLE


def _escape_char(ch: str) -> str:
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def visible(text: Any, *, layout: bool = True) -> str:
    """``text`` with every unsafe character replaced by a visible escape such as ``\\x1b``.

    With ``layout`` (the default) newlines and tabs are kept, and a CRLF line
    ending becomes a newline, for output whose layout uses them (a description
    panel, a tool result); without it they are escaped too, for one-line output.
    Anything not a ``str`` is shown through ``str()`` (``None`` as ``""``).
    """
    if text is None:
        return ""
    if not isinstance(text, str):
        text = str(text)
    if text.isascii() and _PLAIN_ASCII.fullmatch(text) and (layout or ("\n" not in text and "\t" not in text)):
        return text
    if layout:
        text = text.replace("\r\n", "\n")
    keep = "\n\t" if layout else ""

    def one(match: re.Match[str]) -> str:
        ch = match.group()
        return ch if ch in keep or not unsafe(ch) else _escape_char(ch)

    return _CANDIDATE.sub(one, text)


def markup(text: Any, *, layout: bool = True) -> str:
    """:func:`visible` text escaped for rich markup: ``[bold]`` prints literally."""
    from rich.markup import escape

    return escape(visible(text, layout=layout))


def _json_escape(match: re.Match[str]) -> str:
    ch = match.group()
    if not unsafe(ch):
        return ch
    code = ord(ch)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000  # a JSON escape outside the BMP is a UTF-16 surrogate pair
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


#: DEL and everything beyond ASCII: json.dumps escapes the other ASCII controls itself.
_UNSAFE_CANDIDATE = re.compile(r"[^\x00-\x7e]")


def json_text(data: Any, *, indent: int | None = 2) -> str:
    """``json.dumps(data)`` with unsafe characters written as ``\\uXXXX`` escapes.

    Other non-ASCII text stays readable (``ensure_ascii=False``); the result parses
    back to exactly ``data``. Characters outside strings are JSON punctuation, so
    the substitution only ever touches string contents.
    """
    text = json.dumps(data, indent=indent, ensure_ascii=False, default=str)
    if text.isascii() and "\x7f" not in text:
        return text  # json.dumps already escaped every other ASCII control character
    return _UNSAFE_CANDIDATE.sub(_json_escape, text)


class VisibleLogFormatter(logging.Formatter):
    """A formatter whose output (message, arguments and traceback) carries no unsafe character.

    Log lines quote what upstream servers sent (errors, stderr tails, tool names);
    each line keeps its newlines, everything else unsafe is escaped.
    """

    def format(self, record: logging.LogRecord) -> str:
        return visible(super().format(record))


def log_to_stderr(level: int = logging.WARNING) -> None:
    """Send jit's process logs to stderr through :class:`VisibleLogFormatter`.

    Called by ``jit serve`` before the MCP SDK configures logging: the SDK's
    ``logging.basicConfig`` then finds this handler in place and adds none of its
    own, so no log line (upstream errors, stderr tails, tool names) reaches the
    terminal raw. Plain lines, one record each, rather than the SDK's wrapped
    rich layout, so a log file can be grepped.
    """
    import sys

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(VisibleLogFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=level, handlers=[handler])
