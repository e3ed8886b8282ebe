"""Fault injection at discovery: one bad field costs one tool, never the server, and never a timeout.

Real server processes (tests/servers/fault_server.py) list two good tools plus
one bad one, written by hand so the reply can hold what a sane encoder never
would: lone surrogates, nesting 5,000 levels deep, NaN, megabytes of text,
schemas JSON Schema 2020-12 refuses. Each case runs over stdio, and the
classes the SDK transports fail on (the reply cannot be parsed) also over
Streamable HTTP (JSON and SSE responses) and legacy SSE. Every test asserts the
server ends up ``connected`` with a 20 s timeout (a timeout would read
"timed out during discovery"), that its good tools are in the catalog, that the
bad one is absent with a precise warning, and that the server still answers.
"""

from __future__ import annotations

import json
import math
import time
from contextlib import nullcontext
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator
from servers.fault_server import REFS_AS_DATA
from servers.support import HERE, PY, ServerProcess, free_port, make_config

from jit.client.manager import ClientManager
from jit.client.tooldefs import MAX_STORED_DESCRIPTION_CHARS, MAX_TOOLS_PER_SERVER
from jit.errors import ServerConnectError, ToolCallError
from jit.models import ServerStatus, StoredTool, ToolAnalysis, ToolDef
from jit.salvage import too_large
from jit.schemas import MAX_SCHEMA_DEPTH, OPEN_SCHEMA, check_schema
from jit.selection.render import render_tools
from jit.selection.scored_tool import ScoredTool
from jit.selection.tiers import Tier
from jit.servers_config import HttpServerConfig, SseServerConfig, StdioServerConfig

FAULT = str(HERE / "fault_server.py")
GOOD = {"good_a", "good_b"}

#: case → what the warning for the dropped tool must say.
BAD_TOOL = {
    "surrogate_description": "'bad': description contains a lone surrogate U+D83D (not valid Unicode)",
    "surrogate_param": "'bad': inputSchema contains a lone surrogate U+DC00 (not valid Unicode) at character 5 "
                       "(at .properties.q.description)",
    "surrogate_name": "tool #1: name contains a lone surrogate U+D800",
    "surrogate_key": "'bad': inputSchema has a key that contains a lone surrogate U+D800",
    "deep_100": f"'bad': inputSchema nested more than {MAX_SCHEMA_DEPTH} levels deep",
    "deep_150": f"'bad': inputSchema nested more than {MAX_SCHEMA_DEPTH} levels deep",
    "deep_5000": f"'bad': inputSchema nested more than {MAX_SCHEMA_DEPTH} levels deep",
    "huge_schema": "'bad': inputSchema is 1,428,922 bytes of JSON, over the 131,072-byte limit",
    "invalid_schema": "'bad': inputSchema is not valid JSON Schema 2020-12: 'nonsense' is not valid under any "
                      "of the given schemas (at $.properties.a.type)",
    "nan_schema": "'bad': inputSchema holds nan, which JSON cannot represent (at .properties.n.maximum)",
    "bigint_schema": "'bad': inputSchema holds an integer of 5,000 digits, more than JSON parsers read; cut out by "
                     "jit (at .properties.n.maximum)",
    "dangling_ref": "'bad': inputSchema: $ref '#/$defs/missing' points to nothing in the schema",
    "invalid_pattern": "'bad': inputSchema: pattern '[unclosed' is not a valid regular expression (ECMA-262, as "
                       "JSON Schema reads it)",
    "not_object_schema": "'bad': inputSchema must have \"type\": \"object\" at the root, got 'string'",
    # A newline split jit tools' row and could forge a line of jit serve's log; PostgreSQL cannot hold a NUL.
    "newline_name": "'bad\\nINFO forged log line': name holds the control character U+000A at character 4",
    "nul_name": "'bad\\x00': name holds the control character U+0000 at character 4",
    "escape_name": "'bad\\x1b[2J': name holds the control character U+001B at character 4",
    "c1_name": "'bad\\x9b': name holds the control character U+009B at character 4",
}

