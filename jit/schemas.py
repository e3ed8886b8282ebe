"""Tool input/output schemas: checked at discovery, normalised to JSON Schema 2020-12, safe to render.

MCP lets a server declare any JSON Schema dialect (``$schema``; none means
2020-12 since the 2025-11-25 revision). The model APIs jit renders for are
stricter: Anthropic rejects the *whole* request when one tool's
``input_schema`` is not valid 2020-12, and OpenAI reads every schema as
2020-12. Most npm servers (zod-to-json-schema) still stamp draft-07 on theirs.
So jit, as a careful proxy, does three things:

* **Normalises** what it can translate without changing meaning
  (:func:`normalize_dialect`): a draft-04/06/07/2019-09 schema has its
  ``$schema`` key dropped (absent means 2020-12 to MCP and to both APIs, and
  the bare form is the one every target accepts), array-form ``items`` become
  ``prefixItems`` (+ ``additionalItems`` → ``items``), ``dependencies`` is split
  into ``dependentRequired``/``dependentSchemas`` and draft-04's boolean
  ``exclusiveMinimum``/``exclusiveMaximum`` become numbers. For the typical
  draft-07 tool schema this is the removal of one key. The normalised schema
  is what is stored, hashed and served, so every rendering agrees.
* **Rejects** what it cannot fix, with a precise reason (:func:`check_schema`):
  not an object schema, nested deeper than :data:`MAX_SCHEMA_DEPTH`, larger
  than :data:`MAX_SCHEMA_BYTES`, NaN/Infinity (not JSON), lone surrogates
  (not Unicode), a value jit's transport had to cut out
  (:mod:`jit.salvage`), a local ``$ref`` that points nowhere, or anything the
  2020-12 metaschema refuses. The tool is dropped with a discovery warning.
* **Never lets one schema break a rendering** (:func:`api_schema`): a stored
  schema that fails the checks (an older catalog, a harness tool) is replaced
  by an open object schema plus a note, and the rest of the rendering goes on.

Formats are not asserted (the APIs treat ``format`` as an annotation too),
but every ``pattern`` and ``patternProperties`` key must compile as the
ECMA-262 regular expression JSON Schema says it is: ``jsonschema-rs`` judges
(Python's ``re`` would refuse valid ECMA patterns and accept Python-only ones).

The 2020-12 metaschema check runs first in ``jsonschema-rs`` (Rust): the
Python ``jsonschema`` resolves the metaschema's ``$dynamicRef`` vocabularies on
every node, two orders of magnitude slower. The two agreed on all
12,407 distinct schemas of the benchmark pools (tests/test_schemas_fast.py
checks the cases where they could differ); a schema Rust refuses is checked
again in Python, whose message the discovery warning quotes, and whose verdict
stands.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import logging
import math
import re
from typing import Any
from urllib.parse import unquote

import jsonschema_rs

from .salvage import marker_reason

__all__ = [
    "MAX_SCHEMA_BYTES",
    "MAX_SCHEMA_DEPTH",
    "OPEN_SCHEMA",
    "api_schema",
    "check_schema",
    "json_kind",
    "json_problem",
    "normalize_dialect",
    "structured_content_error",
]

log = logging.getLogger(__name__)

#: Largest schema kept, in bytes of compact UTF-8 JSON. Real tool schemas are a few KiB
#: (the largest seen in the benchmark pools is ~40 KiB); each rendering of a Full tool
#: sends its schema whole, so a bigger one is a cost attack, not an interface.
MAX_SCHEMA_BYTES = 128 * 1024

#: Deepest nesting of JSON objects/arrays inside a schema. Real schemas stay under ~15;
#: validators and the model APIs recurse per level, so a deeper one is refused.
MAX_SCHEMA_DEPTH = 64

#: What a rendering sends in place of a schema that fails the checks: any object.
OPEN_SCHEMA: dict[str, Any] = {"type": "object", "additionalProperties": True}

_TARGET = re.compile(r"^https?://json-schema\.org/draft/2020-12/schema#?$")
_OLDER = re.compile(r"^https?://json-schema\.org/(draft-0[3-7]|draft/2019-09)/schema#?$")
_SURROGATE = re.compile("[\ud800-\udfff]")


@functools.cache
def _metaschemas() -> dict[str, Any]:
    """Dialect -> its metaschema's validator (no format checker: see the module docstring).

    The ``jsonschema`` package takes ~0.1 s to import and is needed only to say why a schema
    fails: most checks end on the Rust validator's yes (:func:`_fast_meta_valid`)."""
    from jsonschema import Draft4Validator, Draft7Validator, Draft202012Validator

    return {dialect: cls(cls.META_SCHEMA) for dialect, cls in
            (("2020-12", Draft202012Validator), ("draft-07", Draft7Validator), ("draft-04", Draft4Validator))}

