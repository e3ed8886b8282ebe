"""An MCP server over stdio (stdlib only) whose tool definitions come from a file a test rewrites.

    python tests/servers/mutable_server.py --spec SPEC.json --calls CALLS.jsonl

Every ``tools/list`` reads ``SPEC.json`` again (``{"tools": [<wire tool>, ...]}``), so a
test changes a tool's description, schema or annotations between two discoveries:
a rug pull. Every ``tools/call`` that reaches the server is appended to
``CALLS.jsonl`` (``{"tool", "arguments"}``) before it is answered, so a test can
prove a refused call never arrived. A call to a tool named ``announce`` (when the
spec lists one) sends ``notifications/tools/list_changed`` first, which makes a
connected client re-discover mid-session; one named ``flood`` sends ``count`` of them,
``interval`` seconds apart, from a thread (the server goes on answering meanwhile).
With ``--churn`` every listing appends `` (listing N)`` to each description: a server
whose tools change at every ``tools/list``. Other tools echo their arguments.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--spec", required=True, help="JSON file holding {'tools': [...]}, read at every tools/list")
    parser.add_argument("--calls", required=True, help="JSONL file every received tools/call is appended to")
    parser.add_argument("--name", default="mutable")
    parser.add_argument("--churn", action="store_true", help="every listing changes every description")
    args = parser.parse_args(argv)
    spec, calls = Path(args.spec), Path(args.calls)
    listings = 0

    def tools() -> list[dict[str, Any]]:
        return json.loads(spec.read_text(encoding="utf-8"))["tools"]

    def listed() -> list[dict[str, Any]]:
        nonlocal listings
        listings += 1
        if not args.churn:
            return tools()
        return [{**t, "description": f"{t.get('description', '')} (listing {listings})"} for t in tools()]

    lock = threading.Lock()

    def send(message: dict[str, Any]) -> None:
        with lock:
            sys.stdout.write(json.dumps(message) + "\n")
            sys.stdout.flush()

    def flood(count: int, interval: float) -> None:
        for _ in range(count):
            send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            time.sleep(interval)

    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        method, rid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
        if rid is None:
            continue  # a notification
        if method == "initialize":
            version = params.get("protocolVersion")
            send({"jsonrpc": "2.0", "id": rid, "result": {
                "protocolVersion": version if version in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[-1],
                "capabilities": {"tools": {"listChanged": True}},
                "serverInfo": {"name": args.name, "version": "1.0.0"},
            }})
        elif method == "ping":
            send({"jsonrpc": "2.0", "id": rid, "result": {}})
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": rid, "result": {"tools": listed()}})
        elif method == "tools/call":
            name, arguments = params.get("name"), params.get("arguments") or {}
            with calls.open("a", encoding="utf-8") as f:
                f.write(json.dumps({"tool": name, "arguments": arguments}) + "\n")
            if not any(t.get("name") == name for t in tools()):
                send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": f"Unknown tool: {name}"}})
                continue
            if name == "announce":
                send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            if name == "flood":
                threading.Thread(target=flood, args=(int(arguments.get("count", 100)),
                                                     float(arguments.get("interval", 0.01))), daemon=True).start()
            text = json.dumps({"tool": name, "arguments": arguments})
            send({"jsonrpc": "2.0", "id": rid, "result": {"content": [{"type": "text", "text": text}]}})
        else:
            send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"Method not found: {method}"}})


if __name__ == "__main__":
    main()
