"""The offline analyzer and what every analyzer shares: the limits of an analysis,
:func:`normalize_analysis`, :func:`condense`, the :class:`ToolAnalyzer` protocol,
and the same vocabulary applied to task text (:func:`analyze_task`).

Deterministic, no network: categories, capabilities and domains from the tool's
name, description, parameters and server name (:mod:`jit.analysis.vocab`), an affinity
score per configured shard, a condensed line and use cases. Both
:mod:`jit.analysis.llm_analyzer` (which falls back to it) and :mod:`jit.analysis.analyze` (which
runs analyzers over the catalog and picks one) build on this module, so neither
imports the other back.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..config import ShardConfig
from ..models import ToolAnalysis, ToolDef
from ..text import CJK, first_sentence, identifier_stems, prose_stems, remove_hidden, split_identifier, stem
from .affinity import affinity_score, clamp_score, extended_lexicon, extra_categories, shard_profiles
from .capabilities import merge_capabilities, side_effects
from .vocab import (
    CAPABILITY_VERB_PHRASES,
    CAPABILITY_VERBS,
    CATEGORY_NOUNS,
    DOMAIN_LEXICON,
    STOPWORDS,
    TASK_STEP_VERBS,
    CODE_CHANGE_WORDS,
    CODE_EDIT_WORDS,
    Evidence,
    cjk_terms,
    name_tokens,
    normalize_capability,
    normalize_category,
    normalize_domain,
    with_bigrams,
)

__all__ = [
    "ANALYZER_DEFERRED",
    "ANALYZER_FALLBACK",
    "ANALYZER_OFFLINE",
    "CONDENSED_MAX_CHARS",
    "DOCUMENT_FORMATS",
    "FLAGGED_AFFINITY_CAP",
    "MAX_CAPABILITIES",
    "MAX_CATEGORIES",
    "MAX_DOMAINS",
    "MAX_USE_CASES",
    "OfflineAnalyzer",
    "TaskProfile",
    "ToolAnalyzer",
    "analyze_task",
    "condense",
    "edits_remotely",
    "file_targets",
    "normalize_analysis",
    "target_format",
]

# The same logger name as before the split, so log filters keep working.
log = logging.getLogger("jit.analysis.analyze")

#: ``ToolAnalysis.analyzer`` of the offline analyzer.
ANALYZER_OFFLINE = "offline"
#: The LLM answered, but not validly for this tool: the offline analysis stands (not re-asked).
ANALYZER_FALLBACK = "offline-fallback"
#: The LLM request failed (rate limit, 5xx, network, auth): the offline analysis stands
#: until the next :func:`analyze_pending` with an LLM analyzer asks again.
ANALYZER_DEFERRED = "offline-deferred"

CONDENSED_MAX_CHARS = 80
#: The highest offline shard affinity of a flagged tool: text that tries to steer the
#: model is not trusted to describe the tool either (keyword stuffing is a cheap attack).
FLAGGED_AFFINITY_CAP = 50
MAX_CATEGORIES = 3
MAX_CAPABILITIES = 4
MAX_DOMAINS = 3
MAX_USE_CASES = 4
_USE_CASE_CHARS = 120


@runtime_checkable
class ToolAnalyzer(Protocol):
    """Tags tools. ``analyze`` returns one analysis per tool, in order, and never
    raises because one tool is bad (that tool gets a fallback analysis)."""

    name: str

    def analyze(self, tools: Sequence[ToolDef]) -> list[ToolAnalysis]: ...


# --------------------------------------------------------------------------- text features

#: HTML elements that format a description. Only these count as tags: an angle-bracketed
#: word that is no such element is a placeholder (``given as <revision>:<path>``) and stays.
_HTML_TAGS = (
    "a|abbr|b|blockquote|br|caption|center|cite|code|dd|del|details|div|dl|dt|em|font|h[1-6]|hr|i|img|"
    "ins|kbd|li|mark|ol|p|pre|q|s|samp|small|span|strike|strong|sub|summary|sup|table|tbody|td|tfoot|th|"
    "thead|tr|tt|u|ul|var"
)
#: Markdown emphasis, headings, tables and code marks, a blockquote's leading ``>``, a link's
#: brackets and target, HTML comments and the tags above (with their attributes). An
#: underscore inside a word (``channel_id``) is part of a name, not emphasis, and stays.
_MARKUP = re.compile(
    r"[#*`|~]+|(?<!\w)_+|_+(?!\w)|^[ \t]*>+|\[(?=[^\]]*\]\()|\]\([^)]*\)|<!--.*?-->"
    rf"|</?(?:{_HTML_TAGS})(?:\s[^<>]{{0,200}})?/?>",
    re.IGNORECASE | re.MULTILINE | re.DOTALL,
)
_WS = re.compile(r"\s+")
#: Server-name tokens that say nothing about what a tool does.
_SERVER_NOISE = frozenset({"mcp", "server", "servers", "model", "context", "protocol", "tool", "tools", "official"})
#: Description characters the offline analyzer reads; the rest of a long description is examples.
_DESC_CHARS = 1200
_PARAM_DESC_CHARS = 300


# Where a word appears decides how much it says about the tool.
_W_NAME, _W_SERVER, _W_LEAD, _W_DESC, _W_PARAM, _W_PARAM_DESC = 3.0, 2.0, 1.5, 0.75, 1.0, 0.25


def _param_features(schema: Any) -> tuple[list[str], list[str]]:
    """Stemmed parameter names (with ``uri``/``email`` formats as words) and description words."""
    names: list[str] = []
    desc_parts: list[str] = []
    budget = _PARAM_DESC_CHARS
    props = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(props, dict):
        return names, []
    for pname, pschema in list(props.items())[:40]:
        names.extend(identifier_stems(str(pname)))
        if isinstance(pschema, dict):
            fmt = pschema.get("format")
            if isinstance(fmt, str):
                names.append(stem({"uri": "url", "uri-reference": "url"}.get(fmt, fmt)))
            d = pschema.get("description")
            if isinstance(d, str) and budget > 0:
                desc_parts.append(d[:budget])
                budget -= len(d)
    return names, prose_stems(" ".join(desc_parts))


@dataclass(frozen=True, slots=True)
class _Features:
    categories: dict[str, float]
    capabilities: dict[str, float]
    domains: dict[str, float]
    description: str  # cleaned (hidden characters and, if flagged, instructions removed)


# --------------------------------------------------------------------------- normalisation (shared)


def condense(text: str, fallback_name: str = "", limit: int = CONDENSED_MAX_CHARS) -> str:
    """One line for the Condensed tier: the first sentence, trimmed on a word boundary to ``limit``.

    Markup and hidden characters are removed; an empty description yields the
    tool's name as words ("get_weather" → "Get weather").
    """
    clean = _MARKUP.sub(" ", remove_hidden(text))
    line = _WS.sub(" ", first_sentence(clean)).strip()
    if not line:
        words = split_identifier(fallback_name)
        line = " ".join(words).capitalize() if words else ""
    if len(line) <= limit:
        return line
    cut = line[: limit - 1]
    if not CJK.search(cut[-1:]) and " " in cut:
        head = cut.rsplit(" ", 1)[0].rstrip(",;:-–(")
        if len(head) >= limit // 2:
            cut = head
    return cut.rstrip() + "…"


def normalize_analysis(
    *,
    categories: Iterable[Any],
    capabilities: Iterable[Any],
    domains: Iterable[Any],
    shard_affinity: Mapping[str, Any],
    condensed: str,
    use_cases: Iterable[Any],
    analyzer: str,
    flags: Iterable[str],
    shards: Iterable[str],
    extra_categories: Iterable[str] = (),
) -> ToolAnalysis:
    """A valid :class:`ToolAnalysis` from untrusted values: unknown labels dropped, labels
    de-duplicated and capped in number, scores clamped to 0–100, only configured shards kept,
    text trimmed. Every analyzer's output passes through here."""
    extra = frozenset(extra_categories)

    def labels(values: Iterable[Any], norm: Any, limit: int) -> tuple[str, ...]:
        out: list[str] = []
        for v in values:
            n = norm(v) if isinstance(v, str) else None
            if n and n not in out:
                out.append(n)
        return tuple(out[:limit])

    shard_names = list(shards)
    doms = labels(domains, normalize_domain, MAX_DOMAINS)
    if len(doms) > 1 and "/general" in doms:
        doms = tuple(d for d in doms if d != "/general")
    cases: list[str] = []
    for u in use_cases:
        if isinstance(u, str):
            u = _WS.sub(" ", remove_hidden(u)).strip()[:_USE_CASE_CHARS]
            if u and u not in cases:
                cases.append(u)
    return ToolAnalysis(
        categories=labels(categories, lambda v: normalize_category(v, extra), MAX_CATEGORIES),
        capabilities=labels(capabilities, normalize_capability, MAX_CAPABILITIES),
        domains=doms or ("/general",),
        shard_affinity={s: clamp_score(shard_affinity[s]) for s in shard_names if s in shard_affinity},
        condensed=condense(condensed) if condensed else "",
        use_cases=tuple(cases[:MAX_USE_CASES]),
        analyzer=analyzer,
        flags=tuple(dict.fromkeys(flags)),
    )


