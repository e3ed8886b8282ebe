"""What ``jit serve --stdio`` accepts off the wire, what it answers to the rest, and how it writes.

The SDK's stdio transport hands a line that fails to validate to the server as an
exception, which is logged and dropped: the client is never answered and waits
forever. Over Streamable HTTP the same inputs are answered ``-32700``/``-32600``.
jit owns its stdio layer, so every line is decided here first:

* blank lines are skipped (keep-alives some clients send);
* a line over :data:`~jit.lines.MAX_LINE_BYTES` → ``-32600`` (its bytes were never kept);
* text that is not JSON, or nested deeper than the SDK's parser allows → ``-32700``;
* a lone surrogate escape (``"\\ud800"``: valid JSON, not Unicode text; JavaScript
  clients produce it when a string is cut inside an emoji) → ``-32602`` naming where
  it is, answered to the request's id when that id is readable, and nothing is run;
* a batch array → ``-32600`` (batching is gone since MCP 2025-06-18 and the SDK never
  took it): an array holding one error per request of the batch, so a client still on
  2025-03-26 can match every id, or a single error when there is none to match;
* anything else that is not one JSON-RPC 2.0 request, notification or response:
  no ``"jsonrpc": "2.0"``, a ``method`` that is not a string, an ``id`` that is not a
  string or an integer (MCP forbids null; the SDK would silently take such a request
  for a notification) → ``-32600``; ``params`` that is not an object → ``-32602``.

Messages name what is wrong and never echo the offending text. An error goes to the
request's id whenever the id itself is valid, else to ``null`` (JSON-RPC 2.0 §5).

Outgoing messages go through :func:`encode`, which does not fail on their content,
and the writer encodes each line with :func:`scrub` as its fallback: a lone surrogate
that reached an outgoing string becomes U+FFFD (the SDK's own parser, like other
strict ones, rejects ``\\ud800`` escapes, so escaping it would leave such a client
unable to read its answer).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import pydantic
import pydantic_core
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR
from mcp_types import methods as _methods

__all__ = [
    "MAX_DEPTH",
    "Rejected",
    "check_envelope",
    "decode",
    "encode",
    "error",
    "find_unsendable",
    "first_problem",
    "json_path",
    "not_utf8",
    "scrub",
    "too_large",
]

#: Deepest nesting the SDK's JSON parser (jiter) accepts; deeper is a parse error there.
MAX_DEPTH = 201

_NO_BATCH = ("batch arrays are not supported (JSON-RPC batching was removed in MCP 2025-06-18); "
             "send each message on its own line")
_SURROGATE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_LONE = re.compile(r"[\ud800-\udfff]")
_PATH_PARTS = 12


class _LongInteger(str):
    """An integer literal longer than the SDK's parser (and Python) reads, 4,300 digits, kept as its text."""


def _int(text: str) -> int | str:
    try:
        return int(text)
    except ValueError:
        return _LongInteger(text)


@dataclass(frozen=True)
class Rejected:
    """A line that is not served: ``reply`` (an error response, an array of them, or None:
    nothing to answer) and ``reason`` for the log."""

    reply: dict[str, Any] | list[dict[str, Any]] | None
    reason: str


def error(rid: Any, code: int, message: str, **data: Any) -> dict[str, Any]:
    """A JSON-RPC error response (``data`` only when given)."""
    body: dict[str, Any] = {"code": code, "message": message}
    if data:
        body["data"] = data
    return {"jsonrpc": "2.0", "id": rid, "error": body}


def too_large(size: int | None, limit: int, what: str) -> Rejected:
    """The answer to a message over a transport's size limit, its bytes not kept: ``what`` it came
    as ("a line", "a request body"), ``size`` its length when known, ``limit`` the transport's.
    ``-32600`` to ``id: null`` (the id was never read)."""
    sized = what if size is None else f"{what} of {size:,} bytes"
    return Rejected(error(None, INVALID_REQUEST, f"Invalid Request: {sized} is over jit serve's limit of "
                          f"{limit / (1 << 20):g} MiB ({limit:,} bytes) per message", limit=limit, size=size),
                    f"{sized} (limit {limit:,})")


def _valid_id(value: Any) -> bool:
    return (isinstance(value, int) and not isinstance(value, bool)) or isinstance(value, str)


