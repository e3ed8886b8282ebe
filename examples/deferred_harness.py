"""A harness on jit's provider-native deferred rendering: tools load without breaking the prompt cache.

The plain harness (examples/harness.py) sends the Full tools plus ``jit_expand_tools`` and rewrites
the ``tools`` array when the model asks for more, which invalidates the provider's prompt cache.
This one keeps a :class:`~jit.selection.deferred.DeferredTools` per shard
(``ToolSet.deferred()``) and lets the provider load tools inside the conversation:

- **Anthropic** (``--provider anthropic``, Messages API): Full tools, then jit's search tool
  ``jit_search_tools`` carrying the ``cache_control`` breakpoint, then the Condensed and Minimal tools
  with ``defer_loading: true``; the harness answers a search with ``tool_reference`` blocks, which the
  API expands in place (``--search bm25`` uses Anthropic's own search tool instead).
- **OpenAI** (``--provider openai``, Responses API): Full tools as functions, then ``tool_search``
  with client execution; the harness answers a ``tool_search_call`` with a ``tool_search_output``
  carrying the loaded definitions, grouped in one namespace per server (``--search server``: OpenAI
  searches deferred functions in namespaces itself).

Every request is validated against the official SDK's request types before it is sent. Run it
against the real API (``ANTHROPIC_API_KEY`` or ``OPENAI_API_KEY``)::

    python examples/deferred_harness.py --provider anthropic --config config.json

or offline (no key, no network), with a scripted model speaking each API over the SDK's own HTTP
client on a mock transport::

    python examples/deferred_harness.py --provider openai --offline --config config.json

Servers the config starts as ``python`` (config.json's example servers) run on the interpreter running
the example, which has jit and the MCP SDK. A shard none of whose tool calls succeeded is a failure:
the example names each shard's failed calls and exits with 1. ``tests/test_examples.py`` runs both
providers offline, and the example in its own process.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import os
import sys
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
from pydantic import TypeAdapter

from jit import (
    HARNESS_SERVER,
    SEARCH_TOOL,
    ClientManager,
    Compiler,
    Config,
    DeferredTools,
    Embedder,
    JitError,
    TaskContext,
    ToolSet,
    embedder_from_config,
    load_config,
    open_catalog,
    sync,
)

MODELS = {"anthropic": "claude-sonnet-4-6", "openai": "gpt-5.4"}
FORMATS = {"anthropic": "anthropic_deferred", "openai": "openai_deferred"}
MAX_TURNS = 8
#: The commands :func:`with_this_python` runs on this interpreter.
PYTHONS = ("python", "python3")

#: The shards this example spawns: (shard, task).
SHARDS = (
    ("coder", "Find where the greeting text 'hello' is defined in the code and change it to 'hello, world'."),
    ("researcher", "Look through the project notes for what was decided about the release and summarise it."),
)
#: What the offline model wants per shard: the tool and its arguments (the real model decides itself).
OFFLINE_WANTS = {
    "coder": ("workspace__search_text", {"query": "hello"}),
    "researcher": ("tracker__search_notes", {"query": "release"}),
}


def plain(value: Any) -> Any:
    """``value`` with the lazy iterables pydantic returns for ``Iterable[...]`` fields consumed
    (which is when their items are validated) and turned into lists."""
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (str, bytes)):
        return value
    if isinstance(value, Iterable):
        return [plain(v) for v in value]
    return value


def check(adapter: TypeAdapter, value: Any) -> None:
    """Validate ``value`` against an SDK TypedDict: pydantic ignores unknown keys, so the value must
    also survive validation unchanged (a misspelt ``defer_loading`` fails here)."""
    validated = plain(adapter.validate_python(value))
    if validated != value:
        raise ValueError(f"not a valid {adapter}: keys the SDK types do not know were dropped")


@functools.cache
def request_adapter(provider: str) -> TypeAdapter:
    if provider == "anthropic":
        from anthropic.types.message_create_params import MessageCreateParamsNonStreaming

        return TypeAdapter(MessageCreateParamsNonStreaming)
    from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming

    return TypeAdapter(ResponseCreateParamsNonStreaming)


@dataclass
class ShardRun:
    """One shard's conversation: its tool set, the growing ``tools`` array, and what happened."""

    shard: str
    task: str
    provider: str
    toolset: ToolSet
    session: DeferredTools
    #: Anthropic: the messages; OpenAI: the input items.
    history: list[dict[str, Any]] = field(default_factory=list)
    #: The ``tools`` array of each request, in order (a harness would not keep these; the example
    #: does, to show that each one begins with the one before).
    sent: list[list[dict[str, Any]]] = field(default_factory=list)
    calls: list[dict[str, Any]] = field(default_factory=list)
    searches: list[list[str]] = field(default_factory=list)
    answer: str = ""

    @property
    def system(self) -> str:
        return (f"You are the {self.shard} agent of a team. Use the tools to do your task; "
                "tools that are not loaded yet are found and loaded by searching for them.")

    @property
    def failure(self) -> str | None:
        """Why the shard did not do its task (no tool call of it succeeded), or None."""
        if any(not c["is_error"] for c in self.calls):
            return None
        failed = [f"{c['tool']} failed: {c['error']}" for c in self.calls]
        return "; ".join(failed) or f"no tool was called: {self.answer}"