# --------------------------------------------------------------------------- offline analyzer


class OfflineAnalyzer:
    """The embedded default analyzer: deterministic, fast, no network.

    Evidence comes from the tool name (split on case, ``_``, ``-``), the server
    name, the description (its first sentence counts most; Chinese terms are
    mapped to English keywords), parameter names and formats, and MCP
    annotations, matched against the lexicons in :mod:`jit.analysis.vocab`. A flagged
    tool is analyzed with its instruction sentences removed and its description
    weighed at half, and its affinity is capped at :data:`FLAGGED_AFFINITY_CAP`,
    so injected text cannot raise its own standing.
    """

    name = ANALYZER_OFFLINE

    def __init__(self, shards: Mapping[str, ShardConfig]) -> None:
        self.shards = dict(shards)
        self.extra_categories = extra_categories(self.shards)
        extra = frozenset(self.extra_categories)
        self._lexicon = extended_lexicon(extra)
        self._profiles = shard_profiles(self.shards, extra)

    def analyze(self, tools: Sequence[ToolDef]) -> list[ToolAnalysis]:
        from ..injection.detect import detect_hostile_many  # see analyze_one

        try:
            flags: list[tuple[str, ...] | None] = list(detect_hostile_many(tools))
        except Exception:  # noqa: BLE001 - one unreadable tool: each is checked on its own below
            flags = [None] * len(tools)
        return [self._analyze_safely(t, f) for t, f in zip(tools, flags, strict=True)]

    def _analyze_safely(self, tool: ToolDef, flags: tuple[str, ...] | None = None) -> ToolAnalysis:
        # The protocol promises no exception for one bad tool; a definition this code
        # cannot read still gets a neutral analysis, and the reason is logged.
        try:
            return self.analyze_one(tool, flags=flags)
        except Exception as exc:  # noqa: BLE001
            log.warning("offline analysis of %s failed (%s: %s); using a neutral analysis",
                        getattr(tool, "key", tool), type(exc).__name__, exc)
            return ToolAnalysis(capabilities=("/read",), domains=("/general",),
                                shard_affinity=dict.fromkeys(self.shards, 0),
                                condensed=condense("", str(getattr(tool, "name", ""))), analyzer=self.name)

    def analyze_one(self, tool: ToolDef, *, analyzer: str | None = None,
                    flags: tuple[str, ...] | None = None) -> ToolAnalysis:
        """The offline analysis of one tool (``analyzer`` overrides the recorded name; ``flags``,
        when given, are :func:`~jit.injection.detect.detect_hostile`'s, found in a batch)."""
        # The injection rules take ~0.1 s to import: a process that only compiles never needs them.
        from ..injection.detect import detect_hostile

        if flags is None:
            flags = detect_hostile(tool)
        f = self._features(tool, flagged=bool(flags))
        cats = _select(f.categories, minimum=2.0, ratio=0.45, limit=MAX_CATEGORIES)
        caps = _select(f.capabilities, minimum=2.0, ratio=0.0, limit=3) or _select(
            f.capabilities, minimum=0.5, ratio=0.0, limit=1
        )
        caps = merge_capabilities(caps, side_effects(tool), MAX_CAPABILITIES)
        doms = _select(f.domains, minimum=3.0, ratio=0.5, limit=2) or ["/general"]
        confident = [(c, min(1.0, 0.55 + f.categories[c] / 10.0)) for c in cats]
        affinity = {p.name: affinity_score(p, confident, caps) for p in self._profiles}
        if flags:
            affinity = {k: min(v, FLAGGED_AFFINITY_CAP) for k, v in affinity.items()}
        return ToolAnalysis(
            categories=tuple(cats),
            capabilities=tuple(caps),
            domains=tuple(doms),
            shard_affinity=affinity,
            condensed=condense(f.description, tool.name),
            use_cases=_use_cases(tool, cats, caps),
            analyzer=analyzer or self.name,
            flags=flags,
        )

    def affinity(self, categories: Sequence[str], capabilities: Sequence[str]) -> dict[str, int]:
        """Shard affinity for given labels (how the LLM path fills a shard it left out)."""
        confident = [(c, 1.0) for c in categories]
        return {p.name: affinity_score(p, confident, list(capabilities)) for p in self._profiles}

    def _features(self, tool: ToolDef, *, flagged: bool) -> _Features:
        from ..injection.detect import strip_instructions  # see analyze_one

        raw = tool.description or ""
        desc = strip_instructions(raw) if flagged else remove_hidden(raw)
        head = desc[:_DESC_CHARS]
        lead = first_sentence(head)
        rest = head[len(lead):]
        name_stems = identifier_stems(tool.name)
        name_toks = name_tokens(name_stems) + with_bigrams(prose_stems(tool.title or ""))
        server_tokens = [s for s in identifier_stems(tool.server) if s not in _SERVER_NOISE]
        lead_stems = prose_stems(lead)
        cjk_lead = cjk_terms(lead)
        param_names, param_desc = _param_features(tool.input_schema)

        ev = Evidence()
        ev.add(name_toks, _W_NAME)
        ev.add(server_tokens, _W_SERVER)
        # A flagged description is weak evidence about its own tool.
        trust = 0.5 if flagged else 1.0
        ev.add(with_bigrams(lead_stems), _W_LEAD * trust)
        ev.add(cjk_terms(head), _W_LEAD * trust)
        ev.add(with_bigrams(prose_stems(rest)), _W_DESC * trust)
        ev.add(param_names, _W_PARAM)
        ev.add(param_desc, _W_PARAM_DESC)
        categories = ev.score(self._lexicon, STOPWORDS)

        # A domain is a claim about an ecosystem: only the name, server, lead sentence
        # and parameter names count (a description that mentions HTML in passing is not front-end).
        dv = Evidence()
        dv.add(name_toks, _W_NAME)
        dv.add(server_tokens, _W_SERVER)
        dv.add(with_bigrams(lead_stems), _W_LEAD)
        dv.add(param_names, _W_PARAM)
        domains = dv.score(DOMAIN_LEXICON)

        # Capabilities come from verbs: the tool name's first verb says most, then
        # the description's leading verb ("Search the web ..."), then other words.
        cv = Evidence()
        first = True
        for s in name_toks:
            if s in CAPABILITY_VERBS:
                cv.add((s,), 3.0 if first else 2.0)
                first = False
        if lead_stems and lead_stems[0] in CAPABILITY_VERBS:
            cv.add(lead_stems[:1], 2.5)
        cv.add(cjk_lead[:1], 2.0)
        cv.add(cjk_lead[1:], 1.0)
        cv.add(with_bigrams(lead_stems[1:]), 0.5)
        capabilities = cv.score(CAPABILITY_VERBS)
        ann = tool.annotations if isinstance(tool.annotations, dict) else {}
        if ann.get("readOnlyHint") is True:
            capabilities["/read"] = capabilities.get("/read", 0.0) + 1.0
        if ann.get("destructiveHint") is True and ann.get("readOnlyHint") is not True:
            capabilities["/delete"] = capabilities.get("/delete", 0.0) + 1.0
        return _Features(categories, capabilities, domains, desc)


