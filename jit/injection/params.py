"""What a parameter offers the model to pass, read as a destination: a default, an enum value, an
example or a constant.

The model copies a default or an enum value into its call without a second look, so a parameter can
carry an attack with no order in its words: an upload target or callback that defaults to a bare
public IP address (``ftp://…@77.91.124.8/incoming/``), or an address with a user name and password in
it. Real tools default to their vendor's API host, to ``localhost`` or a private network; on the
~20,000 real tools of the shared pools and ``bench/data/catalogs`` a default, enum value, example or
constant that is a URL with credentials or a public IP host is rare enough to count (measured by
``python -m bench.injection_corpus``).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

from ..flags import FLAG_EXFILTRATE_URL

__all__ = ["OFFERED", "offered_values", "param_value_flags", "schema_nodes", "version_text"]

#: The keys of a parameter's schema whose strings the model may pass as they are.
OFFERED = ("default", "enum", "examples", "const")
#: Where a schema nests further parameters.
_NESTED = ("properties", "items", "additionalProperties", "anyOf", "oneOf", "allOf", "$defs", "definitions")
#: Schema depth the walk follows; past it the schema is data nobody renders.
_MAX_DEPTH = 8
_URL = re.compile(r"^\s*(?:https?|ftps?|sftp|s3|wss?|tcp|smtp)://\S+$", re.IGNORECASE)


def schema_nodes(spec: Any, depth: int = 0) -> Iterator[dict]:
    """A schema and every parameter schema nested in it (properties, array items, alternatives,
    definitions), in document order."""
    if depth > _MAX_DEPTH or not isinstance(spec, dict):
        return
    yield spec
    for key in _NESTED:
        nested = spec.get(key)
        if isinstance(nested, dict) and key in ("properties", "$defs", "definitions"):
            for child in nested.values():
                yield from schema_nodes(child, depth + 1)
        elif isinstance(nested, list):
            for child in nested:
                yield from schema_nodes(child, depth + 1)
        else:
            yield from schema_nodes(nested, depth + 1)


def offered_values(node: dict) -> list[str]:
    """The strings one parameter schema offers as values (:data:`OFFERED`)."""
    out = []
    for key in OFFERED:
        value = node.get(key)
        out.extend(v for v in (value if isinstance(value, list) else [value]) if isinstance(v, str))
    return out


def _suspect_destination(value: str) -> bool:
    """A URL with a password in it, or whose host is a public IP address."""
    if not _URL.match(value):
        return False
    try:
        parts = urlsplit(value.strip())
        host = parts.hostname or ""
        password = parts.password
    except ValueError:
        return False
    if password:
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    return ip.is_global


def param_value_flags(schema: Any) -> set[str]:
    """``instruction:exfiltrate_url`` when a parameter offers a destination no real tool defaults to."""
    return ({FLAG_EXFILTRATE_URL} if any(_suspect_destination(v) for node in schema_nodes(schema)
                                         for v in offered_values(node)) else set())


def version_text() -> str:
    """What decides this module's findings, for ``HOSTILE_RULES_VERSION``."""
    return "\n".join(("params-1", *OFFERED, *_NESTED, str(_MAX_DEPTH), _URL.pattern))
