"""The cache of ONNX exports: which model directories can be exported, and where their exports live.

An export is keyed by a fingerprint of the model's files (:func:`fingerprint`: small
files by content, weights by size and modification time, and :data:`EXPORT_FORMAT`), so
a reinstalled or edited model is exported again and an unchanged one never. A cached
export is loaded only after its files' recorded sizes and its stored probe vector check
out (:func:`load_cached`); a damaged one is logged, its metadata removed, and the caller
builds it again. A new export removes the exports it made obsolete (:func:`prune_cache`).

The cache lives in ``$JIT_CACHE_DIR``, else ``$XDG_CACHE_HOME/jit``, else
``~/.cache/jit`` (``onnx/`` inside). Files are content-addressed and written
through a temporary file and a rename, the metadata last, so concurrent processes
never read half a file: each sees either no export or a complete one.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import __version__
from ..errors import EmbeddingError
from ..paths import write_atomic
from .onnx_runtime import MIN_COSINE, Export, OnnxModel, UnsupportedModel, check_probe

__all__ = [
    "EXPORT_FORMAT",
    "ORPHAN_AGE",
    "ModelLayout",
    "cache_directory",
    "cache_root",
    "export_lock",
    "failed_before",
    "fingerprint",
    "fsync",
    "load_cached",
    "meta_path_of",
    "prune_cache",
    "read_layout",
    "remember_failure",
]

log = logging.getLogger(__name__)

#: Bump when the export or its metadata change shape: older exports are then ignored.
#: 2: the fp32 weights are a file of their own beside the graph (:mod:`jit.embedding.onnx_export`).
EXPORT_FORMAT = 2

#: Files larger than this are fingerprinted by size and modification time, not content:
#: hashing a model's weights would cost every process start a tenth of a second.
_HASHED_UP_TO = 1 << 20

_POOLING_MODES = ("mean", "cls", "max")


def cache_root() -> Path:
    """Where jit keeps files it can rebuild: ``$JIT_CACHE_DIR``, ``$XDG_CACHE_HOME/jit`` or ``~/.cache/jit``."""
    if env := os.environ.get("JIT_CACHE_DIR"):
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME")
    return (Path(base).expanduser() if base else Path.home() / ".cache") / "jit"


@dataclass(frozen=True, slots=True)
class ModelLayout:
    """What the ONNX runtime needs to know of a sentence-transformers model directory."""

    path: Path
    pooling: str  # one of _POOLING_MODES
    dimension: int

    @property
    def slug(self) -> str:
        """A readable prefix for cache file names (the fingerprint makes them unique)."""
        return re.sub(r"[^A-Za-z0-9._-]+", "-", self.path.name if self.path.name != "model" else
                      f"{self.path.parent.name}-{self.path.name}")[:60]


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UnsupportedModel(f"cannot read {path}: {exc}") from exc


def read_layout(path: str | os.PathLike[str]) -> ModelLayout:
    """Check that ``path`` is a model directory this runtime supports, reading only its configs."""
    root = Path(path)
    modules_file = root / "modules.json"
    if not modules_file.is_file():
        raise UnsupportedModel(f"{root} is not a sentence-transformers model directory (no modules.json)")
    modules = sorted(_read_json(modules_file), key=lambda m: m.get("idx", 0))
    kinds = [str(m.get("type", "")).rsplit(".", 1)[-1] for m in modules]
    if kinds not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
        raise UnsupportedModel(f"modules {kinds} of {root}: only Transformer, Pooling[, Normalize] is supported")
    if modules[0].get("path", ""):
        raise UnsupportedModel(f"{root}: the transformer must be at the model's top level")
    if not (root / "tokenizer.json").is_file():
        raise UnsupportedModel(f"{root} has no tokenizer.json (a fast tokenizer is needed)")
    pooling = _read_json(root / modules[1].get("path", "1_Pooling") / "config.json")
    mode = pooling.get("pooling_mode")
    if mode is None:
        chosen = [k for k, v in pooling.items() if k.startswith("pooling_mode_") and v is True]
        mode = {"pooling_mode_mean_tokens": "mean", "pooling_mode_cls_token": "cls",
                "pooling_mode_max_tokens": "max"}.get(chosen[0]) if len(chosen) == 1 else None
    if mode not in _POOLING_MODES:
        raise UnsupportedModel(f"{root}: pooling {pooling} is not one of {_POOLING_MODES}")
    if pooling.get("include_prompt") is False:
        raise UnsupportedModel(f"{root}: pooling that excludes the prompt is not supported")
    dimension = pooling.get("word_embedding_dimension") or pooling.get("embedding_dimension")
    if not isinstance(dimension, int):
        raise UnsupportedModel(f"{root}: the pooling config names no word_embedding_dimension")
    return ModelLayout(root, mode, dimension)


def fingerprint(layout: ModelLayout) -> str:
    """A digest of the model's files (small ones by content, weights by size and mtime) and the export format."""
    digest = hashlib.sha256(f"jit-onnx-export:{EXPORT_FORMAT}".encode())
    for file in sorted(p for p in layout.path.rglob("*") if p.is_file()):
        rel = file.relative_to(layout.path)
        if any(part.startswith(".") for part in rel.parts):
            continue
        st = file.stat()
        digest.update(f"\0{rel.as_posix()}\0{st.st_size}\0".encode())
        if st.st_size <= _HASHED_UP_TO:
            digest.update(hashlib.sha256(file.read_bytes()).digest())
        else:
            digest.update(str(st.st_mtime_ns).encode())
    return digest.hexdigest()[:32]


