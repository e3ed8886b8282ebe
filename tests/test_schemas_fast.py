"""The Rust metaschema check (jit/schemas.py, ``_fast_meta_valid``) against the Python one.

The fast path may only ever say "valid" where ``jsonschema`` says valid: a schema
it refuses goes on to the Python check, whose verdict and message stand. These
cases are where two implementations could differ: keywords of older drafts,
regex dialects (``pattern`` is not asserted as a format), dynamic references,
unknown keywords, boolean schemas, huge numbers, non-ASCII keys.
"""

from __future__ import annotations

import json

import pytest

from jit.schemas import _fast_meta_valid, _meta_error, _metaschemas, check_schema

CASES = [
    {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    {"type": "object", "properties": {"name": {"type": "string", "pattern": "^\\p{L}+$"}}},
    {"type": "object", "properties": {"x": {"type": "string", "pattern": "(?<=a)b["}}},
    {"type": "object", "properties": {"x": {"type": "number", "exclusiveMinimum": True}}},
    {"type": "object", "properties": {"x": {"type": "array", "items": [{"type": "string"}]}}},
    {"type": "object", "properties": {"x": {"type": "objekt"}}},
    {"type": "object", "required": "path"},
    {"type": "object", "properties": {"x": True, "y": False}},
    {"type": "object", "$defs": {"n": {"$dynamicAnchor": "n", "type": "string"}},
     "properties": {"x": {"$dynamicRef": "#n"}}},
    {"type": "object", "x-vendor": {"anything": [1, 2]}, "properties": {"ключ": {"type": "string"}}},
    {"type": "object", "properties": {"big": {"type": "integer", "maximum": 10**40}}},
    {"type": "object", "properties": {"f": {"type": "string", "format": "no-such-format"}}},
    {"type": "object", "properties": {"e": {"enum": []}}},
    {"type": "object", "properties": {"m": {"minLength": -1}}},
    {"type": "object", "properties": {"d": {"dependencies": {"a": ["b"]}}}},
    {"type": "object", "additionalProperties": {"$ref": "#/properties/nope"}},
    {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object"},
]


def python_valid(schema: dict) -> bool:
    return next(iter(_metaschemas()["2020-12"].iter_errors(schema)), None) is None


@pytest.mark.parametrize("schema", CASES, ids=lambda s: json.dumps(s)[:60])
def test_the_fast_check_never_accepts_what_python_refuses(schema):
    if _fast_meta_valid(schema):
        assert python_valid(schema)
    # And the verdict jit acts on is Python's.
    assert (_meta_error(schema) is None) is python_valid(schema)


def test_check_schema_still_names_what_is_wrong():
    schema, why = check_schema({"type": "object", "properties": {"x": {"type": "objekt"}}})
    assert schema is None and "not valid JSON Schema 2020-12" in why and "properties" in why
