"""A hand-written MCP server over stdio (stdlib only): real JSON-RPC, configurable misbehaviour.

    python tests/servers/raw_server.py --transport stdio [--mode MODE] [--name N]
        [--tools K] [--page-size P] [--stderr-mb M] [--garbage-lines G] [--pid-file PATH]
        [--fail-if-exists PATH] [--crash-once PATH] [--init-delay SECONDS] [--linger SECONDS]

Modes:
  ok         K tools: ``fail`` (reports isError), ``rpc_error`` (JSON-RPC error), then
             ``tool_0`` … (echo their arguments); ``tools/list`` paginated by P when P > 0
  malformed  a listing mixing good tools with a non-object schema, a missing name,
             an empty name, a list as schema, a missing schema and a duplicate name
  crash      write a reason to stderr and exit 3 before reading anything
  hang       read requests and never answer, not even on EOF

``--stderr-mb`` writes that many MiB to stderr before serving (a client that does
not drain stderr deadlocks here); ``--garbage-lines`` writes that many non-JSON
lines to stdout before each answer to ``initialize``; ``--linger`` keeps it running that
many seconds after its stdin closes (as a server that does not watch its stdin does, until
its client signals it). ``--crash-once PATH`` crashes at start unless PATH exists, creating it (the
next start runs MODE: a server that fails once, then hangs on the retry); ``--init-delay`` sleeps that
many seconds before answering ``initialize`` (a slow start). Starting in ~50 ms, it
also serves as a cheap "good server" when tests need many of them.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")


def _tool(name: str, description: str) -> dict[str, Any]:
    return {
        "name": name,
        "description": description,
        "inputSchema": {"type": "object", "properties": {"x": {"type": "string", "description": "any text"}}},
    }


def tool_list(mode: str, count: int) -> list[dict[str, Any]]:
    if mode == "malformed":
        return [
            _tool("good_a", "A good tool."),
            {"name": "bad_schema", "description": "Schema is not an object.", "inputSchema": {"type": "string"}},
            {"description": "No name at all.", "inputSchema": {"type": "object"}},
            {"name": "", "description": "Empty name.", "inputSchema": {"type": "object"}},
            {"name": "list_schema", "inputSchema": [1, 2]},
            {"name": "no_schema", "description": "No inputSchema."},
            _tool("good_a", "A duplicate of good_a; the first one wins."),
            _tool("good_b", "Another good tool."),
        ]
    fixed = [_tool("fail", "Always reports isError."), _tool("rpc_error", "Always answers with a JSON-RPC error.")]
    return fixed[:count] + [_tool(f"tool_{i}", f"Raw tool number {i}.") for i in range(max(0, count - len(fixed)))]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--transport", choices=["stdio"], default="stdio")
    parser.add_argument("--port", type=int, default=0, help="ignored: stdio only")
    parser.add_argument("--mode", choices=["ok", "malformed", "crash", "hang"], default="ok")
    parser.add_argument("--name", default="raw")
    parser.add_argument("--tools", type=int, default=3)
    parser.add_argument("--page-size", type=int, default=0)
    parser.add_argument("--stderr-mb", type=float, default=0)
    parser.add_argument("--garbage-lines", type=int, default=0)
    parser.add_argument("--pid-file")
    parser.add_argument("--fail-if-exists", help="exit with an error at start while this path exists")
    parser.add_argument("--linger", type=float, default=0, help="seconds to keep running after stdin closes")
    parser.add_argument("--crash-once", help="crash at start unless this path exists, creating it")
    parser.add_argument("--init-delay", type=float, default=0, help="seconds to sleep before answering initialize")
    args = parser.parse_args(argv)
    if args.crash_once and not os.path.exists(args.crash_once):
        open(args.crash_once, "w").close()
        args.mode = "crash"
    if args.fail_if_exists and os.path.exists(args.fail_if_exists):
        sys.stderr.write(f"raw_server: refusing to start while {args.fail_if_exists} exists\n")
        sys.exit(2)
    if args.pid_file:
        with open(args.pid_file, "w") as f:
            f.write(str(os.getpid()))

    if args.mode == "crash":
        sys.stderr.write("raw_server: fatal: configuration missing (simulated crash)\n")
        sys.exit(3)
    if args.stderr_mb:
        line = "raw_server log line " + "x" * 100 + "\n"
        for _ in range(int(args.stderr_mb * 1024 * 1024 / len(line))):
            sys.stderr.write(line)
        sys.stderr.write("raw_server: done flooding stderr\n")
        sys.stderr.flush()

    tools = tool_list(args.mode, args.tools)
    out = sys.stdout

    def send(message: dict[str, Any]) -> None:
        out.write(json.dumps(message) + "\n")
        out.flush()

    for line in sys.stdin:
        if args.mode == "hang":
            continue
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        method, rid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
        if rid is None:
            continue  # a notification
        if method == "initialize":
            time.sleep(args.init_delay)
            for i in range(args.garbage_lines):
                out.write(f"this is not JSON-RPC, line {i}\n")
            version = params.get("protocolVersion")
            send({"jsonrpc": "2.0", "id": rid, "result": {
                "protocolVersion": version if version in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[-1],
                "capabilities": {"tools": {"listChanged": False}},
                "serverInfo": {"name": args.name, "version": "0.0.1"},
            }})
        elif method == "ping":
            send({"jsonrpc": "2.0", "id": rid, "result": {}})
        elif method == "tools/list":
            start = int(params.get("cursor") or 0)
            size = args.page_size or len(tools)
            page = {"tools": tools[start:start + size]}
            if start + size < len(tools):
                page["nextCursor"] = str(start + size)
            send({"jsonrpc": "2.0", "id": rid, "result": page})
        elif method == "tools/call":
            name, arguments = params.get("name"), params.get("arguments") or {}
            if not any(t.get("name") == name for t in tools if isinstance(t, dict)):
                send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": f"Unknown tool: {name}"}})
                continue
            if name == "rpc_error":
                failure = {"code": -32603, "message": "internal failure (simulated)"}
                send({"jsonrpc": "2.0", "id": rid, "error": failure})
                continue
            text = json.dumps({"tool": name, "arguments": arguments})
            send({"jsonrpc": "2.0", "id": rid, "result": {
                "content": [{"type": "text", "text": text}], "isError": name == "fail"}})
        else:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"Method not found: {method}"}})
    if args.mode == "hang":
        while True:  # a hung server does not exit when its stdin closes
            time.sleep(3600)
    time.sleep(args.linger)


if __name__ == "__main__":
    main()
