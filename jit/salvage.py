"""Recovering a server message the SDK transport could not parse, so one bad field costs one item.

The SDK parses each incoming line (stdio), SSE event or HTTP body strictly.
One lone surrogate escape (``"\\ud800"``), nesting deeper than the parser's
limit (~250 levels), an integer of more than 4,300 digits or a ``result`` that is not an object fails the whole
message: over stdio and SSE the transport hands up an exception and the
request waits out its timeout; over Streamable HTTP it fails at once as an
opaque parse error. Either way every good tool of the listing is lost.

:func:`salvage` takes the raw text of such a message and returns what jit
delivers instead:

* a **repaired message** when the text is JSON-RPC. For a listing response
  (``tools/list`` and friends) each value that cannot be kept becomes a
  *marker* string, so the one item holding it is dropped later with a precise
  reason (:func:`marker_reason`; :func:`jit.client.tooldefs.convert_tools`) and its
  siblings survive. For any other response (a tool call's result) lone
  surrogates become U+FFFD, the Unicode replacement the standard prescribes,
  because the call already ran and its answer is still worth having;
* a **JSON-RPC error response** for the request's id when the message cannot be
  repaired (a ``result`` that is not an object, a call result nested too deep),
  so the waiting request fails at once with the reason instead of timing out;
* the same **error response** when the JSON itself is broken (cut short, Python's
  quotes) but its top-level ``"id"`` names a request jit is waiting for;
  a complete message followed by junk on its line is read as the message;
* ``None`` when the text is not JSON-RPC at all (banner noise stays noise).

Markers start with a per-process random token a server cannot guess, so a
server cannot forge one to make jit drop another server's tool (it could only
drop its own).
"""

from __future__ import annotations

import json
import logging
import re
import secrets
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import mcp_types as types

__all__ = [
    "LISTING_METHODS",
    "MAX_SALVAGE_BYTES",
    "SALVAGE_MAX_DEPTH",
    "find_marker",
    "marker_reason",
    "salvage",
    "too_large",
    "too_large_error",
]

#: Responses whose result is a list of independent items (one bad item must not cost the rest).
LISTING_METHODS = frozenset({"tools/list", "resources/list", "resources/templates/list", "prompts/list"})

#: Containers nested deeper than this (counted from the message root) are cut out while parsing.
#: A tool schema is refused far earlier (:data:`jit.schemas.MAX_SCHEMA_DEPTH`); this bound only
#: keeps the tolerant parse itself safe from a depth-5000 message.
SALVAGE_MAX_DEPTH = 128

#: Larger messages are not salvaged (their request fails with the transport's own error).
MAX_SALVAGE_BYTES = 32 * 1024 * 1024

log = logging.getLogger(__name__)

MethodOf = Callable[[Any], "str | None"]

_MARK = "\ufdd0jit-salvage-" + secrets.token_hex(8) + ":"
_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.S)
_SURROGATE = re.compile("[\ud800-\udfff]")


def marker_reason(text: str) -> str | None:
    """Why salvage replaced this value (``text`` is a marker), else None."""
    return text[len(_MARK):] if text.startswith(_MARK) else None


def _marker(reason: str) -> str:
    return _MARK + reason


def _cut_deep(text: str, max_depth: int) -> str | None:
    """``text`` with every container deeper than ``max_depth`` replaced by a marker string.

    A scan over string literals and brackets only (C-speed regex), so it is
    safe at any depth. None if the brackets do not balance (not JSON).
    """
    depth, start, spans = 0, -1, []
    for m in _TOKENS.finditer(text):
        tok = m.group()
        if tok[0] == '"':
            continue
        if tok in "[{":
            depth += 1
            if depth == max_depth + 1:
                start = m.start()
        else:
            if depth == max_depth + 1:
                spans.append((start, m.end()))
            depth -= 1
            if depth < 0:
                return None
    if depth != 0:
        return None
    if not spans:
        return text
    stub = json.dumps(_marker(f"nested more than {max_depth} levels deep; cut out by jit"))
    pieces, last = [], 0
    for a, b in spans:
        pieces += [text[last:a], stub]
        last = b
    pieces.append(text[last:])
    return "".join(pieces)


def _int(text: str) -> int | str:
    """An integer literal, or a marker for one longer than Python (like the SDK's parser) reads: 4,300 digits."""
    try:
        return int(text)
    except ValueError:
        return _marker(f"holds an integer of {len(text.lstrip('-')):,} digits, more than JSON parsers read; "
                       "cut out by jit")


