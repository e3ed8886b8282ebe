"""A hand-written MCP server (stdlib only) whose tools/list carries one bad field, over stdio or HTTP.

    python tests/servers/fault_server.py --case CASE [--transport stdio|http|http-sse] [--port P]
        [--bad-when-exists PATH]

Every case lists the good tools ``good_a`` and ``good_b`` (which echo their
arguments on ``tools/call``) plus whatever the case adds. The reply text is
written by hand, so it can hold what ``json.dumps`` of a sane value never
would: lone surrogate escapes, nesting thousands of levels deep, NaN, a 5,000-digit integer.
With ``--bad-when-exists`` the listing is the plain good one until that path
exists (a server that turns bad after a first good sync).

``--transport http`` serves Streamable HTTP at ``/mcp`` with JSON responses;
``http-sse`` answers each POST with an SSE stream instead; ``sse`` is the legacy
HTTP+SSE transport (``GET /sse`` stream, ``POST /messages``). Listens on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

GOOD = [
    {"name": "good_a", "description": "A good tool.",
     "inputSchema": {"type": "object", "properties": {"x": {"type": "string", "description": "any text"}}}},
    {"name": "good_b", "description": "Another good tool.", "inputSchema": {"type": "object", "properties": {}}},
]


#: Case ``refs_as_data``: valid 2020-12 input schemas whose ``$ref`` sits in data (``examples``,
#: ``default``, ``const``, ``enum``, an ``x-`` keyword) or points by a percent-encoded JSON Pointer.
REFS_AS_DATA: dict[str, dict[str, Any]] = {
    "openapi_patch": {"type": "object", "properties": {"node": {"type": "object", "description": "a schema node",
                                                                "examples": [{"$ref": "#/components/schemas/Pet"}]}}},
    "with_default": {"type": "object", "properties": {"node": {"type": "object", "default": {"$ref": "#/nothing"}}}},
    "with_const": {"type": "object", "properties": {"n": {"const": {"$ref": "#/x"}}, "m": {"enum": [{"$ref": "#/y"}]}},
                   "x-origin": {"$ref": "#/components/elsewhere", "$id": "urn:not-a-schema"}},
    "pct_pointer": {"type": "object", "$defs": {"a b": {"type": "string"}, "c/d~": {"type": "number"}},
                    "properties": {"s": {"$ref": "#/$defs/a%20b"}, "n": {"$ref": "#/$defs/c~1d~0"},
                                   "m": {"$ref": "#/$defs/c%7E1d%7E0"}}},
}


def _deep(levels: int) -> str:
    """A schema whose property ``x`` nests ``levels`` objects deep, as raw JSON text."""
    return '{"type":"object","properties":{"x":' + '{"a":' * levels + "1" + "}" * levels + "}}"


def _tool_text(name: str, schema_text: str, description: str = "A bad tool.") -> str:
    return '{"name":' + json.dumps(name) + ',"description":' + json.dumps(description) + \
        ',"inputSchema":' + schema_text + "}"


def bad_tools(case: str) -> list[str]:
    """The extra tools of ``case``, each as raw JSON text (empty: the case breaks the result itself)."""
    obj = json.dumps
    if case == "surrogate_description":
        return [_tool_text("bad", obj({"type": "object"}), "cut emoji \ud83d here")]
    if case == "surrogate_param":
        schema = {"type": "object", "properties": {"q": {"type": "string", "description": "half \udc00 a pair"}}}
        return [_tool_text("bad", obj(schema))]
    if case == "surrogate_name":
        return [_tool_text("bad\ud800", obj({"type": "object"}))]
    if case == "surrogate_key":
        return [_tool_text("bad", obj({"type": "object", "properties": {"k\ud800": {"type": "string"}}}))]
    if case.startswith("deep_"):
        return [_tool_text("bad", _deep(int(case[5:])))]
    if case == "big_descriptions":
        return [_tool_text(f"big_{i}", obj({"type": "object"}), "This tool is huge. " + "x" * (1 << 20))
                for i in range(20)]
    if case == "huge_schema":
        props = {f"p{i}": {"type": "string", "description": "y" * 100} for i in range(10_000)}
        return [_tool_text("bad", obj({"type": "object", "properties": props}))]
    if case == "draft07":
        schema = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
                  "properties": {"path": {"type": "string"}, "pair": {"type": "array", "items": [
                      {"type": "string"}, {"type": "number"}], "additionalItems": False}},
                  "required": ["path"], "additionalProperties": False}
        return [_tool_text("draft7_tool", obj(schema), "A draft-07 tool.")]
    if case == "invalid_schema":
        return [_tool_text("bad", obj({"type": "object", "properties": {"a": {"type": "nonsense"}}}))]
    if case == "invalid_pattern":  # a regular expression no ECMA-262 engine compiles
        return [_tool_text("bad", obj({"type": "object", "properties": {"q": {"type": "string",
                                                                               "pattern": "[unclosed"}}}))]
    if case == "bigint_schema":  # valid JSON, but no parser reads more than 4,300 digits into a number
        schema = '{"type":"object","properties":{"n":{"type":"integer","maximum":%s}}}' % ("9" * 5000)
        return [_tool_text("bad", schema)]
    if case == "nan_schema":
        return [_tool_text("bad", '{"type":"object","properties":{"n":{"type":"number","maximum":NaN}}}')]
    if case == "dangling_ref":
        return [_tool_text("bad", obj({"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}}))]
    if case == "refs_as_data":  # valid 2020-12: a $ref inside data is data; a $ref is a URI (percent-encoded)
        valid = [_tool_text(name, obj(schema), "Valid JSON Schema 2020-12.") for name, schema in REFS_AS_DATA.items()]
        return valid + [_tool_text("bad", obj({"type": "object", "components": {"Pet": {"$ref": "#/components/Owner"}},
                                               "properties": {"pet": {"$ref": "#/components/Pet"}}}))]
    if case == "not_object_schema":
        return [_tool_text("bad", obj({"type": "string"}))]
    control = {"newline_name": "bad\nINFO forged log line", "nul_name": "bad\x00", "escape_name": "bad\x1b[2J",
               "c1_name": "bad\x9b"}
    if case in control:
        return [_tool_text(control[case], obj({"type": "object"}))]
    if case == "backtracking_output":  # an output schema whose pattern backtracks without bound in Python's re
        return [obj({"name": "matcher", "description": "Echoes x as structured content.",
                     "inputSchema": {"type": "object", "properties": {"x": {"type": "string"}}},
                     "outputSchema": {"type": "object", "properties": {"x": {"type": "string", "pattern": "^(a+)+$"}},
                                      "required": ["x"]}})]
    if case == "huge_listing":  # one description of 40 MB: a listing past any sane message size
        return [_tool_text("huge", obj({"type": "object"}), "H" * 40_000_000)]
    if case == "many_tools":
        return [_tool_text(f"t{i}", obj({"type": "object"}), f"Tool {i}.") for i in range(2100)]
    return []


def listing_result(case: str) -> str:
    """The raw ``result`` JSON of tools/list for ``case``."""
    if case == "result_array":
        return "[" + ",".join(json.dumps(t) for t in GOOD) + "]"
    if case == "result_string":
        return '"no tools today"'
    if case == "tools_not_list":
        return '{"tools":{"good_a":' + json.dumps(GOOD[0]) + "}}"
    if case == "result_cut_short":  # the line ends inside the listing (the server died writing it)
        return '{"tools":[' + json.dumps(GOOD[0]) + ',{"name":"good_b","descr'
    if case == "result_python_quotes":  # a Python repr instead of JSON
        return repr({"tools": GOOD})
    tools = [json.dumps(t) for t in GOOD[:1]] + bad_tools(case) + [json.dumps(t) for t in GOOD[1:]]
    return '{"tools":[' + ",".join(tools) + "]}"


class Handler:
    """JSON-RPC over raw text: one message in, one reply text out (None: nothing to send)."""

    def __init__(self, case: str, bad_when_exists: str | None) -> None:
        self.case = case
        self.bad_when_exists = bad_when_exists

    def reply(self, line: str) -> str | None:
        try:
            msg = json.loads(line)
        except ValueError:
            return None
        method, rid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
        if rid is None:
            return None
        head = '{"jsonrpc":"2.0","id":' + json.dumps(rid) + ',"result":'
        if method == "initialize" and self.case == "huge_initialize_error":  # megabytes of why it will not start
            return json.dumps({"jsonrpc": "2.0", "id": rid, "error": {"code": -32000, "message": "no! " * 800_000}})
        if method == "initialize":
            big = self.case == "huge_server_info"  # megabytes of what a server says of itself
            # serves resources and prompts too
            listed = self.case in ("bad_resource_and_prompt", "twin_resources_and_prompts")
            return head + json.dumps({
                "protocolVersion": params.get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {"listChanged": False},
                                 **({"experimental": {"x": {"blob": "E" * 100_000}}} if big else {}),
                                 **({"resources": {}, "prompts": {}} if listed else {})},
                "serverInfo": {"name": "N" * 1_000_000 if big else "fault", "version": "V" * 1_000_000 if big else "0.0.1"},
                **({"instructions": "I" * 2_000_000} if big else {}),
            }) + "}"
        if method == "ping":
            return head + "{}}"
        if self.case == "twin_resources_and_prompts" and method in ("resources/list", "resources/templates/list",
                                                                    "prompts/list"):  # one item twice, one unnamed
            return head + json.dumps({
                "resources/list": {"resources": [
                    {"uri": "note://one", "name": "one"}, {"uri": "note://one", "name": "twin"},
                    {"uri": "", "name": "blank"}, {"uri": "note://two", "name": "two"}]},
                "resources/templates/list": {"resourceTemplates": [
                    {"uriTemplate": "note://{id}", "name": "note"}, {"uriTemplate": "note://{id}", "name": "twin"},
                    {"uriTemplate": " ", "name": "blank"}]},
                "prompts/list": {"prompts": [{"name": "greet", "description": "first"},
                                             {"name": "greet", "description": "second"}, {"name": ""}]},
            }[method]) + "}"
        if method == "resources/list":  # bad_resource_and_prompt: one resource whose uri is a number
            return head + json.dumps({"resources": [{"uri": "note://one", "name": "one"}, {"uri": 5, "name": "bad"},
                                                    {"uri": "note://two", "name": "two"}]}) + "}"
        if method == "resources/templates/list":
            return head + json.dumps({"resourceTemplates": []}) + "}"
        if method == "prompts/list":  # one prompt whose arguments are not a list
            return head + json.dumps({"prompts": [{"name": "greet", "arguments": [{"name": "who"}]},
                                                  {"name": "bad", "arguments": "notalist"}]}) + "}"
        if method == "tools/list" and self.case == "many_tools_paged":  # 5,000 tools, 100 a page
            page = int(params.get("cursor") or 0)
            tools = [{"name": f"t{i}", "description": f"Tool {i}.", "inputSchema": {"type": "object"}}
                     for i in range(page * 100, page * 100 + 100)]
            more = {"nextCursor": str(page + 1)} if page < 49 else {}
            return head + json.dumps({"tools": tools, **more}) + "}"
        if method == "tools/list" and self.case in ("refused_page", "broken_page"):  # page 2 refused or broken
            if not params.get("cursor"):
                return head + json.dumps({"tools": GOOD, "nextCursor": "p2"}) + "}"
            if self.case == "broken_page":
                return head + json.dumps({"tool": []}) + "}"
            return json.dumps({"jsonrpc": "2.0", "id": rid, "error": {"code": -32602, "message": "unknown cursor"}})
        if method == "tools/list" and self.case == "growing_cursor":  # pages that never end, each cursor longer
            page = len(params.get("cursor") or "") // 3000
            return head + json.dumps({"tools": GOOD if page == 0 else [], "nextCursor": "c" * 3000 * (page + 1)}) + "}"
        if method == "tools/list":
            bad = self.bad_when_exists is None or os.path.exists(self.bad_when_exists)
            junk = " <- done" if bad and self.case == "trailing_junk" else ""  # junk after a whole message
            return head + (listing_result(self.case) if bad else listing_result("good")) + "}" + junk
        if method == "tools/call":
            code = (params.get("arguments") or {}).get("rpc_error")
            if isinstance(code, int):  # answer with a JSON-RPC error of that code (-32000: servers' usual one)
                return json.dumps({"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": f"boom {code}"}})
            size = (params.get("arguments") or {}).get("error_chars")
            if isinstance(size, int):  # an error of megabytes, its data as large
                return json.dumps({"jsonrpc": "2.0", "id": rid, "error": {
                    "code": -32000, "message": "boom " + "E" * size, "data": {"trace": "D" * size}}})
            chars = (params.get("arguments") or {}).get("result_chars")
            if isinstance(chars, int):  # a result of that many characters of text (megabytes of output)
                return head + '{"content":[{"type":"text","text":"' + "R" * chars + '"}],"isError":false}}'
            if (params.get("arguments") or {}).get("bad_content"):  # a result that breaks the MCP schema
                return head + json.dumps({"content": "not a list", "isError": False}) + "}"
            text = json.dumps({"tool": params.get("name"), "arguments": params.get("arguments") or {}})
            result: dict[str, Any] = {"content": [{"type": "text", "text": text}], "isError": False}
            if params.get("name") == "matcher":
                result["structuredContent"] = {"x": (params.get("arguments") or {}).get("x")}
            return head + json.dumps(result) + "}"
        return json.dumps({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"no {method}"}})


def serve_stdio(handler: Handler) -> None:
    for line in sys.stdin:
        out = handler.reply(line)
        if out is not None:
            sys.stdout.write(out + "\n")
            sys.stdout.flush()


def serve_http(handler: Handler, port: int, sse: bool, legacy: bool = False) -> None:
    outbox: queue.Queue[str] = queue.Queue()  # legacy SSE: replies go out on the GET stream

    class Http(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, status: int, body: bytes = b"", ctype: str | None = None) -> None:
            self.send_response(status)
            if ctype:
                self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode("utf-8")
            out = handler.reply(body)
            if legacy:
                if out is not None:
                    outbox.put(out)
                self._send(202)
            elif out is None:
                self._send(202)
            elif sse:
                self._send(200, f"event: message\ndata: {out}\n\n".encode(), "text/event-stream")
            else:
                self._send(200, out.encode(), "application/json")

        def do_GET(self) -> None:  # noqa: N802
            if not legacy or not self.path.startswith("/sse"):
                self._send(405)
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.end_headers()
            self.wfile.write(b"event: endpoint\ndata: /messages?session_id=1\n\n")
            self.wfile.flush()
            while True:
                out = outbox.get()
                self.wfile.write(f"event: message\ndata: {out}\n\n".encode())
                self.wfile.flush()

        def do_DELETE(self) -> None:  # noqa: N802
            self._send(405)

    ThreadingHTTPServer(("127.0.0.1", port), Http).serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--case", default="good")
    parser.add_argument("--transport", choices=["stdio", "http", "http-sse", "sse"], default="stdio")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--bad-when-exists")
    args = parser.parse_args()
    handler = Handler(args.case, args.bad_when_exists)
    if args.transport == "stdio":
        serve_stdio(handler)
    else:
        serve_http(handler, args.port, sse=args.transport == "http-sse", legacy=args.transport == "sse")


if __name__ == "__main__":
    main()