def meta_path_of(layout: ModelLayout, fp: str, variant: str = "") -> Path:
    """Where the metadata of the model's export (or of a ``variant`` derived from it) is cached."""
    return cache_root() / "onnx" / f"{layout.slug}-{fp}{'-' + variant if variant else ''}.json"


def _read_export(meta_path: Path, fp: str, **expected: Any) -> Export | None:
    """The cached model that ``meta_path`` describes, or None if there is none (or one of another
    format, model or ``expected`` metadata); a damaged one is a :class:`EmbeddingError`."""
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise EmbeddingError(f"unreadable export metadata {meta_path}: {exc}") from exc
    if meta.get("format") != EXPORT_FORMAT or meta.get("fingerprint") != fp or \
            any(meta.get(key) != value for key, value in expected.items()):
        return None
    export = Export(meta, meta_path.parent / meta["onnx_file"], meta_path.parent / meta["tokenizer_file"])
    files = [(export.onnx, meta["onnx_size"]), (export.tokenizer, meta["tokenizer_size"])]
    if "weights_file" in meta:
        files.append((meta_path.parent / meta["weights_file"], meta["weights_size"]))
    for file, size in files:
        try:
            actual = file.stat().st_size
        except OSError as exc:
            raise EmbeddingError(f"export file {file} is missing: {exc}") from exc
        if actual != size:
            raise EmbeddingError(f"export file {file} has {actual} bytes, {size} expected (damaged)")
    return export


def load_cached(meta_path: Path, fp: str, *, threads: int | None, rebuild: str, **expected: Any) -> OnnxModel | None:
    """The cached model ``meta_path`` describes, loaded and checked on its stored probe vector.

    None when the cache has none, or a damaged one: that is logged (``rebuild`` says
    what the caller does next) and its metadata removed, so the caller builds it again.
    """
    try:
        export = _read_export(meta_path, fp, **expected)
        if export is None:
            return None
        model = OnnxModel(export, threads=threads)
        cosine = check_probe(model)
        if cosine >= MIN_COSINE:
            return model
        raise EmbeddingError(f"the probe's vector moved (cosine {cosine:.6f}) since it was cached")
    except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own types for a bad file
        log.warning("embedding: the cached ONNX model %s is damaged (%s); %s", meta_path.name, exc, rebuild)
        meta_path.unlink(missing_ok=True)
        return None


def fsync(path: Path) -> None:
    """Flush ``path`` to disk before it is renamed into place (a crash must not leave a short file)."""
    with open(path, "rb") as f:
        os.fsync(f.fileno())


