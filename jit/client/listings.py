"""Reading a server's listings: ``tools/list``, ``resources/list``, ``resources/templates/list``
and ``prompts/list``, every page of them, within bounds.

A listing is followed page by page through ``nextCursor``, and stops (keeping what it has, with a
warning) at :data:`MAX_LIST_PAGES` pages, a cursor that repeats or passes
:data:`MAX_CURSOR_CHARS`, a listing past :data:`~jit.client.tooldefs.MAX_LISTING_BYTES`, or a
later page the server refuses. Tools are always read raw and judged one by one
(:func:`~jit.client.tooldefs.convert_tools`); resources, templates and prompts go through the
SDK's models, and when one bad item fails a page, that page is read raw and each item judged on
its own. :class:`~jit.client.upstream.Upstream` reads through a :class:`ListingReader` at each
discovery and writes what it gets to the catalog.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher
from pydantic import ValidationError

from ..salvage import find_marker
from ..schemas import json_kind
from .delivery import connection_closed, timed_out
from .tooldefs import MAX_LISTING_BYTES, MAX_TOOLS_PER_SERVER
from .transports import describe_error

__all__ = ["MAX_CURSOR_CHARS", "MAX_LIST_PAGES", "ListingReader", "wire"]

#: The wire key and the SDK model of each item of resources/list, resources/templates/list, prompts/list.
_ITEM_MODELS: dict[str, tuple[str, type[Any]]] = {
    "resources": ("resources", types.Resource),
    "resource_templates": ("resourceTemplates", types.ResourceTemplate),
    "prompts": ("prompts", types.Prompt),
}

#: The field naming each item of a listing: one item per value, and never an empty one.
_ITEM_KEYS: dict[str, str] = {"resources": "uri", "resource_templates": "uriTemplate", "prompts": "name"}

#: Upper bound on pages of one listing, against a server whose cursors never end.
MAX_LIST_PAGES = 1000
#: Longest ``nextCursor`` followed: cursors are opaque tokens; one that grows page after page
#: (each kept to spot a loop) would otherwise hold gigabytes.
MAX_CURSOR_CHARS = 4096


def wire(model: Any) -> dict[str, Any]:
    """An SDK model as the JSON the server sent (camelCase keys, no nulls)."""
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


class ListingReader:
    """The listings of one connection, read through its ``dispatcher`` (raw pages) or the session
    methods given to :meth:`items`, each raw request carrying ``protocol_version``; what is
    dropped or cut short is told to ``warn``, one line each."""

    def __init__(self, dispatcher: JSONRPCDispatcher | None, protocol_version: str,
                 warn: Callable[[str], None]) -> None:
        self.dispatcher = dispatcher
        self.protocol_version = protocol_version
        self._warn = warn

    async def _paged(self, method: str, fetch: Callable[[str | None], Awaitable[tuple[list[Any], str | None]]],
                     max_items: int | None = None) -> list[Any]:
        """Every item of a paginated listing, following ``nextCursor`` (bounded, loop-safe).

        Paging stops once more than ``max_items`` items are in (the caller drops the excess, with a warning).
        """
        out: list[Any] = []
        cursor: str | None = None
        seen: set[str] = set()
        size = 0  # bytes held so far (items and cursors): the listing's bound applies while paging
        for page in range(1, MAX_LIST_PAGES + 1):
            try:
                items, cursor = await fetch(cursor)
            except MCPError as exc:
                if page == 1 or connection_closed(exc) or timed_out(exc, method):
                    raise
                # A later page the server refuses (its own cursor, say) or sends broken: what the pages
                # before it listed is kept, as for a cursor that repeats; the whole server was lost.
                before = "page 1" if page == 2 else f"pages 1-{page - 1}"
                self._warn(f"{method} page {page} failed: {describe_error(exc)}; stopped paging, kept the "
                           f"{len(out):,} items of {before}")
                return out
            out.extend(items)
            if not cursor:
                return out
            if max_items is not None and len(out) > max_items:
                # What was fetched is not all the server lists: say so, not only what was dropped of it.
                self._warn(f"{method} lists more than {max_items:,} items: stopped paging after {page} pages "
                           f"({len(out):,} fetched); the server has more pages")
                return out
            size += len(json.dumps(items, default=str)) + len(cursor)
            if size > MAX_LISTING_BYTES:
                self._warn(f"{method} passed {MAX_LISTING_BYTES:,} bytes in {page} pages; stopped paging")
                return out
            if len(cursor) > MAX_CURSOR_CHARS:
                self._warn(f"{method} nextCursor of {len(cursor):,} characters, over {MAX_CURSOR_CHARS:,}; "
                           "stopped paging")
                return out
            if cursor in seen:
                self._warn(f"{method} repeated cursor {cursor[:80]!r}; stopped paging")
                return out
            seen.add(cursor)
        self._warn(f"{method} still had more pages after {MAX_LIST_PAGES}; stopped paging")
        return out

    async def tools(self) -> list[Any]:
        """Every tool of ``tools/list``, as the JSON the server sent.

        Always read raw and judged tool by tool by :func:`~jit.client.tooldefs.convert_tools`, never
        through the SDK's model: its parse is all or nothing (one malformed tool fails the page) and
        lax (``"readOnlyHint": 1`` becomes ``true``), so a tool's stored definition, and with it its
        approval and usage, would depend on whether a sibling tool was well-formed."""
        return await self._paged("tools/list", self._raw_tools_page, max_items=MAX_TOOLS_PER_SERVER)

    async def _raw_page(self, method: str, wire_key: str, cursor: str | None) -> tuple[list[Any], str | None]:
        """One page of a listing read as raw JSON (tools always, others when the SDK refused the page
        whole): its items unchecked, and its next cursor (None, with a warning, when it is not a string)."""
        assert self.dispatcher is not None
        raw = await self.dispatcher.send_raw_request(method, {"cursor": cursor} if cursor else None,
                                                     {"headers": {MCP_PROTOCOL_VERSION_HEADER: self.protocol_version}})
        items = raw.get(wire_key) if isinstance(raw, dict) else None
        if not isinstance(items, list):
            got = "missing" if items is None else f"a JSON {json_kind(items)}"
            raise MCPError(types.INVALID_PARAMS,
                           f"invalid {method} response from the server: {wire_key!r} is {got}, not an array")
        next_cursor = raw.get("nextCursor")
        if next_cursor is not None and not isinstance(next_cursor, str):
            self._warn(f"{method} nextCursor is not a string ({next_cursor!r}); stopped paging")
            next_cursor = None
        return items, next_cursor

    async def _raw_tools_page(self, cursor: str | None) -> tuple[list[Any], str | None]:
        return await self._raw_page("tools/list", "tools", cursor)  # each tool is judged by convert_tools

    async def _raw_items_page(self, method_name: str, key: str, cursor: str | None) -> tuple[list[Any], str | None]:
        """A page of resources, resource templates or prompts read as raw JSON, each item checked
        by the SDK's model alone: a bad one is dropped with a warning, the others kept."""
        wire_key, model = _ITEM_MODELS[key]
        items, next_cursor = await self._raw_page(f"{method_name}/list", wire_key, cursor)
        kept = []
        for i, item in enumerate(items):
            try:
                kept.append(wire(model.model_validate(item)))
            except ValidationError as exc:
                name = item.get("name") if isinstance(item, dict) and isinstance(item.get("name"), str) else None
                label = f" {name[:80]!r}" if name else ""
                self._warn(f"dropped {key.replace('_', ' ')[:-1]} #{i}{label}: {describe_error(exc)}")
        return kept, next_cursor

    async def items(self, method: Callable[..., Any], key: str) -> list[dict[str, Any]] | None:
        """Every item of resources/list or prompts/list; None (with a warning) if the server fails it."""
        method_name = "resources/templates" if key == "resource_templates" else key

        async def page(cursor: str | None) -> tuple[list[Any], str | None]:
            try:
                result = await method(params=_page_params(cursor))
            except ValidationError:
                # One malformed item fails the SDK's parse of the whole page: judge each on its own.
                return await self._raw_items_page(method_name, key, cursor)
            return [wire(x) for x in getattr(result, key)], result.next_cursor

        try:
            items = await self._paged(f"{method_name}/list", page)
        except (ValidationError, MCPError) as exc:
            if connection_closed(exc):
                raise
            if key == "resource_templates" and isinstance(exc, MCPError) and exc.code == types.METHOD_NOT_FOUND:
                return []  # a server with static resources only may not serve the method at all
            self._warn(f"{method_name}/list failed: {describe_error(exc)}")
            return None
        kept = []
        what, field = key.replace("_", " ")[:-1], _ITEM_KEYS[key]
        seen: set[str] = set()
        for i, item in enumerate(items):
            why = find_marker(item)  # a value jit's transport had to cut out of the reply
            ident = item.get(field) if isinstance(item, dict) else None
            label = f" {ident[:80]!r}" if isinstance(ident, str) and ident else ""
            if not why and not (isinstance(ident, str) and ident.strip()):
                why = f"missing or empty {field}"
            elif not why and ident in seen:
                # The catalog kept the last of them and jit serve the first: one item, the first, for both.
                why = f"duplicate {field}, kept the first"
            if why:
                self._warn(f"dropped {what} #{i}{label}: {why}")
            else:
                seen.add(ident)
                kept.append(item)
        return kept


def _page_params(cursor: str | None) -> types.PaginatedRequestParams | None:
    return types.PaginatedRequestParams(cursor=cursor) if cursor else None

