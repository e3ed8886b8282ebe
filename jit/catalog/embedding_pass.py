"""The catalog's embedding passes: vectors for its tools (and any texts) through the content-hash cache.

:func:`embed_pending` gives vectors to the catalog's tools that lack one, reusing the
content-hash cache so text embedded once is never embedded again (in bulk, through the
embedder's bulk model where it has one); :func:`embed_through_cache` is that cache path for
any texts (the evaluation's baseline texts use it too); :func:`embed_ahead` begins a
pass's model work on a thread while the sync analyzes. The embedders themselves are the
embedding wing's (:mod:`jit.embedding`).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Mapping
from contextlib import nullcontext
from dataclasses import dataclass

import numpy as np

from ..embedding.protocol import (
    Embedder,
    EmbedsInBulk,
    bulk_of,
    exports_first,
    is_loaded,
    load_model,
    runtime_note_of,
)
from ..errors import EmbeddingError
from ..progress import ProgressCallback, Step
from .store import Store

__all__ = [
    "AHEAD_CHUNKS",
    "EMBED_CHUNK",
    "EmbedAhead",
    "EmbedReport",
    "embed_ahead",
    "embed_pending",
    "embed_through_cache",
]


@dataclass(frozen=True, slots=True)
class EmbedReport:
    """What one :func:`embed_pending` pass did."""

    embedded: int  # texts sent to the model
    cached: int  # vectors reused from the content-hash cache
    model_changed: bool  # the catalog switched from another model (or lost its vectors) and re-embeds everything



#: Texts per model call (and per store transaction, and per progress event) when embedding
#: through the cache: a progress event about every second at the embedding rates of two cores. The
#: vectors do not depend on it (the ONNX runtime gave the same bytes with 1024, 256 and 128).
EMBED_CHUNK = 256


def embed_through_cache(
    store: Store,
    embedder: Embedder,
    texts: Mapping[str, str],
    *,
    chunk: int = EMBED_CHUNK,
    keep: Callable[[list[tuple[str, bytes]], bool], object] | None = None,
    progress: ProgressCallback | None = None,
    step: tuple[str, str] = ("embed", "embedding"),
    bulk: bool = False,
    ahead: EmbedAhead | None = None,
) -> dict[str, bytes]:
    """Vectors (float32 bytes) for ``texts`` (``{text_hash: text}``) through the
    store's content-hash cache: cached vectors are reused, only the rest go to the
    model, ``chunk`` texts per call.

    ``keep(rows, fresh)`` stores ``(text_hash, vector)`` rows: once with the cached
    ones (``fresh=False``, if any), then once per embedded chunk, before the next
    chunk is embedded, so an interrupted pass keeps what it already paid for. By
    default fresh rows go to the cache alone; :func:`embed_pending` gives them to
    tools as well, in the same transaction.

    ``progress`` (:mod:`jit.progress`) hears of the texts the model embeds, once per
    chunk, as the step ``step`` (its name and label): the chunk is the unit the model
    and the store work in, and splitting it finer would only be for the display. When
    some text needs a model not loaded yet, the step ``model`` (:func:`load_model`) comes first.

    ``bulk``: the texts are a catalog's, and an embedder that embeds in bulk (:class:`EmbedsInBulk`,
    as :meth:`~jit.embedding.onnx_embedder.OnnxEmbedder.bulk`) gives the one that embeds them (its
    runtime note, :func:`~jit.embedding.protocol.runtime_note_of`, joins the
    step's detail); queries stay on ``embedder``. ``ahead``: the model's part of this pass begun
    earlier (:func:`embed_ahead`); its vectors are taken if it planned the same texts, else it is
    stopped and the texts are embedded here.
    """
    if keep is None:
        def keep(rows: list[tuple[str, bytes]], fresh: bool) -> None:
            if fresh:
                store.cache_vectors(embedder.model_name, rows)
    found = store.cached_vectors(embedder.model_name, texts)
    if found:
        keep(list(found.items()), False)
    todo = [h for h in texts if h not in found]
    if todo:
        load_model(embedder, progress)
    detail = f"model {embedder.model_name}" + (f", {len(found):,} from cache" if found else "")
    if ahead is not None and not ahead.planned(todo, chunk):
        ahead.close()  # the catalog moved since it began: its vectors are not this pass's
        ahead = None
    with bulk_of(embedder, len(todo)) if bulk and todo and ahead is None else nullcontext(embedder) as model:
        note = ahead.runtime_note() if ahead is not None else runtime_note_of(model)
        if note:
            detail += f", {note}"
        with Step(progress, *step, len(todo), unit="texts", detail=detail) as done:
            for i in range(0, len(todo), chunk):
                part = todo[i : i + chunk]
                vecs = ahead.take() if ahead is not None else model.embed([texts[h] for h in part])
                if vecs.shape != (len(part), embedder.dimension):
                    raise EmbeddingError(
                        f"embedder returned shape {vecs.shape}, expected {(len(part), embedder.dimension)}"
                    )
                rows = [(h, np.ascontiguousarray(v, dtype=np.float32).tobytes())
                        for h, v in zip(part, vecs, strict=True)]
                keep(rows, True)
                found.update(rows)
                done.advance(len(part))
    return found


def embed_pending(store: Store, embedder: Embedder, *, chunk: int = EMBED_CHUNK,
                  progress: ProgressCallback | None = None, ahead: EmbedAhead | None = None) -> EmbedReport:
    """Give every tool that lacks a vector one, embedding only text never seen before.

    The model is loaded (seconds) only when a text needs it: a pass with nothing
    pending, or whose texts are all in the content-hash cache, never loads it, since
    the catalog already records its model's dimension. Only a change of model (or a
    first model on a catalog with tools) asks the embedder for its dimension first.
    ``progress`` hears of the step ``embed`` (texts the model embeds; see
    :func:`embed_through_cache`), a ``0/0`` step when nothing is pending, after the
    step ``model`` when the model is loaded for it (:func:`load_model`). The texts are
    embedded in bulk (:meth:`~jit.embedding.onnx_embedder.OnnxEmbedder.bulk`), or by ``ahead``
    (:func:`embed_ahead`) when it planned this pass; either way the vectors and the events are the same.
    """
    try:
        return _embed_pending(store, embedder, chunk, progress, ahead)
    finally:
        if ahead is not None:
            ahead.close()  # done with, or not wanted: its thread and model go


def _embed_pending(store: Store, embedder: Embedder, chunk: int, progress: ProgressCallback | None,
                   ahead: EmbedAhead | None) -> EmbedReport:
    current = store.embedding_model()
    if current is not None and current[0] == embedder.model_name:
        # The catalog's own model: a no-op unless the vector table is missing, and no model load.
        changed = store.set_embedding_model(embedder.model_name, current[1])
    elif current is None and not store.pending_embeddings():
        Step(progress, "embed", "embedding", 0, unit="texts")
        return EmbedReport(0, 0, False)  # no tools yet: the model is declared with the first ones
    else:
        # Its dimension is the model's; the thread embedding ahead may be loading it meanwhile.
        load_model(embedder, progress, loading_meanwhile=ahead is not None and ahead.loads_model)
        changed = store.set_embedding_model(embedder.model_name, embedder.dimension)
        # A catalog's first model replaces none: nothing was embedded before, so nothing "changed".
        changed = changed and current is not None
    texts, by_hash = _pending_texts(store)
    if not texts:
        Step(progress, "embed", "embedding", 0, unit="texts")
        return EmbedReport(0, 0, changed)
    counts = {"embedded": 0, "cached": 0}

    def keep(rows: list[tuple[str, bytes]], fresh: bool) -> None:
        tool_rows = [(tid, h, v) for h, v in rows for tid in by_hash[h]]
        store.put_vectors(embedder.model_name, tool_rows, cache=fresh)
        counts["embedded" if fresh else "cached"] += len(rows) if fresh else len(tool_rows)

    embed_through_cache(store, embedder, texts, chunk=chunk, keep=keep, progress=progress, bulk=True, ahead=ahead)
    return EmbedReport(counts["embedded"], counts["cached"], changed)


def _pending_texts(store: Store) -> tuple[dict[str, str], dict[str, list[int]]]:
    """The texts of the tools lacking a vector (``{text_hash: text}``, in the catalog's order) and
    the tools each text is for."""
    texts: dict[str, str] = {}
    by_hash: dict[str, list[int]] = {}
    for tid, text, h in store.pending_embeddings():
        texts.setdefault(h, text)
        by_hash.setdefault(h, []).append(tid)
    return texts, by_hash


#: Chunks an :class:`EmbedAhead` holds at most before its pass takes them (64 × 256 texts: ~25 MB
#: of vectors at 384 dimensions); then its thread waits.
AHEAD_CHUNKS = 64


class EmbedAhead:
    """The model's part of the next :func:`embed_pending` pass, begun now on a thread of its own.

    A sync analyzes the tools it found, then embeds them. jit's offline analysis is Python on
    one core, while the model's runs release the GIL: begun during the analysis, they use
    the core it leaves idle (docs/benchmarks.md, "A sync embeds while it analyzes", says what
    it saves; ``python -m bench.bench_sync`` measures the whole ``jit sync``).

    The thread embeds what the pass will: the pending texts the content-hash cache lacks, in
    the pass's order and chunks, through the embedder's bulk model when it has one
    (:meth:`~jit.embedding.onnx_embedder.OnnxEmbedder.bulk`). It writes nothing. The pass checks
    the plan (:meth:`planned`): if it finds other texts to embed (another process changed the
    catalog meanwhile), it stops this and embeds its own; else it takes the chunks in order
    (:meth:`take`), stores them and reports them as if it had embedded them. At most :data:`AHEAD_CHUNKS` chunks wait for the
    pass. :meth:`close` stops the thread; a caller whose work failed before the pass must call it.
    """

    def __init__(self, embedder: Embedder, texts: Mapping[str, str], todo: list[str], chunk: int) -> None:
        self.embedder = embedder
        #: The thread loads the model (it was not loaded when the thread began): the pass reports
        #: that load as its ``model`` step (:func:`load_model`).
        self.loads_model = not is_loaded(embedder)
        self.todo = todo
        self.chunk = chunk
        self._texts = texts
        self._chunks: queue.Queue[tuple[np.ndarray | None, BaseException | None]] = queue.Queue(maxsize=AHEAD_CHUNKS)
        self._stop = threading.Event()
        self._opened = threading.Event()
        self._note: str | None = None
        self._thread = threading.Thread(target=self._run, name="jit-embed-ahead", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            with bulk_of(self.embedder, len(self.todo)) as model:
                self._note = runtime_note_of(model)
                self._opened.set()
                for i in range(0, len(self.todo), self.chunk):
                    part = self.todo[i : i + self.chunk]
                    if not self._put((model.embed([self._texts[h] for h in part]), None)):
                        return
        except BaseException as exc:  # noqa: BLE001 - handed to the pass, which raises it
            self._put((None, exc))
        finally:
            self._opened.set()

    def _put(self, item: tuple[np.ndarray | None, BaseException | None]) -> bool:
        """Queue ``item`` unless the pass stopped this; False when it did."""
        while not self._stop.is_set():
            try:
                self._chunks.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def planned(self, todo: list[str], chunk: int) -> bool:
        """Whether this embeds exactly ``todo`` in chunks of ``chunk``."""
        return todo == self.todo and chunk == self.chunk

    def runtime_note(self) -> str | None:
        """What runs the model, for the progress line (its bulk model's note), once it is loaded."""
        self._opened.wait()
        return self._note

    def take(self) -> np.ndarray:
        """The vectors of the next chunk of the plan (waits for the thread); what the model raised."""
        vecs, exc = self._chunks.get()
        if exc is not None:
            self.close()
            raise exc
        assert vecs is not None  # a chunk without an exception holds its vectors
        return vecs

    def close(self) -> None:
        """Stop the thread (its model is dropped with it) and wait for it."""
        self._stop.set()
        while self._thread.is_alive():
            try:
                self._chunks.get(timeout=0.1)
            except queue.Empty:
                continue
        self._thread.join()


def embed_ahead(store: Store, embedder: Embedder, *, chunk: int = EMBED_CHUNK) -> EmbedAhead | None:
    """Begin the model's part of the next :func:`embed_pending` pass (see :class:`EmbedAhead`), or
    None when there is nothing to begin: no text to embed, a catalog of another model (the pass
    re-embeds everything then), or a model whose load is a step of its own (a first ONNX export,
    a torch model not loaded yet: the pass says what it waits for, :func:`load_model`)."""
    current = store.embedding_model()
    if current is not None and current[0] != embedder.model_name:
        return None
    # Loaded on the thread: a model loaded already, or one with a bulk model (the ONNX runtime, under a
    # second once exported). Not torch's load (seconds), which the pass shows as a step of its own.
    if exports_first(embedder) or not (is_loaded(embedder) or isinstance(embedder, EmbedsInBulk)):
        return None
    texts, _ = _pending_texts(store)
    found = store.cached_vectors(embedder.model_name, texts) if texts else {}
    todo = [h for h in texts if h not in found]
    return EmbedAhead(embedder, texts, todo, chunk) if todo else None
