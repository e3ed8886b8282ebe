"""Record the real tool lists of public MCP servers: the roles set (issue #15) and the catalogs set (#21).

    python -m bench.record_roles --install --work-dir /tmp/roles-servers
    python -m bench.record_roles --work-dir /tmp/roles-servers      # servers already installed
    python -m bench.record_roles --set catalogs --install --work-dir /tmp/catalogs-servers

Tool lists written by hand drift from what servers really send (names, descriptions, schemas
and above all the annotations a least-privilege policy reads), so this script installs the
servers of a set (``bench/record_sets.py``) from PyPI and npm, starts each over stdio with the
MCP SDK client and writes what ``tools/list`` returns, every page of it, into
``bench/data/<set>/``:

* ``tools.jsonl``: one row per tool, ``{server, name, title, description, input_schema,
  output_schema, annotations}``; ``annotations`` holds the specification's fields as the
  server sent them, by their wire names (``readOnlyHint``, ``destructiveHint``, ...), and a
  hint it left out stays out;
* ``servers.json``: per server, the package, its installed version, the command that
  started it and what the server said about itself at ``initialize``.

A set with provenance (``catalogs``) also gets ``wire.jsonl``, each ``tools/list`` result
exactly as the server sent it (``{server, page, result}``), each package's licence in
``servers.json`` and a ``SOURCE.md`` (date, command, licences, tool counts, the candidates
left out and why).

Listing tools calls no remote API, so servers that need a token or a database get a
dummy one (``DUMMY_ENV``), never a real one. The recording is made once and committed:
the tests and the evaluators read the files and need no network. Each package is installed
in a venv (PyPI) or an npm prefix of its own, so servers that pin conflicting libraries
(``mcp<2``) coexist, or of its group (``ServerSpec.group``: the roles set's servers, which
answer as recorded only when installed together). Re-running with ``--install`` installs the
versions pinned in the committed ``servers.json``; add ``--latest`` for the newest releases.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any, TextIO

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.message import SessionMessage
from mcp.types import InitializeResult, JSONRPCRequest, JSONRPCResponse, PaginatedRequestParams, Tool

from bench.record_sets import ROLES, SETS, RecordSet, ServerSpec

#: Seconds to wait for a server to start and list its tools (npm servers start in ~1 s).
START_TIMEOUT = 60.0

#: A browser server must not fetch a browser build at install time (none can be had here, and
#: listing tools launches none).
NO_BROWSER_DOWNLOAD = {"PUPPETEER_SKIP_DOWNLOAD": "1", "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD": "1"}

#: Most ``tools/list`` pages followed for one server; a server that keeps returning a
#: cursor past this is broken, not large.
MAX_PAGES = 50


# --------------------------------------------------------------------------- install


def pinned_versions(path: Path) -> dict[str, str]:
    """``package -> version`` of a previous recording, so a re-recording installs the same releases."""
    if not path.exists():
        return {}
    servers = json.loads(path.read_text(encoding="utf-8"))
    return {s["package"]: s["version"] for s in servers.values() if s.get("version")}


def set_pins(record_set: RecordSet, out: Path) -> dict[str, str]:
    """The releases to install: the recording in ``out`` first, then the set's committed one, then
    those of the sets it shares servers with, then the versions its specs name."""
    pins = {s.package: s.version for s in record_set.servers if s.version}
    for other in reversed(record_set.pins_from):
        pins |= pinned_versions(SETS[other].folder / "servers.json")
    return pins | pinned_versions(record_set.folder / "servers.json") | pinned_versions(out / "servers.json")


def install_dir(work: Path, spec: ServerSpec) -> Path:
    """Where a server's package lives: the venv (PyPI) or npm prefix of its group, else its own."""
    return work / spec.registry / (spec.group or spec.name)


