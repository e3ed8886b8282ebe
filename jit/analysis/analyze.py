"""Tool analysis: the facts the selection rules reason over, for every discovered tool.

Each tool gets categories, capabilities and domains from the vocabulary in
:mod:`jit.analysis.vocab`, an affinity score 0–100 for each configured shard, a
condensed description (≤ 80 characters, for the Condensed tier), use cases, the
name of the analyzer that produced it, and the hostile-text flags of
:mod:`jit.injection.detect`.

Two analyzers implement :class:`~jit.analysis.offline_analyzer.ToolAnalyzer`:

* :class:`~jit.analysis.offline_analyzer.OfflineAnalyzer`, the embedded default:
  deterministic, no network, from the tool's name, description, parameters and
  server name (that module also holds what both analyzers share);
* :class:`~jit.analysis.llm_analyzer.AnthropicAnalyzer`, used when an Anthropic API key
  is configured; any tool it cannot analyze falls back to the offline analyzer.

:func:`analyze_pending` runs one over the catalog. Analyses are cached by the
tool's definition hash, so an unchanged tool is never analyzed twice; overrides
from ``available_tools.json`` are applied at read time by
:func:`effective_tool`, so editing that file needs no re-analysis.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from ..catalog.store import Store
from ..config import AvailableTools, Config, ToolOverride
from ..errors import AnalysisError, ConfigError
from ..models import HARNESS_SERVER, StoredTool, ToolAnalysis, ToolDef
from ..progress import ProgressCallback, Step
from .affinity import clamp_score
from .offline_analyzer import (
    ANALYZER_DEFERRED,
    ANALYZER_FALLBACK,
    ANALYZER_OFFLINE,
    OfflineAnalyzer,
    ToolAnalyzer,
)
from .vocab import normalize_capability, normalize_category, normalize_domain
__all__ = [
    "AnalyzeReport",
    "EffectiveTool",
    "analyze_pending",
    "effective_analysis",
    "effective_tool",
    "hostile_flags",
    "make_analyzer",
    "waived",
]

log = logging.getLogger("jit.analysis.analyze")

# --------------------------------------------------------------------------- overrides


@dataclass(frozen=True, slots=True)
class EffectiveTool:
    """Everything ``available_tools.json`` makes of one tool: the one place its meaning is decided.

    The catalog view asserts these as facts and ``jit show`` prints the analysis;
    neither reads the file's overrides or harness declarations itself.
    """

    #: The stored analysis with the declared labels and shard affinity applied.
    analysis: ToolAnalysis
    #: Shards the tool is declared skeleton for (``"*"`` expanded to the configured shards).
    skeleton: frozenset[str] = frozenset()
    #: An override says never select it (for any shard).
    excluded: bool = False


def effective_tool(
    tool: StoredTool | ToolDef,
    available: AvailableTools | Config,
    analysis: ToolAnalysis | None = None,
    *,
    shards: Iterable[str] = (),
) -> EffectiveTool:
    """The tool as the selection sees it: the stored analysis with ``available_tools.json`` applied.

    Harness tools take the categories, capabilities, shard affinity and skeleton
    shards they declare; then the most specific override for ``server/tool``
    replaces categories, capabilities, domains and skeleton shards, sets shard
    affinity per shard (``"*"`` meaning every shard in ``shards`` and in the
    analysis) and may exclude the tool. A skeleton ``"*"`` means every shard in
    ``shards``. Overrides are applied on read, never stored, so editing the file
    needs no re-analysis. A tool not analyzed yet gets ``analyzer="none"`` and the flags
    :func:`hostile_flags` finds in its text. Given a :class:`~jit.config.Config`, its
    ``available_tools`` and shard names are used.
    """
    shards = list(shards)
    if isinstance(available, Config):
        shards = [*shards, *available.shards]
        available = available.available_tools
    if isinstance(tool, StoredTool):
        tdef = tool.tool
        analysis = analysis if analysis is not None else tool.analysis
    else:
        tdef = tool
    base = analysis if analysis is not None else ToolAnalysis(analyzer="none", flags=_detect(tdef))
    layers: list[tuple[list[str] | None, list[str] | None, list[str] | None, dict[str, int] | None]] = []
    declared: list[str] = []  # skeleton shards, "*" for every one
    if tdef.server == HARNESS_SERVER:
        for ht in available.tools:
            if ht.name == tdef.name:
                layers.append((ht.categories or None, ht.capabilities or None, None, ht.shard_affinity or None))
                declared.extend(ht.skeleton)
    ov = available.override_for(tdef.server, tdef.name)
    if ov is not None:
        layers.append((ov.categories, ov.capabilities, ov.domains, ov.shard_affinity))
        if ov.skeleton is not None:
            declared = list(ov.skeleton)
    skeleton = frozenset(x for s in declared for x in (shards if s == "*" else [s]))
    excluded = ov is not None and ov.exclude
    flags = waived(base.flags, ov)
    if not layers:
        if flags != base.flags:
            base = replace(base, flags=flags, analyzer=f"{base.analyzer}+override")
        return EffectiveTool(base, skeleton, excluded)
    cats, caps, doms = base.categories, base.capabilities, base.domains
    affinity = dict(base.shard_affinity)
    every = list(dict.fromkeys([*shards, *affinity]))
    for lc, lk, ld, la in layers:
        # User labels are kept even outside the vocabulary (a config may define its own);
        # only their spelling is normalised.
        if lc is not None:
            cats = tuple(dict.fromkeys(normalize_category(c, {c.strip().lower()}) or c for c in lc))
        if lk is not None:
            caps = tuple(dict.fromkeys(normalize_capability(c) or "/" + c.strip().lstrip("/").lower() for c in lk))
        if ld is not None:
            doms = tuple(dict.fromkeys(normalize_domain(d) or "/" + d.strip().lstrip("/").lower() for d in ld))
        if la is not None:
            if "*" in la:
                affinity.update({s: clamp_score(la["*"]) for s in every})
            affinity.update({s: clamp_score(v) for s, v in la.items() if s != "*"})
    analysis = ToolAnalysis(
        categories=cats,
        capabilities=caps,
        domains=doms,
        shard_affinity=affinity,
        condensed=base.condensed,
        use_cases=base.use_cases,
        analyzer=f"{base.analyzer}+override",
        flags=flags,
    )
    return EffectiveTool(analysis, skeleton, excluded)


def waived(flags: tuple[str, ...], override: ToolOverride | None) -> tuple[str, ...]:
    """``flags`` without those the tool's override vouches are false (``trust_flags``)."""
    if override is None or not override.trust_flags:
        return flags
    return tuple(f for f in flags if f not in override.trust_flags)


