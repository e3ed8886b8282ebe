"""What an upstream server may ask of the client behind jit, and how jit answers for it.

An MCP server can send requests to its client (``sampling/createMessage``,
``elicitation/create``, ``roots/list``) and notifications (``notifications/message``
logs). jit's upstream connections are clients of their servers, but when jit runs as a
proxy (``jit serve``) the one who can answer is jit's own client. :class:`ClientPeer` is
that seam, kept here so the client wing never imports the server above it: the
:class:`~jit.client.manager.ClientManager` is handed a peer, each upstream connection
offers its server exactly the capabilities :meth:`ClientPeer.offer` names (the SDK's
``ClientSession`` declares a capability when its callback is set), and the callbacks
hand each request to the peer with the name of the server that sent it.

Without a peer (``jit sync``, the library) nothing is offered, as before: the SDK's
defaults decline every server-initiated request.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import mcp_types as types
from mcp.client.session import ClientRequestContext

__all__ = ["ClientOffer", "ClientPeer", "session_callbacks"]


@dataclass(frozen=True, slots=True)
class ClientOffer:
    """The client capabilities an upstream connection declares to its server."""

    sampling: types.SamplingCapability | None = None
    elicitation: bool = False
    roots: bool = False

    @classmethod
    def of(cls, capabilities: types.ClientCapabilities | None) -> ClientOffer:
        """What a client declared, as far as jit can relay it."""
        if capabilities is None:
            return cls()
        return cls(sampling=capabilities.sampling, elicitation=capabilities.elicitation is not None,
                   roots=capabilities.roots is not None)

    @classmethod
    def everything(cls) -> ClientOffer:
        """All three: what a plain MCP proxy offers when it cannot know its clients in advance."""
        return cls(sampling=types.SamplingCapability(), elicitation=True, roots=True)


class ClientPeer(Protocol):
    """The client side jit relays for: what it offers, and where requests and logs go."""

    async def offer(self) -> ClientOffer:
        """The capabilities to declare on a connection being opened now (it may wait, briefly, to know them)."""
        ...

    async def request(self, server: str, request: types.ServerRequest) -> dict[str, Any] | types.ErrorData:
        """Answer a request ``server`` sent (the client's result as a wire dict, or an error)."""
        ...

    async def log(self, server: str, params: types.LoggingMessageNotificationParams) -> None:
        """A log message ``server`` sent."""
        ...


async def session_callbacks(server: str, peer: ClientPeer | None) -> dict[str, Any]:
    """``ClientSession`` keyword arguments that relay ``server``'s requests and logs to ``peer``.

    A callback is passed only for a capability the peer offers: the SDK declares exactly the
    capabilities whose callbacks are set, and a server must not send what was not declared."""
    if peer is None:
        return {}
    offer = await peer.offer()

    async def relay(request: types.ServerRequest, result: type[Any]) -> Any:
        answer = await peer.request(server, request)
        return answer if isinstance(answer, types.ErrorData) else result.model_validate(answer, by_name=False)

    async def sampling(ctx: ClientRequestContext, params: types.CreateMessageRequestParams) -> Any:
        # The tool-enabled result shape is a superset of the plain one; the SDK checks it against the request.
        result = types.CreateMessageResultWithTools if params.tools else types.CreateMessageResult
        return await relay(types.CreateMessageRequest(params=params), result)

    async def elicitation(ctx: ClientRequestContext, params: types.ElicitRequestParams) -> Any:
        return await relay(types.ElicitRequest(params=params), types.ElicitResult)

    async def roots(ctx: ClientRequestContext) -> Any:
        return await relay(types.ListRootsRequest(), types.ListRootsResult)

    async def logging(params: types.LoggingMessageNotificationParams) -> None:
        await peer.log(server, params)

    kwargs: dict[str, Any] = {"logging_callback": logging}
    if offer.sampling is not None:
        kwargs["sampling_callback"] = sampling
        kwargs["sampling_capabilities"] = offer.sampling
    if offer.elicitation:
        kwargs["elicitation_callback"] = elicitation
    if offer.roots:
        kwargs["list_roots_callback"] = roots
    return kwargs
