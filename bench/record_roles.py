"""Record the real tool lists of public MCP servers for the roles set (issue #15).

    python -m bench.record_roles --install --work-dir /tmp/roles-servers
    python -m bench.record_roles --work-dir /tmp/roles-servers      # servers already installed

The roles set (``bench/data/roles/``) measures which tools a role is offered on a
catalog of real servers. Tool lists written by hand drift from what servers really
send (names, descriptions, schemas and above all the annotations a least-privilege
policy reads), so this script installs the servers from PyPI and npm, starts each over
stdio with the MCP SDK client and writes what ``tools/list`` returns, every page of it:

* ``tools.jsonl``: one row per tool, ``{server, name, title, description, input_schema,
  output_schema, annotations}``; ``annotations`` is the object the server sent, with its
  wire names (``readOnlyHint``, ``destructiveHint``, ...), hints it left out stay out;
* ``servers.json``: per server, the package, its installed version, the command that
  started it and what the server said about itself at ``initialize``.

Listing tools calls no remote API, so servers that need a token or a database get a
dummy one (``DUMMY_ENV``), never a real one. The recording is made once and committed:
the tests and the evaluator (``bench/eval_roles.py``) read the files and need no network.
Re-running it with ``--install`` installs the versions pinned in the committed
``servers.json``; add ``--latest`` to record the newest releases instead.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import InitializeResult, PaginatedRequestParams, Tool

DATA = Path(__file__).parent / "data" / "roles"

#: Placeholder credentials: the servers check that these are set before they start, and
#: listing tools never uses them. Nothing here is a real secret.
DUMMY_ENV = "dummy-not-a-real-credential"

#: Seconds to wait for a server to start and list its tools (npm servers start in ~1 s).
START_TIMEOUT = 60.0

#: Most ``tools/list`` pages followed for one server; a server that keeps returning a
#: cursor past this is broken, not large.
MAX_PAGES = 50


@dataclass(frozen=True)
class ServerSpec:
    """One server of the set: its package and how it is started.

    ``args`` and ``env`` may name ``{workdir}`` (a scratch directory the servers may write
    to: the filesystem root, the memory file, the git repository), never the repository.
    """

    name: str  # short and valid as a jit server name: the prefix of its tools
    registry: str  # "pypi" or "npm"
    package: str
    command: str  # console script of the package
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)


#: The 13 servers issue #15 was reported on: the reference servers of
#: modelcontextprotocol/servers, current and archived, as published on PyPI and npm.
SERVERS: tuple[ServerSpec, ...] = (
    ServerSpec("time", "pypi", "mcp-server-time", "mcp-server-time", ("--local-timezone", "UTC")),
    ServerSpec("fetch", "pypi", "mcp-server-fetch", "mcp-server-fetch"),
    ServerSpec("git", "pypi", "mcp-server-git", "mcp-server-git", ("--repository", "{workdir}/repo")),
    ServerSpec("filesystem", "npm", "@modelcontextprotocol/server-filesystem", "mcp-server-filesystem",
               ("{workdir}/files",)),
    ServerSpec("memory", "npm", "@modelcontextprotocol/server-memory", "mcp-server-memory",
               env={"MEMORY_FILE_PATH": "{workdir}/memory.jsonl"}),
    ServerSpec("everything", "npm", "@modelcontextprotocol/server-everything", "mcp-server-everything",
               ("stdio",)),
    ServerSpec("sequential-thinking", "npm", "@modelcontextprotocol/server-sequential-thinking",
               "mcp-server-sequential-thinking"),
    ServerSpec("github", "npm", "@modelcontextprotocol/server-github", "mcp-server-github",
               env={"GITHUB_PERSONAL_ACCESS_TOKEN": DUMMY_ENV}),
    ServerSpec("gitlab", "npm", "@modelcontextprotocol/server-gitlab", "mcp-server-gitlab",
               env={"GITLAB_PERSONAL_ACCESS_TOKEN": DUMMY_ENV, "GITLAB_API_URL": "https://gitlab.com/api/v4"}),
    ServerSpec("slack", "npm", "@modelcontextprotocol/server-slack", "mcp-server-slack",
               env={"SLACK_BOT_TOKEN": DUMMY_ENV, "SLACK_TEAM_ID": DUMMY_ENV}),
    ServerSpec("brave-search", "npm", "@modelcontextprotocol/server-brave-search", "mcp-server-brave-search",
               env={"BRAVE_API_KEY": DUMMY_ENV}),
    ServerSpec("google-maps", "npm", "@modelcontextprotocol/server-google-maps", "mcp-server-google-maps",
               env={"GOOGLE_MAPS_API_KEY": DUMMY_ENV}),
    # Connects lazily: listing tools needs no database, only a well-formed URL.
    ServerSpec("postgres", "npm", "@modelcontextprotocol/server-postgres", "mcp-server-postgres",
               ("postgresql://localhost/dummy",)),
)


# --------------------------------------------------------------------------- install


def pinned_versions(path: Path) -> dict[str, str]:
    """``package -> version`` of a previous recording, so a re-recording installs the same releases."""
    if not path.exists():
        return {}
    servers = json.loads(path.read_text(encoding="utf-8"))
    return {s["package"]: s["version"] for s in servers.values() if s.get("version")}


def install(work: Path, specs: tuple[ServerSpec, ...], pins: dict[str, str]) -> None:
    """Install the packages: PyPI ones into their own venv (not jit's), npm ones under one prefix."""
    def spec_of(s: ServerSpec) -> str:
        version = pins.get(s.package)
        if not version:
            return s.package
        return f"{s.package}=={version}" if s.registry == "pypi" else f"{s.package}@{version}"

    pypi = [spec_of(s) for s in specs if s.registry == "pypi"]
    npm = [spec_of(s) for s in specs if s.registry == "npm"]
    if pypi:
        venv = work / "venv"
        if not (venv / "bin" / "python").exists():
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "--quiet", *pypi], check=True)
    if npm:
        npm_bin = shutil.which("npm")
        if npm_bin is None:
            raise SystemExit("npm is not on PATH; it is needed to install the npm servers")
        subprocess.run([npm_bin, "install", "--silent", "--prefix", str(work / "npm"), *npm], check=True)


