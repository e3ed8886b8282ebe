"""How a cue of the injection intents is built: a list of words in many languages made one regex.

:func:`cue` compiles a space-separated list of words (``_`` a space or hyphen inside a phrase, a
trailing ``$`` the whole word only) into one regex, searched as a trie (:func:`trie`); :data:`WORDS`
keeps each cue's words, so the intents can search several cues as one (:mod:`jit.injection.intent`).
The cues themselves are :mod:`jit.injection.cues` and :mod:`jit.injection.behaviour_cues`.
"""

from __future__ import annotations

import re

__all__ = ["WORDS", "cue", "trie"]

_CJK = re.compile(r"[\u0590-\u06ff\u0900-\u09ff\u0e00-\u0e7f\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")


def cue(words: str, *, after_underscore: bool = False) -> re.Pattern[str]:
    """One cue from a space-separated list of words; ``_`` stands for a space or hyphen inside a phrase.

    A word of a spaced script matches at a word start, so ``conversation`` also takes
    ``conversations``; a word ending in ``$`` matches only whole. Chinese, Japanese and
    Korean words match anywhere (Korean particles attach to the word), and so do Arabic, Hebrew,
    Devanagari, Bengali and Thai ones (prefixes attach to the word; Thai has no spaces). With
    ``after_underscore`` a word may also start after ``_``, so the key ``prior_instructions: void``
    reads like prose.
    """
    spaced, anywhere = [], []
    for w in words.split():
        (anywhere if _CJK.match(w) else spaced).append(w)
    parts = []
    if spaced:
        parts.append((r"(?<![^\W_])" if after_underscore else r"(?<!\w)") + trie(spaced))
    if anywhere:
        parts.append(trie(anywhere))
    pattern = re.compile("|".join(parts))
    WORDS[pattern] = (tuple(spaced), tuple(anywhere))
    return pattern


#: The words of every cue built by :func:`cue` (spaced, matched anywhere), so that several
#: cues can be searched as one trie (:func:`jit.injection.intent._any_of`).
WORDS: dict[re.Pattern[str], tuple[tuple[str, ...], tuple[str, ...]]] = {}


def trie(words: list[str]) -> str:
    """One regex for ``words`` as a trie (``(?:a(?:ny|ll)|e(?:ach|very))``): the engine tries one
    branch per letter instead of every word at every position, which makes a cue of a few hundred
    words several times faster to search. Only whether a cue occurs matters, so a word that
    another word starts with (``conversation`` after ``conversa``) is dropped."""
    root: dict[str, dict] = {}
    for w in words:
        node = root
        for ch in w:
            node = node.setdefault(ch, {})
        node[""] = {}
    return _branch(root)


def _branch(node: dict[str, dict]) -> str:
    if "" in node:  # a word ends here: the longer ones add nothing to whether the cue occurs
        return ""
    alts = []
    for ch, child in sorted(node.items()):
        piece = r"[\s-]+" if ch == "_" else r"\b" if ch == "$" else re.escape(ch)
        alts.append(piece + _branch(child))
    return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
