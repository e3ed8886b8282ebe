"""The bulk model in a process of its own, for a process that lives on after the pass.

Dropping :class:`~jit.embedding.openvino_bulk.OpenVinoModel` does not give back what loading it
took: OpenVINO's libraries and thread pools stay (docs/benchmarks.md, "`jit serve` runs a
sync's bulk pass in a child process", measures how much). ``jit sync`` exits after its pass and does not
mind; ``jit serve`` lives as long as its client. So a serving process runs the bulk model in
a child (:class:`BulkProcess`): the child compiles the export, checks its vectors of the probe
texts against the ones the parent's onnxruntime model gives, embeds what it is sent and exits
when the pass is over, taking its memory with it. The vectors are the child's
``OpenVinoModel.run``'s, so the same as in-process, bit for bit.

The two talk over the child's stdin and stdout in frames: a 4-byte big-endian length, then the
payload. The parent's first frame is JSON (the export's files and metadata, the threads, the
reference vectors); the child answers ``{"ok": ..., "level": ..., "why": ...}``. Then each
parent frame is a JSON list of texts, and each answer a tag byte and a body: ``V`` and the
vectors as float32 bytes, or ``E`` and the error's text. The parent closes the child's stdin
to end it. Started with ``python -m jit.embedding.bulk_process``.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import struct
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import IO

import numpy as np

from ..errors import EmbeddingError
from .onnx_runtime import PROBE_TEXTS, Export, OnnxModel

__all__ = ["BulkProcess", "bulk_process"]

log = logging.getLogger(__name__)

#: Seconds a child has to exit once its stdin is closed, before it is killed.
EXIT_WAIT = 10.0


def _write_frame(stream: IO[bytes], payload: bytes) -> None:
    stream.write(struct.pack(">I", len(payload)))
    stream.write(payload)
    stream.flush()


def _read_frame(stream: IO[bytes]) -> bytes | None:
    """The next frame's payload, or None at the end of the stream."""
    head = stream.read(4)
    if len(head) < 4:
        return None
    (size,) = struct.unpack(">I", head)
    body = stream.read(size)
    if len(body) < size:
        return None
    return body


