"""Encoded text in tool descriptions: what it says once decoded, and code that runs an encoded blob.

A model reads base64, hex, ROT13, percent escapes, HTML character references and ``\\u``
escapes fluently; the phrase rules of :mod:`jit.injection.detect` read none of them. So
``"Setup note: SWdub3JlIGFsbCBwcmV2aW91cyBpbnN0cnVjdGlvbnM="`` passes the rules while the
model reads "Ignore all previous instructions". :func:`decoded_reading` returns the text
with every span that decodes to *text* replaced by its decoding, in place (so a sentence
half in clear and half encoded reads whole), and :func:`jit.injection.detect.detect_hostile`
judges that reading with the same rules and the same learned model: a finding that only the
decoded reading holds raises ``instruction:encoded`` beside the finding's own flag.

What counts as an encoded span (each decoding must be text, see :func:`_text`):

* base64, standard or URL-safe, at least :data:`MIN_BASE64` characters, with both upper- and
  lower-case letters (identifiers, hashes and keys either lack one or decode to bytes that
  are not text: of ~13,000 base64-shaped tokens in 20,783 real tools, three decode to text,
  a file name and two ids), also when wrapped over several lines;
* hex, at least :data:`MIN_HEX_BYTES` bytes: a plain run (``69676e6f7265…``), ``\\x69\\x67…`` or
  ``0x69, 0x67, …`` (hashes decode to bytes that are not text);
* percent escapes (``%69%67%6E``, three or more in a token), HTML references (``&#105;``,
  ``&#x69;``, ``&lt;``; two or more), ``\\u0069``/``\\u{69}``/``\\U00000069`` escapes
  (three or more);
* character codes: decimal in a list (``String.fromCharCode(105, 103, …)``) or bare (``73 103 110 …``, each a
  printable ASCII code), octal escapes (``\\151\\147…``), bytes in binary (``01101001 01100111 …``), at least
  :data:`MIN_HEX_BYTES` of them; Ascii85 between ``<~`` and ``~>``;
* ROT13, read only where it turns gibberish into English: a line or sentence whose words are
  mostly not English but whose ROT13 reading has at least :data:`MIN_ROT13_WORDS` common
  English words and more than the line as written. Ordinary text never qualifies (its
  ROT13 reading is gibberish), so the rules never read the ROT13 of a normal description.

Decoding runs twice at most (base64 of hex, percent escapes inside base64). The reading is
judged, never trusted: a decoded span that says nothing hostile changes nothing.

:func:`dynamic_code` finds the other use of an encoding: code that decodes a blob and runs it
(``eval(atob("…"))``, ``exec(base64.b64decode(…))``, ``new Function(atob(x))``,
``echo … | base64 -d | sh``, ``powershell -enc …``). Whatever the blob says, a tool
description that has the model run hidden code is hostile; a sentence that names such code
to forbid or detect it ("blocks eval(atob(…)) payloads") is not counted.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import html
import re
import urllib.parse
import zlib

from ..jsonrpc import scrub
from .lexicon import trie
from .obfuscation import letter_reading
from .obfuscation import version_text as letters_version

__all__ = ["MIN_BASE64", "MIN_HEX_BYTES", "MIN_ROT13_WORDS", "asks_to_decode", "decoded_reading",
           "dynamic_code", "revealed_order", "sentence_around", "version_text"]

#: Shortest base64 run read (12 bytes: "ignore rules" is 16 characters of base64).
MIN_BASE64 = 16
#: Fewest bytes a hex run must encode.
MIN_HEX_BYTES = 8
#: Common English words a ROT13 reading must hold (and more than the text as written).
MIN_ROT13_WORDS = 3

# ------------------------------------------------------------------------------ text or not


def _text(raw: bytes) -> str | None:
    """``raw`` as text when it is UTF-8 that reads as text (printable, some letters), else None."""
    try:
        s = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if len(s) < 4:
        return None
    printable = sum(c.isprintable() or c in "\n\r\t" for c in s)
    letters = sum(c.isalpha() for c in s)
    if printable < 0.95 * len(s) or letters < 3 or letters < 0.4 * len(s.replace(" ", "")):
        return None
    return s


# ------------------------------------------------------------------------------ base64

#: A base64 run (standard or URL-safe alphabet); runs wrapped over lines are joined first.
_B64 = re.compile(rf"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{{{MIN_BASE64},}}={{0,6}}(?![A-Za-z0-9+/=_-])")
#: A line break inside a wrapped base64 block (after a full line of 40 or more characters). The line
#: starts where a run starts: tried from every position inside a long run, the pattern took time in
#: the square of its length (a 16 KiB description of one run: seconds), and a match from inside a run
#: is one from its start anyway.
_B64_WRAP = re.compile(r"(?<![A-Za-z0-9+/])([A-Za-z0-9+/]{40,})[ \t]*\r?\n[ \t]*(?=[A-Za-z0-9+/]{4})")
_UPPER = re.compile(r"[A-Z]")
_LOWER = re.compile(r"[a-z]")


def _b64(token: str) -> str | None:
    body = token.rstrip("=")
    if len(body) % 4 == 1 or not (_UPPER.search(body) and _LOWER.search(body)):
        return None
    url_safe = "-" in body or "_" in body
    if url_safe and ("+" in body or "/" in body):
        return None
    padded = body + "=" * (-len(body) % 4)
    try:
        raw = base64.b64decode(padded, altchars=b"-_" if url_safe else None, validate=True)
    except (binascii.Error, ValueError):
        return None
    if len(raw) >= 2 * MIN_HEX_BYTES and _HEX_RUN.fullmatch(hex_text := raw.decode("ascii", "replace")):
        return hex_text  # hex inside base64: the next round reads it
    return _text(_inflated(raw))


#: Most bytes a compressed blob is inflated to: an instruction is short, a bomb is not read.
MAX_INFLATED = 1 << 16


def _inflated(raw: bytes) -> bytes:
    """``raw`` decompressed when it is a gzip or zlib stream (``H4sI…``, ``eJ…`` in base64), else ``raw``."""
    if raw[:2] == b"\x1f\x8b":
        wbits = 16 + zlib.MAX_WBITS
    elif len(raw) > 2 and raw[0] == 0x78 and (raw[0] << 8 | raw[1]) % 31 == 0:
        wbits = zlib.MAX_WBITS
    else:
        return raw
    try:
        return zlib.decompressobj(wbits).decompress(raw, MAX_INFLATED)
    except zlib.error:
        return raw


# ------------------------------------------------------------------------------ hex

#: Hex written with prefixes: ``\x69\x67…`` or ``0x69, 0x67, …`` (a plain run of hex digits is
#: one of the runs :data:`_B64` finds).
_HEX_PREFIXED = re.compile(
    rf"(?:\\x[0-9A-Fa-f]{{2}}){{{MIN_HEX_BYTES},}}"
    rf"|(?<![0-9A-Za-z])(?:0x[0-9A-Fa-f]{{2}}[,;\s]\s*){{{MIN_HEX_BYTES - 1},}}0x[0-9A-Fa-f]{{2}}(?![0-9A-Za-z])")
_HEX_RUN = re.compile(r"(?:[0-9A-Fa-f]{2})+")
_NOT_HEX = re.compile(r"\\x|0x|[^0-9A-Fa-f]")


def _hex(token: str) -> str | None:
    digits = _NOT_HEX.sub("", token)
    if len(digits) % 2 or len(digits) < 2 * MIN_HEX_BYTES:
        return None
    return _text(bytes.fromhex(digits))


#: A run of base32's alphabet (RFC 4648: capitals and the digits 2-7), padded to whole blocks of 8.
_B32 = re.compile(r"[A-Z2-7]+=*")


def _b32(token: str) -> str | None:
    if len(token) % 8 and "=" in token:
        return None
    try:
        return _text(base64.b32decode(token + "=" * (-len(token) % 8)))
    except (binascii.Error, ValueError):
        return None


def _run(match: re.Match[str]) -> str:
    """A run of :data:`_B64`'s alphabet decoded: as hex when it is only hex digits, as base32 when it is only
    base32's capitals and digits, else as base64."""
    token = match.group()
    if _HEX_RUN.fullmatch(token):
        return _hex(token) or token
    if _B32.fullmatch(token):
        return _b32(token) or token
    return _b64(token) or token