def json_path(path: tuple[Any, ...]) -> str:
    """``params.arguments["a b"][3]`` for a path of keys and indexes, in ASCII (keys are escaped,
    so a hostile key cannot put control characters or surrogates into a message)."""
    out = ""
    shown = path if len(path) <= _PATH_PARTS else path[:_PATH_PARTS]
    for part in shown:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part.isidentifier() and part.isascii():
            out += f".{part}" if out else part
        else:
            out += f"[{json.dumps(part)}]"
    if len(path) > len(shown):
        out += f"…({len(path) - len(shown)} more levels)"
    return out or "(top level)"


def find_unsendable(value: Any, path: tuple[Any, ...] = (), max_depth: int = MAX_DEPTH, *,
                    numbers: bool = True) -> tuple[tuple[Any, ...], str] | None:
    """The first place in ``value`` that JSON text cannot carry faithfully, as ``(path, why)``:
    a lone surrogate in a string or key, a NaN or infinite number, a value of a non-JSON type,
    a non-string key, or nesting deeper than ``max_depth``. None when all of it can be sent.
    ``numbers=False`` lets NaN and infinities pass (the SDK's parser reads them).

    Iterative, so a value nested thousands deep is measured without recursing."""
    stack: list[tuple[Any, tuple[Any, ...], int]] = [(value, path, 1)]
    while stack:
        item, where, depth = stack.pop()
        if isinstance(item, _LongInteger):
            return where, f"is an integer of {len(item.lstrip('-')):,} digits, more than a JSON parser reads"
        if isinstance(item, str):
            lone = _LONE.search(item)
            if lone:
                return where, f"holds a lone surrogate (\\u{ord(lone.group()):04x}), which is not valid Unicode text"
        elif isinstance(item, bool) or item is None or isinstance(item, int):
            continue
        elif isinstance(item, float):
            if numbers and (item != item or item in (float("inf"), float("-inf"))):
                return where, f"is {item}, which JSON cannot represent"
        elif isinstance(item, dict | list | tuple):
            if depth > max_depth:
                return where, f"is nested more than {max_depth} levels deep"
            if isinstance(item, dict):
                for key, sub in reversed(list(item.items())):
                    if not isinstance(key, str):
                        return where, f"has a key of type {type(key).__name__}; JSON object keys are strings"
                    lone = _LONE.search(key)
                    if lone:
                        return (*where, key), (f"has a key with a lone surrogate (\\u{ord(lone.group()):04x}), "
                                               "which is not valid Unicode text")
                    stack.append((sub, (*where, key), depth + 1))
            else:
                stack.extend((sub, (*where, i), depth + 1) for i, sub in reversed(list(enumerate(item))))
        else:
            return where, f"is a {type(item).__name__}, not a JSON value"
    return None


def decode(line: str) -> dict[str, Any] | Rejected | None:
    """One line off the wire: the message to serve (a dict that passed :func:`check_envelope`),
    a :class:`Rejected` with the answer to write, or None for a blank line. A byte order mark
    before the message is ignored, as RFC 8259 allows: a client whose writer puts one at the
    start of its stream would otherwise never get its ``initialize`` answered."""
    line = line.removeprefix("\ufeff")
    if not line.strip():
        return None
    try:
        msg = pydantic_core.from_json(line)  # the parser the SDK validates with: the same limits
    except ValueError as exc:
        return _unparsable(line, str(exc))
    return check_envelope(msg)


def not_utf8(text: str, at: int) -> Rejected:
    """The answer to a line that is not UTF-8 (``text``: decoded with U+FFFD; ``at``: the first bad
    byte): a parse error, to the request's id when the rest of the line still names one. Nothing is
    run: a replaced character would change what the client meant (a path, a name, an amount)."""
    rid = None
    try:
        msg = json.loads(text.removeprefix("\ufeff"), parse_int=_int)
    except (ValueError, RecursionError):
        msg = None
    if isinstance(msg, dict) and isinstance(msg.get("method"), str) and _valid_id(msg.get("id")) \
            and "\ufffd" not in str(msg["id"]):  # the bad bytes were not in the id itself
        rid = msg["id"]
    return Rejected(error(rid, PARSE_ERROR, f"Parse error: the message is not valid UTF-8 (byte {at}); "
                                            "it was not run"), f"not UTF-8 at byte {at}")