def _select(scores: Mapping[str, float], *, minimum: float, ratio: float, limit: int) -> list[str]:
    """Labels scoring at least ``minimum`` and ``ratio`` × the best, strongest first (ties by name)."""
    if not scores:
        return []
    top = max(scores.values())
    floor = max(minimum, ratio * top)
    ranked = sorted((s for s in scores.items() if s[1] >= floor), key=lambda kv: (-kv[1], kv[0]))
    return [k for k, _ in ranked[:limit]]


def _use_cases(tool: ToolDef, categories: Sequence[str], capabilities: Sequence[str]) -> tuple[str, ...]:
    out = []
    words = split_identifier(tool.name)
    if words:
        out.append(" ".join(words))
    if categories and capabilities:
        noun = CATEGORY_NOUNS.get(categories[0], categories[0].replace("_", " "))
        out.append(f"{CAPABILITY_VERB_PHRASES.get(capabilities[0], capabilities[0].strip('/'))} {noun}")
    return tuple(dict.fromkeys(out))


# --------------------------------------------------------------------------- tasks


@dataclass(frozen=True, slots=True)
class TaskProfile:
    """What a task asks for, in the tool vocabulary; the compiler matches it against tool analyses.

    Scores are 0–100, strongest first in the tuples.
    """

    categories: tuple[str, ...]
    capabilities: tuple[str, ...]
    domains: tuple[str, ...]
    category_scores: dict[str, int] = field(default_factory=dict)
    capability_scores: dict[str, int] = field(default_factory=dict)
    #: Capabilities of steps the task implies without a word naming a tool ("fix" a write, "run
    #: the tests" an execution: ``TASK_STEP_VERBS``), beyond ``capabilities``. They give no score
    #: points (as labels they would lift every tool with that capability); the compiler gives
    #: such a step its tool (rules/policy.dl, ``step_capability``).
    implied: tuple[str, ...] = ()
    #: Local files the task asks to write ("save it to /root/notes/x.md", "in /root/ppt/a.pptx"):
    #: their step is ``/write``, done by a tool for the file's format (:func:`target_format`;
    #: rules/policy.dl, ``file_step``).
    file_targets: tuple[str, ...] = ()
    #: The task changes code or a config in local files ("fix the off-by-one in src/pagination.py",
    #: "switch process.env.API_URL to the VITE_ prefix") without naming a file to write: its
    #: ``/write`` step is a file edit (:func:`edits_code`; rules/policy.dl, ``file_step('edit', …)``).
    edits_code: bool = False
    #: Of ``file_targets``, the text files a clause changes in place ("add a regression test to
    #: tests/test_schedule.py", "update the version in package.json"; :func:`_file_targets`): their
    #: ``/write`` step is a file edit too (``file_step('edit', …)``), not a writer that replaces the file.
    edited_files: tuple[str, ...] = ()


