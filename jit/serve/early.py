"""``jit serve --stdio`` answers ``initialize`` while the MCP SDK is still importing.

Importing the SDK's server (``mcp.server.mcpserver``: its pydantic models are built at
import) and jit's command line takes one to two seconds of CPU before any line of
stdin is read; MCP clients give a server a fixed time to answer ``initialize`` and
start several servers at once. The answer itself needs none of that: it is the
server's name, version, instructions (naming the servers the config file defines:
:func:`instructions`) and declared capabilities, and the protocol version picked
from the client's offer, all known before the SDK is.

So the process entry (:func:`jit.cli.main`) calls :func:`begin` first. This module
imports nothing beyond the standard library and :mod:`jit` itself (which imports
only its errors). When the command line is a plain ``jit serve`` on stdio and stdin
is a pipe or a socket (as under every MCP client), a thread reads the first line
while the main thread goes on to import and start the server. When that line is a
well-formed ``initialize`` request whose parameters the SDK is sure to accept
(:func:`initialize_response`), the thread writes the SDK's answer to stdout at once.
The server then takes over with :func:`handover`: its reader reads the bytes taken
off stdin first, so the SDK still receives the original ``initialize`` (its session
records the client's info and the negotiated version), and the SDK's own response to
that id is dropped by jit's transport (jit/serve/proxylane.py), not written twice.
Anything else (a first line that is not such a request, a partial line, end of input,
a command line this module does not fully understand) leaves the stream untouched for
the normal path, which answers it as it always did.

Nothing here may diverge from the SDK: tests/test_serve_early.py compares
:func:`initialize_response` with the real server's answer for every handshake
version, an unknown and an old one, with and without ``--expose-shard``; checks that
the parameters accepted here are accepted by the SDK's validation too; and keeps
:data:`HANDSHAKE_PROTOCOL_VERSIONS` equal to the SDK's constant.

What runs after the answer: the config, the rules and the catalog are checked while
the server starts. A config file that is missing or not a JSON object is caught here,
cheaply, and then nothing is answered early (the normal path reports it before any
answer, as before); a mistake found later still ends the process with its message on
stderr and its exit code, after a fast client has had its ``initialize`` answer.
"""

from __future__ import annotations

import atexit
import json
import os
import re
import select
import stat
import threading
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from .. import __version__
from ..jsonfile import unique_keys
from ..paths import default_config_file

__all__ = [
    "HANDSHAKE_PROTOCOL_VERSIONS",
    "INSTRUCTIONS",
    "LATEST_HANDSHAKE_VERSION",
    "MAX_NAMED_SERVERS",
    "Handover",
    "ServeCommand",
    "begin",
    "capabilities",
    "config_instructions",
    "handover",
    "initialize_response",
    "instructions",
    "serve_command",
    "server_names",
]

#: The server's name in ``serverInfo`` (``MCPServer("jit", ...)`` in jit/serve/server.py).
SERVER_NAME = "jit"

#: At most this many server names in the instructions (the rest are counted), so that a config
#: of hundreds of servers does not make the text every client keeps in its prompt grow with it.
MAX_NAMED_SERVERS = 20
#: A server name as the config accepts it (jit.servers_config._name_problem), and nothing else
#: reaches the instructions: they are read before the config is validated.
_SERVER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}")


def instructions(servers: Sequence[str] = (), *, expose_shard: str | None = None) -> str:
    """What the server tells a client about itself in ``initialize``: what jit is, the servers behind
    it (at most :data:`MAX_NAMED_SERVERS` by name) and how to reach their tools in few turns.

    Clients put this text in the model's prompt: it is what tells the model that ``search_tools``
    is the way to the tools of the servers named, which a client that defers tools behind its own
    search would otherwise find only by chance. :class:`~jit.serve.server.JitServer` declares it
    from here, so the early answer and the SDK's are the same text."""
    names = [n for n in servers if _SERVER_NAME.fullmatch(n) and "__" not in n]
    if names:
        shown = ", ".join(names[:MAX_NAMED_SERVERS])
        more = len(names) - MAX_NAMED_SERVERS
        behind = (f"jit selects and proxies the tools of {len(names)} MCP server{'s' if len(names) > 1 else ''}: "
                  f"{shown}{f' and {more} more' if more > 0 else ''}.")
    else:
        behind = "jit selects and proxies the tools of the MCP servers in its config."
    parts = [
        behind,
        ("Their tools are reached through jit: search_tools finds tools for a step (its best results "
         "carry their input schema, so call one with call_tool right away); describe_tool gives any "
         "tool's full schema; call_tool runs a tool on its server."),
        "compile_tools gives a whole tool set for an agent role (shard) and task, in tiers.",
    ]
    if expose_shard is not None and _SERVER_NAME.fullmatch(expose_shard):
        parts.append(f"The tools named server__tool are the {expose_shard} role's selection for the current "
                     "task; set_task changes the task and the list.")
    parts.append("Tools of offline servers are listed but fail when called, with an error naming the "
                 "server's status.")
    return " ".join(parts)


