"""Turning the tools a server lists into :class:`~jit.models.ToolDef` rows, within bounds.

A server is not trusted to be well-formed or modest. Each tool is judged on
its own (one bad tool is dropped with a reason; its siblings are kept), and
everything stored per tool and per listing is bounded, because whatever is
stored is then analysed, embedded, indexed and rendered, and one listing's
unbounded text would cost every one of those steps. The bounds (all far above
real tools; see each constant) are:

=============================  ===========  ========================================
what                           limit        beyond it
=============================  ===========  ========================================
tool name                      128 chars    tool dropped (a cut name cannot be called);
                                            so is one holding a control character
title                          256 chars    cut, with a warning
description                    16,384 chars cut, marked, with a warning (and flagged
                                            ``oversized_description`` by the analysis)
input / output schema          128 KiB,     tool dropped (see :mod:`jit.schemas`)
                               64 levels
annotations                    8 KiB        tool dropped
tools per server               2,000        the rest dropped, with a warning
one listing, all tools         16 MiB       the rest dropped, with a warning
=============================  ===========  ========================================
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from ..models import ToolDef
from ..schemas import check_schema, json_kind, json_problem

__all__ = [
    "MAX_ANNOTATIONS_BYTES",
    "MAX_LISTING_BYTES",
    "MAX_NAME_CHARS",
    "MAX_STORED_DESCRIPTION_CHARS",
    "MAX_TITLE_CHARS",
    "MAX_TOOLS_PER_SERVER",
    "MalformedToolError",
    "clean_annotations",
    "convert_tools",
    "cut_text",
    "tool_from_wire",
]

#: Longest tool name kept (MCP 2025-11-25 asks for 1-128 characters).
MAX_NAME_CHARS = 128
#: Longest title kept; a longer one is cut.
MAX_TITLE_CHARS = 256
#: Longest description stored. Real descriptions reach a few thousand characters; anything past
#: :data:`jit.injection.detect.MAX_DESCRIPTION_CHARS` (5,000) is flagged and kept out of the Full tier anyway,
#: so the cut only bounds what is stored, analysed and embedded.
MAX_STORED_DESCRIPTION_CHARS = 16_384
#: Largest ``annotations`` object (compact JSON bytes); real ones are a few hints.
MAX_ANNOTATIONS_BYTES = 8 * 1024
#: Most tools kept from one server (the largest real servers list a few hundred).
MAX_TOOLS_PER_SERVER = 2000
#: Most bytes (names, texts, schemas) kept from one server's listing.
MAX_LISTING_BYTES = 16 * 1024 * 1024


#: C0 and C1 controls and DEL. No tool name needs one, and a name is called by, logged and shown: a newline
#: split ``jit tools``' row and could forge a line of ``jit serve``'s log; a NUL, which PostgreSQL's text
#: cannot hold, was stored there as U+FFFD, a name the server does not know.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


class MalformedToolError(ValueError):
    """A tool definition a server sent breaks the MCP schema or jit's bounds; the tool is dropped."""


def _text(raw: dict[str, Any], key: str) -> str | None:
    value = raw.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise MalformedToolError(f"{key} must be a string, got {json_kind(value, article=True)}")
    why = json_problem(value)
    if why:
        raise MalformedToolError(f"{key} {why}")
    return value


#: The annotations MCP defines and the JSON type each must have; only these are stored.
_ANNOTATION_TYPES: dict[str, type] = {"title": str, "readOnlyHint": bool, "destructiveHint": bool,
                                      "idempotentHint": bool, "openWorldHint": bool}