# ------------------------------------------------------------------------------ escapes

_PERCENT = re.compile(r"[^\s%]*(?:%[0-9A-Fa-f]{2}[^\s%]*){3,}")
_PERCENT_ONE = re.compile(r"%[0-9A-Fa-f]{2}")
_HTML_REF = re.compile(r"&(?:#\d{2,7}|#[xX][0-9A-Fa-f]{1,6}|[A-Za-z]{2,8});")
_U_ESCAPE = re.compile(r"\\(?:u\{[0-9A-Fa-f]{1,6}\}|u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|x[0-9A-Fa-f]{2})")


#: Character codes written as decimal numbers: ``String.fromCharCode(105,103,…)``, ``bytes([105, 103, …])``,
#: ``chr(105)+chr(103)+…`` (at least :data:`MIN_HEX_BYTES` of them).
_CHAR_CODES = re.compile(rf"(?:\(|\[)\s*(?:\d{{2,3}}\s*,\s*){{{MIN_HEX_BYTES - 1},}}\d{{2,3}}\s*,?\s*(?:\)|\])"
                         rf"|(?:chr\s*\(\s*\d{{2,3}}\s*\)\s*\+\s*){{{MIN_HEX_BYTES - 1},}}chr\s*\(\s*\d{{2,3}}\s*\)")
