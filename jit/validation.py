"""Validating config files: every config model is strict, and its errors name the file and the key.

:class:`_Strict` is the base of every config model (``config.json``'s sections, the server
entries, ``available_tools.json``); :func:`validation_error` turns what pydantic refuses into
one :class:`~jit.errors.ConfigError` naming the file and the key, in words a user can act on
(``must be an integer …, got "4000"``), a removed key named as such.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from .errors import ConfigError

__all__ = ["validation_error"]


class _Strict(BaseModel):
    """Every config model: unknown keys refused, and no type coercion.

    Pydantic's lax mode would read ``"enabled": "no"`` as false, ``"timeout": true``
    as 1 second and ``"token_budget": "4000"`` as a number; a config that says
    something else than it means is refused instead. Booleans are ``true``/``false``
    only, numbers are JSON numbers (an integer field takes no fraction) and finite.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=False, strict=True,
                              allow_inf_nan=False)


def _shown(value: Any) -> str:
    """A short, single-line rendering of a bad value for an error message."""
    text = json.dumps(value, ensure_ascii=True, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


#: Friendlier words for pydantic's strict type errors (the key is named beside them).
_TYPE_MESSAGES = {
    "bool_type": "must be true or false",
    "int_type": "must be an integer (a JSON number without a fraction, not a string or true/false)",
    "float_type": "must be a number (not a string or true/false)",
    "finite_number": "must be a finite number",
    "string_type": "must be a string",
    "list_type": "must be a list",
    "dict_type": "must be an object",
    "model_type": "must be an object",
    "model_attributes_type": "must be an object",
}


#: Keys jit no longer reads, and what took their place (an old file fails with this, not "unknown key").
_REMOVED_KEYS = {
    "tool_selection.freeze_gc": "no longer a config key: freezing the garbage collector is process-wide, so "
    "the process owner decides (the jit command and `jit serve` do; a harness opts in with jit.process.tuned())",
}


def validation_error(exc: ValidationError, path: str) -> ConfigError:
    """``exc``'s first error as a :class:`~jit.errors.ConfigError` naming ``path`` and the key (how
    many more there are said after it)."""
    err = exc.errors()[0]
    loc = [str(p) for p in err["loc"]]
    # Drop pydantic's discriminator tag from the location ("servers.x.stdio.command").
    if len(loc) >= 3 and loc[0] == "servers" and loc[2] in ("stdio", "http", "sse"):
        del loc[2]
    key = ".".join(loc) or None
    msg = err["msg"]
    if err["type"] == "extra_forbidden":
        msg = _REMOVED_KEYS.get(key or "", "unknown key")
    elif err["type"] in _TYPE_MESSAGES:
        msg = f"{_TYPE_MESSAGES[err['type']]}, got {_shown(err.get('input'))}"
    elif err["type"] == "value_error":
        msg = msg.removeprefix("Value error, ")
    elif err["type"] == "union_tag_invalid":
        msg = "'transport' must be one of 'stdio', 'http', 'sse'"
        key = f"{key}.transport" if key else "transport"
    more = f" (and {len(exc.errors()) - 1} more problems)" if len(exc.errors()) > 1 else ""
    return ConfigError(f"{msg}{more}", path=path, key=key)