#: Held while a model is loaded from the cache or built into it (re-entrant: int8 builds on fp32).
export_lock = threading.RLock()


def cache_directory() -> Path:
    """The cache's ``onnx/`` directory, created if need be; an :class:`EmbeddingError` naming it and
    the remedy when it cannot be (a ``$JIT_CACHE_DIR`` under a file, a home directory not writable).
    A cache that exists but is read-only is fine to load from: only an export needs to write."""
    directory = cache_root() / "onnx"
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise EmbeddingError(f"the ONNX model cache {directory} cannot be created ({exc.strerror or exc}): "
                             "set JIT_CACHE_DIR to a writable directory") from exc
    return directory


def _failure_path(meta: Path) -> Path:
    return meta.with_suffix(".failed")


def failed_before(meta: Path) -> str | None:
    """Why making the export ``meta`` describes failed in an earlier process of this jit (None: it
    did not, or another jit tried). Exporting imports torch and takes seconds: a process must not
    pay that at every start for a graph that cannot be made."""
    try:
        record = json.loads(_failure_path(meta).read_text(encoding="utf-8"))
        return str(record["reason"]) if record.get("jit") == __version__ else None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def remember_failure(meta: Path, exc: Exception) -> None:
    record = {"jit": __version__, "reason": f"{type(exc).__name__}: {exc}"[:2000]}
    try:
        write_atomic(_failure_path(meta), lambda f: f.write(json.dumps(record).encode("utf-8")))
    except OSError as error:
        log.debug("could not record the failed export in %s: %s", _failure_path(meta), error)


#: Files of the cache no metadata names are removed once this old (seconds): an export in
#: progress renames its model files into place before its metadata, and a slow one can take a while.
ORPHAN_AGE = 3600.0


def prune_cache(directory: Path, model_path: Path, fp: str, *, now: float | None = None) -> list[Path]:
    """Remove the exports a new export of ``model_path`` (fingerprint ``fp``) made obsolete; return what went.

    An export is obsolete when its model directory is gone (a deleted virtualenv, an
    uninstalled model package) or when it is an earlier export of ``model_path`` itself (its
    files changed since: a reinstall gives new modification times, so a new fingerprint). Each
    is ~90 MB, and without this every virtualenv a machine ever had left one behind. The
    metadata goes first, so no reader finds an export whose files are going; then every file
    no remaining metadata names (int8 models derived from an obsolete export included), and
    files or staging directories left by a process killed mid-export once :data:`ORPHAN_AGE`
    old. Best effort: a file that cannot be removed is logged and kept, the export stands.
    """
    now = time.time() if now is None else now
    removed: list[Path] = []
    kept: set[str] = set()
    doomed: set[str] = set()
    for meta_path in sorted(directory.glob("*.json")):
        if meta_path.name.endswith(".tokenizer.json"):
            continue
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            source = Path(str(meta["model_path"]))
            obsolete = not source.is_dir() or (source == model_path and meta.get("fingerprint") != fp)
        except (OSError, ValueError, KeyError, TypeError):
            continue  # not an export's metadata, or one being replaced: leave it alone
        files = {str(meta.get(key)) for key in ("onnx_file", "weights_file", "tokenizer_file")}
        if obsolete and _remove(meta_path):
            removed.append(meta_path)
            doomed |= files
        else:
            kept |= files
    for path in sorted(directory.iterdir()):
        staging = path.is_dir() and path.name.startswith((".export-", ".int8-"))
        if path.name in kept or not (staging or path.suffix in (".onnx", ".weights")
                                     or path.name.endswith(".tokenizer.json")):
            continue
        try:
            old = now - path.stat().st_mtime >= ORPHAN_AGE
        except OSError:
            continue
        if (path.name in doomed or old) and _remove(path):
            removed.append(path)
    if removed:
        log.info("embedding: removed %d cached ONNX file(s) of models no longer installed or since changed",
                 len(removed))
    return removed


def _remove(path: Path) -> bool:
    try:
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)
        return True
    except OSError as exc:
        log.warning("embedding: could not remove the obsolete cache file %s: %s", path, exc)
        return False