#: The cases that make the SDK reject the whole reply (not only the tool): every transport.
UNPARSABLE = ["surrogate_description", "surrogate_name", "deep_150", "deep_5000", "bigint_schema"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def stdio(case: str, *extra: str) -> StdioServerConfig:
    return StdioServerConfig(command=PY, args=[FAULT, "--case", case, *extra], timeout=20)


def http_server(case: str, transport: str, *extra: str) -> ServerProcess:
    port = free_port()
    return ServerProcess([PY, FAULT, "--case", case, "--transport", transport, "--port", str(port), *extra], port,
                         path="/sse" if transport == "sse" else "/mcp")


def http(server: ServerProcess) -> HttpServerConfig:
    cls = SseServerConfig if server.path == "/sse" else HttpServerConfig
    return cls(url=server.url, timeout=20)


async def assert_bad_tool_dropped(tmp_path: Path, store, config, expected: str) -> None:
    cfg = make_config(tmp_path, {"f": config, "other": stdio("good")}, reconnect_attempts=0)
    async with ClientManager(cfg, store) as mgr:
        record = mgr.statuses()["f"]
        assert record.status is ServerStatus.CONNECTED, record.last_error
        assert {t.tool.name for t in store.tools("f")} == GOOD
        assert any(expected in w for w in mgr.warnings("f")), mgr.warnings("f")
        assert expected in record.last_error  # the status says it too (`jit status`)
        assert {t.tool.name for t in store.tools("other")} == GOOD  # another server is untouched
        result = await mgr.call_tool("f", "good_a", {"x": "still here"})
        assert json.loads(result.text()) == {"tool": "good_a", "arguments": {"x": "still here"}}


# --------------------------------------------------------------------------- one bad tool


@pytest.mark.slow
@pytest.mark.anyio
@pytest.mark.parametrize("case", sorted(BAD_TOOL))
async def test_one_bad_tool_over_stdio_costs_only_that_tool(tmp_path, store, case):
    await assert_bad_tool_dropped(tmp_path, store, stdio(case), BAD_TOOL[case])


@pytest.mark.slow
@pytest.mark.anyio
@pytest.mark.parametrize("transport", ["http", "http-sse", "sse"])
@pytest.mark.parametrize("case", UNPARSABLE)
async def test_one_unparsable_tool_over_http_and_sse_costs_only_that_tool(tmp_path, store, transport, case):
    with http_server(case, transport) as server:
        await assert_bad_tool_dropped(tmp_path, store, http(server), BAD_TOOL[case])


# --------------------------------------------------------------------------- a broken listing


BROKEN_LISTING = {
    "result_array": "invalid tools/list response from the server: result is a JSON array, not an object",
    "result_string": "invalid tools/list response from the server: result is a JSON string, not an object",
    "tools_not_list": "invalid tools/list response from the server: 'tools' is a JSON object, not an array",
    "result_cut_short": "invalid tools/list response from the server: not valid JSON (cut short",
    "result_python_quotes": "invalid tools/list response from the server: not valid JSON (Expecting property name",
}


@pytest.mark.slow
@pytest.mark.anyio
@pytest.mark.parametrize("transport", ["stdio", "http", "sse"])
@pytest.mark.parametrize("case", sorted(BROKEN_LISTING))
async def test_broken_listing_fails_at_once_and_keeps_the_cached_tools(tmp_path, store, transport, case):
    flag = tmp_path / "turn-bad"
    extra = ("--bad-when-exists", str(flag))
    server = http_server(case, transport, *extra) if transport != "stdio" else None
    with server or nullcontext():
        config = http(server) if server else stdio(case, *extra)
        cfg = make_config(tmp_path, {"f": config}, reconnect_attempts=0)
        async with ClientManager(cfg, store) as mgr:
            assert mgr.statuses()["f"].status is ServerStatus.CONNECTED
            store.record_call("f", "good_a", ok=True, latency_ms=1.0)
            flag.touch()
            with pytest.raises(ServerConnectError) as info:
                await mgr.refresh("f")
            assert BROKEN_LISTING[case] in str(info.value) and "timed out" not in str(info.value)
            # Nothing lost: the cached tools, their usage, and the connection itself.
            assert {t.tool.name for t in store.tools("f")} == GOOD
            assert store.tool("f", "good_a").calls == 1
            assert mgr.statuses()["f"].status is ServerStatus.CONNECTED
            assert not (await mgr.call_tool("f", "good_b", {})).is_error


@pytest.mark.slow
@pytest.mark.anyio
@pytest.mark.parametrize("case", sorted(BROKEN_LISTING))
async def test_broken_first_listing_is_an_error_at_once_not_a_timeout(tmp_path, store, case):
    cfg = make_config(tmp_path, {"f": stdio(case), "other": stdio("good")}, reconnect_attempts=0)
    async with ClientManager(cfg, store) as mgr:
        record = mgr.statuses()["f"]
        assert record.status is ServerStatus.ERROR
        assert BROKEN_LISTING[case] in record.last_error and "timed out" not in record.last_error
        assert mgr.statuses()["other"].status is ServerStatus.CONNECTED


@pytest.mark.slow
@pytest.mark.anyio
@pytest.mark.parametrize("transport", ["stdio", "http", "sse"])
async def test_a_whole_listing_followed_by_junk_is_read(tmp_path, store, transport):
    server = http_server("trailing_junk", transport) if transport != "stdio" else None
    with server or nullcontext():
        cfg = make_config(tmp_path, {"f": http(server) if server else stdio("trailing_junk")}, reconnect_attempts=0)
        async with ClientManager(cfg, store) as mgr:
            assert mgr.statuses()["f"].status is ServerStatus.CONNECTED, mgr.statuses()["f"].last_error
            assert {t.tool.name for t in store.tools("f")} == GOOD


# --------------------------------------------------------------------------- size bounds


@pytest.mark.slow
@pytest.mark.anyio
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_megabyte_descriptions_are_cut_flagged_and_the_rest_kept(tmp_path, store, transport):
    from jit.analysis.analyze import analyze_pending
    from jit.analysis.offline_analyzer import OfflineAnalyzer
    from jit.config import DEFAULT_SHARDS

    server = http_server("big_descriptions", transport) if transport != "stdio" else None
    with server or nullcontext():
        config = http(server) if server else stdio("big_descriptions")
        cfg = make_config(tmp_path, {"f": config}, reconnect_attempts=0)
        async with ClientManager(cfg, store) as mgr:
            assert mgr.statuses()["f"].status is ServerStatus.CONNECTED
            tools = {t.tool.name: t for t in store.tools("f")}
            assert set(tools) == GOOD | {f"big_{i}" for i in range(20)}
            big = tools["big_7"].tool.description
            assert big.startswith("This tool is huge.") and "[cut by jit: 1,048,595 characters in all]" in big
            assert len(big) < MAX_STORED_DESCRIPTION_CHARS + 100
            assert tools["good_a"].tool.description == "A good tool."
            assert sum("description cut from 1,048,595 to 16,384 characters" in w for w in mgr.warnings("f")) == 20
            assert not (await mgr.call_tool("f", "good_a", {})).is_error
    analyze_pending(store, OfflineAnalyzer(DEFAULT_SHARDS))
    flags = {t.tool.name: t.analysis.flags for t in store.tools("f")}
    assert all("oversized_description" in flags[f"big_{i}"] for i in range(20))
    assert "oversized_description" not in flags["good_a"]


@pytest.mark.slow
@pytest.mark.anyio
@pytest.mark.parametrize(("case", "said"), [
    ("many_tools", "dropped tool #2000 and the 101 fetched after it: over the limit of 2,000 tools per server"),
    # 5,000 tools, 100 a page: the drop line read "#2000-#2099", as if the server had 2,100
    ("many_tools_paged", "tools/list lists more than 2,000 items: stopped paging after 21 pages (2,100 fetched); "
                         "the server has more pages"),
])
async def test_tools_per_server_are_bounded(tmp_path, store, case, said):
    cfg = make_config(tmp_path, {"f": stdio(case)}, reconnect_attempts=0)
    async with ClientManager(cfg, store) as mgr:
        assert mgr.statuses()["f"].status is ServerStatus.CONNECTED
        assert len(store.tools("f")) == MAX_TOOLS_PER_SERVER
        assert said in mgr.warnings("f"), mgr.warnings("f")
        assert any(f"over the limit of {MAX_TOOLS_PER_SERVER:,} tools per server" in w for w in mgr.warnings("f"))
        assert not (await mgr.call_tool("f", "t5", {})).is_error


# --------------------------------------------------------------------------- schema dialects


@pytest.mark.slow
@pytest.mark.anyio
async def test_draft07_schema_is_kept_and_stored_as_2020_12(tmp_path, store):
    cfg = make_config(tmp_path, {"f": stdio("draft07")}, reconnect_attempts=0)
    async with ClientManager(cfg, store) as mgr:
        assert mgr.statuses()["f"].status is ServerStatus.CONNECTED
        assert mgr.warnings("f") == []
        schema = store.tool("f", "draft7_tool").tool.input_schema
        assert "$schema" not in schema
        pair = schema["properties"]["pair"]
        assert pair["prefixItems"] == [{"type": "string"}, {"type": "number"}] and pair["items"] is False
        Draft202012Validator.check_schema(schema)
        assert not (await mgr.call_tool("f", "good_a", {})).is_error


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_ref_in_data_is_data_and_a_ref_pointer_is_percent_decoded(tmp_path, store):
    """Valid 2020-12 schemas were dropped as "$ref … points to nothing": the check read ``{"$ref": …}``
    inside ``examples``, ``default``, ``const``, ``enum`` or an ``x-`` keyword as a schema (an
    OpenAPI-editing tool's example, say), and did not percent-decode ``#/$defs/a%20b``."""
    cfg = make_config(tmp_path, {"f": stdio("refs_as_data")}, reconnect_attempts=0)
    async with ClientManager(cfg, store) as mgr:
        assert mgr.statuses()["f"].status is ServerStatus.CONNECTED
        # A schema reached only through a $ref (under "components", not a schema position) is checked too.
        assert mgr.warnings("f") == [f"dropped tool #{len(REFS_AS_DATA) + 1} 'bad': inputSchema: "
                                     "$ref '#/components/Owner' points to nothing in the schema"]
        assert {t.tool.name for t in store.tools("f")} == GOOD | set(REFS_AS_DATA)
        for name, schema in REFS_AS_DATA.items():
            assert store.tool("f", name).tool.input_schema == schema  # kept whole
            Draft202012Validator.check_schema(schema)  # what jsonschema says too
    # The pointers resolve where jsonschema resolves them: "a b", then "c/d~" (percent-decoded, then ~1 ~0).
    validator = Draft202012Validator(REFS_AS_DATA["pct_pointer"])
    assert [e.message for e in validator.iter_errors({"s": 5, "n": "x", "m": "y"})] == [
        "5 is not of type 'string'", "'x' is not of type 'number'", "'y' is not of type 'number'"]
    for ref in ("#/$defs/a%20c", "#/$defs/c~1d", "#/$defs/a%2"):
        schema = {"type": "object", "$defs": {"a b": {}, "c/d~": {}}, "properties": {"p": {"$ref": ref}}}
        assert check_schema(schema) == (None, f"inputSchema: $ref {ref!r} points to nothing in the schema")


def test_check_schema_normalises_older_dialects_and_refuses_what_it_cannot_fix():
    draft4 = {"$schema": "http://json-schema.org/draft-04/schema#", "type": "object", "properties": {
        "n": {"type": "number", "maximum": 5, "exclusiveMaximum": True}},
        "dependencies": {"a": ["b"], "c": {"required": ["d"]}}}
    schema, why = check_schema(draft4)
    assert why is None and schema["properties"]["n"] == {"type": "number", "exclusiveMaximum": 5}
    assert schema["dependentRequired"] == {"a": ["b"]} and schema["dependentSchemas"] == {"c": {"required": ["d"]}}
    assert "$schema" in draft4  # the input is left alone
    # Pre-2020 keywords without $schema are read as draft-07 rather than dropped.
    schema, why = check_schema({"type": "object", "properties": {"t": {"type": "array", "items": [{}]}}})
    assert why is None and schema["properties"]["t"] == {"type": "array", "prefixItems": [{}]}
    for bad, reason in [
        ([], "must be a JSON Schema object, got an array"),
        ({"type": "object", "properties": {"x": {"minimum": math.inf}}}, "holds inf, which JSON cannot represent"),
        ({"type": "object", "required": "x"}, "is not valid JSON Schema 2020-12"),
        ({"type": "object", "properties": {"x": {"$ref": "#/definitions/y"}}}, "points to nothing"),
        # Patterns are ECMA-262: Python's named groups and inline flags are not; nested positions count.
        ({"type": "object", "properties": {"x": {"type": "string", "pattern": "(?P<n>a)"}}}, "'(?P<n>a)' is not a valid"),
        ({"type": "object", "properties": {"x": {"anyOf": [{"pattern": "(?i)abc"}]}}}, "'(?i)abc' is not a valid"),
        ({"type": "object", "patternProperties": {"[a-": {}}}, "patternProperties key '[a-' is not a valid"),
    ]:
        schema, why = check_schema(bad)
        assert schema is None and reason in why
    # ECMA-only syntax Python's re refuses is kept; a "pattern" key inside data (a default) is data.
    for good in ({"type": "object", "properties": {"x": {"type": "string", "pattern": "^\\p{L}+(?<tail>\\d)?$"}}},
                 {"type": "object", "properties": {"x": {"type": "object", "default": {"pattern": "(("}}}},
                 {"type": "object", "properties": {"pattern": {"type": "string"}}}):
        schema, why = check_schema(good)
        assert why is None and schema == good


# --------------------------------------------------------------------------- rendering


def _scored(name: str, schema) -> ScoredTool:
    tool = ToolDef(server="s", name=name, description=f"Tool {name}.", input_schema=schema)
    stored = StoredTool(id=hash(name) % 10**6, tool=tool, definition_hash="h", server_status=ServerStatus.CONNECTED,
                        analysis=ToolAnalysis())
    return ScoredTool(tool=stored, name=f"s__{name}", tier=Tier.FULL, skeleton=False, logic=50, vector=50,
                      final=50, offline=False, tokens=0, summary="")


def _deep(levels: int) -> dict:
    root: dict = {"type": "object", "properties": {}}
    node = root["properties"]
    for _ in range(levels):
        node["a"] = {"type": "object", "properties": {}}
        node = node["a"]["properties"]
    return root


def test_broken_schemas_never_break_a_rendering():
    good = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    tools = [
        _scored("good", good),
        _scored("draft7", {"$schema": "http://json-schema.org/draft-07/schema#", **good}),
        _scored("nonsense", {"type": "object", "properties": {"a": {"type": "nonsense"}}}),
        _scored("nan", {"type": "object", "properties": {"a": {"maximum": math.nan}}}),
        _scored("deep", _deep(5000)),  # json.dumps alone would raise RecursionError here
        _scored("surrogate", {"type": "object", "properties": {"a": {"description": "x\ud800"}}}),
        _scored("not_a_dict", ["type", "object"]),
    ]
    for fmt in ("anthropic", "openai", "markdown", "json"):
        rendered = render_tools(tools, fmt, shard="coder")
        text = rendered if fmt == "markdown" else json.dumps(rendered, allow_nan=False)
        text.encode("utf-8")  # no lone surrogate survives into what is sent
    by_name = {t["name"]: t for t in render_tools(tools, "anthropic")}
    assert by_name["s__good"]["input_schema"] == good
    assert by_name["s__draft7"]["input_schema"] == good  # $schema dropped: 2020-12 is the default
    for name in ("nonsense", "nan", "deep", "surrogate", "not_a_dict"):
        definition = by_name[f"s__{name}"]
        assert definition["input_schema"] == OPEN_SCHEMA
        assert definition["description"].startswith("[jit: the server's input schema was withheld: ")
        Draft202012Validator.check_schema(definition["input_schema"])


# --------------------------------------------------------------------------- a server's own error codes


@pytest.mark.slow
@pytest.mark.anyio
@pytest.mark.parametrize("code", [-32000, -32001, -32050])
async def test_a_servers_error_with_a_code_the_sdk_also_uses_is_the_servers_error(tmp_path, store, code):
    """-32000 (the usual generic server error) and -32001 are also the SDK's codes for a closed
    connection and a timeout: a server answering with them is still answering. Its message comes
    back as a failed call at once (not "went away", not "did not answer within"), and the server
    serves the next call."""
    from jit.errors import ToolCallError

    cfg = make_config(tmp_path, {"f": stdio("good")}, reconnect_attempts=0)
    async with ClientManager(cfg, store) as mgr:
        started = time.monotonic()
        with pytest.raises(ToolCallError) as info:
            await mgr.call_tool("f", "good_a", {"rpc_error": code})
        assert f"failed: boom {code}" in str(info.value) and info.value.details["rpc_code"] == code, str(info.value)
        assert time.monotonic() - started < 5
        assert mgr.statuses()["f"].status is ServerStatus.CONNECTED
        result = await mgr.call_tool("f", "good_a", {"x": 1})
        assert json.loads(result.text()) == {"tool": "good_a", "arguments": {"x": 1}}


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_servers_megabyte_error_is_bounded_in_messages_and_in_the_catalog(tmp_path, store):
    """A server answering a call with a 3 MB JSON-RPC error message and 3 MB of ``data`` had them
    printed by ``jit call``, sent twice to ``jit serve``'s client and stored in the catalog at every
    failure; one that refuses ``initialize`` with 3 MB had them stored as its ``last_error`` and
    printed by ``jit servers``. Each is cut to :data:`MAX_ERROR_CHARS` with its length said, the
    data replaced by a note; the server keeps serving. A result that breaks the MCP schema names
    the field, not "1 validation error for CallToolResult"."""
    from jit.client.calls import MAX_ERROR_DATA_CHARS
    from jit.errors import MAX_ERROR_CHARS, ToolCallError

    cfg = make_config(tmp_path, {"f": stdio("good"), "g": stdio("huge_initialize_error")}, reconnect_attempts=0)
    async with ClientManager(cfg, store) as mgr:
        with pytest.raises(ToolCallError) as info:
            await mgr.call_tool("f", "good_a", {"error_chars": 3_000_000})
        error = info.value
        assert len(error.message) < MAX_ERROR_CHARS + 200, len(error.message)
        assert error.message.startswith("tool 'good_a' on server 'f' failed: boom EEE")
        assert "[cut by jit: 3,000,005 characters in all]" in error.message
        assert len(json.dumps(error.to_dict())) < MAX_ERROR_CHARS + MAX_ERROR_DATA_CHARS, "data not bounded"
        assert error.details["data"] == "[cut by jit: the server's error data, 3,000,012 characters of JSON]"
        usage = store.usage("f", "good_a")
        assert usage is not None and usage["errors"] == 1
        assert len(usage["last_error"]) < MAX_ERROR_CHARS + 100, len(usage["last_error"])

        with pytest.raises(ToolCallError) as info:
            await mgr.call_tool("f", "good_a", {"bad_content": True})
        assert str(info.value).endswith("returned an invalid result: content: Input should be a valid list"), \
            str(info.value)

        result = await mgr.call_tool("f", "good_a", {"x": 1})  # still serving
        assert json.loads(result.text()) == {"tool": "good_a", "arguments": {"x": 1}}
        record = mgr.statuses()["g"]
        assert record.status is ServerStatus.ERROR
        assert record.last_error is not None and "no! no!" in record.last_error
        assert len(record.last_error) < MAX_ERROR_CHARS + 200, len(record.last_error)
    stored = store.server("g")
    assert stored is not None and stored.last_error is not None
    assert len(stored.last_error) < MAX_ERROR_CHARS + 200
    assert "[cut by jit: 3,200,024 characters in all]" in stored.last_error


# --------------------------------------------------------------------------- a message over the size limit


@pytest.mark.slow
@pytest.mark.anyio
@pytest.mark.parametrize(("transport", "size"), [
    ("stdio", "47.7 MiB, over jit's limit of 32 MiB for one message"),
    ("http", "47.7 MiB, over jit's limit of 32 MiB for one message"),  # its Content-Length says how large
    ("http-sse", "over 32 MiB, jit's limit for one message"),  # the SSE event is not read past the limit
])
async def test_a_result_over_the_size_limit_says_so_at_once_and_the_server_keeps_serving(tmp_path, store,
                                                                                        transport, size):
    """A 50 MB tool result: over stdio the SDK's reader re-joined its buffer per chunk (a minute for
    50 MB), so the call said "did not answer within 60s"; over Streamable HTTP with SSE responses
    the SDK's 1 MiB event bound failed any result past it as "server went away". One message is
    now bounded at 32 MiB on every transport: the call fails at once saying how large the result
    was, the connection stays, and a 20 MB result comes through."""
    with nullcontext() if transport == "stdio" else http_server("good", transport) as server:
        config = stdio("good") if server is None else http(server)
        # The call timeout is a hang guard (the SDK's stdio reader took about a minute for 50 MB).
        cfg = make_config(tmp_path, {"f": config.model_copy(update={"call_timeout": 60})}, reconnect_attempts=0)
        async with ClientManager(cfg, store) as mgr:
            with pytest.raises(ToolCallError) as info:
                await mgr.call_tool("f", "good_a", {"result_chars": 50_000_000})
            assert info.value.message == (f"tool 'good_a' on server 'f' failed: the tools/call response was {size}; "
                                          "jit did not keep it")
            big = await mgr.call_tool("f", "good_a", {"result_chars": 20_000_000})
            assert big.text() == "R" * 20_000_000
            assert mgr.statuses()["f"].status is ServerStatus.CONNECTED
            after = await mgr.call_tool("f", "good_a", {"x": "still here"})
    assert json.loads(after.text()) == {"tool": "good_a", "arguments": {"x": "still here"}}


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_listing_over_the_size_limit_fails_the_connection_at_once_saying_so(tmp_path, store):
    """A 40 MB tools/list reply took the SDK's stdio reader about 40 s, past the default 30 s
    timeout (the server was lost to "timed out during discovery"). No message past 32 MiB is read,
    a listing no more than a result: the first listing fails at once with its size."""
    cfg = make_config(tmp_path, {"f": stdio("huge_listing").model_copy(update={"timeout": 120})}, reconnect_attempts=0)
    async with ClientManager(cfg, store) as mgr:
        record = mgr.statuses()["f"]
    assert record.status is ServerStatus.ERROR
    assert record.last_error is not None
    assert record.last_error.startswith("the tools/list response was 38.1 MiB, over jit's limit of 32 MiB for one "
                                        "message; jit did not keep it"), record.last_error


@pytest.mark.parametrize(("head", "tail", "waiting", "answered"), [
    # the Python SDK writes the id first, the TypeScript SDK last
    ('{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"RRR', 'RRR"}]}}', [7, 8], 7),
    ('{"result":{"content":[{"type":"text","text":"RRR', 'RRR"}]},"jsonrpc":"2.0","id":"a-8"}', [7, "a-8"], "a-8"),
    # no top-level id in what was kept: the one request waited for, if only one
    ('{"result":{"content":[{"id":3,"text":"RRR', 'RRR"}]},"x":{"id":3}}', [8], 8),
    ('{"result":{"content":[{"id":3,"text":"RRR', 'RRR"}]},"x":{"id":3}}', [7, 8], None),
    # a notification or request from the server answers nothing
    ('{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"RRR', 'RRR"}}', [7], None),
    ('{"jsonrpc":"2.0","id":7,"method":"sampling/createMessage","params":{"x":"RRR', 'RRR"}}', [7], None),
])
def test_a_message_too_large_to_read_answers_the_request_it_names(head, tail, waiting, answered):
    error = too_large(head, tail, "50 MiB", lambda rid: "tools/call" if rid in waiting else None, lambda: waiting)
    assert (error.id if error is not None else None) == answered
    if error is not None:
        assert error.error.message == "the tools/call response was 50 MiB; jit did not keep it"


# --------------------------------------------------------------------------- a result against its output schema


@pytest.mark.slow
@pytest.mark.anyio
async def test_an_output_schema_pattern_cannot_stall_the_client(tmp_path, store):
    """The tool declares ``"pattern": "^(a+)+$"``: Python's ``re`` needs hours to refuse 40 a's and
    a '!', and the SDK's check ran it on the event loop, stalling every other request. jit checks
    structured content itself (jsonschema-rs, no unbounded backtracking): the bad result is a
    failed call naming the schema, a conforming one passes, and the server keeps serving."""
    from jit.errors import ToolCallError

    cfg = make_config(tmp_path, {"f": stdio("backtracking_output")}, reconnect_attempts=0)
    async with ClientManager(cfg, store) as mgr:
        with pytest.raises(ToolCallError) as info:
            await mgr.call_tool("f", "matcher", {"x": "a" * 40 + "!"})
        assert "does not match its output schema" in str(info.value) and "(at /x)" in str(info.value)
        ok = await mgr.call_tool("f", "matcher", {"x": "aaa"})
        assert ok.structured_content == {"x": "aaa"} and not ok.is_error
        with pytest.raises(ToolCallError, match='null is not of type "string"'):
            await mgr.call_tool("f", "matcher", {})  # {"x": null}
        assert mgr.statuses()["f"].status is ServerStatus.CONNECTED


@pytest.mark.slow
@pytest.mark.anyio
async def test_what_a_server_says_of_itself_is_bounded(tmp_path, store):
    """serverInfo name and version, instructions and capabilities are stored and shown (jit servers,
    jit://servers): megabytes of them are cut like a tool's text, each cut a discovery warning."""
    from jit.client.tooldefs import MAX_NAME_CHARS, MAX_STORED_DESCRIPTION_CHARS, MAX_TITLE_CHARS

    cfg = make_config(tmp_path, {"f": stdio("huge_server_info")}, reconnect_attempts=0)
    async with ClientManager(cfg, store) as mgr:
        assert mgr.statuses()["f"].status is ServerStatus.CONNECTED
    rec = store.server("f")
    assert rec is not None and {t.tool.name for t in store.tools("f")} == {"good_a", "good_b"}
    assert rec.server_name.startswith("N" * MAX_TITLE_CHARS + " … [cut by jit")
    assert rec.server_version.startswith("V" * MAX_NAME_CHARS + " … [cut by jit")
    assert len(rec.instructions) < MAX_STORED_DESCRIPTION_CHARS + 100
    assert "experimental" not in rec.capabilities and "tools" in rec.capabilities
    for what in ("serverInfo.name cut", "serverInfo.version cut", "instructions cut", "capabilities over"):
        assert what in rec.last_error, rec.last_error


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_cursor_that_keeps_growing_stops_paging_and_keeps_the_first_page(tmp_path, store):
    """Every page after the first is empty with a cursor 3,000 characters longer: following them to
    the page limit held gigabytes and ran into the timeout, losing the good tools of page one."""
    from jit.client.listings import MAX_CURSOR_CHARS

    cfg = make_config(tmp_path, {"f": stdio("growing_cursor")}, reconnect_attempts=0)
    async with ClientManager(cfg, store) as mgr:
        status = mgr.statuses()["f"]
        assert status.status is ServerStatus.CONNECTED
    assert {t.tool.name for t in store.tools("f")} == {"good_a", "good_b"}
    assert f"over {MAX_CURSOR_CHARS:,}; stopped paging" in status.last_error


@pytest.mark.slow
@pytest.mark.anyio
@pytest.mark.parametrize(("case", "said"), [
    ("refused_page", "tools/list page 2 failed: unknown cursor (JSON-RPC error -32602); stopped paging, "
                     "kept the 2 items of page 1"),
    ("broken_page", "tools/list page 2 failed: invalid tools/list response from the server: 'tools' is missing, "
                    "not an array"),
])
async def test_a_later_page_refused_or_broken_keeps_the_pages_before_it(tmp_path, store, case, said):
    """A server that refuses its own cursor (or sends page 2 without ``tools``) was an error naming no page
    ("unknown cursor (JSON-RPC error -32602)"), and page 1's good tools were lost with it."""
    cfg = make_config(tmp_path, {"f": stdio(case), "other": stdio("good")}, reconnect_attempts=0)
    started = time.monotonic()
    async with ClientManager(cfg, store) as mgr:
        status = mgr.statuses()["f"]
        assert status.status is ServerStatus.CONNECTED, status.last_error
        assert said in status.last_error
        result = await mgr.call_tool("f", "good_a", {"x": "still here"})
        assert json.loads(result.text()) == {"tool": "good_a", "arguments": {"x": "still here"}}
    assert time.monotonic() - started < 10
    assert {t.tool.name for t in store.tools("f")} == GOOD
    assert {t.tool.name for t in store.tools("other")} == GOOD


@pytest.mark.slow
@pytest.mark.anyio
async def test_one_bad_resource_or_prompt_costs_that_item_not_the_listing(tmp_path, store):
    """A resource whose uri is a number, a prompt whose arguments are not a list: the SDK refuses the
    whole page, and jit served none of the server's resources or prompts. Each item is now judged alone."""
    cfg = make_config(tmp_path, {"f": stdio("bad_resource_and_prompt")}, reconnect_attempts=0)
    async with ClientManager(cfg, store) as mgr:
        status = mgr.statuses()["f"]
        assert status.status is ServerStatus.CONNECTED
    assert sorted(r["uri"] for r in store.resources("f")) == ["note://one", "note://two"]
    assert [p["name"] for p in store.prompts("f")] == ["greet"]
    assert "dropped resource #1 'bad'" in status.last_error and "dropped prompt #1 'bad'" in status.last_error


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_resource_template_or_prompt_named_twice_or_not_at_all_is_dropped_with_a_reason(tmp_path, store):
    """Two resources with one URI, two templates with one uriTemplate, two prompts with one name: the catalog
    kept the last, jit serve the first (templates: both), and nothing was said. An empty URI or name was kept.
    Now the first is kept everywhere and each dropped item named, as for tools."""
    cfg = make_config(tmp_path, {"f": stdio("twin_resources_and_prompts")}, reconnect_attempts=0)
    async with ClientManager(cfg, store) as mgr:
        status = mgr.statuses()["f"]
        assert status.status is ServerStatus.CONNECTED
        listing = mgr._upstreams["f"].listing
        assert [(t["uriTemplate"], t["name"]) for t in listing["resource_templates"]] == [("note://{id}", "note")]
        assert [(r["uri"], r["name"]) for r in listing["resources"]] == [("note://one", "one"), ("note://two", "two")]
        assert [p["description"] for p in listing["prompts"]] == ["first"]
        result = await mgr.call_tool("f", "good_a", {"x": "still here"})
        assert json.loads(result.text()) == {"tool": "good_a", "arguments": {"x": "still here"}}
    assert [(r["uri"], r["name"]) for r in store.resources("f")] == [("note://one", "one"), ("note://two", "two")]
    assert [(p["name"], p["description"]) for p in store.prompts("f")] == [("greet", "first")]
    assert {t.tool.name for t in store.tools("f")} == GOOD
    for said in ("dropped resource #1 'note://one': duplicate uri, kept the first", "dropped resource #2: missing or "
                 "empty uri", "dropped resource template #1 'note://{id}': duplicate uriTemplate, kept the first",
                 "dropped resource template #2 ' ': missing or empty uriTemplate",
                 "dropped prompt #1 'greet': duplicate name, kept the first",
                 "dropped prompt #2: missing or empty name"):
        assert said in status.last_error, said