# Subschema positions (keywords whose value is a schema, a list of them or a map of them).
_ONE = ("additionalItems", "additionalProperties", "contains", "else", "if", "items", "not", "propertyNames",
        "then", "unevaluatedItems", "unevaluatedProperties", "contentSchema")
_MANY = ("allOf", "anyOf", "oneOf", "prefixItems", "items")
_MAP = ("$defs", "definitions", "dependentSchemas", "patternProperties", "properties", "dependencies")

_CACHE_LIMIT = 4096
_render_cache: dict[int, tuple[Any, tuple[dict[str, Any], str | None]]] = {}
_meta_cache: dict[str, str | None] = {}


# --------------------------------------------------------------------------- generic JSON checks


def json_kind(value: Any, *, article: bool = False) -> str:
    """The JSON type of a decoded value as a message names it: ``array``, or with ``article``
    ``an array`` (``null`` either way). A message about what a server sent speaks JSON, not
    Python (``got NoneType``, ``got list``)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        kind = "boolean"
    elif isinstance(value, (int, float)):
        kind = "number"
    else:
        kind = {dict: "object", list: "array", str: "string"}.get(type(value), type(value).__name__)
    return (f"an {kind}" if kind[0] in "aeiou" else f"a {kind}") if article else kind


def _where(path: list[Any]) -> str:
    """``path`` as ``.a.b[0]``, eliding the middle of a long one."""
    parts = [f"[{p}]" if isinstance(p, int) else f".{str(p)[:40]}" for p in path]
    if len(parts) > 8:
        parts = [*parts[:4], f"…({len(parts) - 6} more)…", *parts[-2:]]
    return "".join(parts)


def _at(path: list[Any]) -> str:
    return f" (at {_where(path)})" if path else ""


def json_problem(value: Any, *, max_depth: int = MAX_SCHEMA_DEPTH) -> str | None:
    """The first thing in ``value`` that is not plain, bounded JSON text, or None.

    Iterative (a hostile depth cannot exhaust the stack). Checks nesting depth,
    NaN/Infinity, non-JSON types, lone surrogates in keys and strings, and the
    markers :mod:`jit.salvage` leaves where it had to cut a value out.
    """
    stack: list[tuple[Any, int, list[Any]]] = [(value, 0, [])]
    while stack:
        item, depth, path = stack.pop()
        if isinstance(item, dict | list):
            if depth >= max_depth:
                return f"nested more than {max_depth} levels deep{_at(path)}"
            if isinstance(item, dict):
                for k, v in item.items():
                    if not isinstance(k, str):
                        return f"has a non-string key {k!r}{_at(path)}"
                    why = _text_problem(k)
                    if why:
                        return f"has a key that {why}{_at(path)}"
                    stack.append((v, depth + 1, [*path, k]))
            else:
                stack.extend((v, depth + 1, [*path, i]) for i, v in enumerate(item))
        elif isinstance(item, str):
            why = _text_problem(item)
            if why:
                return f"{why}{_at(path)}"
        elif isinstance(item, float):
            if not math.isfinite(item):
                return f"holds {item!r}, which JSON cannot represent{_at(path)}"
        elif item is not None and not isinstance(item, bool | int):
            return f"holds a {type(item).__name__}, which is not JSON{_at(path)}"
    return None


def _text_problem(text: str) -> str | None:
    why = marker_reason(text)
    if why:
        return why
    m = _SURROGATE.search(text)
    if m:
        return f"contains a lone surrogate U+{ord(m.group()):04X} (not valid Unicode) at character {m.start()}"
    return None


def _compact_size(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


# --------------------------------------------------------------------------- dialects


def _subschemas(schema: dict[str, Any]) -> list[dict[str, Any]]:
    """The subschemas directly under ``schema``, by schema position only: what sits under
    ``default``, ``examples``, ``const``, ``enum`` or an unknown keyword is data, never a schema."""
    out: list[dict[str, Any]] = []
    for key in _ONE:
        if isinstance(schema.get(key), dict):
            out.append(schema[key])
    for key in _MANY:
        if isinstance(schema.get(key), list):
            out.extend(s for s in schema[key] if isinstance(s, dict))
    for key in _MAP:
        if isinstance(schema.get(key), dict):
            out.extend(s for s in schema[key].values() if isinstance(s, dict))
    return out


def _upgrade(node: dict[str, Any], draft4: bool) -> None:
    """Rewrite one (sub)schema's pre-2020 keywords in place into their 2020-12 spelling."""
    if isinstance(node.get("items"), list):
        node["prefixItems"] = node.pop("items")
        if "additionalItems" in node:
            node["items"] = node.pop("additionalItems")
    else:
        node.pop("additionalItems", None)  # no effect unless items is an array
    deps = node.get("dependencies")
    if isinstance(deps, dict):
        del node["dependencies"]
        required = {k: v for k, v in deps.items() if isinstance(v, list)}
        schemas = {k: v for k, v in deps.items() if not isinstance(v, list)}
        if required:
            node["dependentRequired"] = {**required, **node.get("dependentRequired", {})}
        if schemas:
            node["dependentSchemas"] = {**schemas, **node.get("dependentSchemas", {})}
    if draft4:
        for flag, bound in (("exclusiveMaximum", "maximum"), ("exclusiveMinimum", "minimum")):
            if isinstance(node.get(flag), bool):
                if node.pop(flag) and bound in node:
                    node[flag] = node.pop(bound)


