"""The one path a proxied call takes through ``jit serve``.

A ``tools/call`` reaches an upstream tool three ways: the stdio lane's short path
(jit/serve/proxylane.py), an exposed tool called by its namespaced name
(``--expose-shard``), and the ``call_tool`` meta-tool. Each is a short adapter over
:func:`proxied_call`, which owns what every one of them must do, in order:

1. the role check (:meth:`ServeState.check_allowed <jit.serve.state.ServeState.check_allowed>`):
   with ``--expose-shard`` the session acts for that role, and a tool its policy denies
   (judged on the tool's new definition and, while a change awaits approval, on the one last
   approved) is refused before anything is sent;
2. the relay: what the upstream asks meanwhile (sampling, elicitation, roots) goes to the
   client whose call it is (jit/serve/passthrough.py);
3. the call, through :meth:`~jit.client.manager.ClientManager.call_tool` (timeouts, the
   offline error, ``security.pin_definitions``, result validation);
4. the usage record, handed back to run once the client has its answer: the tool's call counts,
   and the call as one made for the task of the session's latest selection (the exposed one,
   else the last ``compile_tools``), which later compiles of similar tasks learn from
   (:meth:`ToolSet.record_call <jit.selection.toolset.ToolSet.record_call>`).

``describe_tool`` and the ``jit://tools/{server}/{tool}`` resource go through the same
role check (:meth:`ServeState.describe <jit.serve.state.ServeState.describe>`): a tool the
role may not call is not described either.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ..errors import JitError

if TYPE_CHECKING:
    from ..client.calls import CallResult
    from ..client.manager import ClientManager
    from .passthrough import Link, Relay
    from .state import ServeState

__all__ = ["proxied_call"]

log = logging.getLogger(__name__)


async def proxied_call(state: ServeState, relay: Relay, server: str, tool: str, arguments: dict[str, Any], *,
                       link: Link | None, on_progress: Callable[..., Awaitable[None]] | None = None
                       ) -> tuple[CallResult, Callable[[], None]]:
    """Call ``server``'s ``tool`` for the client behind ``link``: the role check, the relay and the
    call (the module docstring). Returns the result and what records its usage; jit errors
    (denied, offline, unknown, timeout …) are raised for the adapter to answer."""
    await state.check_allowed(server, tool)
    manager = state.manager
    with relay.calling(server, link):
        call = await manager.call_tool(server, tool, arguments, record=False, on_progress=on_progress)
    return call, functools.partial(_record, manager, call, state.selection)


def _record(manager: ClientManager, call: CallResult, selection: Any) -> None:
    """Count ``call`` in the catalog's usage, and as a call made for ``selection``'s task (the
    session's latest compile, None before one); a catalog refusing the write (read-only,
    unreachable) costs one log line, never the answer to a call that ran."""
    try:
        manager.record(call)
        if selection is not None:
            selection.record_call(call.tool, server=call.server, ok=not call.is_error)
    except JitError as exc:
        log.warning("recording a proxied call to %s/%s failed: %s", call.server, call.tool, exc.message)