def spawn(compiler: Compiler, shard: str, task: str, provider: str, search: str = "client",
          budget: int | None = None) -> ShardRun:
    """Compile a shard's tool set and open its deferred ``tools`` array."""
    toolset = compiler.compile(TaskContext(shard=shard, task=task, budget=budget))
    session = toolset.deferred(FORMATS[provider], search=search)
    run = ShardRun(shard=shard, task=task, provider=provider, toolset=toolset, session=session)
    run.history.append({"role": "user", "content": task})
    return run


async def call(manager: ClientManager, run: ShardRun, name: str, arguments: dict[str, Any]) -> tuple[str, bool]:
    """Run one tool call: resolve the rendered name and call the tool on its server. Every call is
    recorded in ``run.calls``, a failed one with its error."""
    server, tool = None, name
    try:
        server, tool = run.toolset.resolve(name)
        if server == HARNESS_SERVER:  # a real harness runs its own tools (file reads, shell) itself
            text, is_error = f"{tool!r} is a harness tool; this example harness does not implement it", True
        else:
            result = await manager.call_tool(server, tool, arguments)
            text, is_error = result.text() or json.dumps(result.structured_content), result.is_error
    except JitError as exc:  # offline server, unknown tool, timeout: the model reads why
        text, is_error = json.dumps(exc.to_dict()), True
    run.calls.append({"server": server, "tool": tool, "arguments": arguments, "is_error": is_error}
                     | ({"error": text} if is_error else {}))
    return text, is_error


def _searched(run: ShardRun, answer: dict[str, Any]) -> dict[str, Any]:
    if answer["type"] == "tool_search_output":
        run.searches.append([f["name"] for ns in answer["tools"] for f in ns["tools"]])
    elif isinstance(answer["content"], list):
        run.searches.append([b["tool_name"] for b in answer["content"]])
    else:
        run.searches.append([])
    return answer


async def converse_anthropic(client: Any, manager: ClientManager, run: ShardRun, model: str) -> ShardRun:
    for _ in range(MAX_TURNS):
        request = {"model": model, "max_tokens": 1024, "system": run.system, "tools": run.session.tools,
                   "messages": run.history}
        check(request_adapter("anthropic"), request)
        run.sent.append(request["tools"])
        response = await anyio.to_thread.run_sync(functools.partial(client.messages.create, **request))
        run.history.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in response.content]})
        if response.stop_reason != "tool_use":
            run.answer = "\n".join(b.text for b in response.content if b.type == "text")
            return run
        results = []
        for block in response.content:
            if block.type != "tool_use":
                continue
            if block.name == SEARCH_TOOL:  # jit's search: tool_reference blocks load the tools in place
                results.append(_searched(run, run.session.answer(block.id, dict(block.input))))
                continue
            text, is_error = await call(manager, run, block.name, dict(block.input))
            results.append({"type": "tool_result", "tool_use_id": block.id, "content": text, "is_error": is_error})
        run.history.append({"role": "user", "content": results})
    run.answer = f"(stopped after {MAX_TURNS} turns)"
    return run