def normalize_dialect(schema: dict[str, Any], *, assume: str | None = None) -> tuple[dict[str, Any], str | None]:
    """``schema`` in JSON Schema 2020-12 and a note of what changed (None: nothing did).

    The input is not modified. ``assume="draft-07"`` reads a schema without
    ``$schema`` as draft-07 (used when it fails 2020-12 but passes draft-07; likewise draft-04).
    """
    declared = schema.get("$schema")
    if declared is None and assume is None:
        return schema, None
    if isinstance(declared, str) and _TARGET.match(declared):
        return schema, None
    older = _OLDER.match(declared) if isinstance(declared, str) else None
    dialect = older.group(1) if older else assume
    out = copy.deepcopy(schema)
    out.pop("$schema", None)
    if dialect is None:
        return out, f"dropped an unknown $schema {str(declared)[:80]!r}; checked as 2020-12"
    stack = [out]
    while stack:
        node = stack.pop()
        _upgrade(node, draft4=dialect in ("draft-03", "draft-04"))
        stack.extend(_subschemas(node))
    return out, f"translated from {dialect} to 2020-12"


# --------------------------------------------------------------------------- whole checks


def _meta_error(schema: dict[str, Any], against: str = "2020-12") -> str | None:
    """Why ``schema`` fails the metaschema of dialect ``against``, None if it does not."""
    dialect = schema.get("$schema")
    if against == "2020-12" and (dialect is None or (isinstance(dialect, str) and _TARGET.match(dialect))) \
            and _fast_meta_valid(schema):
        return None
    from jsonschema.exceptions import best_match

    err = best_match(_metaschemas()[against].iter_errors(schema))
    if err is None:
        return None
    message = err.message if len(err.message) <= 200 else err.message[:200] + "…"
    return f"{message} (at {err.json_path})"


def _fast_meta_valid(schema: dict[str, Any]) -> bool:
    """Whether the 2020-12 metaschema accepts ``schema``, by ``jsonschema-rs`` (see the module
    docstring). False also when it cannot say (the Python check then decides)."""
    try:
        return bool(jsonschema_rs.meta.is_valid(schema))
    except Exception:  # noqa: BLE001 - a value Rust cannot read (e.g. a huge int): Python decides
        return False