#: "Clean up" or "truncate" said as an order, and what follows it in the clause: a deletion ("clean up the stale
#: branches", "truncate audit_log", "clean up the database") unless it tidies code or text (:data:`_TIDIED`).
_CLEANS = re.compile(r"\b(?:clean(?:s|ing)?[\s-]*up|cleanups?|truncat(?:e|es|ing))\b(?P<what>[^.;,!?\n]{0,60})", re.I)
#: What "clean up" or "truncate" tidies rather than removes: code, text, a document or a source file.
_TIDIED = re.compile(
    r"\b(?:code|codebase|wording|words|formatting|format|imports?|style|styles|readme|docs?|documentation|comments?"
    r"|text|titles?|descriptions?|summary|summaries|messages?|prose|copy|grammar|spelling|whitespace|indentation"
    r"|naming|names|variables?|functions?|methods?|class(?:es)?|templates?|markup|layout|css|html|strings?"
    r"|paragraphs?|sentences?|output|lines?|chars?|characters|words?)\b"
    r"|(?<![\w./-])[\w./-]+\.(?:py|js|ts|tsx|jsx|mjs|md|rst|txt|html|css|scss|java|go|rs|rb|c|cc|cpp|h|hpp|cs|kt|"
    r"swift|php"
    r"|json|ya?ml|toml|ini|cfg|sh|sql)\b", re.I)