async def converse_openai(client: Any, manager: ClientManager, run: ShardRun, model: str) -> ShardRun:
    for _ in range(MAX_TURNS):
        request = {"model": model, "instructions": run.system, "tools": run.session.tools, "input": run.history}
        check(request_adapter("openai"), request)
        run.sent.append(request["tools"])
        response = await anyio.to_thread.run_sync(functools.partial(client.responses.create, **request))
        pending = []
        for item in response.output:
            run.history.append(item.model_dump(exclude_none=True))
            if item.type == "tool_search_call" and item.execution == "client":
                pending.append(_searched(run, run.session.answer(item.call_id, item.arguments)))
            elif item.type == "function_call":
                text, _is_error = await call(manager, run, item.name, json.loads(item.arguments or "{}"))
                pending.append({"type": "function_call_output", "call_id": item.call_id, "output": text})
        if not pending:
            run.answer = response.output_text
            return run
        run.history.extend(pending)
    run.answer = f"(stopped after {MAX_TURNS} turns)"
    return run


def with_this_python(config: Config) -> Config:
    """``config`` with the servers it starts as ``python`` run by this interpreter: the first ``python``
    on ``PATH`` may be another one, without the MCP SDK the example servers need."""
    servers = {name: s.model_copy(update={"command": sys.executable}) if getattr(s, "command", "") in PYTHONS else s
               for name, s in config.servers.items()}
    return replace(config, servers=servers)


async def main(config_path: str | Path | None, client: Any, provider: str, *, search: str = "client",
               embedder: Embedder | None = None, model: str | None = None, budget: int | None = None,
               shards: tuple[tuple[str, str], ...] = SHARDS) -> list[ShardRun]:
    """Sync the catalog, spawn ``shards`` and run their conversations concurrently."""
    converse = converse_anthropic if provider == "anthropic" else converse_openai
    config = with_this_python(load_config(config_path))
    embedder = embedder or embedder_from_config(config.embedding)
    with open_catalog(config) as store:
        async with ClientManager(config, store) as manager:
            await sync(config, store, embedder, manager=manager)
            with Compiler(store, config, embedder) as compiler:
                runs = [spawn(compiler, shard, task, provider, search, budget) for shard, task in shards]
                async with anyio.create_task_group() as tg:
                    for run in runs:
                        tg.start_soon(converse, client, manager, run, model or MODELS[provider])
    return runs


# --------------------------------------------------------------------------- offline: a scripted model


