"""Words and sentences out of tool text and tasks: the one home for splitting,
tokenizing, stemming and cutting sentences.

Three consumers read words, and each needs a slightly different word on purpose:

* the analysis vocabulary (:mod:`jit.analysis.vocab`, :mod:`jit.analysis.analyze`) matches stems of
  names and prose against its lexicons: :func:`split_identifier`,
  :func:`identifier_stems`, :func:`prose_stems`, :func:`stem`;
* jit's own retrieval (:mod:`jit.selection.retrieve`) indexes tool text for BM25 and splits
  tasks into clauses: :func:`search_tokens` with :func:`light_stem`;
* the evaluation's plain baselines (:mod:`jit.evaluation.baselines`) must reproduce the
  reference measurement exactly: :func:`bm25_tokens`, :func:`whitespace_tokens`.

Their differences are documented on each function and are load-bearing: the
lexicons were written against :func:`stem`, retrieval's scores (and so every
selection) depend on :func:`search_tokens`, and the baselines' published figures
on :func:`bm25_tokens`. Unifying any two would change selections or figures.
All share one set of camelCase boundaries (:func:`split_camel`).

This module imports nothing from jit, so every layer may use it.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

__all__ = [
    "CJK",
    "HIDDEN_CHARS",
    "SEARCH_STOPWORDS",
    "bm25_tokens",
    "first_sentence",
    "has_camel_hump",
    "identifier_stems",
    "light_stem",
    "prose_stems",
    "remove_hidden",
    "search_tokens",
    "sentences",
    "split_camel",
    "split_identifier",
    "stem",
    "whitespace_tokens",
]

# --------------------------------------------------------------------------- camelCase

#: ``fooBar`` → ``foo Bar``.
_HUMP = r"(?<=[a-z])(?=[A-Z])"
#: ``HTTPServer`` → ``HTTP Server``: the last capital of an acronym starts the next word.
_ACRONYM_END = r"(?<=[A-Z])(?=[A-Z][a-z])"
#: ``abc123`` → ``abc 123`` and ``123abc`` → ``123 abc``.
_DIGIT_EDGES = r"(?<=[A-Za-z])(?=[0-9])|(?<=[0-9])(?=[A-Za-z])"
_CAMEL = re.compile(f"{_HUMP}|{_ACRONYM_END}|{_DIGIT_EDGES}")
_CAMEL_NO_ACRONYMS = re.compile(f"{_HUMP}|{_DIGIT_EDGES}")
_HUMP_RE = re.compile(_HUMP)


def split_camel(text: str, *, acronyms: bool = True) -> str:
    """``text`` with a space at every camelCase and letter/digit boundary.

    ``acronyms=False`` leaves ``HTTPServer`` whole: jit's retrieval index was built
    that way (:func:`search_tokens`) and its scores depend on it.
    """
    return (_CAMEL if acronyms else _CAMEL_NO_ACRONYMS).sub(" ", text)


def has_camel_hump(text: str) -> bool:
    """Whether ``text`` has a lower-case letter followed by a capital (``getUser``)."""
    return _HUMP_RE.search(text) is not None


# --------------------------------------------------------------------------- stemming

_SUFFIXES = (
    ("ational", "ate"),
    ("ization", "ize"),
    ("ations", "ate"),
    ("ation", "ate"),
    ("ies", "y"),
    ("sses", "ss"),
    ("ing", ""),
    ("ed", ""),
    ("es", ""),
    ("s", ""),
)
_NO_STRIP = frozenset({"news", "https", "kubernetes", "series", "species", "always", "canvas", "jenkins",
                       "postgres", "redis", "atlas", "bias", "lens", "css", "dns", "aws", "rss", "sms", "ios",
                       "macos", "js", "ts", "this", "was", "has", "does", "yes", "exists"})


@lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """A small, deterministic suffix stripper (``files``→``fil``, ``searching``→``search``).

    It only has to map a keyword and its inflections to the same key, not to
    produce dictionary words: ``save``, ``saved`` and ``saving`` all become ``sav``.
    The analysis lexicons (:mod:`jit.analysis.vocab`) are keyed by its output.
    """
    w = word.lower()
    if len(w) <= 3 or w in _NO_STRIP or not w.isascii():
        return w
    for suffix, repl in _SUFFIXES:
        if not w.endswith(suffix) or len(w) - len(suffix) + len(repl) < 3:
            continue
        if suffix == "s" and w[-2] in "sui":  # "process", "status", "analysis" keep their s
            break
        w = w[: len(w) - len(suffix)] + repl
        if suffix in ("ing", "ed") and len(w) >= 4 and w[-1] == w[-2] and w[-1] not in "lsz":
            w = w[:-1]  # "running" -> "run", "mapped" -> "map"
        break
    if len(w) > 3 and w.endswith("e"):
        w = w[:-1]
    return w


def light_stem(w: str) -> str:
    """A lighter English suffix stripper (plurals, -ing, -ed) for retrieval: enough to
    match 'files'/'file', 'searching'/'search' without a stemming dependency.

    Lighter than :func:`stem` (no ``-ation``, no final ``e``) because BM25 wants
    distinct terms kept distinct; expects lower-case ``w``.
    """
    if not w.isascii() or len(w) <= 3:
        return w
    if w.endswith("ies") and len(w) > 4:
        return w[:-3] + "y"
    if w.endswith("sses"):
        return w[:-2]
    if w.endswith("ing") and len(w) > 5:
        return w[:-3]
    if w.endswith("ed") and len(w) > 4:
        return w[:-2]
    if w.endswith("s") and not w.endswith("ss"):
        return w[:-1]
    return w


# --------------------------------------------------------------------------- words for the analysis vocabulary

_LETTER_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*")
_PLAIN_WORD = re.compile(r"[a-z][a-z0-9]*")
#: Chinese, Japanese and Korean characters.
CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff\uac00-\ud7af]")


def split_identifier(name: str) -> list[str]:
    """``getUserById`` / ``read_file`` / ``web-search`` / ``HTMLParser`` → lower-case words.

    Words start with a letter; digit runs are dropped (``v2`` → ``v``).
    """
    return [w.lower() for w in _LETTER_WORD.findall(split_camel(name))]


def identifier_stems(text: str) -> list[str]:
    """Stems of an identifier-like text (a name, a parameter): camelCase is split."""
    return [stem(w) for w in split_identifier(text)]


def prose_stems(text: str) -> list[str]:
    """Stems of prose. camelCase is not split: prose names brands (JavaScript, GitHub), not identifiers."""
    return [stem(w) for w in _PLAIN_WORD.findall(text.lower())]


# --------------------------------------------------------------------------- words for retrieval

_SEARCH_WORD = re.compile(r"[0-9A-Za-z]+|[^\x00-\x7f\s\W_]+")
#: Words too common in tasks to say anything about a tool (dropped from BM25 queries).
SEARCH_STOPWORDS = frozenset(
    "a an and are as at be by for from has have in into is it its of on or that the this to was were will with "
    "i me my we our you your please can could would should then also using use".split()
)


def search_tokens(text: str, *, drop_stopwords: bool = False) -> list[str]:
    """jit's retrieval tokens: words split on non-alphanumerics, ``_``, camelCase and
    letter/digit boundaries (acronyms kept whole), lower-cased and :func:`light_stem`-med;
    ASCII and non-ASCII runs split apart, a non-ASCII run (CJK) kept whole."""
    words = [w.lower() for w in _SEARCH_WORD.findall(split_camel(text, acronyms=False))]
    if drop_stopwords:
        words = [w for w in words if w not in SEARCH_STOPWORDS]
    # A catalog has far fewer distinct words than words: stem each distinct one once.
    return [_stemmed(w) for w in words]


_stemmed = lru_cache(maxsize=1 << 16)(light_stem)


# --------------------------------------------------------------------------- words for the baselines

# Runs of Unicode letters and digits: a CJK run (no spaces) stays one token, and so
# does an accented word; everything else, ``_`` included, separates tokens.
_UNICODE_WORD = re.compile(r"[^\W_]+")


def whitespace_tokens(text: str) -> list[str]:
    """climpt's tokens: the lowercased text split on whitespace, punctuation kept."""
    return text.lower().split()


