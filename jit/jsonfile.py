"""Reading a JSON configuration file strictly: one clear error per problem, never a traceback.

Python's :func:`json.loads` is lenient where a configuration must not be: a key
given twice silently keeps the last value (so ``"servers": {"git": …, "git": …}``
loses a server without a word), ``NaN`` and ``Infinity`` are accepted although
JSON has no such values, ``1e999`` becomes ``inf``, a lone ``\\ud800`` escape
becomes a string no file name, environment or HTTP header can hold, and very
deep nesting raises :class:`RecursionError`. :func:`read_json` refuses each of
these with a :class:`~jit.errors.ConfigError` naming the file and the dotted
key of the bad value, as the rest of the configuration errors do.

Encoding: UTF-8, with or without a byte-order mark (editors on Windows write
one); a UTF-16 or UTF-32 file, or bytes that are not UTF-8, are refused with
the position of the first bad byte.
"""

from __future__ import annotations

import codecs
import json
import math
import re
from pathlib import Path
from typing import Any

from .errors import ConfigError

__all__ = ["MAX_DEPTH", "read_json", "unique_keys"]

#: Deepest nesting of objects and arrays accepted. A configuration needs a handful of
#: levels, an input schema in available_tools.json perhaps twenty.
MAX_DEPTH = 100

_OTHER_BOMS = (
    (codecs.BOM_UTF32_LE, "UTF-32"),
    (codecs.BOM_UTF32_BE, "UTF-32"),
    (codecs.BOM_UTF16_LE, "UTF-16"),
    (codecs.BOM_UTF16_BE, "UTF-16"),
)
_SURROGATE = re.compile("[\ud800-\udfff]")


class _Object(dict[str, Any]):
    """A JSON object that remembers the keys given more than once."""

    duplicates: tuple[str, ...] = ()


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` for JSON whose keys must all differ (``json.loads`` would silently keep
    the last of two): ValueError naming the repeated key. (Config files use :func:`read_json`,
    which names every such key with its path instead.)"""
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        key = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        raise ValueError(f"the key {key!r} is given twice")
    return out


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) == len(pairs):
        return obj
    seen: set[str] = set()
    marked = _Object(pairs)
    marked.duplicates = tuple(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
    return marked


class _NonFinite:
    """Stands in for ``NaN``/``Infinity``/an overflowing number until the walk names its key."""

    def __init__(self, text: str) -> None:
        self.text = text


def _float(text: str) -> float | _NonFinite:
    value = float(text)
    return value if math.isfinite(value) else _NonFinite(text)


def _decode(data: bytes, path: Path, what: str) -> str:
    for bom, name in _OTHER_BOMS:
        if data.startswith(bom):
            raise ConfigError(f"{what} is {name} text; save it as UTF-8", path=str(path))
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ConfigError(
            f"{what} is not UTF-8 text: byte 0x{data[exc.start]:02x} at line {line} (offset {exc.start}) "
            "cannot be decoded; save the file as UTF-8",
            path=str(path),
        ) from None


def _key(parent: str, part: str | int) -> str:
    return f"{parent}.{part}" if parent else str(part)


def _deep_key(key: str) -> str | None:
    """The key holding an over-deep value: the path without its run of array indices, shortened."""
    parts = key.split(".")
    while parts and parts[-1].isdigit():
        parts.pop()
    shown = ".".join(parts)
    return (shown if len(shown) <= 80 else shown[:80] + "...") or None


def _walk(value: Any, path: Path) -> None:
    """Check every value once, iteratively (no recursion however deep the file is)."""
    stack: list[tuple[Any, str, int]] = [(value, "", 0)]
    while stack:
        node, key, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ConfigError(f"nested more than {MAX_DEPTH} levels deep", path=str(path), key=_deep_key(key))
        if isinstance(node, dict):
            dup = getattr(node, "duplicates", ())
            if dup:
                raise ConfigError(
                    f"key {dup[0]!r} is given more than once in the same object (JSON keeps only the last one)",
                    path=str(path), key=_key(key, dup[0]),
                )
            for k, v in node.items():
                if _SURROGATE.search(k):
                    raise ConfigError("a key holds a lone surrogate escape (\\ud800-\\udfff), which is not text",
                                      path=str(path), key=_key(key, k.encode("utf-8", "backslashreplace").decode()))
                stack.append((v, _key(key, k), depth + 1))
        elif isinstance(node, list):
            stack.extend((v, _key(key, i), depth + 1) for i, v in enumerate(node))
        elif isinstance(node, _NonFinite):
            raise ConfigError(f"{node.text} is not a finite number (JSON numbers must be finite)",
                              path=str(path), key=key or None)
        elif isinstance(node, str):
            if _SURROGATE.search(node):
                raise ConfigError("the string holds a lone surrogate escape (\\ud800-\\udfff), which is not text",
                                  path=str(path), key=key or None)
            if "\x00" in node:
                raise ConfigError("the string holds a NUL character (\\u0000)", path=str(path), key=key or None)


def read_json(path: Path, what: str) -> Any:
    """The JSON value in ``path``, checked as described in the module docstring.

    ``what`` names the file in messages ("config file", "available tools file").
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ConfigError(f"{what} not found", path=str(path)) from None
    except OSError as exc:
        raise ConfigError(f"cannot read {what}: {exc.strerror or exc}", path=str(path)) from None
    text = _decode(data, path, what)
    if not text.strip():
        raise ConfigError(f"{what} is empty (it must hold a JSON object)", path=str(path))
    try:
        value = json.loads(text, object_pairs_hook=_pairs, parse_constant=_NonFinite, parse_float=_float)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}", path=str(path)) from None
    except RecursionError:
        raise ConfigError(f"nested too deeply to read (more than {MAX_DEPTH} levels are refused)",
                          path=str(path)) from None
    except ValueError:  # an integer literal longer than Python converts (sys.get_int_max_str_digits)
        raise ConfigError("invalid JSON: a number has too many digits", path=str(path)) from None
    _walk(value, path)
    return value