@functools.cache
def _regex_validator() -> Any:
    """``format: regex`` as JSON Schema defines it: ECMA-262, checked by ``jsonschema-rs``."""
    return jsonschema_rs.validator_for({"type": "string", "format": "regex"}, validate_formats=True)


#: Compiled output-schema validators, by schema object (held, so its id cannot be reused).
_output_validators: dict[int, tuple[dict[str, Any], Any]] = {}


def structured_content_error(schema: dict[str, Any] | None, content: Any, *, given: bool) -> str | None:
    """Why a tool's structured result breaks its output ``schema`` (None: it conforms, or the tool
    has none). ``given``: the result carried ``structuredContent`` at all (the spec requires it of
    a tool that declares an output schema).

    Checked by ``jsonschema-rs``, whose regular expressions cannot backtrack without bound: with
    Python's ``re`` (the SDK's check, on the event loop) an upstream's ``"pattern": "^(a+)+$"`` and
    a 30-character result froze every request of ``jit serve`` for half a minute, past the call's
    timeout. The schema was checked at discovery (:func:`check_schema`)."""
    if schema is None:
        return None
    if not given:
        return "the tool has an output schema but returned no structured content"
    hit = _output_validators.get(id(schema))
    if hit is None or hit[0] is not schema:
        try:
            validator = jsonschema_rs.Draft202012Validator(schema)
        except Exception as exc:  # noqa: BLE001 - a schema Rust cannot compile: say so, never raise
            return f"its output schema cannot be used: {exc}"
        if len(_output_validators) >= _CACHE_LIMIT:
            _output_validators.clear()
        hit = _output_validators[id(schema)] = (schema, validator)
    try:
        error = next(iter(hit[1].iter_errors(content)), None)
    except Exception as exc:  # noqa: BLE001 - a value Rust cannot read (e.g. a huge int)
        return f"it could not be checked against its output schema: {exc}"
    if error is None:
        return None
    where = "/".join(str(p) for p in error.instance_path)
    return f"{error.message}" + (f" (at /{where})" if where else "")


def _pattern_error(schema: dict[str, Any]) -> str | None:
    """A ``pattern`` or ``patternProperties`` key that is not an ECMA-262 regular expression.

    JSON Schema's patterns are ECMA-262 (the dialect a model API or a JavaScript client compiles
    them in); one that does not compile can fail every request that carries the tool. Python's
    ``re`` is not the judge: it refuses valid ECMA patterns (``\\p{L}``) and accepts others
    (``(?P<name>…)``). Only schema positions are read (a ``"pattern"`` inside a ``default`` is
    data). None of the 119 patterns of 26,932 real tools in the benchmark pools fails."""
    validator = _regex_validator()
    stack = [schema]
    while stack:
        node = stack.pop()
        pattern = node.get("pattern")
        if isinstance(pattern, str) and not validator.is_valid(pattern):
            return f"pattern {pattern[:80]!r} is not a valid regular expression (ECMA-262, as JSON Schema reads it)"
        names = node.get("patternProperties")
        for name in names if isinstance(names, dict) else ():
            if not validator.is_valid(name):
                return (f"patternProperties key {name[:80]!r} is not a valid regular expression "
                        "(ECMA-262, as JSON Schema reads it)")
        stack.extend(_subschemas(node))
    return None


def _pointer_target(schema: dict[str, Any], ref: str) -> tuple[bool, Any]:
    """``(found, value)`` of the local reference ``ref`` (``#/…``) in ``schema``.

    A ``$ref`` is a URI, so its fragment is percent-decoded first (``#/properties/a%20b`` names
    the property ``a b``), then each JSON Pointer token unescaped (``~1`` is ``/``, ``~0`` is
    ``~``), in that order (RFC 6901 §6 and §4)."""
    target: Any = schema
    for part in unquote(ref[2:]).split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(target, dict) and part in target:
            target = target[part]
        elif isinstance(target, list) and part.isdigit() and int(part) < len(target):
            target = target[int(part)]
        else:
            return False, None
    return True, target