def bm25_tokens(text: str) -> list[str]:
    """The BM25 baseline's tokens: split on non-alphanumerics and ``_``, camelCase and
    letter/digit boundaries, lowercased, never stemmed; runs of non-ASCII letters (CJK)
    are kept whole.

    This reproduces the reference measurement's BM25 figures (docs/quality.md) exactly
    on livemcpbench; splitting non-ASCII runs from adjacent ASCII, or not splitting
    ``HTTPServer``, moves R@5. That is why it is not :func:`search_tokens`.
    """
    return [t.lower() for t in _UNICODE_WORD.findall(split_camel(text))]


# --------------------------------------------------------------------------- sentences

_FIRST_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=\S)|(?<=[。！？])|\n\s*\n")
_SENTENCES = re.compile(r"(?<=[.!?。！？])\s+|\n+|(?<=[。！？])")


def first_sentence(text: str) -> str:
    """The first sentence (or paragraph) of ``text``: up to ``.``, ``!`` or ``?`` and
    whitespace, a CJK full stop, or a blank line. A line break alone does not end it:
    descriptions wrap their lines. The one rule for every one-line summary (the
    analyzers' condensed text and the rendered line of a tool not analyzed yet)."""
    return _FIRST_SENTENCE.split(text.strip(), maxsplit=1)[0] if text.strip() else ""


