"""``jit serve``'s own resources: ``jit://servers``, ``jit://selection`` and the template
``jit://tools/{server}/{tool}``.

:func:`register_resources` declares them on the server. They are listed and read before the
upstreams' resources, which :class:`~jit.serve.passthrough.Passthrough` passes through; an
unknown tool's resource is the JSON-RPC error ``-32602`` (invalid params).
"""

from __future__ import annotations

import json
import time
from typing import Any

from mcp.server.mcpserver.exceptions import ResourceNotFoundError

from ..errors import JitError

# The payloads are imported by the resource that reads them: declaring the resources needs none.

__all__ = ["SERVERS_SETTLE_WAIT", "register_resources"]

#: How long after ``jit serve`` began a ``jit://servers`` read waits for the first connection attempts
#: to settle: a local stdio server connects in a second or two, and a reader should get its answer
#: well inside any client's request timeout. A server still on its first attempt after it is shown
#: "connecting", with how long it has been trying.
SERVERS_SETTLE_WAIT = 5.0


def register_resources(app: Any) -> None:
    """Declare jit's resources on ``app``, the :class:`~jit.serve.server.JitServer`."""

    @app.resource("jit://servers", name="servers", mime_type="application/json",
                  description="Every server jit knows: status, tool count, last error")
    async def servers_resource() -> str:
        """The servers as ``jit servers --json`` gives them, once their first connection attempts
        have settled, or :data:`SERVERS_SETTLE_WAIT` seconds after jit began serving.

        A client that connects, reads this and leaves (a one-shot script, an inspector) reads it
        right after jit started, when every server is "connecting" though most are a second or
        two from connected or failed: what that reader wants is whether each server works, so
        the read waits for that answer, as ``resources/list`` waits to list the upstreams'
        resources. A server that takes longer (a slow ``npx`` download, an unreachable URL: an
        attempt may last the server's ``timeout``) is not waited for past that first window: it
        reads "connecting", with a ``status_note`` saying how long its first attempt has run and
        when it gives up. Reads after the window, and servers that settled, answer at once."""
        from ..payloads import server_rows, tool_counts

        state = app.state
        assert state is not None  # resources are read inside the lifespan
        pending = await state.manager.settle(max(0.0, state.began + SERVERS_SETTLE_WAIT - time.monotonic()))
        rows = server_rows(state.config, state.store.servers(), tool_counts(state.store))
        for row in rows:
            if row["server"] in pending and row["status"] == "connecting":
                timeout = state.config.servers[row["server"]].timeout
                row["status_note"] = (f"first connection attempt under way for {pending[row['server']]:.0f} s "
                                      f"(it gives up after {timeout:g} s)")
        return json.dumps(rows, default=str)

    @app.resource("jit://selection", name="selection", mime_type="application/json",
                  description="The current selection: the exposed shard's tool set, else the last compile_tools")
    def selection_resource() -> str:
        from ..payloads import summarize

        state = app.state
        assert state is not None
        if state.selection is None:
            return json.dumps({"selection": None, "message": "nothing compiled yet: call compile_tools"})
        rendering = state.selection.render("json", access="call_tool")  # as compile_tools gives it
        return json.dumps(summarize(state.selection) | {"rendering": rendering}, default=str)

    @app.resource("jit://tools/{server}/{tool}", name="tool", mime_type="application/json",
                  description="One tool's definition, analysis, status and usage")
    async def tool_resource(server: str, tool: str) -> str:
        state = app.state
        assert state is not None
        try:
            return json.dumps(await state.describe(server, tool), default=str)
        except JitError as exc:
            raise ResourceNotFoundError(exc.message) from None