#: The instructions of a server whose config names no server (or could not be read).
INSTRUCTIONS = instructions()


def server_names(config: Mapping[str, Any], base: str) -> list[str]:
    """The enabled servers a config file's JSON defines (``servers``, ``mcpServers`` and the
    ``mcpServers`` of its ``server_files``, resolved from ``base``), read as the standard library
    reads them: names only, nothing validated (a config that names a bad server fails later anyway)."""
    found: list[str] = []

    def take(entries: Any, enabled: Any) -> None:
        if isinstance(entries, dict):
            found.extend(name for name, entry in entries.items()
                         if isinstance(entry, dict) and enabled(entry) and name not in found)

    take(config.get("servers"), lambda e: e.get("enabled", True) is not False)
    take(config.get("mcpServers"), lambda e: e.get("disabled", False) is not True)
    files = config.get("server_files")
    if isinstance(files, list):
        for name in files:
            if isinstance(name, str) and name:
                data = _read_json_object(os.path.join(base, os.path.expanduser(name)))
                if data is not None:
                    take(data.get("mcpServers"), lambda e: e.get("disabled", False) is not True)
    return found


def config_instructions(config_file: str | os.PathLike[str] | None, *, expose_shard: str | None = None,
                        environ: Mapping[str, str] = os.environ) -> str:
    """:func:`instructions` for the servers of a config file (``None``: ``$JIT_CONFIG``, then
    ``config.json``, then ``.mcp.json``, as the command line resolves it); the plain text when
    it cannot be read."""
    path = os.fspath(config_file) if config_file is not None else default_config_file(environ)
    path = os.path.expanduser(path)
    data = _read_json_object(path)
    names = server_names(data, os.path.dirname(os.path.abspath(path))) if data is not None else []
    return instructions(names, expose_shard=expose_shard)


#: The SDK's ``mcp_types.version.HANDSHAKE_PROTOCOL_VERSIONS`` (a test keeps them equal).
HANDSHAKE_PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
#: The counter-offer to a version the server does not speak (the SDK's ``LATEST_HANDSHAKE_VERSION``).
LATEST_HANDSHAKE_VERSION = HANDSHAKE_PROTOCOL_VERSIONS[-1]

#: A first line longer than this is left to the normal reader (an ``initialize`` is a few hundred bytes).
_MAX_FIRST_LINE = 1 << 16
#: Deeper JSON is left to the normal path (the SDK's parser stops at 200 levels; clients send 3 or 4).
_MAX_DEPTH = 32
_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_MAX_ID = 2**53


def capabilities(list_changed: bool) -> dict[str, Any]:
    """What jit's server declares (jit/serve/server.py): the upstreams' prompts and resources change
    as they connect and re-list, logging is passed through, ``tools.listChanged`` with ``--expose-shard``."""
    return {
        "logging": {},
        "prompts": {"listChanged": True},
        "resources": {"subscribe": False, "listChanged": True},
        "tools": {"listChanged": list_changed},
    }


# --------------------------------------------------------------------------- the command line


class ServeCommand(NamedTuple):
    """What :func:`serve_command` read: the config file and the exposed shard (``--expose-shard``,
    with which tools.listChanged is declared)."""

    config_file: str
    expose_shard: str | None

    @property
    def list_changed(self) -> bool:
        return self.expose_shard is not None


_VALUED = {"--config": "config", "-c": "config", "--expose-shard": "expose", "--task": "task",
           "--budget": "budget"}


def serve_command(argv: list[str], environ: Mapping[str, str]) -> ServeCommand | None:
    """The serve command in ``argv`` when it is a plain ``jit [--config F] serve [--stdio] [--config F]
    [--expose-shard S [--task T] [--budget N]]`` that the command line (typer) takes with the same
    meaning; None for anything else (``--help``, ``--http``, a repeated or unknown option, a value
    that looks like an option, a budget that is not a positive number), which the command line
    then parses and answers as always. The config file resolves as the command line resolves it:
    ``serve``'s ``--config``, then the one before ``serve``, then ``$JIT_CONFIG``, then ``config.json``,
    then ``.mcp.json`` (:func:`jit.paths.default_config_file`)."""
    root: dict[str, str] = {}
    serve: dict[str, str] = {}
    seen = root
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        if arg == "serve" and seen is root:
            seen = serve
            continue
        if arg == "--stdio" and seen is serve and "stdio" not in serve:
            serve["stdio"] = ""
            continue
        name, eq, value = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        key = _VALUED.get(name)
        if key is None or key in seen or (seen is root and key != "config"):
            return None
        if not eq:
            if i >= len(argv):
                return None
            value = argv[i]
            i += 1
        if not value or value.startswith("-"):
            return None
        seen[key] = value
    if seen is not serve:
        return None
    if ("task" in serve or "budget" in serve) and "expose" not in serve:
        return None
    budget = serve.get("budget")
    if budget is not None and not (budget.isascii() and budget.isdigit() and int(budget) >= 1):
        return None
    config = serve.get("config") or root.get("config") or default_config_file(environ)
    return ServeCommand(config, serve.get("expose"))


