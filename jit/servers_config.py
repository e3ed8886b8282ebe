"""Upstream server entries: jit's ``"servers"`` and the ``mcpServers`` files of other clients.

The typed server models (stdio, Streamable HTTP, SSE), the rule for a server's
name, ``${VAR}`` / ``${VAR:-default}`` expansion, and the translation of an
``mcpServers`` map (``.mcp.json``, ``claude_desktop_config.json``) into jit
entries. :mod:`jit.config_files` reads the files that hold them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import Field, PrivateAttr, field_validator

from .errors import ConfigError
from .models import HARNESS_SERVER
from .paths import masked_url
from .validation import _shown, _Strict

__all__ = [
    "DEFAULT_CALL_TIMEOUT",
    "DEFAULT_TIMEOUT",
    "HttpServerConfig",
    "ServerConfig",
    "SseServerConfig",
    "StdioServerConfig",
    "UnresolvedServerConfig",
    "parse_mcp_servers",
]


DEFAULT_TIMEOUT = 30.0
DEFAULT_CALL_TIMEOUT = 60.0


# --------------------------------------------------------------------------- servers


class _ServerBase(_Strict):
    enabled: bool = True
    #: Seconds allowed for connect + initialize + discovery, and for pings.
    timeout: float = Field(DEFAULT_TIMEOUT, gt=0)
    #: Seconds allowed for one tools/call.
    call_timeout: float = Field(DEFAULT_CALL_TIMEOUT, gt=0)
    #: The target as the config file wrote it (``${VAR}`` unexpanded), set by the loader: see :meth:`shown`.
    _written: str | None = PrivateAttr(None)

    def shown(self) -> str:
        """What the server runs or where it lives, safe to show a user or an MCP client: as the
        config file wrote it (``${VAR}`` references unexpanded, so a secret from the environment
        stays there), a URL's password and query values and arguments that look like secrets
        (after ``--token``, ``--api-key`` …; ``ghp_…``, ``sk-…`` …) as ``***``."""
        if self._written is not None:
            return self._written
        return shown_target(self.model_dump())


class StdioServerConfig(_ServerBase):
    transport: Literal["stdio"] = "stdio"
    command: str = Field(min_length=1)
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = Field(None, min_length=1)

    @field_validator("command")
    @classmethod
    def _command(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("must name a program, not only whitespace")
        return v

    @field_validator("env")
    @classmethod
    def _env(cls, v: dict[str, str]) -> dict[str, str]:
        for name in v:
            if not name or "=" in name:
                raise ValueError(f"environment variable name {name!r} must be non-empty and hold no '='")
        return v


class HttpServerConfig(_ServerBase):
    """Streamable HTTP."""

    transport: Literal["http"] = "http"
    url: str
    headers: dict[str, str] = Field(default_factory=dict)

    @field_validator("url")
    @classmethod
    def _url(cls, v: str) -> str:
        if not re.match(r"^https?://", v):
            raise ValueError("must be an http:// or https:// URL")
        if re.search(r"[\x00-\x20\x7f]", v):
            raise ValueError("holds a space, line break or control character (percent-encode it)")
        try:
            parts = urlsplit(v)
            host, port = parts.hostname, parts.port  # .port raises on a port outside 0-65535
        except ValueError as exc:  # e.g. an unclosed IPv6 bracket or a bad port
            raise ValueError(f"is not a valid URL: {exc}") from None
        if not host:
            raise ValueError("must name a host (http://HOST[:PORT]/path)")
        if port == 0:
            raise ValueError("port 0 is not a port a server listens on")
        return v

    @field_validator("headers")
    @classmethod
    def _headers(cls, v: dict[str, str]) -> dict[str, str]:
        for name, value in v.items():
            if not _HEADER_NAME.fullmatch(name):
                raise ValueError(f"header name {name!r} is not a valid HTTP header name")
            if any(c in value for c in "\r\n\x00"):
                raise ValueError(f"header {name!r} holds a line break or NUL, which HTTP does not allow")
        return v


class SseServerConfig(HttpServerConfig):
    transport: Literal["sse"] = "sse"  # type: ignore[assignment]


class UnresolvedServerConfig(_ServerBase):
    """A server entry using an environment variable this process does not have (``${VAR}``, unset,
    with no default). The server stays configured (its cached tools, its row in ``jit servers``)
    but is never started: its status is ``error`` with :attr:`problem` as the reason, and a call to
    it is refused with that reason, while the config's other servers work. Built by the loader,
    never read from a file; what it would run or reach is only shown (:meth:`shown`), as written."""

    transport: Literal["stdio", "http", "sse"]
    #: Which variables are unset and where the entry uses them: names and keys, never a value.
    problem: str = Field(min_length=1)


#: An option naming a secret that the next argument (or its ``=value``) holds: one of its words
#: (split at ``-``, ``_``, ``.``) ends in a secret's name (``--api-key``, ``--githubToken``, not ``--author``).
_SECRET_FLAG = re.compile(r"--?(?:[A-Za-z0-9]+[-_.])*[A-Za-z0-9]*(?:token|key|secret|password|passwd|passphrase"
                          r"|auth|credential|bearer|pat)s?(?:[-_.][A-Za-z0-9]+)*", re.IGNORECASE)
#: A value shaped like a well-known kind of credential.
_SECRET_VALUE = re.compile(r"(?:gh[pousr]_|github_pat_|glpat-|xox[abpors]-|sk-|sk_live_|rk_live_|AKIA|AIza|hf_)"
                           r"[\w-]{8,}")
_REFERENCE = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*(?::-[^}]*)?\}")


def shown_url(url: str) -> str:
    """``url`` safe to show: its user part's password (or a user part alone, often a token) and
    every query value become ``***``."""
    return masked_url(url, bare_user=True, query_key=lambda _k: True)


def _shown_args(args: list[Any]) -> list[str]:
    out: list[str] = []
    secret_next = False
    for raw in args:
        a = str(raw)
        flag, eq, value = a.partition("=")
        if _REFERENCE.fullmatch(a):
            out.append(a)  # ${VAR}: the file holds no secret here
        elif secret_next and not a.startswith("-"):
            out.append("***")
        elif eq and a.startswith("-") and _SECRET_FLAG.fullmatch(flag) and not _REFERENCE.fullmatch(value):
            out.append(f"{flag}=***")
        else:
            out.append(_SECRET_VALUE.sub("***", a))
        secret_next = not eq and a.startswith("-") and bool(_SECRET_FLAG.fullmatch(a))
    return out


def shown_target(entry: Mapping[str, Any]) -> str:
    """A server entry's target (its URL, or its command and arguments) safe to show (see
    :meth:`_ServerBase.shown`)."""
    if isinstance(entry.get("url"), str):
        return shown_url(entry["url"])
    return " ".join([str(entry.get("command", "")), *_shown_args(list(entry.get("args") or []))])


#: An HTTP header name is an RFC 9110 token.
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")

ServerConfig = Annotated[
    StdioServerConfig | HttpServerConfig | SseServerConfig, Field(discriminator="transport")
]


# --------------------------------------------------------------------------- names and mcpServers


def _name_problem(name: str) -> str | None:
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}", name) or "__" in name:
        return (
            f"name {name!r} must be 1-64 letters, digits, '_', '-', '.', start alphanumeric, "
            "and not contain '__' (jit's namespace separator)"
        )
    if name == HARNESS_SERVER:
        return f"{HARNESS_SERVER!r} is reserved for available_tools.json"
    return None



_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")

#: Where in a server entry a value is (``("env", "TOKEN")``, ``("args", 2)``), as pydantic locates its errors.
Where = tuple[str | int, ...]


def _expand(value: str, env: Mapping[str, str], path: str, key: str, at: Where,
            unset: dict[str, list[tuple[str, Where]]]) -> str:
    """``value`` with its references expanded; an unset variable with no default expands to ""
    and is noted in ``unset`` (variable -> the keys using it), for the caller to judge the entry."""
    def sub(m: re.Match[str]) -> str:
        name, default = m.group(1), m.group(2)
        if default is not None and "${" in default:  # ${A:-${B}}: the default would end at B's '}'
            raise ConfigError(f"the default of ${{{name}}} holds another ${{…}}: nested references are not "
                              "expanded; give a literal default", path=path, key=key)
        if name in env:
            return env[name]
        if default is not None:
            return default
        unset.setdefault(name, []).append((key, at))
        return ""

    return _VAR.sub(sub, value)


def _expand_server(name: str, raw: dict[str, Any], env: Mapping[str, str], path: str, where: str
                   ) -> tuple[dict[str, Any], dict[str, list[tuple[str, Where]]]]:
    """The entry with ``${VAR}`` references expanded, and the unset variables it uses (variable ->
    the dotted keys and places using it; empty when every reference resolved)."""
    out = dict(raw)
    unset: dict[str, list[tuple[str, Where]]] = {}
    for field_name in ("command", "cwd", "url"):
        if isinstance(out.get(field_name), str):
            out[field_name] = _expand(out[field_name], env, path, f"{where}.{name}.{field_name}", (field_name,),
                                      unset)
    if isinstance(out.get("args"), list):
        out["args"] = [
            _expand(a, env, path, f"{where}.{name}.args[{i}]", ("args", i), unset) if isinstance(a, str) else a
            for i, a in enumerate(out["args"])
        ]
    for field_name in ("env", "headers"):
        if isinstance(out.get(field_name), dict):
            out[field_name] = {
                k: _expand(v, env, path, f"{where}.{name}.{field_name}.{k}", (field_name, k), unset)
                if isinstance(v, str) else v
                for k, v in out[field_name].items()
            }
    return out, unset


def unset_problem(unset: Mapping[str, list[tuple[str, Where]]], path: str) -> str:
    """Why a server using the unset variables ``unset`` is not started: the variables and the keys
    using them (never a value)."""
    names = ", ".join(sorted(unset))
    keys = ", ".join(key for uses in unset.values() for key, _at in uses)
    verb = "is not set and has no default" if len(unset) == 1 else "are not set and have no default"
    return f"environment variable{'' if len(unset) == 1 else 's'} {names} {verb} (used by {keys} in {path})"


#: Keys other MCP clients write into mcpServers entries that carry no meaning for jit.
_FOREIGN_KEYS = frozenset({"autoApprove", "alwaysAllow", "alwaysLoad", "description", "name", "icon", "transportType"})
_MCP_TYPES = {
    "stdio": "stdio",
    "http": "http",
    "streamable-http": "http",
    "streamableHttp": "http",
    "streamable_http": "http",
    "sse": "sse",
}


def parse_mcp_servers(data: Any, path: str = "<mcpServers>") -> dict[str, dict[str, Any]]:
    """Translate an ``mcpServers`` map into jit server entries (not yet validated or expanded)."""
    if not isinstance(data, dict):
        raise ConfigError("'mcpServers' must be an object mapping names to servers", path=path, key="mcpServers")
    out: dict[str, dict[str, Any]] = {}
    for name, entry in data.items():
        key = f"mcpServers.{name}"
        if not isinstance(entry, dict):
            raise ConfigError("a server entry must be an object", path=path, key=key)
        entry = {k: v for k, v in entry.items() if k not in _FOREIGN_KEYS}
        kind = entry.pop("type", None) or ("stdio" if "command" in entry else "http" if "url" in entry else None)
        if not isinstance(kind, str) or kind not in _MCP_TYPES:
            raise ConfigError(
                f"unknown server type {kind!r}; expected one of {sorted(set(_MCP_TYPES))}", path=path, key=f"{key}.type"
            )
        converted: dict[str, Any] = {"transport": _MCP_TYPES[kind]}
        if "disabled" in entry:
            disabled = entry.pop("disabled")
            if not isinstance(disabled, bool):
                raise ConfigError(f"must be true or false, got {_shown(disabled)}", path=path, key=f"{key}.disabled")
            converted["enabled"] = not disabled
        converted.update(entry)
        out[name] = converted
    return out