def sentences(text: str) -> list[str]:
    """Every sentence of ``text``, each line counted as (at least) one.

    Unlike :func:`first_sentence`, a single line break ends a sentence: an injected
    instruction on its own line must be cut out without taking its neighbours along
    (:func:`jit.injection.detect.strip_instructions`). Pieces may be empty or blank.
    """
    return _SENTENCES.split(text)


#: Invisible or reordering code points. U+200D (zero-width joiner) counts only next to
#: plain ASCII text (``N\u200de\u200dv\u200de\u200dr``): emoji sequences join pictographs
#: with it legitimately. U+200C (zero-width non-joiner) between two letters of the Arabic or
#: Indic scripts is spelling (Persian ``می‌کند``); anywhere else it hides. A run of supplementary variation selectors (U+E0100–E01EF) is a known
#: way to smuggle bytes behind an emoji; one after an ideograph is a glyph variant. A
#: variation selector (U+FE00–FE0F) after ASCII text selects nothing (no ASCII character has
#: variants but the keycap bases ``#``, ``*`` and the digits): ``D\ufe0fo\ufe0f`` hides words from a reader.
HIDDEN_CHARS = re.compile(
    "[\u00ad\u180e\u200b\u200e\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\ufff9-\ufffb"
    "\U000e0000-\U000e007f]|(?<=[\x20-\x7e])\u200d|\u200d(?=[\x20-\x7e])|[\U000e0100-\U000e01ef]{2,}"
    "|(?<![\u0600-\u06ff\u0750-\u077f\u08a0-\u08ff\ufb50-\ufdff\ufe70-\ufefe\u0900-\u0dff])\u200c"
    "|\u200c(?![\u0600-\u06ff\u0750-\u077f\u08a0-\u08ff\ufb50-\ufdff\ufe70-\ufefe\u0900-\u0dff])"
    "|(?<=[\x20-\x22\x24-\x29\x2b-\x2f\x3a-\x7e])[\ufe00-\ufe0f]"
)


#: What :func:`remove_hidden` takes out: the hidden characters, and U+200C wherever it is (a word
#: reads the same with or without it, so the rules match Persian words either way).
_STRIPPED = re.compile(f"{HIDDEN_CHARS.pattern}|\u200c")


def remove_hidden(text: str) -> str:
    """``text`` without invisible / direction-changing characters, NFKC-normalised (what the
    injection checks of :mod:`jit.injection.detect` and every summary see of a text)."""
    if text.isascii():  # nothing hidden and already NFKC: the common case, checked in C
        return text
    text = _STRIPPED.sub("", text)
    return text if unicodedata.is_normalized("NFKC", text) else unicodedata.normalize("NFKC", text)