def install(work: Path, specs: tuple[ServerSpec, ...], pins: dict[str, str]) -> None:
    """Install the packages: one venv (never jit's) or npm prefix per group or lone server, one command each."""
    by_dir: dict[Path, list[ServerSpec]] = {}
    for spec in specs:
        by_dir.setdefault(install_dir(work, spec), []).append(spec)
    npm_bin = shutil.which("npm")
    for where, members in by_dir.items():
        pypi = members[0].registry == "pypi"
        pinned = "{}=={}" if pypi else "{}@{}"
        requirements = [pinned.format(s.package, pins[s.package]) if s.package in pins else s.package
                        for s in members] + [r for s in members for r in s.requires]
        if pypi:
            if not (where / "bin" / "python").exists():
                subprocess.run([sys.executable, "-m", "venv", str(where)], check=True)
            command = [str(where / "bin" / "pip"), "install", "--quiet", *requirements]
        else:
            if npm_bin is None:
                raise SystemExit("npm is not on PATH; it is needed to install the npm servers")
            where.mkdir(parents=True, exist_ok=True)
            command = [npm_bin, "install", "--silent", "--no-audit", "--no-fund", "--prefix", str(where),
                       *requirements]
        print(f"installing {', '.join(s.name for s in members)}: {' '.join(requirements)}", file=sys.stderr)
        if subprocess.run(command, env=os.environ | NO_BROWSER_DOWNLOAD).returncode != 0:
            raise SystemExit(f"{where.name}: installing {' '.join(requirements)} failed")


def executable(work: Path, spec: ServerSpec) -> Path:
    where = install_dir(work, spec)
    return where / "bin" / spec.command if spec.registry == "pypi" else where / "node_modules" / ".bin" / spec.command


#: Run by a PyPI server's own venv Python: prints the package's version, its licence statement
#: (``License-Expression``, else a one-line ``License``, else the licence classifiers) and the path
#: of its first licence file.
PYPI_METADATA = """
import importlib.metadata as m, sys
d = m.metadata(sys.argv[1])
text = (d.get("License") or "").strip()
lic = d.get("License-Expression") or (text if text and "\\n" not in text and len(text) <= 80 else "")
lic = lic or ", ".join(c.rsplit(" :: ", 1)[-1] for c in d.get_all("Classifier") or [] if c.startswith("License ::"))
files = [f for f in m.distribution(sys.argv[1]).files or [] if "licen" in str(f).lower() and ".dist-info" in str(f)]
print(m.version(sys.argv[1])); print(lic); print(files[0].locate() if files else "")
"""


def licence_note(statement: str, file: Path | None) -> str:
    """The licence as the package's metadata states it; when that names no licence (nothing, or
    npm's ``SEE LICENSE IN <file>``), the first line of the licence file the package ships."""
    if statement and not statement.upper().startswith("SEE LICEN"):
        return statement
    said = statement or "not stated"
    if file is None or not file.is_file():
        return f"{said}; no licence file in the package"
    first = next((line.strip() for line in file.read_text(encoding="utf-8", errors="replace").splitlines()
                  if line.strip()), "")
    return f"{said}; {file.name}: {first}"


def package_metadata(work: Path, spec: ServerSpec) -> tuple[str, str]:
    """The installed version and the licence, as the package's own metadata states them.

    The version is the package manager's (the server's ``initialize`` answer may differ).
    """
    where = install_dir(work, spec)
    if spec.registry == "npm":
        package = where / "node_modules" / spec.package
        manifest = json.loads((package / "package.json").read_text(encoding="utf-8"))
        statement = str(manifest.get("license") or ", ".join(
            entry.get("type", "") for entry in manifest.get("licenses", []) if isinstance(entry, dict)))
        named = statement[len("SEE LICENSE IN "):].strip() if statement.upper().startswith("SEE LICEN") else ""
        shipped = sorted(p for p in package.iterdir() if p.name.upper().startswith(("LICENSE", "LICENCE")))
        file = package / named if named else (shipped[0] if shipped else None)
        return str(manifest["version"]), licence_note(statement, file)
    out = subprocess.run([str(where / "bin" / "python"), "-c", PYPI_METADATA, spec.package],
                         check=True, capture_output=True, text=True)
    version, statement, file = (out.stdout.rstrip("\n").split("\n") + ["", ""])[:3]
    return version, licence_note(statement, Path(file) if file else None)