def _describe_surrogate(text: str) -> str:
    m = _SURROGATE.search(text)
    assert m is not None
    return f"contains a lone surrogate U+{ord(m.group()):04X} (not valid Unicode) at character {m.start()}"


def _clean(value: Any, listing: bool) -> Any:
    """Lone surrogates in keys and strings: marked (listings) or replaced by U+FFFD (other results)."""

    def fix(text: str) -> str:
        if not _SURROGATE.search(text):
            return text
        if listing:
            return _marker(_describe_surrogate(text))
        return _SURROGATE.sub("\ufffd", text)

    root = [value]
    stack: list[tuple[Any, Any]] = [(root, 0)]
    while stack:
        parent, key = stack.pop()
        item = parent[key]
        if isinstance(item, str):
            parent[key] = fix(item)
        elif isinstance(item, list):
            stack.extend((item, i) for i in range(len(item)))
        elif isinstance(item, dict):
            if any(_SURROGATE.search(k) for k in item):
                fixed: dict[str, Any] = {}
                for n, (k, v) in enumerate(item.items()):
                    k2 = fix(k)
                    fixed[k2 if k2 not in fixed else f"{k2} #{n}"] = v
                parent[key] = item = fixed
            stack.extend((item, k) for k in item)
    return root[0]


def find_marker(value: Any) -> str | None:
    """Why salvage cut something out of ``value`` (any JSON value), or None if it did not."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if item.startswith(_MARK):
                return item[len(_MARK):]
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return None


def _types() -> ModuleType:
    """The SDK's message models, imported when a message is built: loading them takes
    0.14 s, which a process that only checks schemas (``jit compile``) should not pay."""
    import mcp_types

    return mcp_types


def _error(rid: Any, message: str) -> types.JSONRPCError:
    types = _types()
    return types.JSONRPCError(jsonrpc="2.0", id=rid, error=types.ErrorData(code=types.PARSE_ERROR, message=message))


def _kind(value: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}.get(
        type(value), "number")


def salvage(text: str | bytes, method_of: MethodOf) -> types.JSONRPCMessage | None:
    """What to deliver for one message the SDK could not parse (see the module docstring).

    ``method_of(id)`` names the method of the request a response answers (None if unknown).
    """
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    if len(text) > MAX_SALVAGE_BYTES:
        return None
    cut = _cut_deep(text, SALVAGE_MAX_DEPTH)
    if cut is None:
        return _unparsable(text, "cut short or unbalanced: its brackets do not close", method_of)
    # strict=False: raw control characters inside strings are harmless once parsed.
    decoder = json.JSONDecoder(strict=False, parse_int=_int)
    try:
        obj, end = decoder.raw_decode(cut, len(cut) - len(cut.lstrip()))
    except (ValueError, RecursionError) as exc:
        return _unparsable(text, str(exc).splitlines()[0] if str(exc) else type(exc).__name__, method_of)
    if cut[end:].strip():  # a whole message, then junk on the same line: the message is what was meant
        log.info("ignored %d characters after a server message", len(cut) - end)
    return salvage_value(obj, method_of)


def _unparsable(text: str, problem: str, method_of: MethodOf) -> types.JSONRPCMessage | None:
    """An error response for the request this text was meant to answer, if it says which one.

    Text that is not JSON at all (a banner a server printed on stdout) is noise and
    stays noise. But a response whose JSON is broken (cut short, Python's quotes,
    a stray character) still shows its top-level ``"id"``: the request waiting for
    it fails at once with the reason instead of waiting out its timeout. Only a
    request jit is waiting for is answered, and only by an object with top-level
    ``"jsonrpc"`` and ``"result"`` or ``"error"`` keys and no ``"method"``.
    """
    keys = _top_level_keys(text)
    if keys is None or "jsonrpc" not in keys or "method" in keys or not ({"result", "error"} & keys.keys()):
        return None
    rid = keys.get("id")
    if not isinstance(rid, str | int) or isinstance(rid, bool):
        return None
    method = method_of(rid)
    if method is None:
        return None  # answers nothing jit is waiting for
    return _error(rid, f"invalid {method} response from the server: not valid JSON ({problem})")


_KEY_COLON = re.compile(r"\s*:")
_ID_VALUE = re.compile(r'\s*:\s*(-?(?:0|[1-9]\d*)(?![\d.eE])|"[^"\\]*(?:\\.[^"\\]*)*")')


def _top_level_keys(text: str) -> dict[str, Any] | None:
    """The keys of the JSON object ``text`` opens, as far as it can be read (``"id"``: with its
    value when that is a number or a string, other keys: None). None unless it opens an object."""
    start = len(text) - len(text.lstrip())
    if not text.startswith("{", start):
        return None
    keys: dict[str, Any] = {}
    depth = 0
    for m in _TOKENS.finditer(text, start):
        tok = m.group()
        if tok[0] == '"':
            if depth == 1 and _KEY_COLON.match(text, m.end()):
                try:
                    key = json.loads(tok, strict=False)
                except ValueError:
                    continue
                value = None
                if key == "id" and (v := _ID_VALUE.match(text, m.end())):
                    try:
                        value = json.loads(v.group(1), strict=False)
                    except ValueError:
                        value = None
                keys.setdefault(key, value)
            continue
        depth += 1 if tok in "[{" else -1
        if depth <= 0:
            break
    return keys


#: A top-level ``"id"`` at the end of a message (where the TypeScript SDK writes it), perhaps
#: followed by ``"jsonrpc"``: only the outermost object ends with a single ``}``.
_TAIL_ID = re.compile(r'"id"\s*:\s*(-?(?:0|[1-9]\d*)|"[^"\\]*(?:\\.[^"\\]*)*")\s*(?:,\s*"jsonrpc"\s*:\s*"2\.0"\s*)?\}\s*$')


def too_large_error(rid: Any, method: str | None, size: str) -> types.JSONRPCError:
    """The error jit delivers for the request ``rid`` in place of a response too large to read
    (``size``: ``"47.7 MiB, over jit's limit of 32 MiB for one message"``)."""
    return _error(rid, f"the {method + ' ' if method else ''}response was {size}; jit did not keep it")


def too_large(head: str, tail: str, size: str, method_of: MethodOf, waiting: Callable[[], list[Any]]
              ) -> types.JSONRPCError | None:
    """What to deliver for a message from a server too large to read, of which only its first and
    last KiB (``head``, ``tail``) were kept: an error for the request it answers, so the request
    fails at once with ``size`` instead of waiting out its timeout.

    The request is the response's top-level ``"id"`` (read in the head, or at the very end of the
    tail), else the one request jit is waiting for, if only one. None for a request or
    notification from the server, or a response that cannot be placed (noise, as for salvage).
    """
    keys = _top_level_keys(head)
    if keys is None or "method" in keys or not ({"result", "error"} & keys.keys()):
        return None
    rid = keys.get("id")
    if rid is None and (m := _TAIL_ID.search(tail)):
        rid = json.loads(m.group(1), strict=False)
    if rid is None:
        pending = waiting()
        rid = pending[0] if len(pending) == 1 else None
    if not isinstance(rid, str | int) or isinstance(rid, bool):
        return None
    method = method_of(rid)
    return None if method is None else too_large_error(rid, method, size)


def salvage_value(obj: Any, method_of: MethodOf) -> types.JSONRPCMessage | None:
    """:func:`salvage` for a message already parsed (the SDK's structural rejections hand up the dict)."""
    if not isinstance(obj, dict) or obj.get("jsonrpc") != "2.0":
        return None
    types = _types()
    rid = obj.get("id")
    is_response = ("result" in obj or "error" in obj) and "method" not in obj
    if not is_response or not isinstance(rid, str | int) or isinstance(rid, bool):
        return None  # a request or notification jit cannot use, or nothing to answer: noise
    method = method_of(rid)
    listing = method in LISTING_METHODS
    what = f"{method} response" if method else "response"
    if "error" in obj:
        err = obj["error"] if isinstance(obj["error"], dict) else {}
        message = err.get("message") if isinstance(err.get("message"), str) else "(no message)"
        code = err.get("code") if isinstance(err.get("code"), int) else types.INTERNAL_ERROR
        return types.JSONRPCError(jsonrpc="2.0", id=rid, error=types.ErrorData(
            code=code, message=_clean(message, listing=False)))
    result = obj["result"]
    if not isinstance(result, dict):
        return _error(rid, f"invalid {what} from the server: result is a JSON {_kind(result)}, not an object")
    result = _clean(result, listing)
    why = None if listing else find_marker(result)
    if why:
        return _error(rid, f"invalid {what} from the server: {why.removesuffix('; cut out by jit')}")
    try:
        return types.JSONRPCResponse(jsonrpc="2.0", id=rid, result=result)
    except ValueError as exc:
        return _error(rid, f"invalid {what} from the server: {str(exc).splitlines()[0]}")