def _unparsable(line: str, why: str) -> Rejected:
    """A line the SDK's parser refused: say why, to the request's id when Python's parser (which
    takes lone surrogates, nests to ~1000 levels and is given integers of any length) can still read it."""
    if not _SURROGATE.search(line) and "recursion" not in why and "number out of range" not in why:
        return Rejected(error(None, PARSE_ERROR, f"Parse error: {why}"), "not JSON")
    try:
        msg = json.loads(line, parse_int=_int)
    except (ValueError, RecursionError):
        return Rejected(error(None, PARSE_ERROR, f"Parse error: {why}"), "not JSON")
    found = find_unsendable(msg, max_depth=MAX_DEPTH, numbers=False)
    if found is None:
        return Rejected(error(None, PARSE_ERROR, f"Parse error: {why}"), "not JSON")
    path, problem = found
    rid = msg.get("id") if isinstance(msg, dict) else None
    is_request = isinstance(msg, dict) and isinstance(msg.get("method"), str) and _valid_id(rid) \
        and path[:1] != ("id",)  # an id holding a surrogate cannot be answered to
    if is_request and path[:1] == ("params",):
        return Rejected(error(rid, INVALID_PARAMS, f"Invalid params: {json_path(path)} {problem}; "
                                                   "the request was not run", path=json_path(path)),
                        f"{json_path(path)} {problem}")
    if isinstance(msg, dict) and "id" not in msg and isinstance(msg.get("method"), str) and \
            msg.get("jsonrpc") == "2.0":
        return Rejected(None, f"notification dropped: {json_path(path)} {problem}")  # notifications get no answer
    return Rejected(error(rid if is_request else None, INVALID_REQUEST, f"Invalid Request: {json_path(path)} {problem}",
                          path=json_path(path)), f"{json_path(path)} {problem}")