# --------------------------------------------------------------------------- record


def tool_row(server: str, tool: Tool) -> dict[str, Any]:
    """A ``tools.jsonl`` row of one SDK ``Tool``, in the wire's JSON (camelCase hints)."""
    annotations = None
    if tool.annotations is not None:
        # exclude_none: a hint the server did not send must stay absent, not become null.
        annotations = tool.annotations.model_dump(mode="json", by_alias=True, exclude_none=True) or None
    return {
        "server": server,
        "name": tool.name,
        "title": tool.title,
        "description": tool.description or "",
        "input_schema": tool.input_schema,
        "output_schema": tool.output_schema,
        "annotations": annotations,
    }


class WireTap:
    """Sits between the stdio transport and the client session and keeps each ``tools/list`` result as sent.

    The SDK turns a page into ``Tool`` objects (and may drop a tool it finds invalid); the tap
    keeps the JSON-RPC ``result`` object itself, matched to its request by id.
    """

    def __init__(self) -> None:
        self.list_ids: list[str | int] = []
        self.results: dict[str | int, dict[str, Any]] = {}

    def pages(self) -> list[dict[str, Any]]:
        return [self.results[i] for i in self.list_ids]

    async def relay_in(self, source: Any, sink: Any) -> None:
        async with sink:
            async for item in source:
                if isinstance(item, SessionMessage) and isinstance(item.message, JSONRPCResponse):
                    self.results[item.message.id] = item.message.result
                await sink.send(item)

    async def relay_out(self, source: Any, sink: Any) -> None:
        async with source:
            async for item in source:
                if isinstance(item.message, JSONRPCRequest) and item.message.method == "tools/list":
                    self.list_ids.append(item.message.id)
                await sink.send(item)


async def list_tools(params: StdioServerParameters,
                     errlog: TextIO) -> tuple[InitializeResult, list[Tool], list[dict[str, Any]]]:
    """Start one server, follow ``tools/list`` cursors to the end: ``initialize``, the tools, the wire pages."""
    tap = WireTap()
    async with stdio_client(params, errlog=errlog) as (read, write), anyio.create_task_group() as tasks:
        to_session, session_read = anyio.create_memory_object_stream[Any](0)
        session_write, from_session = anyio.create_memory_object_stream[Any](0)
        tasks.start_soon(tap.relay_in, read, to_session)
        tasks.start_soon(tap.relay_out, from_session, write)
        async with ClientSession(session_read, session_write) as session:
            init = await session.initialize()
            tools: list[Tool] = []
            cursor: str | None = None
            for _ in range(MAX_PAGES):
                page = await session.list_tools(params=PaginatedRequestParams(cursor=cursor) if cursor else None)
                tools.extend(page.tools)
                cursor = page.next_cursor
                if not cursor:
                    break
            else:
                raise RuntimeError(f"tools/list still had a next cursor after {MAX_PAGES} pages")
        tasks.cancel_scope.cancel()
    pages = tap.pages()
    wire_names = [t.get("name") for page in pages for t in page.get("tools", [])]
    if wire_names != [t.name for t in tools]:
        raise RuntimeError(f"the client kept {len(tools)} of the {len(wire_names)} tools sent")
    return init, tools, pages


