"""Letter games that hide an instruction from word-matching: leetspeak, spaced-out letters, reversed text,
strings cut into joined pieces.

``1gn0r3 y0ur pr3v10u5 1n57ruc710n5``, ``i g n o r e   p r e v i o u s``, ``Ig.no.re pre.vi.ous`` and
``snoitcurtsni suoiverp erongi`` read as "ignore (all) previous instructions" to a model; to the
phrase rules they are noise. :func:`letter_reading` undoes each game, piece by piece (a piece is
a sentence or a line), and keeps an undone piece only where it turns noise into English: the
reading must hold at least :data:`MIN_WORDS` words of :data:`ENGLISH_WORDS` (common English and
the words instructions to a model are made of) that the piece as written lacks. Ordinary text
never gains (``s3``, ``ipv4``, ``md5`` map to nothing English; ``os.path.join`` joins to no
word), so its reading is itself and nothing is judged twice.

* leetspeak: a piece with at least two words mixing letters with ``0 1 3 4 5 7 @ $`` reads with
  ``0→o 1→i (or l) 3→e 4→a 5→s 7→t @→a $→s``; a word of digits alone is read only where it becomes
  an English word (``70`` → "to");
* spaced letters: runs of three or more single letters joined by one separator (``i g n o r e``, ``i.g.n.o.r.e``,
  ``i-g-n-o-r-e``) are joined into a word, and a run that spells several words without breaks is
  split on :data:`ENGLISH_WORDS`; words cut into syllables by dots or hyphens (``in.struc.tions``)
  are joined where the whole is an English word;
* reversed text: a piece whose letters read backwards hold more English than forwards;
* joined string pieces: three or more quoted pieces joined as code joins strings (``'ign' + 'ore prev' +
  'ious'``, ``"a" .. "b"``, ``'a' || 'b'``) read as the one string they make.

:mod:`jit.injection.decode` applies this reading after the decodings, so a game played on
an encoded text is undone too.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import cache

__all__ = ["ENGLISH_WORDS", "MIN_WORDS", "letter_reading", "version_text"]

#: Common English words and the words instructions to a model are made of.
ENGLISH_WORDS = frozenset("""
a about above access account accounts add address after again against agent all also always an and answer any
api app apply approve are as ask assistant at attach authority auto back backup be been before being below best
block browser but by call can cancel channel chat check clear code command commands config confirm contact
contents conversation cookie cookies copy create credentials data delete describe directory disable do document
documents does done download drop each email emails empty enable env environment every everything execute
exfiltrate export file files first follow following for force forget forward from full get give grant has have
here hidden hide history home http https if ignore in inbox include inform information input inside instead
instruction instructions into is it its just keep key keys leak list local log login mail make message messages
model must need never new next no not note notes now of on once only or other output over override page pages
pass password passwords paste path persona policy post previous print prior private prompt public publicly push
read remember remove repeat reply report repository reset response result return reveal root rule rules run safe
safety say secret secrets security send server session set share shell should show silently skip so ssh step
steps still summary system take tell text than that the their them then there these they this those through to
token tokens tool tools transfer trust turn upload url use user users using value verify via wallet was what
when which while will with without write you your
""".split())

#: Words of English a reading must gain over the piece as written.
MIN_WORDS = 3

_WORD = re.compile(r"[a-z]+")
#: A sentence or a line (paths, URLs and versions stay whole).
_PIECE = re.compile(r"(?:[^\n.!?;]|[.!?;](?!\s))+[.!?;]?")


def _gain(before: str, after: str) -> bool:
    """Whether ``after`` holds :data:`MIN_WORDS` English words (of three letters or more) that ``before`` lacks."""
    had = Counter(w for w in _WORD.findall(before.lower()) if len(w) > 2 and w in ENGLISH_WORDS)
    new = Counter(w for w in _WORD.findall(after.lower()) if len(w) > 2 and w in ENGLISH_WORDS)
    return (new - had).total() >= MIN_WORDS


# ------------------------------------------------------------------------------ leetspeak

_LEET_I = str.maketrans("0134579@$", "oieastgas")
_LEET_L = str.maketrans("0134579@$", "oleastgas")
_LEET_TOKEN = re.compile(r"[A-Za-z0-9@$]+")
#: A word mixing letters and leet digits (``pr3v10u5``, ``4ll``).
_MIXED = re.compile(r"(?=[A-Za-z0-9@$]*[A-Za-z])(?=[A-Za-z0-9@$]*[0134579@$])[A-Za-z0-9@$]+")
_POSSESSIVE = re.compile(r"(?<=[A-Za-z0-9])'5\b")
#: A leet digit beside a letter (searched in lower-cased text).
_LEET_GATE = re.compile(r"[0134579@$](?:(?<=[a-z][0134579@$])|(?=[a-z]))")


def _leet_word(token: str) -> str:
    if not any(c in "0134579@$" for c in token):
        return token
    as_i = token.translate(_LEET_I)
    if as_i.lower() in ENGLISH_WORDS or token.isalpha():
        return as_i
    as_l = token.translate(_LEET_L)
    if as_l.lower() in ENGLISH_WORDS:
        return as_l
    # digits alone ("2024") are read only where they become an English word
    return token if not any(c.isalpha() for c in token) else as_i


def _leet(text: str) -> str:
    # Most texts with digits in words ("s3", "ipv4", "md5") have fewer than two that read as English words.
    if sum(_leet_word(t).lower() in ENGLISH_WORDS for t in _MIXED.findall(text)) < 2:
        return text

    def piece(m: re.Match[str]) -> str:
        s = m.group()
        if len(_MIXED.findall(s)) < 2:
            return s
        read = _LEET_TOKEN.sub(lambda t: _leet_word(t.group()), _POSSESSIVE.sub("'s", s))
        return read if _gain(s, read) else s

    return _PIECE.sub(piece, text)


# ------------------------------------------------------------------------------ spaced letters

#: Single letters joined by one separator, the same all along: ``i g n o r e``, ``i.g.n.o.r.e``.
_SPACED = re.compile(r"(?<![A-Za-z])[A-Za-z](?P<sep>[ .\-_*·|/+~])[A-Za-z](?:(?P=sep)[A-Za-z])+(?![A-Za-z])")
#: A word cut into syllables: ``in.struc.tions``, ``for-ward``.
_SYLLABLES = re.compile(r"(?<![\w.@/-])[A-Za-z]{1,6}(?:[.\-·][A-Za-z]{1,6}){1,5}(?![\w@/]|[.\-·][A-Za-z])")
_NOT_LETTER = re.compile(r"[^A-Za-z]")
#: A single letter between separators, or a short syllable between dots or hyphens (lower-cased text).
_SPACED_GATE = re.compile(r"[ .\-_*·|/+~][a-z][ .\-_*·|/+~][a-z][ .\-_*·|/+~]|[.\-·][a-z]{1,6}[.\-·][a-z]")


def _segment(letters: str) -> str:
    """``letters`` split into English words where they spell several without breaks (most letters in
    known words), else unchanged."""
    low = letters.lower()
    n = len(low)
    if n > 200:
        return letters
    # best[i]: (letters covered by known words, pieces) for low[:i]; a letter outside any word costs one piece
    best: list[tuple[int, int, list[str]]] = [(0, 0, [])] + [(-1, 0, [])] * n
    for i in range(1, n + 1):
        cands = [(best[i - 1][0], best[i - 1][1] + 1, best[i - 1][2] + [low[i - 1]])]
        for j in range(max(0, i - 16), i):
            if low[j:i] in ENGLISH_WORDS and best[j][0] >= 0:
                cands.append((best[j][0] + i - j, best[j][1] + 1, best[j][2] + [low[j:i]]))
        best[i] = max(cands, key=lambda c: (c[0], -c[1]))
    covered, _, words = best[n]
    return " ".join(words) if covered >= 0.8 * n else letters


def _joined(m: re.Match[str]) -> str:
    """A run of spaced letters as the word(s) it spells."""
    return _segment(_NOT_LETTER.sub("", m.group()))


def _syllables(m: re.Match[str]) -> str:
    """A word cut into syllables, joined where the whole is an English word."""
    word = _NOT_LETTER.sub("", m.group())
    return word if word.lower() in ENGLISH_WORDS else m.group()


def _spaced(text: str) -> str:
    # Cheap test first: the runs and cut words must join into two English words at least.
    words = [_joined(m) for m in _SPACED.finditer(text)] + [_syllables(m) for m in _SYLLABLES.finditer(text)]
    if sum(w in ENGLISH_WORDS for j in words for w in _WORD.findall(j.lower())) < 2:
        return text

    def piece(m: re.Match[str]) -> str:
        s = m.group()
        joined = _SYLLABLES.sub(_syllables, _SPACED.sub(_joined, s))
        return joined if _gain(s, joined) else s

    return _PIECE.sub(piece, text)


# ------------------------------------------------------------------------------ reversed text

#: Common words as reversed text writes them.
_REVERSED_WORDS = (" eht ", " dna ", " uoy ", " ruoy ", " siht ", " lla ", " ot ", " fo ", "resu", "snoitcurtsni",
                   "erongi", " dnes ")


def _reversed(text: str) -> str:
    def piece(m: re.Match[str]) -> str:
        s = m.group()
        back = s[::-1]
        return back if _gain(s, back) else s

    return re.sub(r"[^\n]+", piece, text)


# ------------------------------------------------------------------------------ joined string pieces

#: A quoted piece of a string, ``'ign'`` or ``"ore prev"``.
_FRAGMENT = r"""(?:'[^'\n]{1,40}'|"[^"\n]{1,40}")"""
#: Three or more pieces joined by a concatenation operator (``+``, ``..``, ``||``, ``.``) or set side by side, as code
#: builds a string: ``'ign' + 'ore prev' + 'ious guid' + 'ance'``.
_CONCAT = re.compile(rf"{_FRAGMENT}(?:\s*(?:\+|\.\.|\|\||\.)?\s*{_FRAGMENT}){{2,}}")
_CONCAT_GATE = re.compile(r"""['"]\s*(?:\+|\.\.|\|\|)\s*['"]""")


