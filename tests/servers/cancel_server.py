"""An MCP server whose requests wait, for the cancellation tests of ``jit serve``.

    python tests/servers/cancel_server.py --record PATH

Tools (on stdio, built on the SDK's MCPServer):

* ``wait(seconds)``: waits, appending ``started`` to PATH, then ``finished`` if the wait ran
  out or ``cancelled`` if the request was cancelled (its handler's anyio cancellation, which
  the SDK raises on ``notifications/cancelled``). A test reads PATH to see what the server saw.
* ``ask_then_give_up(seconds)``: sends ``sampling/createMessage`` to its client and abandons it
  after ``seconds`` (the SDK then sends ``notifications/cancelled`` for it); answers ``gave up``
  or, if the client answered first, the client's text.
"""

# No "from __future__ import annotations": MCPServer needs the tools' annotations (Context) as objects.
import argparse
from pathlib import Path


def build(record: Path):
    import anyio
    import mcp_types as types
    from mcp.server.mcpserver import Context, MCPServer

    server = MCPServer(name="cancel", log_level="WARNING")

    def note(event: str) -> None:
        with record.open("a", encoding="utf-8") as f:
            f.write(event + "\n")

    @server.tool(description="Wait some seconds; records whether the wait was cancelled.")
    async def wait(seconds: float = 30) -> str:
        note("started")
        try:
            await anyio.sleep(seconds)
        except anyio.get_cancelled_exc_class():
            note("cancelled")
            raise
        note("finished")
        return f"waited {seconds}"

    @server.tool(description="Ask the client to sample, and cancel the request after some seconds.")
    async def ask_then_give_up(ctx: Context, seconds: float = 1) -> str:
        message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text="take your time"))
        with anyio.move_on_after(seconds):
            answer = await ctx.session.create_message([message], max_tokens=5,
                                                      related_request_id=ctx.request_context.request_id)
            return answer.content.text
        return "gave up"

    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--record", required=True)
    args = parser.parse_args()
    build(Path(args.record)).run("stdio")


if __name__ == "__main__":
    main()