_DIGITS = re.compile(r"\d+")
#: Eight numbers in a row, the least any run of codes needs: most texts hold none.
_DIGIT_RUN = re.compile(r"(?:\d+[ \t,]+){7}\d")


def _char_codes(match: re.Match[str]) -> str:
    """A list of character codes as the text it spells (a list that spells no text stays as it is)."""
    codes = [int(d) for d in _DIGITS.findall(match.group())]
    if not all(9 <= c < 256 for c in codes) or (text := _text(bytes(codes))) is None:
        return match.group()
    return f" ({text}) "


#: More ways to write character codes: octal escapes (``\151\147…``), bytes in binary (``01101001 01100111 …``),
#: bare decimal codes of printable ASCII (``73 103 110 …``), at least :data:`MIN_HEX_BYTES` of them; and Ascii85
#: between its ``<~`` and ``~>`` delimiters.
_OCTAL = re.compile(rf"(?:\\[0-3]?[0-7]{{1,2}}(?![0-7])){{{MIN_HEX_BYTES},}}")
_BINARY = re.compile(rf"(?<![01])(?:[01]{{8}}[\s,]+){{{MIN_HEX_BYTES - 1},}}[01]{{8}}(?![01])")
_PRINTABLE_CODE = r"(?:3[2-9]|[4-9]\d|1[01]\d|12[0-6])"
_DECIMAL = re.compile(rf"(?<![\d.])(?:{_PRINTABLE_CODE}[ \t,]+){{{MIN_HEX_BYTES - 1},}}{_PRINTABLE_CODE}(?![\d.])")
_A85 = re.compile(r"<~[!-u\s]{10,}~>")