def _removes(text: str) -> bool:
    """Whether ``text`` orders a cleanup or a truncation of things removed (:data:`_CLEANS`, :data:`_TIDIED`)."""
    return any(not _TIDIED.search(m.group("what")) for m in _CLEANS.finditer(text))


def analyze_task(text: str, shards: Mapping[str, ShardConfig] | None = None) -> TaskProfile:
    """The offline vocabulary applied to a task description.

    A task can need several kinds of tools ("search the web, chart the numbers,
    write a report"), so up to six categories are kept. ``shards`` adds the
    categories a config defines beyond the vocabulary.
    """
    extra = frozenset(extra_categories(shards or {}))
    clean = remove_hidden(text or "")
    ev = Evidence()
    ev.add(with_bigrams(prose_stems(clean)), 1.0)
    ev.add(cjk_terms(clean), 1.0)
    cat_scores = ev.score(extended_lexicon(extra), STOPWORDS)
    cap_scores = ev.score(CAPABILITY_VERBS)
    step_scores = ev.score(TASK_STEP_VERBS)
    dom_scores = ev.score(DOMAIN_LEXICON)
    cats = _select(cat_scores, minimum=1.5, ratio=0.2, limit=6)
    # A weak cue alone ("open", "content") is no intent: "open an issue" creates, "open a file" reads.
    caps = _select(cap_scores, minimum=1.5, ratio=0.2, limit=4)
    if "/delete" not in caps and _removes(clean):
        caps = [*caps, "/delete"]  # "clean up the stale branches", not "clean up the code"
        cap_scores = {**cap_scores, "/delete": max(cap_scores.get("/delete", 0.0), 2.0)}
    implied = tuple(c for c in _select(step_scores, minimum=1.5, ratio=0.2, limit=2) if c not in caps)
    targets, edited_files = _file_targets(clean)
    if targets and "/write" not in caps and "/write" not in implied:
        implied += ("/write",)  # "generate a report in notes/x.md": the file is written
    edits = not targets and ((("/write" in caps or "/write" in implied) and edits_code(clean)) or puts_into_code(clean))
    if edits and "/write" not in caps and "/write" not in implied:
        implied += ("/write",)  # "give the client in src/http.py a timeout": the file is edited
    doms = _select(dom_scores, minimum=2.0, ratio=0.5, limit=2) or ["/general"]
    return TaskProfile(
        categories=tuple(cats),
        capabilities=tuple(caps),
        domains=tuple(doms),
        category_scores={c: clamp_score(100 * min(1.0, cat_scores[c] / 6.0)) for c in cats},
        capability_scores={c: clamp_score(100 * min(1.0, cap_scores[c] / 4.0)) for c in caps},
        implied=implied,
        file_targets=targets,
        edits_code=edits,
        edited_files=edited_files,
    )


# A verb that puts something into a file, then (in the same clause) a preposition and a local
# path or file name of a text format ("save it to /root/notes/x.md", "generate a report in
# out/summary.txt", "saved at ./site/index.html") or of an office document ("summarize it in a
# PPT in /root/ppt/apple.pptx"). An office document is written by its format's tools, not by a
# text file writer: DOCUMENT_FORMATS names its format for the policy's file_step rows. PDF is
# not a target: it is made by converting, printing or rendering, and no one kind of tool does it.
_TEXT_EXTENSIONS = (
    "md|markdown|txt|text|rst|adoc|org|tex|bib|html?|css|scss|js|mjs|cjs|jsx|ts|tsx|vue|svelte|py|ipynb|"
    "rb|go|rs|java|kt|swift|c|cc|cpp|h|hpp|cs|php|sh|bash|zsh|ps1|sql|json|jsonl|ya?ml|toml|ini|cfg|conf|"
    "env|xml|csv|tsv|log|svg|dockerfile|gitignore|lock"
)
#: Office document extensions -> the format a ``file_step`` row names (every other target is ``text``).
DOCUMENT_FORMATS: Mapping[str, str] = {
    "pptx": "presentation", "ppt": "presentation", "odp": "presentation",
    "docx": "document", "doc": "document", "odt": "document", "rtf": "document",
    "xlsx": "spreadsheet", "xls": "spreadsheet", "ods": "spreadsheet",
}
_WRITE_VERBS = (
    "save|saved|saves|saving|write|writes|written|writing|wrote|create|creates|created|creating|generate|"
    "generates|generated|generating|export|exports|exported|output|outputs|store|stores|stored|draft|drafts|"
    "drafted|produce|produces|produced|put|dump|dumps|dumped|record|records|recorded|append|appends|"
    "appended|add|adds|added|insert|inserts|update|updates|updated|edit|edits|edited"
)
#: A verb that makes a thing, which writes the file it is built as ("build the pricing card as
#: src/PricingCard.tsx", "… as a React component in src/Card.tsx"), not the one it reads
#: ("build the project with the settings in config.yaml").
_BUILD_VERB = re.compile(r"\b(?:build|builds|built|building|scaffold|scaffolds|scaffolded)\b", re.IGNORECASE)
#: ... "as" or "into" the path, or "as a <thing> in" it, a few words before it, none of which says how.
_BUILT_AS = re.compile(r"\b(?:as|into)\s+(?:(?!(?:using|with|described|from|per|following|like)\b)[\w-]+\s+){0,5}?"
                       r"(?:(?:in|at|under|to)\s+)?\S*$", re.IGNORECASE)