def check_envelope(msg: Any) -> dict[str, Any] | Rejected:
    """``msg`` when it is one JSON-RPC 2.0 request, notification or response the SDK takes for
    what it is; else the error to answer (see the module docstring)."""
    if isinstance(msg, list):
        return _batch(msg)
    if not isinstance(msg, dict):
        return Rejected(error(None, INVALID_REQUEST, "Invalid Request: a JSON-RPC message is a JSON object"),
                        f"a JSON {type(msg).__name__}, not an object")
    rid = msg.get("id")
    has_id = "id" in msg
    reply_to = rid if _valid_id(rid) else None
    if msg.get("jsonrpc") != "2.0":
        return Rejected(error(reply_to, INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"'),
                        "no jsonrpc 2.0")
    if "method" in msg:
        if not isinstance(msg["method"], str):
            return Rejected(error(reply_to, INVALID_REQUEST, 'Invalid Request: "method" must be a string'),
                            "method not a string")
        if has_id and not _valid_id(rid):
            return Rejected(error(None, INVALID_REQUEST,
                                  'Invalid Request: "id" must be a string or an integer'), "bad id")
        params = msg.get("params")
        if params is not None and not isinstance(params, dict):
            if has_id:
                return Rejected(error(rid, INVALID_PARAMS, 'Invalid params: "params" must be an object'),
                                "params not an object")
            return Rejected(error(None, INVALID_REQUEST,
                                  'Invalid Request: a notification\'s "params" must be an object'),
                            "notification params not an object")
        problem = _params_problem(msg["method"], params) if has_id and params is not None else None
        if problem is not None:
            path, what = problem
            return Rejected(error(rid, INVALID_PARAMS, f'Invalid params: "{path}" must be {what}', path=path),
                            f"{path} not {what}")
        return msg
    if not has_id:
        return Rejected(error(None, INVALID_REQUEST,
                              'Invalid Request: a message needs a "method" (request, notification) '
                              'or an "id" (response)'), "neither method nor id")
    if rid is not None and not _valid_id(rid):
        return Rejected(error(None, INVALID_REQUEST, 'Invalid Request: "id" must be a string or an integer'),
                        "bad response id")
    if not isinstance(msg.get("result"), dict) and not _error_object(msg.get("error")):
        return Rejected(error(None, INVALID_REQUEST,
                              'Invalid Request: a response needs a "result" object or an "error" object '
                              'with an integer "code" and a string "message"'), "malformed response")
    return msg


def _params_problem(method: str, params: dict[str, Any]) -> tuple[str, str] | None:
    """``(path, what it must be)`` for params the SDK refuses with a bare "Invalid request
    parameters" naming no field: a ``_meta`` or ``progressToken`` of the wrong type, or a
    ``tools/call`` whose ``name`` is not a string or whose ``arguments`` are not an object."""
    meta = params.get("_meta")
    if meta is not None and not isinstance(meta, dict):
        return "params._meta", "an object"
    token = meta.get("progressToken") if isinstance(meta, dict) else None
    if token is not None and not _progress_token(token):
        return "params._meta.progressToken", "a string or an integer"
    if method == "tools/call":
        if not isinstance(params.get("name"), str):
            return "params.name", "a string"
        if params.get("arguments") is not None and not isinstance(params["arguments"], dict):
            return "params.arguments", "an object"
    return None


def first_problem(exc: pydantic.ValidationError, root: tuple[Any, ...] = ()) -> tuple[str, dict[str, Any], str]:
    """What to say of a pydantic refusal: the path of its first problem (under ``root`` unless its
    location starts there), that problem, and `` (and N more problems)`` when there are more."""
    problems = exc.errors(include_url=False)
    first = problems[0]
    loc = tuple(first["loc"])
    where = json_path(loc if loc[:len(root)] == root else (*root, *loc))
    return where, first, f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else ""


def refused_params(method: str, version: str, params: Any, params_type: Any = None) -> tuple[str, str] | None:
    """``(path, problem)`` of the first field of a request's ``params`` that the SDK's own models
    refuse (its surface validation for ``method`` at protocol ``version``, then ``params_type``, the
    handler's model), None when they take them. The SDK answers such a request with a bare -32602
    "Invalid request parameters" naming nothing; :class:`jit.serve.server.JitServer` names the field."""
    try:
        if method in _methods.SPEC_CLIENT_METHODS:
            _methods.validate_client_request(method, version, params)
        if params_type is not None:
            params_type.model_validate({} if params is None else params, by_name=False)
    except pydantic.ValidationError as exc:
        where, first, more = first_problem(exc, ("params",))
        what = "is required" if first["type"] == "missing" else f"is refused: {first['msg']}"
        return where, f"{what}{more}"
    except (KeyError, ValueError):  # a method or version the SDK does not know: its own answer stands
        return None
    return None


def _progress_token(value: Any) -> bool:
    """Whether the SDK takes ``value`` for a progress token (its lax ``str | int``: ``1.0`` and
    ``true`` pass as 1); jit refuses only what the SDK would refuse anyway."""
    return isinstance(value, str | int) or (isinstance(value, float) and value.is_integer())


def _error_object(value: Any) -> bool:
    if not isinstance(value, dict) or not isinstance(value.get("message"), str):
        return False
    code = value.get("code")
    return (isinstance(code, int) and not isinstance(code, bool)) or (isinstance(code, float) and code.is_integer())


def _batch(items: list[Any]) -> Rejected:
    """A batch is refused whole; each of its requests gets its own error so nothing waits."""
    replies = [error(item["id"], INVALID_REQUEST, f"Invalid Request: {_NO_BATCH}")
               for item in items
               if isinstance(item, dict) and isinstance(item.get("method"), str) and _valid_id(item.get("id"))]
    if not replies:
        return Rejected(error(None, INVALID_REQUEST, f"Invalid Request: {_NO_BATCH}"),
                        f"batch of {len(items)} without a request")
    return Rejected(replies, f"batch of {len(items)}")


def scrub(text: str) -> str:
    """``text`` with surrogate pairs joined and lone surrogates replaced by U+FFFD: encodable as UTF-8."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def encode(message: Any) -> str:
    """One outgoing message (a dict, a list of them, or an SDK ``JSONRPCMessage``) as a line of
    JSON. Never raises for a message's content: a lone surrogate pydantic refuses to serialise is
    serialised in Python (the writer scrubs it, :func:`scrub`), and what JSON cannot carry at all
    (NaN, an object of no JSON type) becomes an internal error to the same id."""
    try:
        if hasattr(message, "model_dump_json"):
            try:
                return message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
            except (pydantic_core.PydanticSerializationError, ValueError):
                message = message.model_dump(mode="python", by_alias=True, exclude_unset=True)
        return json.dumps(message, ensure_ascii=False, separators=(",", ":"), allow_nan=False) + "\n"
    except (ValueError, TypeError, RecursionError) as exc:
        rid = message.get("id") if isinstance(message, dict) else getattr(message, "id", None)
        return json.dumps(error(rid if _valid_id(rid) else None, INTERNAL_ERROR,
                                f"Internal error: the answer could not be encoded as JSON ({type(exc).__name__})"),
                          ensure_ascii=False, default=str) + "\n"
