"""jit/serve/stdio.py: the pipe transports under ``jit serve --stdio``.

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

from jit.lines import KEPT_BYTES, LineTooLong, NotUtf8, PipeLines
from jit.serve.stdio import PipeWriter

CHILD = textwrap.dedent("""
    import os, sys, anyio
    from jit.serve.stdio import stdio_wire

    async def main():
        async with stdio_wire() as (stdin, stdout):
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


def test_stdio_that_is_not_a_pipe_is_served_through_worker_threads_the_same_way(tmp_path):
    requests = tmp_path / "requests.jsonl"
    requests.write_text("{}\nsecond\n")
    out = tmp_path / "out.jsonl"
    with requests.open("rb") as f, out.open("wb") as sink:
        done = subprocess.run([sys.executable, "-c", CHILD], stdin=f, stdout=sink, stderr=subprocess.PIPE,
                              timeout=60)
    assert done.returncode == 0, done.stderr.decode()
    assert out.read_text().splitlines() == ["echo {}", "echo second", "after"]
    assert b"stray print while serving" in done.stderr


@pytest.mark.parametrize("chunks, lines", [
    ([b"a\nb", b"c\n", b"d"], ["a\n", "bc\n", "d"]),
    ([b"\n\n"], ["\n", "\n"]),
    ([b"caf\xc3", b"\xa9 ok\n"], ["café ok\n"]),  # a UTF-8 sequence split across reads
    # an invalid byte: the line is marked, not read with U+FFFD (it is answered, not run)
    ([b"caf\xc3", b"\xa9 \xff\n", b"ok\n"], [NotUtf8("café \ufffd\n", 6), "ok\n"]),
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


@pytest.mark.parametrize("chunks, lines", [
    ([b"ok\n", b"x" * 9, b"\nok\n"], ["ok\n", LineTooLong(9, 8), "ok\n"]),  # over the limit, newline later
    ([b"y" * 20 + b"\nz\n"], [LineTooLong(20, 8), "z\n"]),  # over the limit within one chunk
    ([b"12345678\n"], ["12345678\n"]),  # exactly the limit
    ([b"x" * 5, b"x" * 5, b"x" * 5], [LineTooLong(15, 8)]),  # over the limit at end of input
])
def test_a_line_over_the_limit_is_dropped_as_it_arrives_and_reported_with_its_size(chunks, lines):
    async def read_all() -> list:
        reader = asyncio.StreamReader()
        for c in chunks:
            reader.feed_data(c)
        reader.feed_eof()
        return [line async for line in PipeLines(reader, max_line=8)]

    assert asyncio.run(read_all()) == lines


def test_a_line_over_the_limit_keeps_its_two_ends():
    """What is kept of a dropped line: its first and last KiB, where a response names its request."""
    line = b"{" + bytes(range(48, 58)) * 2_000 + b"}"

    async def read_all() -> list:
        reader = asyncio.StreamReader()
        for i in range(0, len(line), 3_000):
            reader.feed_data(line[i:i + 3_000])
        reader.feed_data(b"\nok\n")
        reader.feed_eof()
        return [item async for item in PipeLines(reader, max_line=10_000)]

    too_long, ok = asyncio.run(read_all())
    assert too_long == LineTooLong(len(line), 10_000) and ok == "ok\n"
    assert too_long.head == line[:KEPT_BYTES] and too_long.tail == line[-KEPT_BYTES:]


def test_the_writer_cannot_fail_on_a_lone_surrogate():
    class Sink:
        def __init__(self) -> None:
            self.data = b""

        def write(self, data: bytes) -> None:
            self.data += data

        async def drain(self) -> None:
            pass

    sink = Sink()
    asyncio.run(PipeWriter(sink).write('{"text":"cut \ud83d here, whole \ud83d\ude00"}\n'))
    assert sink.data.decode("utf-8") == '{"text":"cut \ufffd here, whole \U0001f600"}\n'