def executable(work: Path, spec: ServerSpec) -> Path:
    return (work / "venv" / "bin" / spec.command if spec.registry == "pypi"
            else work / "npm" / "node_modules" / ".bin" / spec.command)


def installed_version(work: Path, spec: ServerSpec) -> str:
    """The version the package manager installed (the server's own ``initialize`` answer may differ)."""
    if spec.registry == "npm":
        manifest = work / "npm" / "node_modules" / spec.package / "package.json"
        return str(json.loads(manifest.read_text(encoding="utf-8"))["version"])
    out = subprocess.run(
        [str(work / "venv" / "bin" / "python"), "-c",
         "import importlib.metadata, sys; print(importlib.metadata.version(sys.argv[1]))", spec.package],
        check=True, capture_output=True, text=True)
    return out.stdout.strip()


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


async def list_tools(params: StdioServerParameters, errlog: TextIO) -> tuple[InitializeResult, list[Tool]]:
    """Start one server, follow ``tools/list`` cursors to the end; the ``initialize`` result and the tools."""
    async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
        init = await session.initialize()
        tools: list[Tool] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            page = await session.list_tools(params=PaginatedRequestParams(cursor=cursor) if cursor else None)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                return init, tools
        raise RuntimeError(f"tools/list still had a next cursor after {MAX_PAGES} pages")