class ScriptedModel:
    """An ``httpx`` mock-transport handler that plays a model over the real API shapes: it calls the
    tool :data:`OFFLINE_WANTS` names for the shard if it is loaded, else searches for it by name, and
    ends its turn once the tool's result has come back. Requests are kept for inspection."""

    def __init__(self, provider: str) -> None:
        self.provider = provider
        self.requests: list[dict[str, Any]] = []
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def __call__(self, request: Any) -> Any:
        body = json.loads(request.content)
        with self._lock:
            self.requests.append(body)
        return self._anthropic(body) if self.provider == "anthropic" else self._openai(body)

    def _id(self, prefix: str) -> str:
        return f"{prefix}_{next(self._ids):04d}"

    def _response(self, body: dict[str, Any]) -> Any:
        import httpx2

        return httpx2.Response(200, json=body, headers={"request-id": self._id("req")})

    # -- Anthropic Messages

    def _anthropic(self, body: dict[str, Any]) -> Any:
        shard = next(s for s in OFFLINE_WANTS if f"the {s} agent" in body["system"])
        want, arguments = OFFLINE_WANTS[shard]
        blocks = [b for m in body["messages"] if isinstance(m["content"], list) for b in m["content"]]
        if any(b.get("type") == "tool_use" and b["name"] == want for b in blocks):
            return self._message([{"type": "text", "text": "Done."}], "end_turn")
        eager = {t["name"] for t in body["tools"] if not t.get("defer_loading")}
        referenced = {r["tool_name"] for b in blocks if b.get("type") == "tool_result" and isinstance(b["content"], list)
                      for r in b["content"] if r.get("type") == "tool_reference"}
        if want in eager or want in referenced:
            return self._message([self._tool_use(want, arguments)], "tool_use")
        return self._message([self._tool_use(SEARCH_TOOL, {"query": want})], "tool_use")

    def _tool_use(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return {"type": "tool_use", "id": self._id("toolu"), "name": name, "input": arguments}

    def _message(self, content: list[dict[str, Any]], stop: str) -> Any:
        return self._response({"id": self._id("msg"), "type": "message", "role": "assistant", "model": "scripted",
                               "content": content, "stop_reason": stop, "stop_sequence": None,
                               "usage": {"input_tokens": 1, "output_tokens": 1}})

    # -- OpenAI Responses

    def _openai(self, body: dict[str, Any]) -> Any:
        shard = next(s for s in OFFLINE_WANTS if f"the {s} agent" in body["instructions"])
        want, arguments = OFFLINE_WANTS[shard]
        items = body["input"]
        if any(i.get("type") == "function_call" and i["name"] == want for i in items):
            return self._output([{"type": "message", "id": self._id("msg"), "role": "assistant", "status": "completed",
                                  "content": [{"type": "output_text", "text": "Done.", "annotations": []}]}])
        eager = {t["name"] for t in body["tools"] if t["type"] == "function" and not t.get("defer_loading")}
        loaded = {f["name"] for i in items if i.get("type") == "tool_search_output" for ns in i["tools"]
                  for f in ns.get("tools", [ns])}
        if want in eager or want in loaded:
            return self._output([{"type": "function_call", "id": self._id("fc"), "call_id": self._id("call"),
                                  "name": want, "arguments": json.dumps(arguments), "status": "completed"}])
        return self._output([{"type": "tool_search_call", "id": self._id("ts"), "call_id": self._id("call"),
                              "execution": "client", "arguments": {"query": want}, "status": "completed"}])

    def _output(self, output: list[dict[str, Any]]) -> Any:
        return self._response({"id": self._id("resp"), "object": "response", "created_at": 0, "model": "scripted",
                               "status": "completed", "output": output, "parallel_tool_calls": True,
                               "tool_choice": "auto", "tools": [], "error": None, "incomplete_details": None,
                               "instructions": None, "metadata": {}, "temperature": 1.0, "top_p": 1.0})


def offline_client(provider: str, model: ScriptedModel) -> Any:
    """The official SDK client, its HTTP on ``model`` instead of the network."""
    if provider == "anthropic":
        import anthropic
        import httpx2

        return anthropic.Anthropic(api_key="offline", http_client=httpx2.Client(transport=httpx2.MockTransport(model)))
    import httpx
    import openai

    def handler(request: httpx.Request) -> httpx.Response:
        out = model(request)
        return httpx.Response(out.status_code, content=out.content, headers={"content-type": "application/json"})

    return openai.OpenAI(api_key="offline", http_client=httpx.Client(transport=httpx.MockTransport(handler)))


def _cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", help="jit config (default: as the jit command's)")
    parser.add_argument("--provider", choices=sorted(FORMATS), default="anthropic")
    parser.add_argument("--search", default="client", help="client (jit searches); anthropic: bm25, regex; "
                                                           "openai: server")
    parser.add_argument("--model")
    parser.add_argument("--budget", type=int, help="token budget per shard (default: the config's)")
    parser.add_argument("--offline", action="store_true", help="a scripted model instead of the API")
    args = parser.parse_args()
    if args.offline and args.search != "client":
        sys.exit("--offline scripts a model for jit's own search only (--search client)")
    if args.offline:
        client = offline_client(args.provider, ScriptedModel(args.provider))
    elif args.provider == "anthropic":
        if not os.environ.get("ANTHROPIC_API_KEY"):
            sys.exit("set ANTHROPIC_API_KEY (or pass --offline)")
        import anthropic

        client = anthropic.Anthropic()
    else:
        if not os.environ.get("OPENAI_API_KEY"):
            sys.exit("set OPENAI_API_KEY (or pass --offline)")
        import openai

        client = openai.OpenAI()
    runs = anyio.run(lambda: main(args.config, client, args.provider, search=args.search, model=args.model,
                                  budget=args.budget), backend="asyncio")
    for run in runs:
        grew = [len(t) for t in run.sent]
        print(f"## {run.shard}: {run.task}\n\nrequests: {len(run.sent)} (tools per request: {grew})\n"
              f"searches: {run.searches}\ncalls: {run.calls}\n\n{run.answer}\n")
    failed = [f"{run.shard}: {run.failure}" for run in runs if run.failure]
    if failed:
        sys.exit("the example failed, no tool call succeeded for\n" + "\n".join(failed))


if __name__ == "__main__":
    _cli()