def hostile_flags(tool: StoredTool, available: AvailableTools | None = None) -> tuple[str, ...]:
    """The hostile-text flags of a catalog tool: its analysis's, or for a tool not analysed yet
    (a sync interrupted before its analysis, or a tool ``jit serve`` just discovered) what
    :func:`~jit.injection.detect.detect_hostile` finds in its text now. A tool is never trusted
    more for lacking an analysis than a flagged one is. With ``available``, the flags its
    override vouches are false are dropped (:func:`waived`)."""
    flags = tool.analysis.flags if tool.analysis is not None else _detect(tool.tool)
    return flags if available is None else waived(flags, available.override_for(tool.tool.server, tool.tool.name))


def _detect(tool: ToolDef) -> tuple[str, ...]:
    # Here, not at the top: the injection rules take ~0.1 s to import, and a process that only
    # compiles runs them only on tools not analysed yet.
    from ..injection.detect import detect_hostile

    return tuple(detect_hostile(tool))


def effective_analysis(
    tool: StoredTool | ToolDef,
    available: AvailableTools | Config,
    analysis: ToolAnalysis | None = None,
    *,
    shards: Iterable[str] = (),
) -> ToolAnalysis:
    """The analysis the selection uses: :func:`effective_tool`'s, without skeleton and exclusion."""
    return effective_tool(tool, available, analysis, shards=shards).analysis


# --------------------------------------------------------------------------- the catalog pass


@dataclass(frozen=True, slots=True)
class AnalyzeReport:
    """What one :func:`analyze_pending` pass did."""

    analyzed: int  # tools sent to the analyzer
    reused: int  # cache hits: an analysis of the same definition hash existed
    fallbacks: int  # analyzed tools that got the offline analysis because the LLM could not
    flagged: int  # analyzed tools whose text looks like instructions to the model
    pruned: int = 0  # analyses dropped because no tool has their definition any more


