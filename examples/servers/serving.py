"""The command line the example servers share: one path option, stdio by default or Streamable HTTP."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from mcp.server.mcpserver import MCPServer


def run_cli(doc: str, option: str, default: str, help: str, create: Callable[[Path], MCPServer],
            argv: list[str] | None = None) -> None:
    """Parse ``option PATH`` and ``--http HOST:PORT``, build the server with ``create(PATH)``, run it."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument(option, default=default, help=help)
    parser.add_argument("--http", metavar="HOST:PORT", help="serve Streamable HTTP at /mcp instead of stdio")
    args = parser.parse_args(argv)
    try:
        server = create(Path(getattr(args, option.lstrip("-").replace("-", "_"))))
    except ValueError as exc:  # a bad path or data file: one line, no traceback
        sys.exit(f"{parser.prog}: {exc}")
    if args.http:
        host, _, port = args.http.rpartition(":")
        server.run("streamable-http", host=host or "127.0.0.1", port=int(port))
    else:
        server.run("stdio")