def clean_annotations(annotations: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """``annotations`` as stored: the keys MCP defines, each of its JSON type, and one note per key
    dropped for the wrong type.

    ``{"readOnlyHint": "maybe"}`` must not cost the tool (it is only a hint), nor reach a client
    that validates annotations: one such tool made ``jit serve``'s whole tools/list fail. A hint
    is a JSON boolean, exactly: ``1`` or ``"false"`` is dropped too, not read as one (the SDK's
    lax parse would, but only for a listing it accepted whole, so a tool's stored definition
    would change with its siblings). ``null`` is the key left out, and a key MCP does not define
    is not kept (the SDK's model never held one, and ``jit serve`` could not list it on)."""
    kept: dict[str, Any] = {}
    notes: list[str] = []
    for key, value in annotations.items():
        want = _ANNOTATION_TYPES.get(key)
        if want is None or value is None:
            continue
        if type(value) is not want:
            notes.append(f"annotations.{key} dropped: must be a {'boolean' if want is bool else 'string'}, "
                         f"got {json_kind(value, article=True)}")
            continue
        kept[key] = value
    return kept, notes


def cut_text(text: str, limit: int, what: str, notes: list[str]) -> str:
    """``text`` cut to ``limit`` characters, marked as cut, with a note in ``notes`` when it was."""
    if len(text) <= limit:
        return text
    notes.append(f"{what} cut from {len(text):,} to {limit:,} characters")
    return text[:limit] + f" … [cut by jit: {len(text):,} characters in all]"


def tool_from_wire(server: str, raw: Any, notes: list[str] | None = None) -> ToolDef:
    """Convert one tool as it appears on the wire (camelCase JSON) into a :class:`ToolDef`.

    Raises :class:`MalformedToolError` naming the broken field. What was cut to
    fit a bound is appended to ``notes``. Schemas come back normalised to JSON
    Schema 2020-12 (:func:`jit.schemas.check_schema`).
    """
    notes = notes if notes is not None else []
    if not isinstance(raw, dict):
        raise MalformedToolError(f"a tool must be a JSON object, got {json_kind(raw, article=True)}")
    name = _text(raw, "name")
    if name is None or not name.strip():
        raise MalformedToolError("missing or empty name")
    if len(name) > MAX_NAME_CHARS:
        raise MalformedToolError(f"name is {len(name):,} characters, over the {MAX_NAME_CHARS}-character limit")
    control = _CONTROL.search(name)
    if control:
        raise MalformedToolError(f"name holds the control character U+{ord(control.group()):04X} at character "
                                 f"{control.start() + 1:,}")
    if "inputSchema" not in raw:
        raise MalformedToolError("inputSchema is missing")
    input_schema, why = check_schema(raw["inputSchema"], "inputSchema")
    if why:
        raise MalformedToolError(why)
    output_schema = None
    if raw.get("outputSchema") is not None:
        output_schema, why = check_schema(raw["outputSchema"], "outputSchema")
        if why:
            raise MalformedToolError(why)
    annotations = raw.get("annotations")
    if annotations is not None:
        if not isinstance(annotations, dict):
            raise MalformedToolError(f"annotations must be a JSON object, got {json_kind(annotations, article=True)}")
        why = json_problem(annotations, max_depth=8)
        if why:
            raise MalformedToolError(f"annotations {why}")
        size = len(json.dumps(annotations, ensure_ascii=False).encode())
        if size > MAX_ANNOTATIONS_BYTES:
            raise MalformedToolError(f"annotations are {size:,} bytes, over the {MAX_ANNOTATIONS_BYTES:,}-byte limit")
        annotations, dropped = clean_annotations(annotations)
        notes.extend(dropped)
        annotations = annotations or None  # nothing MCP defines is left: the same as none sent
    title = _text(raw, "title")
    description = _text(raw, "description") or ""
    assert input_schema is not None
    return ToolDef(
        server=server,
        name=name,
        description=cut_text(description, MAX_STORED_DESCRIPTION_CHARS, "description", notes),
        input_schema=input_schema,
        output_schema=output_schema,
        title=None if title is None else cut_text(title, MAX_TITLE_CHARS, "title", notes),
        annotations=annotations,
    )


def _label(raw: Any) -> str | None:
    name = raw.get("name") if isinstance(raw, dict) else None
    if not isinstance(name, str) or json_problem(name):
        return None
    return name if len(name) <= MAX_NAME_CHARS else name[:MAX_NAME_CHARS] + "…"


def _size(tool: ToolDef) -> int:
    schemas = [tool.input_schema, tool.output_schema, tool.annotations]
    text = tool.name + tool.description + (tool.title or "")
    return len(text.encode()) + sum(len(json.dumps(s, ensure_ascii=False).encode()) for s in schemas if s)


def convert_tools(server: str, raw_tools: Iterable[Any]) -> tuple[list[ToolDef], list[str]]:
    """Convert a whole listing: ``(kept tools, one line per dropped or cut tool)``.

    Malformed tools are dropped; of several tools with one name the first is
    kept; past :data:`MAX_TOOLS_PER_SERVER` tools or :data:`MAX_LISTING_BYTES`
    the rest are dropped with one line saying so.
    """
    kept: list[ToolDef] = []
    problems: list[str] = []
    seen: set[str] = set()
    total = 0
    raw_list = list(raw_tools)
    for i, raw in enumerate(raw_list):
        label = _label(raw)
        where = f"tool #{i}" + (f" {label!r}" if label else "")
        if len(kept) >= MAX_TOOLS_PER_SERVER:
            problems.append(f"dropped tool #{i} and the {len(raw_list) - 1 - i:,} fetched after it: over the limit "
                            f"of {MAX_TOOLS_PER_SERVER:,} tools per server")
            break
        notes: list[str] = []
        try:
            tool = tool_from_wire(server, raw, notes)
        except MalformedToolError as exc:
            problems.append(f"dropped {where}: {exc}")
            continue
        except RecursionError:  # defence in depth: the checks above are iterative
            problems.append(f"dropped {where}: nested too deeply to read")
            continue
        if tool.name in seen:
            problems.append(f"dropped {where}: duplicate name, kept the first")
            continue
        size = _size(tool)
        if total + size > MAX_LISTING_BYTES:
            problems.append(f"dropped tools #{i}-#{len(raw_list) - 1}: the listing passed "
                            f"{MAX_LISTING_BYTES:,} bytes")
            break
        total += size
        problems.extend(f"{where}: {note}" for note in notes)
        seen.add(tool.name)
        kept.append(tool)
    return kept, problems

