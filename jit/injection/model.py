"""A learned second reader of tool text: a linear model over word and character n-grams.

The rules of :mod:`jit.injection.detect` read wording and cue words. Over twelve batches of
attack texts written after them they caught 55–78% at first sight: an attacker who avoids
the textbook words ("the handshake is step zero of every session", a YAML "overrides"
block, a language the cues lack) walks past them. This model reads the same text as
hashed word 1–3-grams and character 3–5-grams, weighted by tf-idf (sublinear term
frequency, the inverse document frequencies of its training texts) and scored by a
logistic regression. It reads every text of at least :data:`MIN_MODEL_CHARS` characters the
rules found no structural sign in: a text the rules found nothing in and it scores above its
threshold gets ``instruction:classifier``, which the policy treats like every other flag (out of
Full, description withheld); a text whose only findings are wording and that it scores far on the
side of ordinary documentation (at or below its corroboration score) loses them
(:func:`jit.injection.detect.weighed`).

It is trained by ``bench/train_injection_model.py`` (deterministic) on the labelled hostile
corpora (``tests/data/injection/hostile.jsonl``, the training rows of ``writer2.jsonl``, the spent
held-out sets of ``bench/data/injection_heldout/``), every other
deduplicated real tool of the
shared pools (the rest stays held out for false positives) and benign tool texts written
to look hostile (``synthetic_benign.jsonl``, and the training rows of ``tricky_benign.jsonl``,
weighted up); the threshold is the higher of two out-of-fold quantiles, one of the real tools,
one of the tricky texts. Measured in docs/reliability.md. The model is a file of plain arrays
(``injection_model.npz``, loaded with ``allow_pickle=False``): no code is unpickled.

Featurisation is shared with the training script (:func:`model_text`, :func:`features`),
so training and use cannot drift apart. scikit-learn (already a dependency of
sentence-transformers) hashes the n-grams; it is imported on the first text scored: in a
sync's analysis, and on the compile path only for a tool a sync left unanalysed.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..jsonrpc import scrub
from ..models import ToolDef
from ..text import remove_hidden
from .params import offered_values, schema_nodes

if TYPE_CHECKING:  # pragma: no cover
    import scipy.sparse

log = logging.getLogger(__name__)


#: The shipped model (written by ``python -m bench.train_injection_model``).
MODEL_FILE = Path(__file__).with_name("injection_model.npz")

WORD_NGRAMS = (1, 3)
CHAR_NGRAMS = (3, 5)

#: Characters of a tool's text the model reads (descriptions past 5,000 are flagged anyway).
MAX_MODEL_CHARS = 20_000

#: Shorter texts are left to the rules. An attack needs a cover and a payload: of 1,940
#: hostile corpus texts, 410 are shorter and the rules miss 5 of them, while on the shared
#: pools 32 of the 39 real tools an ungated model flagged were shorter ("Creates a Reflect
#: note.", "Your AI powered Ad Assistant!"): a few n-grams are too little evidence.
MIN_MODEL_CHARS = 100


#: Host names under the top-level names reserved for documentation (RFC 2606, RFC 6761: ``.example``,
#: ``.test``, ``.invalid``): written corpora use them for every address, attacker's and vendor's alike, while
#: real tools and real attacks name real hosts. The model reads them as ``.com``, so a reserved name is no
#: evidence either way.
_RESERVED_TLD = re.compile(r"(?<=[A-Za-z0-9-])\.(?:example|test|invalid)\b(?![.-]?[A-Za-z0-9])", re.IGNORECASE)


#: The words of a parameter the model reads: what it is called and said to be (title, description) and
#: the values it offers (:data:`jit.injection.params.OFFERED`) that are phrases. An attack placed in a
#: parameter is written in one of them; a one-word value ("raw", "INBOX", a URL) says nothing the model can
#: weigh, and real tools' long enums of such words would drown their descriptions (``params`` reads URLs).
_PARAM_TEXT = ("title", "description")


def _param_texts(schema: Any) -> list[str]:
    out: list[str] = []
    for node in schema_nodes(schema):
        out.extend(v for v in (node.get(k) for k in _PARAM_TEXT) if isinstance(v, str) and v.strip())
        out.extend(v for v in offered_values(node) if len(v.split()) > 1)
    return out


def model_text(tool: ToolDef) -> str:
    """What the model reads of a tool: title, description and, for the input schema and every
    parameter in it (nested ones too), its title, description and the string values it offers (default, enum, examples, const),
    one per line, hidden characters removed (``hidden_unicode`` is the rules' finding) and host
    names under the documentation domains read as ``.com`` (:data:`_RESERVED_TLD`)."""
    parts = [tool.title or "", tool.description or ""]
    parts += _param_texts(tool.input_schema)
    return _RESERVED_TLD.sub(".com", remove_hidden("\n".join(p for p in parts if p)))[:MAX_MODEL_CHARS]


def _vectorizers(bits: int) -> tuple[Any, Any]:
    from sklearn.feature_extraction.text import HashingVectorizer

    common = {"n_features": 2**bits, "alternate_sign": False, "norm": None, "dtype": np.float32}
    return (HashingVectorizer(ngram_range=WORD_NGRAMS, **common),
            HashingVectorizer(analyzer="char_wb", ngram_range=CHAR_NGRAMS, **common))


def counts(texts: Sequence[str], bits: int) -> tuple[scipy.sparse.csr_matrix, scipy.sparse.csr_matrix]:
    """Hashed n-gram counts of ``texts``: (words, characters)."""
    word, char = _vectorizers(bits)
    return word.transform(texts), char.transform(texts)


def weigh(raw: scipy.sparse.csr_matrix, idf: np.ndarray) -> scipy.sparse.csr_matrix:
    """tf-idf by scikit-learn's ``TfidfTransformer(sublinear_tf=True)`` with the model's idf: 1 + ln(tf),
    times idf, each row scaled to unit length."""
    from sklearn.feature_extraction.text import TfidfTransformer

    transformer = TfidfTransformer(sublinear_tf=True)
    transformer.idf_ = idf
    return transformer.transform(raw)


def features(texts: Sequence[str], bits: int, idf_word: np.ndarray, idf_char: np.ndarray) -> scipy.sparse.csr_matrix:
    """The model's input for ``texts``: weighted words and characters side by side."""
    import scipy.sparse

    w, c = counts(texts, bits)
    return scipy.sparse.hstack([weigh(w, idf_word), weigh(c, idf_char)], format="csr")


@dataclass(frozen=True)
class InjectionModel:
    """The learned reader: idf of both n-gram kinds (``2**bits`` buckets each), the logistic
    regression's weights over both side by side, its intercept, the decision threshold,
    ``info`` (how it was trained) and ``corroboration``: the score at or below which the model
    contradicts a phrase rule's finding (:func:`jit.injection.detect.detect_hostile` drops it;
    minus infinity: never)."""

    bits: int
    idf_word: np.ndarray
    idf_char: np.ndarray
    coef: np.ndarray
    intercept: float
    threshold: float
    info: dict
    corroboration: float = float("-inf")

    def scores(self, texts: Sequence[str]) -> np.ndarray:
        """Decision values (log-odds) of ``texts``; above :attr:`threshold` is hostile."""
        if not texts:
            return np.zeros(0, dtype=np.float32)
        # Surrogates (a tool's text may hold lone ones) cannot be encoded for the n-gram hashing.
        texts = [t if t.isascii() else scrub(t) for t in texts]
        return features(texts, self.bits, self.idf_word, self.idf_char) @ self.coef + self.intercept

    def save(self, path: Path) -> None:
        np.savez_compressed(path, bits=np.int64(self.bits), idf_word=self.idf_word, idf_char=self.idf_char,
                            coef=self.coef, intercept=np.float64(self.intercept),
                            threshold=np.float64(self.threshold), corroboration=np.float64(self.corroboration),
                            info=np.str_(json.dumps(self.info, sort_keys=True)))

    @classmethod
    def load(cls, path: Path) -> InjectionModel:
        with np.load(path, allow_pickle=False) as z:
            return cls(bits=int(z["bits"]), idf_word=z["idf_word"], idf_char=z["idf_char"], coef=z["coef"],
                       intercept=float(z["intercept"]), threshold=float(z["threshold"]),
                       info=json.loads(str(z["info"])),
                       corroboration=float(z["corroboration"]) if "corroboration" in z.files else float("-inf"))


@cache
def shipped_model() -> InjectionModel | None:
    """The shipped model, or None (logged once) when its file cannot be read: a damaged install
    loses the model's judgement, never the rules' flags."""
    try:
        return InjectionModel.load(MODEL_FILE)
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as exc:
        log.error("the injection model %s cannot be read (%s: %s); tool text is checked by the rules "
                  "alone until jit is reinstalled", MODEL_FILE, type(exc).__name__, exc)
        return None


def model_version() -> str:
    """A digest of the shipped model file (part of ``HOSTILE_RULES_VERSION``); "absent" only
    while ``bench/train_injection_model.py`` writes the first one."""
    try:
        return hashlib.sha256(MODEL_FILE.read_bytes()).hexdigest()[:16]
    except FileNotFoundError:
        return "absent"


#: Texts scored at once: a batch's n-gram matrix is ~20 KB a text, so a catalog's re-check
#: (100,000 tools) is scored in slices rather than in one 2 GB matrix.
SCORE_BATCH = 512


def judged_hostile(tools: Sequence[ToolDef]) -> list[bool]:
    """Whether the shipped model scores each tool's text above its threshold."""
    return judged_texts([model_text(t) for t in tools])


def judged_texts(texts: Sequence[str], model: InjectionModel | None = None) -> list[bool]:
    """Whether ``model`` (the shipped one by default) scores each text (as :func:`model_text` makes them)
    above its threshold; texts shorter than :data:`MIN_MODEL_CHARS` are never judged hostile."""
    model = model or shipped_model()
    return [model is not None and s is not None and s > model.threshold for s in text_scores(texts, model)]


def text_scores(texts: Sequence[str], model: InjectionModel | None = None) -> list[float | None]:
    """``model``'s (the shipped one's by default) score of each text (as :func:`model_text` makes them);
    None for a text shorter than :data:`MIN_MODEL_CHARS` (too little evidence) or when the model cannot
    be read."""
    model = model or shipped_model()
    out: list[float | None] = [None] * len(texts)
    if model is None:
        return out
    keep = [(i, text) for i, text in enumerate(texts) if len(text.strip()) >= MIN_MODEL_CHARS]
    for start in range(0, len(keep), SCORE_BATCH):
        part = keep[start : start + SCORE_BATCH]
        for (i, _), s in zip(part, model.scores([text for _, text in part])):
            out[i] = float(s)
    return out
