"""Fault injection: tool text that tries to drive the terminal (issue #12, defect 8).

A real MCP server (tests/servers/hostile_text_server.py) puts ANSI and OSC escape
sequences, NUL, BEL, backspace, carriage returns, DEL, an 8-bit C1 CSI, bidi
overrides, zero-width and tag characters, rich markup and emoji codes into tool
names, titles, descriptions, its own name, version and instructions, a tool
result, and (a second instance that crashes) its stderr, which becomes the
server's ``last_error``. After ``jit sync`` through the console script, every
human-facing output (``jit tools``, ``show``, ``servers``, ``compile``, ``call``,
error messages, ``jit serve``'s log) must carry none of those characters raw:
they are shown as visible escapes (``\\x1b``, ``\\u202e``) and markup prints as
written. ``--json`` output keeps the exact data (as JSON ``\\u`` escapes).
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from servers import hostile_text_server as hostile

from jit.catalog.store import Store
from jit.config_files import load_config
from jit.display import VisibleLogFormatter, json_text, markup, unsafe, visible

JIT = str(Path(sys.executable).parent / "jit")
SERVER = str(Path(hostile.__file__).resolve())
# No colour or terminal tricks of jit's own: any control character in the output came from the server.
ENV = {**{k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE")},
       "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "COLUMNS": "200", "TERM": "dumb",
       "TOKENIZERS_PARALLELISM": "false"}
TOOLS = {name: (title, description) for name, title, description in hostile.TOOLS}
BIDI_NAME = hostile.TOOLS[-1][0]


def raw_characters(text: str) -> list[str]:
    """Every unsafe character in ``text`` (newlines and tabs are layout), shown escaped for the assertion message."""
    return [visible(c, layout=False) for c in text if c not in "\n\t" and unsafe(c)]


def run(*args: str, config: Path) -> subprocess.CompletedProcess[str]:
    # errors="strict": output that is not valid UTF-8 (a lone surrogate written out) fails the test.
    done = subprocess.run([JIT, *args, "--config", str(config)], capture_output=True, env=ENV, timeout=300)
    out, err = done.stdout.decode("utf-8"), done.stderr.decode("utf-8")
    assert "Traceback" not in out + err, err
    assert not raw_characters(out), (args, raw_characters(out))
    assert not raw_characters(err), (args, raw_characters(err))
    return subprocess.CompletedProcess(done.args, done.returncode, out, err)


@pytest.fixture(scope="module")
def synced(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """The hostile server and its crashing twin, synced through the console script."""
    base = tmp_path_factory.mktemp("terminal")
    config = base / "config.json"
    config.write_text(json.dumps({
        "servers": {
            "hostile": {"command": sys.executable, "args": [SERVER]},
            "crasher": {"command": sys.executable, "args": [SERVER, "--crash"]},
        },
        "store": "catalog.db",
        "connection": {"reconnect_attempts": 0, "ping_interval": 0},
    }), encoding="utf-8")
    return config, run("sync", config=config)


# --------------------------------------------------------------------------- the helper itself (fast)


@pytest.mark.parametrize(("raw", "shown"), [
    ("\x1b[31mred", "\\x1b[31mred"),
    ("a\x00b\x07c\x08d\x7fe\x9bf", "a\\x00b\\x07c\\x08d\\x7fe\\x9bf"),
    ("cr\rlf", "cr\\x0dlf"),
    ("rtl\u202eltr \u2066iso\u2069 zw\u200bj\u200d", "rtl\\u202eltr \\u2066iso\\u2069 zw\\u200bj\\u200d"),
    ("tag\U000e0041 vs\ufe01 \u2028", "tag\\U000e0041 vs\\ufe01 \\u2028"),
    ("lone \ud800 surrogate", "lone \\ud800 surrogate"),
    ("kept: é 中文 ✅\ufe0f tab\tand\nnewline", "kept: é 中文 ✅\ufe0f tab\tand\nnewline"),
    ("windows\r\nline", "windows\nline"),
])
def test_visible_escapes_what_can_drive_or_spoof_a_terminal(raw, shown):
    assert visible(raw) == shown
    assert not raw_characters(visible(raw))


def test_one_line_mode_and_markup():
    assert visible("a\nb\tc", layout=False) == "a\\x0ab\\x09c"
    shown = markup("[bold red]x[/] [link=https://e.example]y[/link]")
    assert shown == "\\[bold red]x\\[/] \\[link=https://e.example]y\\[/link]"
    assert visible(None) == "" and visible(42) == "42"


def test_json_text_is_exact_data_with_no_raw_characters():
    data = {"d": "".join(chr(c) for c in range(0x00, 0x20)) + "\x7f\x85\x9b\u202e\u2066\u200b\U000e0041\ud800 é 中",
            "k\u202e": [1.5, None, True]}
    text = json_text(data)
    assert json.loads(text) == data and not raw_characters(text)
    assert "é 中" in text  # readable text stays readable
    assert json_text({"plain": "ascii"}) == json.dumps({"plain": "ascii"}, indent=2)


def test_log_formatter_escapes_message_arguments_and_traceback():
    record = logging.LogRecord("jit", logging.WARNING, __file__, 1, "server %s: %s", ("a\u202eb", "\x1b[2J"), None)
    try:
        raise RuntimeError("boom \x1b]0;title\x07")
    except RuntimeError:
        record.exc_info = sys.exc_info()
    line = VisibleLogFormatter("%(levelname)s %(message)s").format(record)
    assert "server a\\u202eb: \\x1b[2J" in line and "boom \\x1b]0;title\\x07" in line
    assert not raw_characters(line)


# --------------------------------------------------------------------------- through the CLI



@pytest.mark.slow
def test_sync_output_shows_the_crash_stderr_escaped(synced):
    _, done = synced
    assert done.returncode == 0, done.stderr
    assert "crasher" in done.stdout and "fatal:" in done.stdout


@pytest.mark.slow
def test_tools_table_shows_escapes_and_markup_literally(synced):
    config, _ = synced
    done = run("tools", config=config)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "\\x1b[31mRED\\x1b[0m" in out and "\\x1b]0;pwned-title\\x07" in out
    assert "nul\\x00" in out and "del\\x7f" in out and "c1\\x9b31m" in out
    assert "admin\\u202etxt.exe" in out and f"hostile/{visible(BIDI_NAME)}" in out
    assert "[bold red]ALERT[/]" in out and "[link=https://evil.example]click me[/link]" in out
    assert ":warning:" in out


@pytest.mark.slow
@pytest.mark.parametrize("tool", list(TOOLS))
def test_show_prints_title_and_description_escaped(synced, tool):
    config, _ = synced
    done = run("show", f"hostile/{tool}", config=config)
    assert done.returncode == 0, done.stderr
    title, description = TOOLS[tool]
    # The panel wraps long lines; compare the first visible words of each.
    assert visible(title, layout=False)[:30] in done.stdout
    assert visible(description.splitlines()[0])[:40] in done.stdout


@pytest.mark.slow
def test_servers_table_and_json_keep_last_error_safe_and_exact(synced):
    config, _ = synced
    table = run("servers", config=config)
    assert table.returncode == 0 and "crasher" in table.stdout and "connection closed during" in table.stdout
    rows = {r["server"]: r for r in json.loads(run("servers", "--json", config=config).stdout)}
    assert "\x1b[31mRED" in rows["crasher"]["last_error"]  # exact data, escaped only as JSON
    with Store(config.parent / "catalog.db") as store:
        assert rows["crasher"]["last_error"] == store.server("crasher").last_error
        assert rows["hostile"]["server_name"] == store.server("hostile").server_name


@pytest.mark.slow
def test_tools_and_show_json_are_exact(synced):
    config, _ = synced
    listed = run("tools", "--json", config=config)
    assert "\\u001b" in listed.stdout and "\\u202e" in listed.stdout  # written as JSON escapes
    with Store(config.parent / "catalog.db") as store:
        stored = {t.tool.name: t.tool for t in store.tools("hostile")}
    rows = {r["tool"]: r for r in json.loads(listed.stdout)}
    assert BIDI_NAME in rows
    for name, tool in stored.items():
        assert rows[name]["description"] == tool.description
        shown = json.loads(run("show", f"hostile/{name}", "--json", config=config).stdout)
        assert shown["definition"]["title"] == tool.title and shown["definition"]["description"] == tool.description


@pytest.mark.slow
def test_compile_table_explain_and_renderings(synced):
    config, _ = synced
    table = run("compile", "--shard", "coder", "--task", "read my notes [bold]now[/] \x1b[2J", "--explain",
                config=config)
    assert table.returncode == 0, table.stderr
    assert "read my notes [bold]now[/] \\x1b[2J" in table.stdout and "hostile__" in table.stdout
    for fmt in ("markdown", "anthropic", "anthropic_deferred", "openai_deferred"):
        done = run("compile", "--shard", "coder", "--task", "read my notes", "--format", fmt, config=config)
        assert done.returncode == 0, done.stderr
        if fmt != "markdown":
            json.loads(done.stdout)  # JSON renderings stay parseable


@pytest.mark.slow
def test_call_result_and_error_echoing_upstream_text(synced):
    config, _ = synced
    done = run("call", "hostile/read_notes", config=config)
    assert done.returncode == 0, done.stderr
    assert "result \\x1b[31mRED\\x1b[0m" in done.stdout and "[bold red]ALERT[/]" in done.stdout
    exact = json.loads(run("call", "hostile/read_notes", "--json", config=config).stdout)
    assert exact["content"][0]["text"] == hostile.RESULT
    # The crashing server's error (its hostile stderr) is echoed in the error message.
    failed = run("call", "crasher/anything", config=config)
    assert failed.returncode in (4, 5) and failed.stderr.startswith("error:")
    assert len(failed.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_serve_log_lines_are_escaped(synced, tmp_path):
    """``jit serve`` logs a definition change of the tool whose name holds a bidi override."""
    config, _ = synced
    log = tmp_path / "serve.log"

    async def session() -> None:
        params = StdioServerParameters(command=JIT, args=["serve", "--stdio", "--config", str(config)], env=ENV)
        with open(log, "w", encoding="utf-8") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), \
                    ClientSession(read, write, read_timeout_seconds=180) as s:
                await s.initialize()
                result = await s.call_tool("call_tool", {"server": "hostile", "tool": "mutate", "arguments": {}})
                assert not result.is_error, result
                deadline = time.monotonic() + 60  # a hang guard, not a timed assertion
                while visible(BIDI_NAME) not in log.read_text(encoding="utf-8") and time.monotonic() < deadline:
                    await anyio.sleep(0.2)

    anyio.run(session)
    text = log.read_bytes().decode("utf-8")
    assert visible(BIDI_NAME) in text, text
    assert not raw_characters(text), raw_characters(text)


@pytest.mark.slow
def test_the_catalog_keeps_every_tool_after_all_of_this(synced):
    config, _ = synced
    with Store(load_config(config).store_path) as store:
        assert {t.tool.name for t in store.tools("hostile")} >= set(TOOLS)
