"""What ``jit serve`` passes through from its upstream servers besides tools.

A plain MCP proxy shows its client everything its servers offer. jit selects tools,
but the rest of each server is passed through as is, over the same supervised
connections (:class:`~jit.client.manager.ClientManager`):

* **resources, resource templates and prompts**, listed beside jit's own and served
  (``resources/read``, ``prompts/get``) by the server that listed them. Resources and
  templates keep their URIs (a tool result's resource link, or a URI the model read
  elsewhere, must still resolve), and are listed with their server in their name
  (``server__name``); a read is routed by a URI → server map built from the listings,
  then by the first template (in the config's order) that matches the URI. Prompts are
  renamed ``server__prompt``. :class:`Passthrough`.
* **requests from servers to the client** (sampling, elicitation, roots) and their
  **logs**, relayed to jit's client: :class:`Relay`, the
  :class:`~jit.client.peer.ClientPeer` of jit's upstream connections.
* **progress and cancellation** of proxied calls: a call's progress token is passed to
  the upstream and its progress sent back under the client's token; a cancelled call
  cancels the upstream request (the SDK's dispatcher sends ``notifications/cancelled``),
  and a server that cancels its own request to the client cancels the relayed one.
* **list changes**: a server's ``notifications/resources/list_changed`` or
  ``prompts/list_changed`` re-lists it, and jit's client gets the same notification.

Which capabilities an upstream is offered (docs/serve.md, "Passing through"): on
stdio there is one client, and every upstream connection offers exactly the sampling,
elicitation and roots capabilities that client declared in ``initialize`` (read before
the upstreams connect: it is the client's first message). Over HTTP, clients come and
go on connections that outlive them, so every upstream is offered all three, and a
request goes to the client whose call to that server is in progress, or is answered
with an error when that client did not declare the capability.
"""

from __future__ import annotations

import contextlib
import logging
import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types as types
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.server.session import ServerSession
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp.shared.subscriptions import PromptsListChanged, ResourcesListChanged
from mcp.shared.uri_template import UriTemplate

from ..client.peer import ClientOffer
from ..errors import JitError

__all__ = ["SEPARATOR", "Link", "Passthrough", "Relay", "namespaced"]

log = logging.getLogger(__name__)

#: Between a server's name and the name of its prompt, resource or template (as tools are namespaced).
SEPARATOR = "__"

#: How long an upstream connection on stdio waits for the client's ``initialize`` to know what to offer.
#: The client sends it first, so this is only ever reached by a client that never initializes.
OFFER_WAIT = 10.0

_RESULTS: dict[type[Any], type[Any]] = {
    types.CreateMessageRequest: types.CreateMessageResultWithTools,  # a superset of the plain result
    types.ElicitRequest: types.ElicitResult,
    types.ListRootsRequest: types.ListRootsResult,
}


def namespaced(server: str, name: str) -> str:
    """``server__name``: how a server's prompts, resources and templates are named through jit."""
    return f"{server}{SEPARATOR}{name}"


def _wire(model: Any) -> dict[str, Any]:
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)


# --------------------------------------------------------------------------- the client side


class Link:
    """One of jit's clients, as a relayed request or log reaches it: inside a request of that
    client (the request's own channel: on Streamable HTTP, the response stream of the call
    that caused it), or on its connection's standalone channel."""

    def __init__(self, connection: Connection, session: ServerSession | None = None,
                 request_id: types.RequestId | None = None) -> None:
        self.connection = connection
        self._session = session
        self._request_id = request_id

    @classmethod
    def of(cls, ctx: ServerRequestContext[Any, Any]) -> Link:
        """The client of the request ``ctx`` is serving."""
        return cls(ctx.session._connection, ctx.session, ctx.request_id)  # no public handle (mcp/server/session.py)

    def declared(self, request: types.ServerRequest) -> bool:
        """Whether this client declared the capability ``request`` needs."""
        caps = self.connection.client_capabilities
        if caps is None:
            return False
        if isinstance(request, types.CreateMessageRequest):
            return caps.sampling is not None
        if isinstance(request, types.ElicitRequest):
            return caps.elicitation is not None
        if isinstance(request, types.ListRootsRequest):
            return caps.roots is not None
        return True

    async def request(self, request: types.ServerRequest) -> dict[str, Any]:
        result = _RESULTS.get(type(request), types.EmptyResult)
        if self._session is not None and self._request_id is not None:
            answer = await self._session.send_request(
                request, result, metadata=ServerMessageMetadata(related_request_id=self._request_id))
        else:
            answer = await self.connection.send_request(request, result_type=result)
        return _wire(answer)

    async def notify(self, notification: types.ServerNotification) -> None:
        if self._session is not None and self._request_id is not None:
            await self._session.send_notification(notification, related_request_id=self._request_id)
        else:
            data = _wire(notification)
            await self.connection.notify(data["method"], data.get("params"))


@dataclass
class _Call:
    server: str
    link: Link


