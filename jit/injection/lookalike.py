"""Look-alike letters: the confusable skeleton of a text and words that mix Latin with another script's look-alikes.

Unicode TR39's confusables data (shipped by the ``confusable-homoglyphs`` package) maps Cyrillic ``а``, Greek
``ρ`` or Cherokee ``Ꮃ`` to the ASCII letter they pass for; :mod:`jit.injection.detect` matches the rules a
second time on the :func:`skeleton` of a text that is not ASCII and flags ``homoglyph`` where only it reads
as an instruction or where :func:`mixed_script` finds a spoofed word.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

__all__ = ["mixed_script", "skeleton"]

_WORD = re.compile(r"\w+")
_LATIN_SCRIPTS = frozenset({"LATIN", "COMMON", "INHERITED"})


@lru_cache(maxsize=1)
def _confusables() -> tuple[dict[int, str], frozenset[str]]:
    """``(skeleton table, foreign look-alikes)`` from Unicode's confusables data.

    The skeleton table maps every non-ASCII character that Unicode TR39 lists as
    confusable with an ASCII letter or digit (and that NFKC does not already fold)
    to that character, lower-cased: Cyrillic ``а`` → ``a``, Greek ``ρ`` → ``p``,
    Cherokee ``Ꮃ`` → ``w``. The second set holds those of them that belong to a
    script other than Latin: one of them inside a Latin word is a spoof, whereas
    Turkish ``ı`` inside a Turkish word is spelling. Loaded once, on the first text
    that is not ASCII.
    """
    from confusable_homoglyphs.categories import alias
    from confusable_homoglyphs.confusables import confusables_data

    table: dict[int, str] = {}
    foreign: set[str] = set()
    # Letters before digits, so a glyph that looks like both "l" and "1" reads as a letter.
    for target in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789":
        for glyph in confusables_data.get(target, ()):
            c = glyph.get("c", "")
            if len(c) != 1 or c.isascii() or ord(c) in table or unicodedata.normalize("NFKC", c).isascii():
                continue
            table[ord(c)] = target.lower()
            if alias(c) not in _LATIN_SCRIPTS:
                foreign.add(c)
    return table, frozenset(foreign)


def skeleton(text: str) -> str:
    """``text`` with every look-alike of an ASCII letter or digit replaced by that letter.

    Applied after :func:`remove_hidden` (NFKC), so full-width and mathematical
    letters are already plain. Text in other scripts becomes unreadable, which is
    fine: the skeleton is only matched against the English rules.
    """
    if text.isascii():
        return text
    return text.translate(_confusables()[0])


def mixed_script(text: str) -> bool:
    """Whether some word mixes ASCII Latin letters with a look-alike from another script."""
    foreign = _confusables()[1]
    for word in _WORD.findall(text):
        if word.isascii() or not any(c in foreign for c in word):
            continue
        if any("a" <= c <= "z" or "A" <= c <= "Z" for c in word):
            return True
    return False
