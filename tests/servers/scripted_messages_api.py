"""A scripted stand-in for the Anthropic Messages API on 127.0.0.1, for Claude Code's CLI in tests.

Claude Code (``ANTHROPIC_BASE_URL=http://127.0.0.1:PORT``, any key) sends its model requests here.
Each request body is appended, as one JSON line, to the log file; the answer is scripted, not
generated:

* a request offering a tool named ``--call`` (a sub-agent's, ``mcp__jit-tester__call_tool`` say)
  whose conversation holds no tool result yet: a ``tool_use`` of it with ``--call-input``;
* else, once per run, a request offering the sub-agent tool (``Task`` or ``Agent``): a ``tool_use``
  of it delegating to the agent named by ``--delegate-to``, after a ``WaitForMcpServers`` call
  when that tool is offered (so the parent's own servers are connected when the sub-agent starts);
* anything else: the text ``done``, ending the turn.

Streaming requests get the API's server-sent events, others one JSON message.

    python tests/servers/scripted_messages_api.py --log FILE --delegate-to jit-reviewer

prints ``PORT`` on its first line of stdout once it listens.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DELEGATE_TOOLS = ("Task", "Agent")
#: Claude Code's tool that waits for the session's MCP servers to connect.
WAIT_TOOL = "WaitForMcpServers"
#: How often the parent asks it at most before delegating anyway.
MAX_WAITS = 30


def _tool_results(body: dict[str, Any]) -> int:
    return sum(1 for message in body.get("messages", []) if isinstance(message.get("content"), list)
               for part in message["content"] if isinstance(part, dict) and part.get("type") == "tool_result")


def _last_result(body: dict[str, Any]) -> str:
    results = [part for message in body.get("messages", []) if isinstance(message.get("content"), list)
               for part in message["content"] if isinstance(part, dict) and part.get("type") == "tool_result"]
    return json.dumps(results[-1].get("content")) if results else ""


def reply_blocks(body: dict[str, Any], args: argparse.Namespace, state: dict[str, Any]) -> list[dict[str, Any]]:
    """The scripted answer to one request (``state``: whether the delegation was sent, once per run, and the waits)."""
    tools = {t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)}
    done = _tool_results(body)
    if args.call and args.call in tools:  # the sub-agent: one call, then done
        if not done:
            return [{"type": "tool_use", "id": "toolu_call", "name": args.call, "input": json.loads(args.call_input)}]
        return [{"type": "text", "text": "done"}]
    delegate = next((name for name in DELEGATE_TOOLS if name in tools), None)
    if delegate and args.delegate_to and not state["delegated"]:
        # The parent waits for its own MCP servers first (they must be up when the sub-agent starts,
        # for a test to show the sub-agent does not inherit them), asking again while one is connecting.
        if WAIT_TOOL in tools and (not done or "ready: false" in _last_result(body)) and state["waits"] < MAX_WAITS:
            state["waits"] += 1
            return [{"type": "tool_use", "id": f"toolu_wait{state['waits']}", "name": WAIT_TOOL, "input": {}}]
        state["delegated"] = True
        return [{"type": "tool_use", "id": "toolu_delegate", "name": delegate,
                 "input": {"subagent_type": args.delegate_to, "description": "role work",
                           "prompt": "Do the role's work with your MCP tools."}}]
    return [{"type": "text", "text": "done"}]


def _events(message: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    start = {**message, "content": [], "stop_reason": None}
    events: list[tuple[str, dict[str, Any]]] = [("message_start", {"type": "message_start", "message": start})]
    for i, block in enumerate(message["content"]):
        if block["type"] == "text":
            events += [("content_block_start", {"type": "content_block_start", "index": i,
                                                "content_block": {"type": "text", "text": ""}}),
                       ("content_block_delta", {"type": "content_block_delta", "index": i,
                                                "delta": {"type": "text_delta", "text": block["text"]}})]
        else:
            events += [("content_block_start", {"type": "content_block_start", "index": i,
                                                "content_block": {**block, "input": {}}}),
                       ("content_block_delta", {"type": "content_block_delta", "index": i,
                                                "delta": {"type": "input_json_delta",
                                                          "partial_json": json.dumps(block["input"])}})]
        events.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
    events += [("message_delta", {"type": "message_delta", "delta": {"stop_reason": message["stop_reason"],
                                                                     "stop_sequence": None},
                                  "usage": {"output_tokens": 1}}),
               ("message_stop", {"type": "message_stop"})]
    return events


def make_handler(args: argparse.Namespace, lock: threading.Lock, state: dict[str, Any]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *a: Any) -> None:  # noqa: A002 - quiet
            pass

        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            with lock, open(args.log, "a", encoding="utf-8") as log:
                log.write(json.dumps({"path": self.path, "body": body}) + "\n")
            if "count_tokens" in self.path:
                return self._json({"input_tokens": 1})
            with lock:
                blocks = reply_blocks(body, args, state)
            message = {"id": "msg_scripted", "type": "message", "role": "assistant",
                       "model": body.get("model", "scripted"), "content": blocks,
                       "stop_reason": "tool_use" if blocks[0]["type"] == "tool_use" else "end_turn",
                       "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}
            if not body.get("stream"):
                return self._json(message)
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            for event, data in _events(message):
                self.wfile.write(f"event: {event}\ndata: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()

        def do_GET(self) -> None:  # noqa: N802
            self._json({"data": [], "has_more": False})

        def _json(self, data: dict[str, Any]) -> None:
            raw = json.dumps(data).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

    return Handler


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log", required=True)
    parser.add_argument("--delegate-to", default="")
    parser.add_argument("--call", default="")
    parser.add_argument("--call-input", default="{}")
    args = parser.parse_args(argv)
    state = {"delegated": False, "waits": 0}
    server = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(args, threading.Lock(), state))
    print(server.server_address[1], flush=True)
    try:
        server.serve_forever()
    finally:
        server.server_close()


if __name__ == "__main__":
    sys.exit(main())