class BulkProcess:
    """The bulk model in a child process: ``run(texts)`` as :class:`OpenVinoModel` runs them.

    Made by :func:`bulk_process`, which has checked the child's probe vectors; ``close()`` ends
    the child (and kills it if it does not exit). Thread-safe: one request at a time."""

    precision = "bf16"
    #: What ran a pass (``OnnxEmbedder.last_bulk``), and what a progress line says of it.
    label, note = "openvino-bf16-child", "bf16 on OpenVINO in a child process"

    def __init__(self, child: subprocess.Popen[bytes], errors: IO[bytes], dimension: int) -> None:
        self._child = child
        self._errors = errors
        self.dimension = dimension
        self._lock = threading.Lock()

    @property
    def pid(self) -> int:
        return self._child.pid

    def run(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        del batch_size  # the child's model batches as OpenVinoModel does
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        with self._lock:
            stdin, stdout = self._child.stdin, self._child.stdout
            assert stdin is not None and stdout is not None  # both are pipes
            try:
                _write_frame(stdin, json.dumps(list(texts)).encode("utf-8"))
                answer = _read_frame(stdout)
            except (BrokenPipeError, OSError) as exc:
                raise EmbeddingError(f"the bulk embedding process failed ({exc}){self._stderr()}") from exc
        if answer is None:
            raise EmbeddingError(f"the bulk embedding process exited{self._stderr(ended=True)}")
        tag, body = answer[:1], answer[1:]
        if tag == b"E":
            raise EmbeddingError(f"the bulk embedding process failed: {body.decode('utf-8', 'replace')}")
        vecs = np.frombuffer(body, dtype=np.float32)
        if tag != b"V" or vecs.size != len(texts) * self.dimension:
            raise EmbeddingError(f"the bulk embedding process answered {len(body)} bytes for {len(texts)} texts")
        return vecs.reshape(len(texts), self.dimension).copy()

    def _stderr(self, *, ended: bool = False) -> str:
        """The child's exit code if it has one and the end of what it wrote to stderr, for an error
        message; ``ended``: its stdout is at its end, so its exit is a moment away."""
        if ended:
            try:
                self._child.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                pass
        try:
            self._errors.seek(0)
            tail = self._errors.read()[-2000:].decode("utf-8", "replace").strip()
        except (OSError, ValueError):
            tail = ""
        code = self._child.poll()
        return (f" (exit code {code})" if code is not None else "") + (f": {tail}" if tail else "")

    def close(self) -> None:
        """End the child and wait for it (killed if it does not exit within :data:`EXIT_WAIT`)."""
        child = self._child
        if child.stdin is not None and not child.stdin.closed:
            try:
                child.stdin.close()
            except OSError:
                pass
        try:
            child.wait(timeout=EXIT_WAIT)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
        if child.stdout is not None:
            child.stdout.close()
        self._errors.close()


def bulk_process(model: OnnxModel, *, threads: int | None = None) -> BulkProcess | None:
    """``model``'s bulk model in a child process, or None (logged, the child ended) when it would
    not pay or not hold, for :func:`~jit.embedding.openvino_bulk.bulk_model`'s reasons, or when the
    child cannot be started."""
    if importlib.util.find_spec("openvino") is None:  # the child would only say so
        log.info("embedding: no OpenVINO; bulk embedding runs on onnxruntime")
        return None
    reference = model.run(list(PROBE_TEXTS))
    export = model.export
    errors = tempfile.TemporaryFile()  # noqa: SIM115 - the child's stderr, kept until BulkProcess.close()
    try:
        child = subprocess.Popen([sys.executable, "-m", "jit.embedding.bulk_process"], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=errors)
    except OSError as exc:
        errors.close()
        log.warning("embedding: cannot start the bulk embedding process (%s); bulk embedding runs on onnxruntime",
                    exc)
        return None
    bulk = BulkProcess(child, errors, model.dimension)
    hello = {"meta": export.meta, "onnx": str(export.onnx), "tokenizer": str(export.tokenizer),
             "threads": threads, "reference": reference.tolist()}
    try:
        assert child.stdin is not None and child.stdout is not None  # both are pipes
        _write_frame(child.stdin, json.dumps(hello).encode("utf-8"))
        answer = _read_frame(child.stdout)
        reply = json.loads(answer) if answer is not None else None
    except (OSError, ValueError) as exc:
        reply, why = None, str(exc)
    else:
        why = "it exited"
    if not isinstance(reply, dict):
        detail = bulk._stderr(ended=True)
        bulk.close()
        log.warning("embedding: the bulk embedding process failed to start (%s%s); bulk embedding runs on "
                    "onnxruntime", why, detail)
        return None
    log.log(int(reply.get("level", logging.WARNING)), "embedding: %s", reply.get("why", ""))
    if not reply.get("ok"):
        bulk.close()
        return None
    return bulk


def _serve(stdin: IO[bytes], stdout: IO[bytes]) -> int:
    """The child: open the bulk model the first frame describes, then embed each list of texts."""
    from .openvino_bulk import open_bulk

    first = _read_frame(stdin)
    if first is None:
        return 1
    hello = json.loads(first)
    export = Export(hello["meta"], Path(hello["onnx"]), Path(hello["tokenizer"]))
    reference = np.asarray(hello["reference"], dtype=np.float32)
    model, level, why = open_bulk(export, reference, threads=hello.get("threads"))
    _write_frame(stdout, json.dumps({"ok": model is not None, "level": level, "why": why}).encode("utf-8"))
    if model is None:
        return 0
    while (frame := _read_frame(stdin)) is not None:
        try:
            vecs = model.run(json.loads(frame))
        except Exception as exc:  # noqa: BLE001 - sent to the parent, which raises it
            _write_frame(stdout, b"E" + f"{type(exc).__name__}: {exc}".encode())
            continue
        _write_frame(stdout, b"V" + np.ascontiguousarray(vecs, dtype=np.float32).tobytes())
    return 0


if __name__ == "__main__":
    # The frames keep the real stdout; anything a library prints goes to stderr instead.
    frames = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.exit(_serve(sys.stdin.buffer, frames))