#: A local path or file name of a text format or an office document, as group 1.
_TARGET_PATH = (rf"((?:[A-Za-z]:\\|~/|\.{{1,2}}/|/)?(?:[\w.\-]+[/\\])*[\w\-]*\.(?:{_TEXT_EXTENSIONS}|"
                rf"{'|'.join(DOCUMENT_FORMATS)}))(?![\w/\\])")
_FILE_TARGET = re.compile(
    rf"\b(?:to|in|at|into|as|on|under)\s+(?:the\s+(?:file\s+)?)?[`'\"“]?{_TARGET_PATH}", re.IGNORECASE)
_WRITE_VERB = re.compile(rf"\b(?:{_WRITE_VERBS})\b", re.IGNORECASE)
#: ... or the file is the object of a verb that makes it: "add a .gitignore", "create README.md",
#: or said to be new ("new file src/routes/health.py").
_FILE_OBJECT = re.compile(
    r"(?:\b(?:create|creates|created|add|adds|added|write|writes|generate|generates|draft|drafts|make|makes|produce"
    r"|produces)\s+(?:(?:a|an|the)\s+)?(?:new\s+|empty\s+)?|\bnew\s+file\s+(?:called\s+|named\s+)?)"
    rf"[`'\"“]?{_TARGET_PATH}", re.IGNORECASE)
#: ... or the file is the object of a verb that changes it in place, said as an instruction ("… and update
#: app/layout.tsx to match", "Edit docs/index.md", "then refactor my src/utils.py"; not "the PR updates package.json",
#: "Don't edit package-lock.json", "How do I edit nginx.conf?", "run npm version to update package.json"): a target,
#: and an edited one.
_EDITED_OBJECT = re.compile(r"(?:^|[.;:!?,]\s*|\b(?:and|then|please|also|now|just)\s+)(?:update|edit|modify|rewrite|"
                            r"refactor)\s+(?:(?:the|my|our|your|this)\s+)?(?:file\s+)?"
                            rf"[`'\"“]?{_TARGET_PATH}", re.IGNORECASE)
#: How far before the path its write verb may be (within the same clause).
_VERB_REACH = 160


# A verb that changes code or a config in place (vocab.CODE_CHANGE_WORDS), said as an instruction:
# at the start of a clause or after "and", "then", "to", "please" ("fix the null check", "; switch
# them to the VITE_ prefix"),
# not a noun or a name ("describe the fix", "the hotfix/date-parse branch", "does package.json pin?"),
# and not git's "switch to <branch>"; or a fix, change or patch made, applied or done ("make the fix
# locally in src/cart.py"; not "make the change request"). Then a sign that the task is about code: a source or config
# file's name, an identifier (snake_case, camelCase, dotted), or a word of programming. Brand names
# are not identifiers: "iPhone", "eBay" (one lower-case letter) and PascalCase ("GitHub", "YouTube",
# "LinkedIn": "change my LinkedIn headline" is no code change) do not count.
_CODE_CHANGE_VERB = re.compile(
    r"(?:^|[.;:!?,]\s*|\b(?:and|then|please|to|also|now|just)\s+)"
    "(?:" + "|".join(w + r"(?!\s+to\b)" if w == "switch" else w for w in CODE_CHANGE_WORDS)
    + r"|(?:make|apply|do|land|put\s+in)\s+(?:the|a|that|this|your|my)\s+(?:fix|fixes|change|changes|patch|edit|edits)"
    + r"(?!\s+(?:requests?|logs?|orders?|tickets?|management|boards?|notes?|history|window|freeze)\b)"
    + r")\b(?![/-])",
    re.IGNORECASE)