def record(work: Path, specs: tuple[ServerSpec, ...]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Every server's tools and description; one server at a time, so a failure names its server."""
    rows: list[dict[str, Any]] = []
    servers: dict[str, Any] = {}
    scratch = Path(tempfile.mkdtemp(prefix="jit-roles-"))
    try:
        (scratch / "files").mkdir()
        # mcp-server-git checks at startup that --repository is a git repository.
        subprocess.run(["git", "init", "--quiet", str(scratch / "repo")], check=True)
        for spec in specs:
            exe = executable(work, spec)
            if not exe.exists():
                raise SystemExit(f"{spec.name}: {exe} not found; install the servers first (--install)")

            def fill(s: str) -> str:
                return s.replace("{workdir}", str(scratch))

            params = StdioServerParameters(command=str(exe), args=[fill(a) for a in spec.args],
                                           env={k: fill(v) for k, v in spec.env.items()} or None)
            log_path = scratch / f"{spec.name}.stderr"
            with log_path.open("w", encoding="utf-8") as errlog:
                try:
                    init, tools = asyncio.run(asyncio.wait_for(list_tools(params, errlog), START_TIMEOUT))
                except Exception as exc:
                    errlog.flush()
                    tail = log_path.read_text(encoding="utf-8", errors="replace")[-2000:]
                    raise SystemExit(f"{spec.name}: could not list tools: {exc!r}\n{tail}") from exc
            rows.extend(tool_row(spec.name, t) for t in tools)
            servers[spec.name] = {
                "registry": spec.registry,
                "package": spec.package,
                "version": installed_version(work, spec),
                "command": spec.command,
                "args": list(spec.args),
                "env": sorted(spec.env),  # names only: the values are placeholders or scratch paths
                "server_info": init.server_info.model_dump(mode="json", by_alias=True, exclude_none=True),
                "protocol_version": init.protocol_version,
                "recorded_on": datetime.date.today().isoformat(),
                "tools": len(tools),
                "annotated": sum(t.annotations is not None for t in tools),
            }
            print(f"{spec.name:20} {servers[spec.name]['version']:12} {len(tools):3} tools "
                  f"({servers[spec.name]['annotated']} annotated)", file=sys.stderr)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return rows, servers


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.record_roles", description=__doc__.split("\n\n")[0])
    parser.add_argument("--work-dir", type=Path, required=True,
                        help="where the servers are (or get) installed: <dir>/venv and <dir>/npm")
    parser.add_argument("--install", action="store_true", help="install the servers first")
    parser.add_argument("--latest", action="store_true", help="with --install: ignore the pinned versions")
    parser.add_argument("--out", type=Path, default=DATA, help=f"where the files go (default: {DATA})")
    parser.add_argument("--server", action="append", dest="servers",
                        help="record only this server (repeatable); the other rows are kept")
    args = parser.parse_args(argv)
    work = args.work_dir.resolve()
    specs = SERVERS
    if args.servers:
        unknown = set(args.servers) - {s.name for s in SERVERS}
        if unknown:
            parser.error(f"unknown server(s) {sorted(unknown)}; known: {', '.join(s.name for s in SERVERS)}")
        specs = tuple(s for s in SERVERS if s.name in args.servers)
    out: Path = args.out
    if args.install:
        work.mkdir(parents=True, exist_ok=True)
        install(work, specs, {} if args.latest else pinned_versions(out / "servers.json"))
    rows, servers = record(work, specs)
    out.mkdir(parents=True, exist_ok=True)
    if args.servers:
        # A partial re-recording replaces those servers' rows and keeps the others.
        old_rows = [json.loads(line) for line in (out / "tools.jsonl").read_text(encoding="utf-8").splitlines()
                    if line.strip()] if (out / "tools.jsonl").exists() else []
        old_servers = json.loads((out / "servers.json").read_text(encoding="utf-8")) \
            if (out / "servers.json").exists() else {}
        rows = [r for r in old_rows if r["server"] not in servers] + rows
        servers = {k: v for k, v in old_servers.items() if k not in servers} | servers
    order = {s.name: i for i, s in enumerate(SERVERS)}
    rows.sort(key=lambda r: order.get(r["server"], len(order)))  # stable: each server's own order kept
    servers = dict(sorted(servers.items(), key=lambda kv: order.get(kv[0], len(order))))
    with (out / "tools.jsonl").open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False, sort_keys=False) + "\n")
    (out / "servers.json").write_text(json.dumps(servers, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{len(rows)} tools of {len(servers)} servers -> {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