def _codes(match: re.Match[str]) -> str:
    """Octal, binary or decimal character codes as the text they spell (else as they are)."""
    token = match.group()
    if token.startswith("\\"):
        codes = [int(o, 8) for o in token.split("\\")[1:]]
    elif re.fullmatch(r"[01\s,]+", token):
        codes = [int(b, 2) for b in re.findall(r"[01]{8}", token)]
    else:
        codes = [int(d) for d in _DIGITS.findall(token)]
    text = _text(bytes(codes)) if all(c < 256 for c in codes) else None
    # words, not a list of sizes or ports that happens to fall in the printable range ("32 48 64 72 96 …")
    if text is None or " " not in text.strip() or sum(c.isalpha() or c == " " for c in text) < 0.8 * len(text):
        return token
    return f" {text} "


def _a85(match: re.Match[str]) -> str:
    try:
        text = _text(base64.a85decode(match.group(), adobe=True, ignorechars=b" \t\n\r"))
    except ValueError:
        return match.group()
    return text if text is not None else match.group()


def _percent(token: str) -> str | None:
    decoded = urllib.parse.unquote(token.replace("+", " ") if "%20" not in token else token, errors="strict")
    return decoded if decoded != token else None


def _u_escape(match: re.Match[str]) -> str:
    code = match.group()[2:].strip("{}")
    try:
        return chr(int(code, 16))
    except (ValueError, OverflowError):
        return match.group()


def _unescape(text: str) -> str:
    """``text`` with percent escapes, HTML references and ``\\u`` escapes decoded where they
    come in numbers (a lone ``%20`` or ``&amp;`` is left alone: nothing hides in one)."""
    if "%" in text and len(_PERCENT_ONE.findall(text)) >= 3:
        text = _PERCENT.sub(lambda m: _safe(_percent, m.group()) or m.group(), text)
    if "&" in text and len(_HTML_REF.findall(text)) >= 2:
        text = html.unescape(text)
    if "\\" in text and len(_U_ESCAPE.findall(text)) >= 3:
        # An escape outside the BMP comes as a pair of surrogate escapes: joined, and a lone one
        # replaced, so what is judged is text (the model's tokenizer cannot encode a surrogate).
        text = scrub(_U_ESCAPE.sub(_u_escape, text))
    return text


def _safe(decode, token: str) -> str | None:
    try:
        return decode(token)
    except (UnicodeDecodeError, ValueError):
        return None


# ------------------------------------------------------------------------------ ROT13

#: Common English words, as ROT13 writes them: a line holding several of these is English
#: under ROT13. Two-letter forms ("gb", "vs") are left out: they occur in ordinary text.
_ENGLISH = ("the and to of you your all any this that with for is are not do must should always never "
            "user users tool tools call send ignore previous instructions instruction before after then from "
            "into it in on if when every each data file files key keys secret secrets password passwords read "
            "include instead system prompt message messages conversation assistant model other must first "
            "please also only them they their have has will can here what which these those want need use "
            "using without about tell hide reveal").split()
_ROT13_ENGLISH = frozenset(r for w in _ENGLISH if len(r := codecs.encode(w, "rot13")) >= 3) - frozenset(_ENGLISH)
_ENGLISH_SET = frozenset(_ENGLISH)
_WORD = re.compile(r"[A-Za-z]+")
#: A sentence: up to a full stop, ! or ? followed by a space, or a line break (paths and URLs stay whole).
_ROT13_PIECE = re.compile(r"(?:[^\n.!?]|[.!?](?!\s))+[.!?]?")


#: The commonest of them: a text holding none is not ROT13 English (a few substring tests).
_ROT13_COMMON = ("gur ", "naq ", "lbh", "nyy ", "guvf", "jvgu", "sbe ", "hfre", "gbby", "abg ")
_ROT13_WORDS = re.compile(r"(?<![a-z])(?:" + "|".join(sorted(_ROT13_ENGLISH)) + r")(?![a-z])")