def _local_ref_error(schema: dict[str, Any]) -> str | None:
    """A ``#/…`` reference that resolves to nothing in this schema (skipped when ``$id`` re-bases refs).

    Only references in schema positions count (:func:`_subschemas`, as for patterns): ``{"$ref": …}``
    inside ``examples``, ``default``, ``const``, ``enum`` or an ``x-`` keyword is data (an
    OpenAPI-editing tool's example, say). A schema reached only through a reference (one under
    ``components``) is checked too, once."""
    seen: set[int] = set()  # each node once, however many references lead to it: linear in the schema
    stack = [schema]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if node is not schema and "$id" in node:
            return None
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/"):
            found, target = _pointer_target(schema, ref)
            if not found:
                return f"$ref {ref!r} points to nothing in the schema"
            if isinstance(target, dict):
                stack.append(target)
        stack.extend(_subschemas(node))
    return None


def check_schema(value: Any, field: str = "inputSchema") -> tuple[dict[str, Any] | None, str | None]:
    """Check one tool schema from a server: ``(2020-12 schema, None)`` or ``(None, reason)``.

    The reason names ``field`` and says precisely what is wrong, for the
    discovery warning of the dropped tool.
    """
    if not isinstance(value, dict):
        return None, f"{field} must be a JSON Schema object, got {json_kind(value, article=True)}"
    why = json_problem(value)
    if why:
        return None, f"{field} {why}"
    size = _compact_size(value)
    if size > MAX_SCHEMA_BYTES:
        return None, f"{field} is {size:,} bytes of JSON, over the {MAX_SCHEMA_BYTES:,}-byte limit"
    if value.get("type") != "object":
        return None, f"{field} must have \"type\": \"object\" at the root, got {value.get('type')!r}"
    schema, _ = normalize_dialect(value)
    error = _cached_meta_error(schema)
    if error and "$schema" not in value:
        # Pre-2020 keywords without a $schema (array-form items, boolean exclusiveMinimum …):
        # read it in the newest older dialect whose metaschema accepts it.
        for dialect in ("draft-07", "draft-04"):
            if _meta_error(value, dialect) is None:
                schema, _ = normalize_dialect(value, assume=dialect)
                error = _cached_meta_error(schema)
                break
    if error:
        return None, f"{field} is not valid JSON Schema 2020-12: {error}"
    error = _local_ref_error(schema) or _pattern_error(schema)
    if error:
        return None, f"{field}: {error}"
    return schema, None


def _cached_meta_error(schema: dict[str, Any]) -> str | None:
    key = hashlib.sha256(json.dumps(schema, sort_keys=True, ensure_ascii=False).encode()).hexdigest()
    if key not in _meta_cache:
        if len(_meta_cache) >= _CACHE_LIMIT:
            _meta_cache.clear()
        _meta_cache[key] = _meta_error(schema)
    return _meta_cache[key]


def api_schema(schema: Any) -> tuple[dict[str, Any], str | None]:
    """The schema to send to a model API: ``(schema, None)``, or ``(OPEN_SCHEMA, why)`` if it fails.

    Never raises. Discovery has already checked what servers send, so this is
    the guard for schemas that did not come through it (older catalogs,
    harness tools from available_tools.json). The verdict is cached per schema
    object (held by the cache, so its id cannot be reused while cached): a
    compile renders the same catalog objects over and over.
    """
    hit = _render_cache.get(id(schema))
    if hit is not None and hit[0] is schema:
        return hit[1]
    try:
        checked, why = check_schema(schema, "input schema")
    except Exception as exc:  # the guard of last resort: one schema must not stop a rendering
        checked, why = None, f"input schema could not be checked: {type(exc).__name__}"
    result = (checked, None) if checked is not None else (dict(OPEN_SCHEMA), why)
    if why:
        log.warning("schema withheld from rendering: %s", why)
    if len(_render_cache) >= _CACHE_LIMIT:
        _render_cache.clear()
    _render_cache[id(schema)] = (schema, result)  # type: ignore[assignment]
    return result  # type: ignore[return-value]