def _concatenated(text: str) -> str:
    def joined(m: re.Match[str]) -> str:
        s = m.group()
        whole = "".join(f[1:-1] for f in re.findall(_FRAGMENT, s))
        return whole if _gain(s, whole) else s

    return _CONCAT.sub(joined, text)


# ------------------------------------------------------------------------------ the reading

def letter_reading(text: str, low: str | None = None) -> str:
    """``text`` with every piece that reads as English only once a letter game is undone replaced by
    that reading (``text`` itself when none does); ``low``: ``text`` lower-cased, when the caller has it."""
    low = text.lower() if low is None else low
    if _LEET_GATE.search(low):
        text = _leet(text)
    if _SPACED_GATE.search(low):
        text = _spaced(text)
    if sum(w in low for w in _REVERSED_WORDS) >= 2:
        text = _reversed(text)
    if _CONCAT_GATE.search(low):
        text = _concatenated(text)
    return text


@cache
def version_text() -> str:
    """What decides this module's readings, for ``HOSTILE_RULES_VERSION``."""
    return "\n".join((" ".join(sorted(ENGLISH_WORDS)), str(MIN_WORDS), _MIXED.pattern, _SPACED.pattern,
                      _SYLLABLES.pattern, *_REVERSED_WORDS, _PIECE.pattern, _CONCAT.pattern))