def record(work: Path, specs: tuple[ServerSpec, ...], *, with_licence: bool = False
           ) -> tuple[list[dict[str, Any]], dict[str, Any], list[dict[str, Any]]]:
    """Every server's tool rows, description and wire pages; one server at a time, so a failure names its server."""
    rows: list[dict[str, Any]] = []
    servers: dict[str, Any] = {}
    wire: list[dict[str, Any]] = []
    scratch = Path(tempfile.mkdtemp(prefix="jit-record-"))
    try:
        (scratch / "files").mkdir()
        (scratch / "home").mkdir()
        # mcp-server-git checks at startup that --repository is a git repository.
        subprocess.run(["git", "init", "--quiet", str(scratch / "repo")], check=True)
        for spec in specs:
            exe = executable(work, spec)
            if not exe.exists():
                raise SystemExit(f"{spec.name}: {exe} not found; install the servers first (--install)")

            def fill(s: str) -> str:
                return s.replace("{workdir}", str(scratch))

            for relative, text in spec.files.items():
                (scratch / relative).parent.mkdir(parents=True, exist_ok=True)
                (scratch / relative).write_text(fill(text), encoding="utf-8")

            params = StdioServerParameters(command=str(exe), args=[fill(a) for a in spec.args],
                                           env={k: fill(v) for k, v in spec.env.items()} or None)
            log_path = scratch / f"{spec.name}.stderr"
            with log_path.open("w", encoding="utf-8") as errlog:
                try:
                    init, tools, pages = asyncio.run(asyncio.wait_for(list_tools(params, errlog), START_TIMEOUT))
                except Exception as exc:
                    errlog.flush()
                    tail = log_path.read_text(encoding="utf-8", errors="replace")[-2000:]
                    raise SystemExit(f"{spec.name}: could not list tools: {exc!r}\n{tail}") from exc
            rows.extend(tool_row(spec.name, t) for t in tools)
            wire.extend({"server": spec.name, "page": i, "result": page} for i, page in enumerate(pages))
            version, licence = package_metadata(work, spec)
            servers[spec.name] = {
                "registry": spec.registry,
                "package": spec.package,
                "version": version,
                **({"license": licence} if with_licence else {}),
                "command": spec.command,
                "args": list(spec.args),
                "env": sorted(spec.env),  # names only: the values are placeholders, scratch paths or settings
                "server_info": init.server_info.model_dump(mode="json", by_alias=True, exclude_none=True),
                "protocol_version": init.protocol_version,
                "recorded_on": datetime.date.today().isoformat(),
                "tools": len(tools),
                "annotated": sum(t.annotations is not None for t in tools),
            }
            print(f"{spec.name:20} {version:12} {len(tools):3} tools "
                  f"({servers[spec.name]['annotated']} annotated)", file=sys.stderr)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return rows, servers, wire


# --------------------------------------------------------------------------- write


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    with path.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False, sort_keys=False) + "\n")


def command_line(record_set: RecordSet) -> str:
    """The command that (re-)records a set, as SOURCE.md quotes it."""
    chosen = "" if record_set is ROLES else f" --set {record_set.name}"
    return f"python -m bench.record_roles{chosen} --install --work-dir /tmp/{record_set.name}-servers"