def _read_json_object(path: str) -> dict[str, Any] | None:
    """The JSON object in the file ``path``; None when it is missing, unreadable or not an object."""
    try:
        with open(os.path.expanduser(path), encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


# --------------------------------------------------------------------------- the answer


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError("out of range")
    return value


def _shallow(value: Any) -> bool:
    """Nested at most :data:`_MAX_DEPTH` levels (iteratively: no recursion on hostile input)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > _MAX_DEPTH:
                return False
            stack.extend((sub, depth + 1) for sub in (item.values() if isinstance(item, dict) else item))
    return True


def _optional(value: Any, check: Any) -> bool:
    return value is None or check(value)


def _object(value: Any) -> bool:
    return isinstance(value, dict)


def _string(value: Any) -> bool:
    return isinstance(value, str)


def _objects_by_name(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(v, dict) for v in value.values())


def _shaped(value: Any, fields: dict[str, Any]) -> bool:
    """An object whose listed fields are absent, null or of their shape (other keys: the SDK ignores them)."""
    return isinstance(value, dict) and all(_optional(value.get(k), check) for k, check in fields.items())


def _fields(**fields: Any) -> Any:
    return lambda value: _shaped(value, fields)


#: The client capabilities the SDK validates (``ClientCapabilities``, the 2025-11-25 wire model and
#: the version-free one); each listed field may be absent or null, unlisted keys are ignored by both.
_CLIENT_CAPABILITIES = _fields(
    experimental=_objects_by_name,
    extensions=_objects_by_name,
    roots=_fields(listChanged=lambda v: isinstance(v, bool)),
    sampling=_fields(context=_object, tools=_object),
    elicitation=_fields(form=_object, url=_object),
    tasks=_fields(list=_object, cancel=_object,
                  requests=_fields(sampling=_fields(createMessage=_object), elicitation=_fields(create=_object))),
)
_PARAMS = {"protocolVersion", "capabilities", "clientInfo", "_meta"}
_CLIENT_INFO = {"name", "version", "title", "description", "websiteUrl", "icons"}


def _accepted(params: Any) -> bool:
    """``initialize`` params the SDK is sure to accept, in the exact types it expects (no coercion).
    Narrower than the SDK on purpose: what is not plainly valid goes to the SDK to answer."""
    if not isinstance(params, dict) or set(params) - _PARAMS:
        return False
    info = params.get("clientInfo")
    return (isinstance(params.get("protocolVersion"), str)
            and _CLIENT_CAPABILITIES(params.get("capabilities"))
            and isinstance(info, dict) and not set(info) - _CLIENT_INFO
            and isinstance(info.get("name"), str) and isinstance(info.get("version"), str)
            and all(_optional(info.get(k), _string) for k in ("title", "description", "websiteUrl"))
            and info.get("icons") is None
            and params.get("_meta") in (None, {}))


def initialize_result(protocol_version: str, *, list_changed: bool, instructions: str = INSTRUCTIONS
                      ) -> dict[str, Any]:
    """The SDK server's ``initialize`` result for a client offering ``protocol_version``: that version
    when it is one the SDK negotiates through the handshake, else the latest such version."""
    negotiated = protocol_version if protocol_version in HANDSHAKE_PROTOCOL_VERSIONS else LATEST_HANDSHAKE_VERSION
    return {
        "protocolVersion": negotiated,
        "capabilities": capabilities(list_changed),
        "serverInfo": {"name": SERVER_NAME, "version": __version__},
        "instructions": instructions,
    }


def initialize_response(line: bytes, *, list_changed: bool, instructions: str = INSTRUCTIONS
                        ) -> dict[str, Any] | None:
    """The response to ``line`` when it is one JSON-RPC ``initialize`` request that jit's transport
    and the SDK would take and answer with success; None for anything else (left to them)."""
    if _SURROGATE.search(line):
        return None  # the SDK's parser refuses lone surrogates; pairs are rare enough to leave to it too
    try:
        msg = json.loads(line.decode("utf-8"), object_pairs_hook=unique_keys, parse_constant=_no_constant,
                         parse_float=_finite)
    except (ValueError, RecursionError):
        return None
    if not isinstance(msg, dict) or set(msg) != {"jsonrpc", "id", "method", "params"} or not _shallow(msg):
        return None
    rid = msg["id"]
    if not (isinstance(rid, str) or (type(rid) is int and -_MAX_ID < rid < _MAX_ID)):
        return None
    if msg["jsonrpc"] != "2.0" or msg["method"] != "initialize" or not _accepted(msg["params"]):
        return None
    return {"jsonrpc": "2.0", "id": rid,
            "result": initialize_result(msg["params"]["protocolVersion"], list_changed=list_changed,
                                        instructions=instructions)}


# --------------------------------------------------------------------------- the first line


class Handover(NamedTuple):
    """What the early stage leaves the server: ``pending``, the bytes it took off stdin (to be read
    before the rest), and ``answered``, the response it wrote (the SDK's one to that id is dropped)."""

    pending: bytes
    answered: dict[str, Any] | None


def is_pipe(fd: int) -> bool:
    """Whether ``fd`` is a pipe or a socket, as an MCP client's stdio always is (also what
    :mod:`jit.serve.stdio` asks before using the event loop's pipe transports)."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view):]
        except BlockingIOError:  # a non-blocking stdout the client handed over
            select.select([], [fd], [])


class _FirstLine:
    """The reader thread: the first line of fd 0, answered on fd 1 when it is an ``initialize``.

    It stops at the first newline; what the client writes after it waits in the pipe for the
    server. :meth:`stop` ends it at once (a self-pipe wakes its ``select``); from then on it
    writes nothing, so a line that arrives late is the server's to answer."""

    def __init__(self, list_changed: bool, instructions: str) -> None:
        self._list_changed = list_changed
        self._instructions = instructions
        self._lock = threading.Lock()
        self._stopped = False
        self._buffer = bytearray()
        self._answered: dict[str, Any] | None = None
        self._wake_r, self._wake_w = os.pipe()
        self._thread = threading.Thread(target=self._run, name="jit-serve-first-line", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        line = self._read_line()
        if line is None:
            return
        response = initialize_response(line, list_changed=self._list_changed, instructions=self._instructions)
        if response is None:
            return
        data = (json.dumps(response, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
        with self._lock:  # stop() waits for a write under way; after it, nothing is written
            if self._stopped:
                return
            try:
                _write_all(1, data)
            except OSError:
                return  # the client is gone; the server will find out on its own
            self._answered = response

    def _read_line(self) -> bytes | None:
        """The first line (newline included), or None: stopped, end of input, too long, unreadable."""
        while len(self._buffer) <= _MAX_FIRST_LINE:
            try:
                ready, _, _ = select.select([0, self._wake_r], [], [])
                if self._wake_r in ready:
                    return None
                chunk = os.read(0, 1 << 16)
            except BlockingIOError:
                continue
            except OSError:
                return None
            if not chunk:
                return None
            start = len(self._buffer)
            self._buffer += chunk
            end = self._buffer.find(b"\n", start)
            if end >= 0:
                return bytes(self._buffer[:end + 1])
        return None

    def stop(self) -> Handover:
        """End the thread; what it read and what it answered."""
        with self._lock:
            self._stopped = True
        try:
            os.write(self._wake_w, b"x")
        except OSError:
            pass
        self._thread.join()
        for fd in (self._wake_r, self._wake_w):
            os.close(fd)
        return Handover(bytes(self._buffer), self._answered)


_stage: _FirstLine | None = None
_stage_lock = threading.Lock()


def begin(argv: list[str], environ: Mapping[str, str] = os.environ) -> bool:
    """Start answering ``initialize`` early when ``argv`` is a plain ``jit serve`` on stdio
    (:func:`serve_command`), its config file is a readable JSON object and stdin is a pipe or a
    socket; True when started. Only the process entry calls this: it reads the process's stdin."""
    global _stage
    command = serve_command(argv, environ)
    if command is None or not is_pipe(0):
        return False
    # The config file must hold a JSON object: its content is checked by the server's own start-up;
    # this only keeps the commonest mistake (no such file, a syntax error) from being answered first.
    config = _read_json_object(command.config_file)
    if config is None:
        return False
    base = os.path.dirname(os.path.abspath(os.path.expanduser(command.config_file)))
    text = instructions(server_names(config, base), expose_shard=command.expose_shard)
    with _stage_lock:
        if _stage is not None:
            return False
        _stage = _FirstLine(command.list_changed, text)
    return True


def handover() -> Handover | None:
    """Stop the early stage and take what it read and answered; None when it was not started
    (or was already taken). The stdio server calls this before it reads stdin."""
    global _stage
    with _stage_lock:
        stage, _stage = _stage, None
    return stage.stop() if stage is not None else None


# A process that ends before serving (a config error, an interrupt) answers nothing more.
atexit.register(handover)