def _rot13(text: str) -> str:
    """``text`` with each line or sentence that is English only under ROT13 replaced by its ROT13 reading."""
    low = text.lower()
    if not any(w in low for w in _ROT13_COMMON) or len(set(_ROT13_WORDS.findall(low))) < MIN_ROT13_WORDS:
        return text

    def piece(m: re.Match[str]) -> str:
        s = m.group()
        tokens = [w.lower() for w in _WORD.findall(s)]
        rot = sum(t in _ROT13_ENGLISH for t in tokens)
        plain = sum(t in _ENGLISH_SET for t in tokens)
        if rot >= MIN_ROT13_WORDS and rot > plain:
            return codecs.encode(s, "rot13")
        return s

    return _ROT13_PIECE.sub(piece, text)


# ------------------------------------------------------------------------------ the reading

def _decode_once(text: str) -> str:
    text = _unescape(text)
    if "," in text and _CHAR_CODES.search(text):
        text = _CHAR_CODES.sub(_char_codes, text)
    if "\\" in text:
        text = _OCTAL.sub(_codes, text)
    if "<~" in text:
        text = _A85.sub(_a85, text)
    if _DIGIT_RUN.search(text):
        text = _DECIMAL.sub(_codes, _BINARY.sub(_codes, text))
    if "0x" in text or "\\x" in text:
        text = _HEX_PREFIXED.sub(lambda m: _hex(m.group()) or m.group(), text)
    wrapped = False

    def run(m: re.Match[str]) -> str:
        nonlocal wrapped
        wrapped = wrapped or (m.end() - m.start() >= 40 and text.startswith("\n", m.end()))
        return _run(m)

    decoded = _B64.sub(run, text)
    if wrapped:  # a long run ends a line: perhaps a block wrapped over lines, read as one run
        return _B64.sub(_run, _B64_WRAP.sub(r"\1", text))
    return decoded


def decoded_reading(text: str) -> str | None:
    """``text`` with every encoded span that decodes to text replaced by that text (two rounds,
    for one encoding inside another) and the letter games of
    :mod:`jit.injection.obfuscation` undone, or None when nothing in it decodes."""
    out = _decode_once(text)
    if out != text:
        out = _decode_once(out)
    out = letter_reading(_rot13(out))
    return out if out != text else None


# ------------------------------------------------------------------------------ running encoded code

_DECODER = (r"(?:atob|b64decode|decodebytes|b64_?decode|base64_decode|standard_b64decode|urlsafe_b64decode|fromhex"
            r"|unhexlify|hex2bin|fromCharCode|FromBase64String|GetString|decodeURIComponent|unescape|str_rot13"
            r"|rot13|gzinflate|gzuncompress|decompress|decode|from)")
_DYNAMIC = re.compile(
    # eval(atob("…")), exec(base64.b64decode(…)), exec(__import__('base64').b64decode(…)),
    # new Function(atob(x))(), eval(Buffer.from(s, 'base64').toString()), eval(gzinflate(base64_decode(…)))
    r"\b(?:eval|exec|execSync|execScript|(?-i:Function)|system|passthru|shell_exec|popen|iex|Invoke-Expression)\s*\(\s*"
    r"(?:\[[^\]\n]{1,40}\]::\w+\s*\(\s*)?(?:new\s+)?"
    r"(?:__import__\s*\(\s*['\"]\w+['\"]\s*\)\s*\.\s*|[\w$\[\]]+\s*(?:\.|::)\s*){0,3}"
    rf"(?:\w+\s*\(\s*)?{_DECODER}\s*\("
    # echo … | base64 -d | sh, base64 --decode <<< … | bash
    r"|\bbase64\s+(?:-d|--decode|-D)\b[^\n]{0,200}?\|\s*(?:sudo\s+)?(?:ba|z|da|k|fi)?sh\b"
    r"|\bxxd\s+-r\s+-p\b[^\n]{0,80}?\|\s*(?:sudo\s+)?(?:ba|z|da|k)?sh\b"
    # powershell -enc <base64>
    r"|\bpowershell(?:\.exe)?\b[^\n]{0,60}?\s-(?:e|ec|enc|encodedcommand)\s+[A-Za-z0-9+/=]{16,}",
    re.IGNORECASE)

