"""A small, well-behaved MCP server for jit's client tests, built on the SDK's MCPServer.

    python tests/servers/demo_server.py --transport stdio|http|sse [--port P] [--name N]
        [--pid-file PATH] [--fail-if-exists PATH] [--listen-after PATH] [--extra-tools K]

Tools: ``echo``, ``add`` (structured output), ``fail`` (reports ``isError``),
``sleep``, ``pid``, and ``add_tool`` / ``remove_tool``, which change the tool
list at run time and send ``notifications/tools/list_changed``. One resource and
one prompt. HTTP and SSE listen on 127.0.0.1 only.

``--fail-if-exists PATH`` makes the server exit with an error at start while PATH
exists: tests use it to keep a killed server "down" and then let it come back.
``--listen-after PATH`` makes it load, write ``PATH.waiting``, and serve only once PATH
exists: a replacement ready to take a killed server's port the moment a test lets it.
"""

# No "from __future__ import annotations": the tools below are defined inside build(), and
# MCPServer needs their annotations (Context, Sum) as objects, not names to resolve globally.
import argparse
import asyncio
import os
import sys
import time
from pathlib import Path
from typing import Any


def build(name: str, extra_tools: int) -> Any:
    """The MCPServer; imported here so ``--fail-if-exists`` answers before the SDK loads (~1 s)."""
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from pydantic import BaseModel

    class Sum(BaseModel):
        total: int

    server = MCPServer(name=name, version="1.2.3", instructions="A demo server for jit tests.", log_level="WARNING")

    @server.tool(description="Echo the text back.")
    def echo(text: str) -> str:
        return text

    @server.tool(description="Add two integers.")
    def add(a: int, b: int) -> Sum:
        return Sum(total=a + b)

    @server.tool(description="Always fails, reporting the message as a tool error.")
    def fail(message: str = "boom") -> str:
        raise ToolError(message)

    @server.tool(description="Sleep for some seconds, then answer.")
    async def sleep(seconds: float) -> str:
        await asyncio.sleep(seconds)
        return f"slept {seconds}"

    @server.tool(description="The server's process id.")
    def pid() -> int:
        return os.getpid()

    @server.tool(description="Add a tool to this server and announce the change.")
    async def add_tool(tool_name: str, ctx: Context) -> str:
        def dynamic(value: str = "") -> str:
            return f"{tool_name}:{value}"

        server.add_tool(dynamic, name=tool_name, description=f"Dynamically added tool {tool_name}.")
        await ctx.session.send_tool_list_changed()
        return f"added {tool_name}"

    @server.tool(description="Remove a tool from this server and announce the change.")
    async def remove_tool(tool_name: str, ctx: Context) -> str:
        server.remove_tool(tool_name)
        await ctx.session.send_tool_list_changed()
        return f"removed {tool_name}"

    def make_extra(i: int) -> Any:
        # A closure, not a defaulted parameter: MCPServer publishes every parameter in the schema.
        def extra(x: str = "") -> str:
            return f"extra {i}: {x}"

        return extra

    for i in range(extra_tools):
        server.add_tool(make_extra(i), name=f"extra_{i}", description=f"Extra tool number {i} for scale tests.")

    @server.resource("demo://readme", name="readme", description="What this server is.", mime_type="text/plain")
    def readme() -> str:
        return "demo server"

    @server.prompt(description="Greet someone.")
    def greet(who: str) -> str:
        return f"Say hello to {who}."

    return server


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--transport", choices=["stdio", "http", "sse"], default="stdio")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--name", default="demo")
    parser.add_argument("--pid-file")
    parser.add_argument("--fail-if-exists")
    parser.add_argument("--listen-after")
    parser.add_argument("--extra-tools", type=int, default=0)
    args = parser.parse_args(argv)
    if args.fail_if_exists and Path(args.fail_if_exists).exists():
        print(f"demo_server: refusing to start while {args.fail_if_exists} exists", file=sys.stderr)
        sys.exit(2)
    if args.pid_file:
        Path(args.pid_file).write_text(str(os.getpid()))
    server = build(args.name, args.extra_tools)
    if args.listen_after:
        Path(args.listen_after + ".waiting").touch()
        while not Path(args.listen_after).exists():
            time.sleep(0.01)
    if args.transport == "stdio":
        server.run("stdio")
    elif args.transport == "http":
        server.run("streamable-http", host="127.0.0.1", port=args.port)
    else:
        server.run("sse", host="127.0.0.1", port=args.port)


if __name__ == "__main__":
    main()