_CODE_SIGN = re.compile(
    rf"(?<![\w\-/])[\w\-/]*+\.(?:{_TEXT_EXTENSIONS})\b|\b[a-z]+(?:_[a-z0-9]+)+\b|\b[a-z]{{2,}}[A-Z][a-z]+\w*\b"
    r"|\b\w+\.\w+\.\w+\b|\b(?:bug|bugs|crash|crashes|exception|stack\s*trace|traceback|regression|unit\s+tests?"
    r"|function|method|class|module|compile|compiler|lint|linter|dependency|dependencies|import|imports|variable"
    r"|endpoint|null\s*pointer|off-by-one|segfault|typo)\b"
    # an issue fixed by its number is fixed in code, unless a hosted tracker is where it is fixed
    r"|\b(?i:fix(?:es|ed|ing)?|resolv\w*|address\w*)\s+(?:(?i:the|this)\s+)?(?:(?i:issues?|bugs?)\s+)?#\d+\b"
    r"(?![^.;:]*\b(?i:jira|linear|zendesk|trello|asana|monday|clickup|youtrack)\b)")


#: The source and config files of a project (of :data:`_TEXT_EXTENSIONS`: no prose, data or log).
_CODE_EXTENSIONS = (
    "html?|css|scss|js|mjs|cjs|jsx|ts|tsx|vue|svelte|py|ipynb|rb|go|rs|java|kt|swift|c|cc|cpp|h|hpp|cs|php|sh|"
    "bash|zsh|ps1|sql|json|ya?ml|toml|ini|cfg|conf|env|xml|dockerfile|gitignore"
)
#: Irregular forms of vocab.CODE_EDIT_WORDS.
_IRREGULAR = {"give": ("gave", "given")}


def _inflected(word: str) -> str:
    """A pattern of ``word``'s forms: "add", "adds", "added", "adding"; "wire", "wires", "wired",
    "wiring"; and its irregular ones ("gave", "given")."""
    regular = word[:-1] + "(?:e|es|ed|ing)" if word.endswith("e") else word + "(?:s|es|ed|ing)?"
    return "|".join((regular, *_IRREGULAR.get(word, ())))


#: A verb that puts something into code (vocab.CODE_EDIT_WORDS, in each of its forms) said as an
#: instruction, then within its clause (no comma between, at most :data:`_VERB_REACH` characters)
#: "in", "into" or "to" and a local source or config file's name right after it (so never a URL's path:
#: its scheme comes first), not a document's.
_CODE_EDIT = re.compile(
    r"(?:^|[.;:!?,]\s*|\b(?:and|then|please|to|also|now|just)\s+)(?:" + "|".join(map(_inflected, CODE_EDIT_WORDS))
    + rf")\b(?![/-])(?!\s+(?:me|us)\b)[^,.;!?\n]{{0,{_VERB_REACH}}}?\b(?:in|into|to)\s+[`'\"\u201c]?"
    + rf"(?<![\w/.:@\-])(?:[\w.\-]+/)*[\w\-]+\.(?:{_CODE_EXTENSIONS})\b(?![/\w])",
    re.IGNORECASE)


def edits_code(text: str) -> bool:
    """Whether ``text`` asks to change code or a config in place: a code-change verb and a sign
    of code (a source file's name, an identifier, a programming word). "Switch the lights off"
    and "change 100 USD to EUR" have the verb but no sign of code. See also :func:`puts_into_code`."""
    return bool(_CODE_CHANGE_VERB.search(text)) and bool(_CODE_SIGN.search(text))


def puts_into_code(text: str) -> bool:
    """Whether ``text`` asks to put something into a source or config file it names: a verb of
    vocab.CODE_EDIT_WORDS and the file in the same clause ("then give the client in
    src/http_client.py a 10 second timeout", "registered in src/app.py"). A code edit whatever the
    capabilities read: "give" is no write of a tool's, but given a file of code, it edits it."""
    return bool(_CODE_EDIT.search(text))


def target_format(path: str) -> str:
    """The format of a file a task writes: ``presentation``, ``document``, ``spreadsheet`` for an
    office document (:data:`DOCUMENT_FORMATS`), else ``text``."""
    return DOCUMENT_FORMATS.get(path.rsplit(".", 1)[-1].lower(), "text")


#: A verb that changes a file in place, the last write verb before the path in its clause: one that adds, with the
#: path after "to" or "into" ("add a regression test to tests/test_schedule.py", "append the entry to CHANGELOG.md";
#: "add a RateLimiter class in src/limits/rate_limiter.py" may make the file), or one that updates or edits, with
#: the path after "in" or "at" too ("update the version in package.json"): the file is there already.
_ADDS = re.compile(r"(?:add|adds|added|append|appends|appended|insert|inserts|inserted)", re.IGNORECASE)
_UPDATES = re.compile(r"(?:update|updates|updated|edit|edits|edited)", re.IGNORECASE)
_TO = re.compile(r"\b(?:to|into)\s+(?:the\s+(?:file\s+)?)?[`'\"\u201c]?$", re.IGNORECASE)
_IN = re.compile(r"\b(?:in|at)\s+(?:the\s+(?:file\s+)?)?[`'\"\u201c]?$", re.IGNORECASE)
#: A word that makes a verb's form an adjective ("save the edited transcript", "dump the updated schema").
_DETERMINER = re.compile(r"\b(?:the|a|an|my|our|your|this|that|these|those|all|its|their)\s+$", re.IGNORECASE)
#: A clause that says the file is made or replaced ("(create it)", "overwriting the old one", "which doesn't exist
#: yet").
_MADE_WHOLE = re.compile(r"\b(?:overwrit\w*|create\s+it|(?:doesn't|does\s+not|don't|do\s+not)\s+exist|new\s+file)\b",
                         re.IGNORECASE)