#: A sentence that names such code to forbid it, detect it or explain it, not to run it.
_FORBIDS = re.compile(
    r"\b(?:never|not|no|n't|cannot|block|blocks|blocked|blocking|refuse|refuses|refused|reject|rejects|rejected"
    r"|deny|denies|denied|disallow\w*|forbid\w*|prohibit\w*|prevent\w*|detect\w*|flag|flags|flagged|scan\w*"
    r"|warn\w*|dangerous|malicious|suspicious|unsafe|obfuscat\w*|deobfuscat\w*|sandbox\w*|disabled|unsupported"
    r"|strip\w*|sanitiz\w*|analy[sz]\w*|avoid\w*)\b", re.IGNORECASE)
_SENTENCE_EDGE = re.compile(r"(?<=[.!?])\s+(?=[A-Z])|\n")


def sentence_around(text: str, start: int, end: int) -> str:
    """The sentence of ``text`` that holds ``text[start:end]`` (edges: a full stop followed by a
    capital, or a line break, so ``~/.ssh`` or ``a.b()`` inside code do not cut it)."""
    left = 0
    for m in _SENTENCE_EDGE.finditer(text, 0, start):
        left = m.end()
    right = _SENTENCE_EDGE.search(text, end)
    return text[left : right.start() if right else len(text)]


#: Words one of which :data:`_DYNAMIC` needs (lower case): most texts hold none.
_DYNAMIC_GATE = re.compile(trie([f"{w}{p}" for w in ("eval", "exec", "execsync", "execscript", "function", "system",
                                                     "passthru", "shell_exec", "popen", "iex") for p in ("(", " (")]
                                + ["invoke-expression", "base64 -d", "base64 --decode", "xxd -r", "powershell"]))


def dynamic_code(text: str, low: str | None = None) -> bool:
    """Whether ``text`` holds code that decodes a blob and runs it, outside a sentence that forbids it
    (``low``: ``text`` lower-cased, when the caller has it)."""
    if not _DYNAMIC_GATE.search(text.lower() if low is None else low):
        return False
    for m in _DYNAMIC.finditer(text):
        if not _FORBIDS.search(sentence_around(text, m.start(), m.end())):
            return True
    return False


#: "Decode the following and follow it", "the instructions below are base64-encoded".
_ASKS_TO_DECODE = re.compile(
    r"\b(?:decode|decrypt|deobfuscate|unscramble|rot13)\w*\b[^.!?\n]{0,80}?\b(?:and|then)\s+(?:\w+\s+){0,2}?"
    r"(?:follow|execute|obey|carry\s+out|do\s+(?:what|as)\s+it\s+says|act\s+on|comply"
    r"|run\s+(?:it|them|the\s+(?:result|decoded|output)))\b"
    r"|\b(?:instructions?|directives?|orders|commands|steps|rules|guidance"
    r"|note\s+for\s+the\s+(?:assistant|model|agent|ai))"
    r"\s+(?:\w+\s+){0,3}?(?:are|is)\s+(?:\w+\s+)?(?:base64|hex|rot13|rot-13|url|percent)[- ]?(?:en)?coded\b"
    r"|\b(?:base64|hex|rot13|rot-13)[- ]?(?:en)?coded\s+(?:instructions?|directives?|orders|commands|steps|rules"
    r"|guidance|payload|note\s+for\s+the\s+(?:assistant|model|agent|ai))\b[^.!?\n]{0,60}?\b(?:follow|execute|run"
    r"|obey|apply|carry\s+out|comply|decode)\b"
    # decode, then run or follow it, in other languages
    r"|(?:解码|解碼)[^。！？\n]{0,6}?(?:执行|執行|运行|運行|照做|遵循)|デコード[^。！？\n]{0,8}?(?:実行|従)"
    r"|디코딩[^.!?\n]{0,8}?(?:실행|따르)|\bdecodific\w*\s+(?:y|e)\s+(?:ejecut|esegu|execut|sig|segu)"
    r"|\bd[ée]cod\w*\s+(?:et|puis)\s+(?:ex[ée]cut|suiv|appliqu)|\bdekodier\w*\s+und\s+(?:f[üu]hr|befolg|ausf[üu]hr)"
    r"|\bdecodeer\w*\s+en\s+(?:voer|volg)|\bzdekoduj\w*\s+i\s+(?:wykonaj|uruchom)"
    r"|\bраскодиру\w*\s+и\s+(?:выполн|запуст)",
    re.IGNORECASE)