class Relay:
    """The :class:`~jit.client.peer.ClientPeer` of ``jit serve``'s upstream connections."""

    def __init__(self, connections: weakref.WeakSet[Connection]) -> None:
        self._connections = connections
        self._calls: list[_Call] = []
        self._last: Connection | None = None
        #: One client (stdio): offer upstreams what it declared, once its ``initialize`` is in.
        self.single = False
        self._declared: types.ClientCapabilities | None = None
        self._initialized = anyio.Event()

    def seen(self, ctx: ServerRequestContext[Any, Any]) -> None:
        """A request from a client (jit's middleware): the latest client, and its declared capabilities."""
        self._last = ctx.session._connection
        if ctx.method == "initialize" and not self._initialized.is_set():
            raw = (ctx.params or {}).get("capabilities")
            try:
                self._declared = types.ClientCapabilities.model_validate(raw or {}, by_name=False)
            except ValueError:
                self._declared = None
            self._initialized.set()

    async def offer(self) -> ClientOffer:
        if not self.single:
            return ClientOffer.everything()
        with anyio.move_on_after(OFFER_WAIT):
            await self._initialized.wait()
        return ClientOffer.of(self._declared)

    @contextlib.contextmanager
    def calling(self, server: str, link: Link | None) -> Iterator[None]:
        """While a proxied call to ``server`` runs, what ``server`` asks goes to ``link``'s client."""
        if link is None:
            yield
            return
        call = _Call(server, link)
        self._calls.append(call)
        try:
            yield
        finally:
            self._calls.remove(call)

    def link(self) -> Link | None:
        """The latest client on its standalone channel (the stdio lane's calls have no SDK request)."""
        return Link(self._last) if self._last is not None else None

    def _target(self, server: str) -> Link | None:
        for call in reversed(self._calls):
            if call.server == server:
                return call.link
        return self.link()

    async def request(self, server: str, request: types.ServerRequest) -> dict[str, Any] | types.ErrorData:
        link = self._target(server)
        if link is None:
            return types.ErrorData(code=types.INVALID_REQUEST,
                                   message=f"no client is connected to jit to answer {request.method}")
        if not link.declared(request):
            return types.ErrorData(code=types.INVALID_REQUEST,
                                   message=f"the client connected to jit does not support {request.method}")
        try:
            return await link.request(request)
        except MCPError as exc:  # the client's own error (a declined sampling, say), passed on as it came
            return types.ErrorData(code=exc.code, message=exc.message, data=exc.data)

    async def log(self, server: str, params: types.LoggingMessageNotificationParams) -> None:
        """A server's log: to the client whose call to it is running, else to every client.
        The logger names the server when the server gave none."""
        if params.logger is None:
            params = params.model_copy(update={"logger": server})
        notification = types.LoggingMessageNotification(params=params)
        for call in reversed(self._calls):
            if call.server == server:
                await call.link.notify(notification)
                return
        for connection in list(self._connections):
            await Link(connection).notify(notification)


# --------------------------------------------------------------------------- listings and reads


