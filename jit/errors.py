"""jit's one exception tree, root :class:`JitError`, each error with a structured payload.

Every error jit raises derives from :class:`JitError`, so a harness can catch
"anything jit" in one place. Each error carries a structured payload
(:meth:`JitError.to_dict`) for JSON output, MCP error data and logs.

Hierarchy::

    JitError
    ├── ConfigError                 broken config.json / mcpServers file / available_tools.json
    ├── StoreError                  the catalog (wraps sqlite3 / psycopg errors)
    │   ├── ServerNotRegisteredError a write about a server the catalog has no row for (forgotten meanwhile)
    │   ├── CatalogBusyError        another process held the catalog's write lock past the busy timeout
    │   ├── CatalogDamagedError     the catalog file is damaged (`jit doctor` rebuilds it)
    │   └── MigrationError          a migration failed (nothing of it applied), or an applied one was edited
    ├── EmbeddingError              the embedding model could not load or run
    ├── AnalysisError               a tool analyzer failed (the offline analyzer takes over)
    ├── RuleError                   a Datalog rule file is invalid (names file and line)
    ├── SelectionError              compile() was asked something it cannot answer
    ├── ServerError                 anything about one upstream MCP server
    │   ├── ServerUnavailableError  the server is offline / errored; the call was not sent
    │   ├── ServerConnectError      connecting or initializing failed
    │   ├── ServerTimeoutError      the server did not answer in time
    │   ├── ServerDisconnectedError the connection dropped while a call was in flight
    │   ├── ToolNotFoundError       no such tool on that server (or no such server)
    │   ├── ToolNotApprovedError    the tool's definition changed and awaits `jit approve` (pinning)
    │   ├── ToolDeniedError         the role's policy denies the tool; the call was not sent
    │   ├── InvalidArgumentsError   a call's arguments cannot be sent as JSON; nothing was sent
    │   └── ToolCallError           the server answered with an error (JSON-RPC or isError)
    └── EvaluationError             benchmark data missing or malformed

Foreign exceptions (sqlite3, psycopg, the MCP SDK's ``MCPError`` and ExceptionGroups,
subprocess/OS errors, anthropic) are translated into this tree at the module
boundary that meets them, never leaked to callers.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AnalysisError",
    "CatalogBusyError",
    "CatalogDamagedError",
    "ConfigError",
    "EmbeddingError",
    "EvaluationError",
    "InvalidArgumentsError",
    "JitError",
    "MigrationError",
    "RuleError",
    "SelectionError",
    "ServerConnectError",
    "ServerDisconnectedError",
    "ServerError",
    "ServerNotRegisteredError",
    "ServerTimeoutError",
    "ServerUnavailableError",
    "StoreError",
    "ToolCallError",
    "ToolDeniedError",
    "ToolNotApprovedError",
    "ToolNotFoundError",
]


class JitError(Exception):
    """Root of every error jit raises.

    ``code`` is a short stable identifier (used as the ``error`` field of JSON
    output and in MCP error data); ``details`` holds the structured context.
    """

    code = "jit_error"

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = {k: v for k, v in details.items() if v is not None}

    def to_dict(self) -> dict[str, Any]:
        return {"error": self.code, "message": self.message, **self.details}


class ConfigError(JitError):
    """A configuration file is missing, unreadable or invalid.

    ``path`` is the file, ``key`` the dotted location of the bad value.
    """

    code = "config_error"

    def __init__(self, message: str, *, path: str | None = None, key: str | None = None) -> None:
        where = ", ".join(p for p in (f"file {path}" if path else "", f"key {key!r}" if key else "") if p)
        super().__init__(f"{message} ({where})" if where else message, path=path, key=key)
        self.path = path
        self.key = key


class StoreError(JitError):
    """The catalog failed (I/O, corruption, constraint, extension; a PostgreSQL server refusing or gone)."""

    code = "store_error"


class ServerNotRegisteredError(StoreError):
    """A write about a server the catalog has no row for: never registered, or forgotten since
    (another config's ``--prune-foreign``, or this config's sync after the server was removed
    from it) while a process still serves it; that process registers it again."""

    code = "server_not_registered"


class CatalogBusyError(StoreError):
    """Another process held the catalog's write lock past the busy timeout (a SQLite catalog's
    "database is locked"). The catalog is not at fault: what waited was not written, and the
    same command can be run again."""

    code = "catalog_busy"


class CatalogDamagedError(StoreError):
    """The catalog file is damaged: SQLite finds a page it cannot read (``database disk image is
    malformed``, a vector sqlite-vec cannot read back). Nothing more is written to it; ``jit doctor``
    keeps it aside and rebuilds what it can into a new file (jit/catalog/doctor.py)."""

    code = "catalog_damaged"


class MigrationError(StoreError):
    """A migration failed (its transaction was rolled back), or a migration the catalog
    already ran no longer matches its file (``migration`` names the file)."""

    code = "migration_error"


class EmbeddingError(JitError):
    """The embedding model could not be loaded or failed to embed."""

    code = "embedding_error"


class AnalysisError(JitError):
    """A tool analyzer failed or produced output that does not validate."""

    code = "analysis_error"


class RuleError(JitError):
    """A Datalog rule file has a syntax error or uses an unknown predicate."""

    code = "rule_error"

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None) -> None:
        loc = f"{path}:{line}" if path and line else path
        super().__init__(f"{loc}: {message}" if loc else message, path=path, line=line)
        self.path = path
        self.line = line


class SelectionError(JitError):
    """compile() was given a task context it cannot satisfy (unknown shard, bad budget)."""

    code = "selection_error"


class ServerError(JitError):
    """Something went wrong with one upstream MCP server."""

    code = "server_error"

    def __init__(self, message: str, *, server: str, **details: Any) -> None:
        super().__init__(message, server=server, **details)
        self.server = server


class ServerUnavailableError(ServerError):
    """The server is not connected; the call was refused without being sent.

    Carries ``server``, ``tool``, ``status`` and ``last_error`` so a harness can
    tell the model exactly why the tool is unusable right now.
    """

    code = "server_unavailable"

    def __init__(
        self,
        *,
        server: str,
        status: str,
        tool: str | None = None,
        last_error: str | None = None,
        note: str | None = None,
    ) -> None:
        what = f"tool {tool!r} on server {server!r}" if tool else f"server {server!r}"
        msg = f"{what} is unavailable: server status is {status}"
        if last_error:
            msg += f" (last error: {last_error})"
        if note:  # what is known of the tool meanwhile ("it never listed its tools")
            msg += f"; {note}"
        super().__init__(msg, server=server, tool=tool, status=status, last_error=last_error)
        self.tool = tool
        self.status = status
        self.last_error = last_error


class ServerConnectError(ServerError):
    """Connecting to or initializing the server failed."""

    code = "server_connect_error"


class ServerTimeoutError(ServerError):
    """The server did not answer within its timeout."""

    code = "server_timeout"


class ServerDisconnectedError(ServerError):
    """The connection dropped while a call was in flight: the tool may or may not have run."""

    code = "server_disconnected"


class ToolNotFoundError(ServerError):
    """The named tool (or server) is not known where it was looked up.

    Raise it through the constructors below, one per place a name is looked up
    (the config, the catalog, a server's tools, a compiled tool set), so that
    the CLI, ``jit serve`` and the client manager word a missing name the same
    way and a harness sees one vocabulary in ``message``.
    """

    code = "tool_not_found"

    @classmethod
    def unconfigured(cls, server: str, tool: str | None = None) -> ToolNotFoundError:
        """``server`` is not in the config (so there is nothing to connect to or call)."""
        return cls(f"no configured server named {server!r}", server=server, tool=tool)

    @classmethod
    def uncatalogued(cls, server: str, tool: str | None = None, *, hint: str | None = None) -> ToolNotFoundError:
        """``server`` has no row in the catalog; ``hint`` is what to do about it, in parentheses."""
        message = f"no server named {server!r} in the catalog"
        return cls(f"{message} ({hint})" if hint else message, server=server, tool=tool)

    @classmethod
    def no_tool(cls, server: str, tool: str) -> ToolNotFoundError:
        """``server`` is known but has no tool named ``tool``."""
        return cls(f"server {server!r} has no tool {tool!r}", server=server, tool=tool)

    @classmethod
    def in_catalog(cls, server: str, tool: str, *, server_known: bool) -> ToolNotFoundError:
        """A catalog lookup of ``server/tool`` that failed: says which of the two is missing."""
        return cls.no_tool(server, tool) if server_known else cls.uncatalogued(server, tool)

    @classmethod
    def not_in_toolset(cls, name: str) -> ToolNotFoundError:
        """A rendered (``server__tool``) name that a compiled tool set does not hold."""
        server, sep, _ = name.partition("__")
        return cls(f"no tool named {name!r} in this tool set", server=server if sep else "?", tool=name)


def approve_hint(server: str, tool: str) -> str:
    """The commands that review and approve one tool (the hint of :class:`ToolNotApprovedError`,
    of ``jit sync`` and of ``jit serve``'s warnings)."""
    return f"review it with `jit show {server}/{tool}`, then `jit approve {server}/{tool}`"


class ToolNotApprovedError(ServerError):
    """The tool's definition changed since it was approved and ``security.pin_definitions``
    is on: it is not served, and a call is refused before anything is sent (a rug pull
    until a user reviews it; see jit/catalog/approval.py)."""

    code = "tool_not_approved"

    def __init__(self, *, server: str, tool: str, definition_hash: str | None = None) -> None:
        super().__init__(
            f"tool {tool!r} on server {server!r} changed its definition since it was approved and is not served "
            f"until approved (security.pin_definitions); nothing was sent to the server: "
            f"{approve_hint(server, tool)}",
            server=server, tool=tool, definition_hash=definition_hash,
        )
        self.tool = tool


class ToolDeniedError(ServerError):
    """The shard's policy denies the tool (``denied`` in rules/policy.dl, ``shards.<name>.deny``):
    it is never offered to that role, and a call for that role is refused before anything is sent."""

    code = "tool_denied"

    def __init__(self, *, server: str, tool: str, shard: str, reasons: tuple[str, ...]) -> None:
        super().__init__(
            f"tool {tool!r} on server {server!r} is denied for shard {shard!r} ({'; '.join(reasons)}); nothing was "
            f"sent (grant it with shards.{shard}.allow in config.json, or edit the rules)",
            server=server, tool=tool, shard=shard, reasons=list(reasons),
        )
        self.tool = tool


class InvalidArgumentsError(ServerError):
    """A call's arguments hold what JSON text cannot carry (a lone surrogate, NaN, a non-JSON
    value, nesting too deep): refused before anything is sent, so the connection to the server
    is untouched. ``path`` names the bad value (``arguments.items[2].name``)."""

    code = "invalid_arguments"

    def __init__(self, *, server: str, tool: str, path: str, problem: str) -> None:
        super().__init__(
            f"arguments for tool {tool!r} on server {server!r} cannot be sent: {path} {problem}; "
            f"nothing was sent to the server",
            server=server, tool=tool, path=path,
        )
        self.tool = tool
        self.path = path


class ToolCallError(ServerError):
    """The server answered a tools/call with an error.

    ``is_error`` is True when the tool itself reported failure (``isError``);
    otherwise ``rpc_code`` holds the JSON-RPC error code.
    """

    code = "tool_call_error"


class EvaluationError(JitError):
    """Benchmark input is missing or malformed."""

    code = "evaluation_error"


def jit_error_in(exc: BaseException) -> JitError | None:  # not in __all__: jit's own helper
    """The jit error behind ``exc``: itself, or the first one inside a (nested) exception
    group, as anyio task groups and the SDK deliver failures of the work they ran."""
    if isinstance(exc, JitError):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            found = jit_error_in(inner)
            if found is not None:
                return found
    return None


#: Longest text from a server that jit keeps in an error message or in the catalog (a server's
#: ``last_error``, a tool's last call error): real ones are a line or a short stack trace; one
#: of megabytes would otherwise be stored, printed and sent back at every failure.
MAX_ERROR_CHARS = 2_000
#: Longest error the catalog stores: a server's bounded text with what jit says around it
#: ("connection lost: …; stderr: …"); the catalog's backstop for any other path.
MAX_STORED_ERROR_CHARS = 2 * MAX_ERROR_CHARS


def bounded(text: str, limit: int = MAX_ERROR_CHARS) -> str:  # not in __all__: jit's own helper
    """``text``, or its first ``limit`` characters marked as cut (with the whole length)."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]} … [cut by jit: {len(text):,} characters in all]"