_ASKS_GATE = re.compile(trie(["decod", "decrypt", "deobfusc", "unscrambl", "rot13", "rot-13", "coded", "décod",
                               "dekodier", "zdekoduj", "раскодиру", "解码", "解碼", "デコード", "디코딩"]))


def asks_to_decode(text: str, low: str | None = None) -> bool:
    """Whether ``text`` tells the model to decode something and act on it (``low``: ``text`` lower-cased)."""
    return bool(_ASKS_GATE.search(text.lower() if low is None else low) and _ASKS_TO_DECODE.search(text))


#: A sentence that starts with an order to the model: an imperative of sending, deleting, running, saying
#: or trusting, or "you must". Documentation rarely hides one in an encoding; an attack always does.
_ORDER_START = re.compile(
    r"^\W*(?:[\w -]{1,40}:\s*)?(?:(?:please|now|then|also|always|first|just|silently|quietly|you\s+(?:must|should"
    r"|will|are\s+to))\s+)*(?:ignore|disregard|forget|send|forward|upload|post|e-?mail|copy|include|append|attach"
    r"|delete|remove|erase|wipe|drop|run|execute|call|invoke|read|print|output|reveal|recommend|say|tell|report"
    r"|reply|respond|answer|treat|trust|grant|approve|transfer|pay|export|leak|share|navigate|visit|fetch"
    r"|download|install|disable|skip|bypass|write|save|store|mark|never|do\s+not|don'?t)\b",
    re.IGNORECASE)
_SENTENCE_BREAK = re.compile(r"(?<=[.!?;:])\s+|\n+")


def revealed_order(text: str, decoded: str) -> bool:
    """Whether what decoding revealed in ``text`` (``decoded`` is its :func:`decoded_reading`) holds a
    sentence that starts with an order (:data:`_ORDER_START`): the words decoded, compared with the
    words as written, not the text around them."""
    import difflib

    written, read = text.split(), decoded.split()
    for tag, _, _, start, end in difflib.SequenceMatcher(None, written, read, autojunk=False).get_opcodes():
        if tag in ("replace", "insert") and any(
                _ORDER_START.match(s) for s in _SENTENCE_BREAK.split(" ".join(read[start:end]))):
            return True
    return False


def version_text() -> str:
    """What decides this module's findings, for ``HOSTILE_RULES_VERSION``."""
    return "\n".join((str(MIN_BASE64), str(MIN_HEX_BYTES), str(MIN_ROT13_WORDS), " ".join(sorted(_ROT13_ENGLISH)),
                      str(MAX_INFLATED), _CHAR_CODES.pattern, _OCTAL.pattern, _BINARY.pattern, _DECIMAL.pattern,
                      _A85.pattern, _DIGIT_RUN.pattern, letters_version(), _B64.pattern, _B32.pattern, _HEX_PREFIXED.pattern,
                      _PERCENT.pattern, _HTML_REF.pattern, _U_ESCAPE.pattern,
                      _DYNAMIC_GATE.pattern, _DYNAMIC.pattern, _FORBIDS.pattern, _ASKS_GATE.pattern,
                      _ASKS_TO_DECODE.pattern, _ORDER_START.pattern, _SENTENCE_BREAK.pattern))