class Passthrough:
    """Upstream resources, templates and prompts beside jit's own, and the requests that read them.

    ``app`` is the :class:`~jit.serve.server.JitServer`: its own resources come first (and
    its ``jit://`` URIs are never routed upstream); ``app.state.manager`` holds the upstreams."""

    def __init__(self, app: Any) -> None:
        self.app = app

    def install(self) -> None:
        """Register the handlers on the app's low-level server (they replace ``MCPServer``'s)."""
        low = self.app._lowlevel_server
        low.add_request_handler("resources/list", types.PaginatedRequestParams, self.list_resources)
        low.add_request_handler("resources/templates/list", types.PaginatedRequestParams, self.list_templates)
        low.add_request_handler("resources/read", types.ReadResourceRequestParams, self.read_resource)
        low.add_request_handler("prompts/list", types.PaginatedRequestParams, self.list_prompts)
        low.add_request_handler("prompts/get", types.GetPromptRequestParams, self.get_prompt)
        low.add_request_handler("logging/setLevel", types.SetLevelRequestParams, self.set_level)
        low.add_notification_handler("notifications/roots/list_changed", types.NotificationParams,
                                     self.roots_changed)

    def _listings(self) -> list[tuple[str, dict[str, list[dict[str, Any]]]]]:
        state = self.app.state
        return state.manager.listings() if state is not None else []

    async def _settle(self) -> None:
        """Wait for the upstreams still on their first connection attempt (each bounded by its
        ``timeout``) before a listing or a routing decision uses what they listed."""
        state = self.app.state
        if state is not None:
            await state.manager.settled_listings()

    def _resources(self) -> tuple[list[dict[str, Any]], dict[str, str]]:
        """The upstream resources renamed, and URI → server (the first server listing a URI has it)."""
        listed: list[dict[str, Any]] = []
        owner: dict[str, str] = {}
        for server, listing in self._listings():
            for item in listing["resources"]:
                uri = item["uri"]
                if uri in owner or uri.startswith("jit://"):
                    log.debug("resource %s of server %s is already listed; left out", uri, server)
                    continue
                owner[uri] = server
                listed.append({**item, "name": namespaced(server, item.get("name") or uri)})
        return listed, owner

    def _templates(self) -> list[tuple[str, dict[str, Any]]]:
        return [(server, item) for server, listing in self._listings() for item in listing["resource_templates"]]

    def _prompts(self) -> dict[str, tuple[str, dict[str, Any]]]:
        """Namespaced prompt name → (server, the prompt as listed)."""
        prompts: dict[str, tuple[str, dict[str, Any]]] = {}
        for server, listing in self._listings():
            for item in listing["prompts"]:
                prompts.setdefault(namespaced(server, item["name"]), (server, item))
        return prompts

    async def list_resources(self, ctx: Any, params: Any) -> types.ListResourcesResult:
        await self._settle()
        own = [_wire(r) for r in await self.app.list_resources()]
        return types.ListResourcesResult.model_validate({"resources": own + self._resources()[0]}, by_name=False)

    async def list_templates(self, ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
        await self._settle()
        own = [_wire(t) for t in await self.app.list_resource_templates()]
        upstream = [{**item, "name": namespaced(server, item["name"])} for server, item in self._templates()]
        return types.ListResourceTemplatesResult.model_validate({"resourceTemplates": own + upstream},
                                                                by_name=False)

    def route(self, uri: str) -> str | None:
        """The server that serves ``uri``: the one that listed it, else the first whose template matches."""
        server = self._resources()[1].get(uri)
        if server is not None:
            return server
        for server, item in self._templates():
            try:
                if UriTemplate.parse(item["uriTemplate"]).match(uri) is not None:
                    return server
            except ValueError:  # a template the SDK cannot parse routes nothing
                continue
        return None

    async def read_resource(self, ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
                            ) -> Any:
        uri = str(params.uri)
        if not uri.startswith("jit://"):
            await self._settle()
        server = None if uri.startswith("jit://") else self.route(uri)
        if server is None:
            return await self.app._handle_read_resource(ctx, params)  # jit's own, or its not-found error
        return await self._forward(ctx, server, "resources/read", {"uri": uri}, types.ReadResourceResult,
                                   f"resource {uri!r}")

    async def list_prompts(self, ctx: Any, params: Any) -> types.ListPromptsResult:
        await self._settle()
        own = [_wire(p) for p in await self.app.list_prompts()]
        upstream = [{**item, "name": name} for name, (_, item) in self._prompts().items()]
        return types.ListPromptsResult.model_validate({"prompts": own + upstream}, by_name=False)

    async def get_prompt(self, ctx: ServerRequestContext[Any, Any], params: types.GetPromptRequestParams) -> Any:
        await self._settle()
        found = self._prompts().get(params.name)
        if found is None:  # jit has no prompts of its own
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown prompt: {params.name}",
                           data={"name": params.name})
        server, item = found
        body: dict[str, Any] = {"name": item["name"]}
        if params.arguments is not None:
            body["arguments"] = params.arguments
        return await self._forward(ctx, server, "prompts/get", body, types.GetPromptResult,
                                   f"prompt {item['name']!r}")

    async def _forward(self, ctx: ServerRequestContext[Any, Any], server: str, method: str, body: dict[str, Any],
                       result: type[Any], subject: str) -> Any:
        """``method`` on ``server`` for the client of ``ctx``: its progress token goes along, its
        progress comes back, what the server asks meanwhile goes to this client. jit's own errors
        (offline server, timeout) are JSON-RPC errors carrying the error's payload as ``data``."""
        state = self.app.state
        assert state is not None  # requests are served inside the lifespan
        link = Link.of(ctx)
        token = ctx.meta.get("progressToken") if ctx.meta else None
        if token is not None:
            body["_meta"] = {"progressToken": token}
        try:
            with self.app.relay.calling(server, link):
                raw = await state.manager.request(server, method, body, result, subject=subject,
                                                  on_progress=ctx.session.report_progress if token is not None
                                                  else None)
        except JitError as exc:
            raise MCPError(code=types.INTERNAL_ERROR, message=exc.message, data=exc.to_dict()) from None
        return result.model_validate(raw, by_name=False)

    async def set_level(self, ctx: Any, params: types.SetLevelRequestParams) -> types.EmptyResult:
        """``logging/setLevel``: jit logs nothing to its clients itself; its servers get the level."""
        state = self.app.state
        if state is not None:
            await state.manager.set_logging_level(params.level)
        return types.EmptyResult()

    async def roots_changed(self, ctx: Any, params: Any) -> None:
        state = self.app.state
        if state is not None:
            await state.manager.roots_changed()

    async def listing_changed(self, server: str, changed: frozenset[str]) -> None:
        """An upstream's listings changed (it connected, went away, or re-listed on list_changed):
        every client is told, on its connection and on the 2026-07-28 subscription streams."""
        resources = bool(changed & {"resources", "resource_templates"})
        prompts = "prompts" in changed
        for connection in list(self.app.connections):
            if resources:
                await connection.send_resource_list_changed()
            if prompts:
                await connection.send_prompt_list_changed()
        if resources:
            await self.app.bus.publish(ResourcesListChanged())
        if prompts:
            await self.app.bus.publish(PromptsListChanged())