def source_markdown(record_set: RecordSet, servers: dict[str, Any], node: str, sdk: str) -> str:
    """``SOURCE.md`` of a set: where its tool lists come from, their licences and counts (``node`` and
    ``sdk``: the versions of Node and of the ``mcp`` client that recorded it)."""
    dates = sorted({s["recorded_on"] for s in servers.values()})
    total = sum(s["tools"] for s in servers.values())
    lines = [
        f"# The {record_set.name} set: recorded `tools/list` answers of {len(servers)} public MCP servers",
        "",
        f"Recorded on {' to '.join(dict.fromkeys((dates[0], dates[-1])))} with Node {node} and the `mcp` "
        f"{sdk} Python SDK client over stdio, every `tools/list` page followed to its end:",
        "",
        "```",
        command_line(record_set),
        "```",
        "",
        "Each server was installed from its registry at the version below, in a venv or an npm prefix",
        "of its own or of its group (servers first recorded together are installed together again),",
        "and started with dummy credentials: listing tools calls no remote API, and a server that reads",
        "a credential file at start got a placeholder one. `servers.json` has each server's command,",
        "arguments, the names of the environment variables it was given (never their values) and its",
        "`initialize` serverInfo; `tools.jsonl` one row per tool, with the specification's annotation",
        "fields; `wire.jsonl` each `tools/list` result exactly as sent, with everything else a server",
        "sends (`_meta`, `execution`, annotation keys of its own). The tool definitions are the",
        "packages' authors' text, under the licences below as each package's metadata states them",
        "(with the first line of the licence file the package ships where the metadata names none).",
        "",
        f"{total} tools of {len(servers)} servers ({sum(s['annotated'] for s in servers.values())} "
        "with annotations).",
        "",
        "| server | registry | package | version | licence | tools | annotated |",
        "|---|---|---|---|---|---:|---:|",
    ]
    lines += [f"| {name} | {s['registry']} | {s['package']} | {s['version']} | {s.get('license', '')} "
              f"| {s['tools']} | {s['annotated']} |" for name, s in servers.items()]
    if record_set.skipped:
        lines += ["", "## Candidates left out", "", "| package | why |", "|---|---|"]
        lines += [f"| {package} | {why} |" for package, why in record_set.skipped]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.record_roles", description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", dest="set_name", choices=sorted(SETS), default=ROLES.name,
                        help="which set to record (default: roles)")
    parser.add_argument("--work-dir", type=Path, required=True,
                        help="where the servers are (or get) installed: <dir>/pypi/<server or group>, <dir>/npm/...")
    parser.add_argument("--install", action="store_true", help="install the servers first")
    parser.add_argument("--latest", action="store_true", help="with --install: ignore the pinned versions")
    parser.add_argument("--out", type=Path, help="where the files go (default: bench/data/<set>)")
    parser.add_argument("--server", action="append", dest="servers",
                        help="record only this server (repeatable); the other rows are kept")
    args = parser.parse_args(argv)
    record_set = SETS[args.set_name]
    work = args.work_dir.resolve()
    specs = record_set.servers
    if args.servers:
        unknown = set(args.servers) - {s.name for s in specs}
        if unknown:
            parser.error(f"unknown server(s) {sorted(unknown)}; known: {', '.join(s.name for s in specs)}")
        specs = tuple(s for s in specs if s.name in args.servers)
    out: Path = args.out or record_set.folder
    if args.install:
        work.mkdir(parents=True, exist_ok=True)
        install(work, specs, {} if args.latest else set_pins(record_set, out))
    rows, servers, wire = record(work, specs, with_licence=record_set.provenance)
    out.mkdir(parents=True, exist_ok=True)
    if args.servers:
        # A partial re-recording replaces those servers' rows and keeps the others.
        old_servers = json.loads((out / "servers.json").read_text(encoding="utf-8")) \
            if (out / "servers.json").exists() else {}
        rows = [r for r in read_jsonl(out / "tools.jsonl") if r["server"] not in servers] + rows
        wire = [r for r in read_jsonl(out / "wire.jsonl") if r["server"] not in servers] + wire
        servers = {k: v for k, v in old_servers.items() if k not in servers} | servers
    order = {s.name: i for i, s in enumerate(record_set.servers)}
    rows.sort(key=lambda r: order.get(r["server"], len(order)))  # stable: each server's own order kept
    servers = dict(sorted(servers.items(), key=lambda kv: order.get(kv[0], len(order))))
    write_jsonl(out / "tools.jsonl", rows)
    (out / "servers.json").write_text(json.dumps(servers, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    if record_set.provenance:
        wire.sort(key=lambda r: (order.get(r["server"], len(order)), r["page"]))
        write_jsonl(out / "wire.jsonl", wire)
        node = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip().lstrip("v")
        text = source_markdown(record_set, servers, node, metadata.version("mcp"))
        (out / "SOURCE.md").write_text(text, encoding="utf-8")
    print(f"{len(rows)} tools of {len(servers)} servers -> {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