def file_targets(text: str) -> tuple[str, ...]:
    """The local text files and office documents ``text`` asks to write, in order: a path after a
    preposition, with a write verb before it in the same clause, or a build "as" or "into" it ("build
    the card as src/Card.tsx", not "build the project with the settings in config.yaml"), or the
    object of a verb that makes it ("add a .gitignore") or changes it in place (:data:`_EDITED_OBJECT`).
    (Paths are rare, so the scan is linear in ``text``.)"""
    return _file_targets(text)[0]


def _file_targets(text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """:func:`file_targets`, and of them the text files a clause changes in place, in one scan: the object of a
    verb that changes it ("update app/layout.tsx to match", :data:`_EDITED_OBJECT`), or a path whose clause's last
    write verb (not a verb's form after a determiner, "the updated schema") adds, with the path after "to" or
    "into", or updates or edits, with the path after "to", "into", "in" or "at" (see :data:`_ADDS`); not a file the
    task makes ("create docs/setup.md and add … to docs/setup.md", "(create it)", "overwriting the old one", "which
    doesn't exist yet"), nor an office document, whose format has its own writer."""
    made = [(m.start(1), m.group(1)) for m in _FILE_OBJECT.finditer(text)]
    changed = [(m.start(1), m.group(1)) for m in _edited_objects(text)]
    made_paths = {path for _, path in made}  # "create docs/setup.md": made, whatever adds to it
    found, edited = [], []
    for m in _FILE_TARGET.finditer(text):
        path = m.group(1)
        before = text[max(0, m.start() - _VERB_REACH):m.start()]
        clause = before[max(before.rfind(c) for c in ".;!?\n") + 1:]
        if not (_WRITE_VERB.search(clause) or (_BUILD_VERB.search(clause) and _BUILT_AS.search(clause + m.group(0)))):
            continue
        found.append((m.start(1), path))
        if path in made_paths or target_format(path) != "text":
            continue
        after = text[m.end():m.end() + _VERB_REACH]
        if _MADE_WHOLE.search(clause) or _MADE_WHOLE.search(after[:re.search(r"[.;!?\n]|$", after).start()]):
            continue
        # the last verb, not a verb's form after a determiner ("the edited transcript")
        verbs = [v for v in _WRITE_VERB.finditer(clause) if not _DETERMINER.search(clause, 0, v.start())]
        verb, lead = (verbs[-1].group(0) if verbs else ""), text[m.start():m.start(1)]
        if (_ADDS.fullmatch(verb) and _TO.search(lead)) or (_UPDATES.fullmatch(verb) and (_TO.search(lead) or
                                                                                          _IN.search(lead))):
            edited.append(path)
    edited += [path for _, path in changed if path not in made_paths and target_format(path) == "text"]
    targets = tuple(dict.fromkeys(path for _, path in sorted(found + made + changed)))
    return targets, tuple(dict.fromkeys(edited))


#: A remote repository's file, or one a change on a code host edits ("Update src/dates.js on the hotfix branch of the
#: acme/shop GitHub repo", "in the project wiki", "through the API", "in a pull request"): not a local one.
_REMOTE = re.compile(r"\b(?:github|gitlab|bitbucket|codeberg|gitea|repos?|repositor(?:y|ies)|gists?|wiki|upstream|"
                     r"forks?|(?:through|via|using|with)\s+(?:the\s+)?(?:[\w-]+\s+)?api|pull\s+requests?|"
                     r"merge\s+requests?|prs?|mrs?|remote\s+(?:branch|repo\w*))\b",
                     re.IGNORECASE)


def _edited_objects(text: str) -> list[re.Match[str]]:
    """:data:`_EDITED_OBJECT`'s matches of local files: none whose clause names a code host, a repository or a
    change on one (the path itself aside: ``.github/workflows/ci.yml``), or says the file is made or replaced."""
    found = []
    for m in _EDITED_OBJECT.finditer(text):
        before = text[max(0, m.start() - _VERB_REACH):m.start(1)]
        stops = list(re.finditer(r"[.;!?](?:\s|$)|\n", before))
        before = before[stops[-1].end():] if stops else before
        sentence = re.split(r"[.;!?](?:\s|$)|\n", text[m.end():m.end() + _VERB_REACH], maxsplit=1)[0]
        after = re.split(r",\s|\s(?:and|then)\s", sentence, maxsplit=1)[0]  # up to the next clause
        if not (_REMOTE.search(before) or _REMOTE.search(after) or _MADE_WHOLE.search(before + " " + sentence)):
            found.append(m)
    return found


def edits_remotely(text: str) -> bool:
    """Whether a clause names a code host, a repository or a change on one (:data:`_REMOTE`): its fix is no local
    file's edit."""
    return bool(_REMOTE.search(text))
