"""jit/stdio.py: the pipe transports under ``jit serve --stdio``.

The end-to-end path (a real ClientSession against ``jit serve --stdio``) is in
test_serve.py; here, the line framing and the descriptor handling, in real
child processes with real pipes.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap

import pytest

from jit.stdio import PipeLines

CHILD = textwrap.dedent("""
    import os, sys, anyio
    from jit.stdio import pipe_stdio

    async def main():
        async with pipe_stdio() as (stdin, stdout):
            if stdin is None:
                print("fallback", flush=True)
                return
            print("stray print while serving", flush=True)
            os.write(1, b"stray fd write while serving\\n")
            async for line in stdin:
                await stdout.write("echo " + line.rstrip("\\n") + "\\n")
                await stdout.flush()
        print("after", flush=True)

    anyio.run(main)
""")


def run_child(stdin: bytes) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", CHILD], input=stdin, capture_output=True, timeout=60)


def test_the_wire_carries_only_protocol_lines_and_is_restored_after():
    big = "x" * 300_000  # far over the reader's 64 KiB chunk
    payload = f"first\n{big}\nlast without newline".encode()
    done = run_child(payload)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode().splitlines() == ["echo first", f"echo {big}", "echo last without newline", "after"]
    # What handlers print while serving goes to stderr, not into the protocol stream.
    assert b"stray print while serving" in done.stderr and b"stray fd write while serving" in done.stderr


def test_stdio_that_is_not_a_pipe_falls_back_to_the_sdk_transport(tmp_path):
    requests = tmp_path / "requests.jsonl"
    requests.write_text("{}\n")
    with requests.open("rb") as f:
        done = subprocess.run([sys.executable, "-c", CHILD], stdin=f, capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode().splitlines() == ["fallback"]


@pytest.mark.parametrize("chunks, lines", [
    ([b"a\nb", b"c\n", b"d"], ["a\n", "bc\n", "d"]),
    ([b"\n\n"], ["\n", "\n"]),
    ([b"caf\xc3", b"\xa9 \xff\n"], ["café \ufffd\n"]),  # a split UTF-8 sequence, then an invalid byte
    ([], []),
])
def test_pipe_lines_frame_chunks_into_lines(chunks, lines):
    async def read_all() -> list[str]:
        reader = asyncio.StreamReader()
        for c in chunks:
            reader.feed_data(c)
        reader.feed_eof()
        return [line async for line in PipeLines(reader)]

    assert asyncio.run(read_all()) == lines
