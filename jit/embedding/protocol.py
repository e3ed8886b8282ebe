"""What an embedder is (:class:`Embedder`), the abilities one may add, and what the passes ask of them.

An embedder turns texts into unit float32 vectors of a fixed dimension under a
``model_name``; the catalog stores vectors under that name, so two embedders with the
same name must give the same vectors. That is all a harness's own embedder needs.

Beyond it, an embedder may have any of these abilities, each a protocol of its own that
the class declares (``class OnnxEmbedder(LoadsLazily, ExportsFirst, EmbedsInBulk)``):

- :class:`LoadsLazily`: its model loads on first use, which a pass shows as a step of
  its own (:func:`load_model`);
- :class:`ExportsFirst`: its first load on a machine exports the model to ONNX
  (~10 s), which sync, serve and compile say before they go quiet (:func:`exports_first`);
- :class:`EmbedsInBulk`: a pass of many texts runs on another model with the same
  vectors (:func:`bulk_of`), itself a :class:`BulkModel`;
- :class:`NamesItsRuntime`: a progress line says what runs it (:func:`runtime_note_of`).

The functions below are the only places that ask: an embedder without an ability gets
the plain behaviour (loaded already, nothing to export, embeds its passes itself).
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Protocol, runtime_checkable

import numpy as np

from ..progress import ProgressCallback, Step

__all__ = [
    "FIRST_EXPORT_NOTE",
    "BulkModel",
    "Embedder",
    "EmbedsInBulk",
    "ExportsFirst",
    "LoadsLazily",
    "NamesItsRuntime",
    "bulk_of",
    "exports_first",
    "is_loaded",
    "load_model",
    "runtime_note_of",
]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of a fixed dimension."""

    @property
    def model_name(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return an array of shape ``(len(texts), dimension)``, rows of unit length."""
        ...


@runtime_checkable
class LoadsLazily(Protocol):
    """An embedder whose model loads on first use (its ``dimension`` loads it too)."""

    @property
    def loaded(self) -> bool:
        """Whether the model is loaded (False: the next use loads it, from under a second to seconds)."""
        ...


@runtime_checkable
class ExportsFirst(Protocol):
    """An embedder whose model is exported (to ONNX) on its first load on a machine."""

    def exported(self) -> bool:
        """Whether the export is there already (False: the first load makes it, ~10 s); True when
        that cannot be told (the load then says what is wrong)."""
        ...


@runtime_checkable
class EmbedsInBulk(Protocol):
    """An embedder that hands a pass of many texts to another model with the same vectors."""

    def bulk(self, count: int) -> AbstractContextManager[Embedder]:
        """The embedder for one pass of ``count`` texts (this one, or a model loaded for the pass
        and dropped after it), with the same ``model_name``."""
        ...


@runtime_checkable
class NamesItsRuntime(Protocol):
    """An embedder whose progress lines say what runs it (a bulk pass's model)."""

    #: What a progress line adds to the model's name (``"bf16 on OpenVINO"``), or None.
    runtime_note: str | None


class BulkModel(Protocol):
    """What an :class:`EmbedsInBulk` pass runs on: a model loaded for the pass, closed after it."""

    #: What ran the pass (``OnnxEmbedder.last_bulk``), and what a progress line says of it.
    label: str
    note: str
    dimension: int

    def run(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """Unit float32 vectors of ``texts``, one row each."""
        ...

    def close(self) -> None:
        """Give back what the model holds (the pass is over)."""
        ...


def is_loaded(embedder: Embedder) -> bool:
    """Whether using ``embedder`` loads nothing first (an embedder that does not load lazily never does)."""
    return not isinstance(embedder, LoadsLazily) or embedder.loaded


#: What a first load says when the model must be exported first (:func:`exports_first`).
FIRST_EXPORT_NOTE = "the first time on this machine it is exported to ONNX (about ten seconds, once)"


def exports_first(embedder: Embedder) -> bool:
    """Whether loading ``embedder``'s model exports it to ONNX first (~10 s, once per machine), which
    sync, serve and compile say before they go quiet (about 1 ms to tell: the model files' fingerprint)."""
    return isinstance(embedder, ExportsFirst) and not embedder.exported()


def bulk_of(embedder: Embedder, count: int) -> AbstractContextManager[Embedder]:
    """The embedder for a pass of ``count`` catalog texts: ``embedder.bulk(count)`` where it embeds in
    bulk (:meth:`~jit.embedding.onnx_embedder.OnnxEmbedder.bulk`), else ``embedder`` itself."""
    return embedder.bulk(count) if isinstance(embedder, EmbedsInBulk) else nullcontext(embedder)


def runtime_note_of(embedder: Embedder) -> str | None:
    """What a progress line adds to ``embedder``'s model name, if anything (:class:`NamesItsRuntime`)."""
    return embedder.runtime_note if isinstance(embedder, NamesItsRuntime) else None


def load_model(embedder: Embedder, progress: ProgressCallback | None = None, *, loading_meanwhile: bool = False) -> None:
    """Load ``embedder``'s model now, as the step ``model`` (``loading the embedding model``), unless
    it is loaded already (or loads nothing: an embedder that does not load lazily).

    Loading takes about half a second from the cache, but the first time on a machine the
    model is exported to ONNX first (about ten seconds, :mod:`jit.embedding.onnx_export`), and
    torch takes seconds to import: a sync says what it waits for instead of going quiet.
    ``loading_meanwhile``: another thread of this pass loads it (``embed_ahead``): the step is
    the wait for that load, reported whether or not it has ended, so what a sync prints does
    not depend on which thread got there first."""
    if is_loaded(embedder) and not loading_meanwhile:
        return
    detail = f"model {embedder.model_name}" + ("; first use here: exporting it to ONNX, ~10 s"
                                               if exports_first(embedder) else "")
    with Step(progress, "model", "loading the embedding model", None, detail=detail):
        embedder.dimension  # noqa: B018 - the property loads the model