def analyze_pending(
    store: Store,
    analyzer: ToolAnalyzer,
    *,
    batch_size: int = 256,
    retry_deferred: bool | None = None,
    prune: bool = False,
    progress: ProgressCallback | None = None,
) -> AnalyzeReport:
    """Analyze every catalog tool that needs it; reuse analyses cached by definition hash.

    Results are stored after each batch of ``batch_size`` tools, so an
    interrupted pass keeps what it paid for. ``retry_deferred`` (default: when
    the analyzer is not the offline one) also re-asks tools whose LLM request
    failed last time. ``prune`` drops analyses no tool refers to any more.
    ``progress`` (:mod:`jit.progress`) hears of the step ``analyze``, once per batch.
    """
    if batch_size < 1:
        raise AnalysisError(f"batch_size must be >= 1, got {batch_size}")
    if retry_deferred is None:
        retry_deferred = analyzer.name != ANALYZER_OFFLINE
    pending = store.pending_analysis()
    if retry_deferred:
        seen = {t.id for t in pending}
        pending += [t for t in store.tools(analyzed=True) if t.id not in seen
                    and t.analysis is not None and t.analysis.analyzer == ANALYZER_DEFERRED]
    reused: list[tuple[str, ToolAnalysis]] = []
    todo: dict[str, ToolDef] = {}
    for t in pending:
        # The catalog joins analyses by definition hash, so t.analysis is the cache lookup.
        cached = t.analysis if t.needs_analysis else None
        if cached is not None and not (retry_deferred and cached.analyzer == ANALYZER_DEFERRED):
            reused.append((t.definition_hash, cached))
        else:
            todo.setdefault(t.definition_hash, t.tool)
    if reused:
        store.put_analyses(reused)
    # Analyses are cached by definition, so a tool analysed before the hostile-text rules
    # learned a new class would keep its empty flags (and its Full-tier eligibility) forever:
    # when the rules changed, re-check every cached analysis once and re-analyse the tools
    # that now raise a flag they lack.
    from ..injection.detect import HOSTILE_RULES_VERSION, detect_hostile_many  # see _detect: loaded when needed

    rules_key = "hostile_rules" + ("" if store.scope is None else ":" + ",".join(sorted(store.scope)))
    rules_changed = store.get_meta(rules_key) != HOSTILE_RULES_VERSION
    if rules_changed:
        kept = [t for t in store.tools(analyzed=True) if t.definition_hash not in todo]
        for t, flags in zip(kept, detect_hostile_many([t.tool for t in kept])):
            if not set(flags) <= set(t.analysis.flags):
                todo[t.definition_hash] = t.tool
    analyzed = fallbacks = flagged = 0
    items = list(todo.items())
    detail = f"analyzer {analyzer.name}" + (f", {len(reused):,} reused" if reused else "")
    with Step(progress, "analyze", "analyzing", len(items), unit="tools", detail=detail) as step:
        for i in range(0, len(items), batch_size):
            chunk = items[i : i + batch_size]
            results = analyzer.analyze([tool for _, tool in chunk])
            if len(results) != len(chunk) or not all(isinstance(r, ToolAnalysis) for r in results):
                raise AnalysisError(
                    f"analyzer {analyzer.name!r} returned {len(results)} results for {len(chunk)} tools",
                    analyzer=analyzer.name,
                )
            store.put_analyses((h, r) for (h, _), r in zip(chunk, results, strict=True))
            analyzed += len(chunk)
            fallbacks += sum(r.analyzer in (ANALYZER_FALLBACK, ANALYZER_DEFERRED) for r in results)
            flagged += sum(bool(r.flags) for r in results)
            step.advance(len(chunk))
    if rules_changed:
        store.set_meta(rules_key, HOSTILE_RULES_VERSION)
    pruned = store.prune_analysis() if prune else 0
    return AnalyzeReport(analyzed=analyzed, reused=len(reused), fallbacks=fallbacks, flagged=flagged, pruned=pruned)


# --------------------------------------------------------------------------- choosing an analyzer


def make_analyzer(config: Config, *, env: Mapping[str, str] | None = None, client: Any = None) -> ToolAnalyzer:
    """The analyzer ``config.analyzer`` asks for.

    ``provider="auto"`` uses the Anthropic analyzer if and only if the variable
    named by ``api_key_env`` is set (and non-empty) in ``env`` (default
    ``os.environ``), else the offline analyzer. ``"anthropic"`` requires the key
    (or an explicit ``client``). ``client`` is an ``anthropic.Anthropic`` to use
    instead of building one.
    """
    cfg = config.analyzer
    env = os.environ if env is None else env
    key = env.get(cfg.api_key_env) or None
    offline = OfflineAnalyzer(config.shards)
    if cfg.provider == "offline" or (cfg.provider == "auto" and key is None):
        return offline
    if key is None and client is None:
        raise ConfigError(
            f"analyzer.provider is 'anthropic' but the environment variable {cfg.api_key_env!r} is not set",
            path=str(config.path) if config.path else None,
            key="analyzer.api_key_env",
        )
    # Here, not at the top: llm_analyzer loads the anthropic SDK, which a process that
    # analyzes offline (the default) never needs.
    from .llm_analyzer import AnthropicAnalyzer

    if client is None:
        import anthropic

        # Retries are ours (llm_analyzer), so the SDK's are off.
        client = anthropic.Anthropic(api_key=key, timeout=cfg.timeout, max_retries=0)
    return AnthropicAnalyzer(cfg, config.shards, client=client, fallback=offline)

