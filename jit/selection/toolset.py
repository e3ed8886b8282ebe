"""What compile() returns: the ToolSet of one shard spawn, its renderings and explanation."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..catalog.store_learning import TaskRecord
from ..errors import SelectionError, ToolDeniedError, ToolNotFoundError
from .deferred import DEFERRED_FORMATS, DeferredTools, render_deferred
from .explain import Citation, RuleCitations
from .render import render_tools
from .scored_tool import ScoredTool
from .tiers import Tier

__all__ = ["ToolSet"]


@dataclass
class ToolSet:
    """The compiled tool set of one shard spawn.

    ``tools`` holds every candidate exactly once, excluded ones included, in
    rendering order (skeleton, then by tier, score and name).
    """

    shard: str
    task: str
    budget: int
    tokens_used: int
    warnings: list[str]
    tools: list[ScoredTool]
    #: The format the budget was fitted on, and how tokens were counted.
    budget_format: str = "anthropic"
    token_counter: str = ""
    meta_tool: str = "jit_expand_tools"
    #: The catalog (Store.catalog_version) and usage (Store.usage_version) the selection saw.
    catalog_version: int = 0
    usage_version: int = 0
    rules: str = ""  # fingerprint of the rule files used
    #: Task facts the rules saw (intent, language, capabilities, ...).
    task_facts: dict[str, list[str]] = field(default_factory=dict)
    #: ``(shard, name) -> ToolDeniedError | None``: a name the shard's policy denies (set by
    #: :meth:`~jit.selection.compiler.Compiler.compile`; such tools are never in ``tools``).
    denial: Callable[[str, str], ToolDeniedError | None] | None = field(default=None, repr=False, compare=False)
    #: What made the reasons' rule citations (set by compile()): :meth:`legend` reads it.
    citations: RuleCitations | None = field(default=None, repr=False, compare=False)
    #: The task as learning keeps it (its vector, shard and the tools put in Full; None: learning is
    #: off, or the compile had no task or no vectors): what :meth:`record_call` reports against.
    learning: TaskRecord | None = field(default=None, repr=False, compare=False)
    #: Where :meth:`record_call` writes (set by compile(): the catalog's ``record_task_call``).
    recorder: Callable[..., None] | None = field(default=None, repr=False, compare=False)
    _by_name: dict[str, ScoredTool] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._by_name = {t.name: t for t in self.tools}

    def tier(self, t: Tier) -> list[ScoredTool]:
        """The tools in tier ``t``, in rendering order."""
        t = Tier(t)
        return [s for s in self.tools if s.tier is t]

    def selected(self) -> list[ScoredTool]:
        """Every tool that is sent in some form (not Excluded)."""
        return [s for s in self.tools if s.tier is not Tier.EXCLUDED]

    def render(self, fmt: str = "anthropic", *, access: str = "expand", search: str = "client") -> Any:
        """``anthropic`` / ``openai``: a list of tool dicts (Full tier plus the meta-tool
        that lists Condensed and Minimal); ``markdown``: a string; ``json``: a dict.
        ``access="call_tool"`` (``markdown``, ``json``): the text for a ``jit serve`` client, which
        reaches every tool through ``describe_tool`` / ``call_tool`` (:data:`~jit.selection.render.ACCESS`).
        ``anthropic_deferred`` / ``openai_deferred``: the provider-native deferred ``tools`` array
        (:func:`~jit.selection.deferred.render_deferred`; ``search`` picks jit's or the provider's
        search); a conversation that loads tools keeps one :meth:`deferred` instead."""
        if fmt in DEFERRED_FORMATS:
            if access != "expand":
                raise SelectionError(f"the {fmt} rendering is a harness's tool list: its access is 'expand'")
            return render_deferred(self.tools, fmt, search=search)
        return render_tools(self.tools, fmt, shard=self.shard, access=access)

    def deferred(self, fmt: str = "anthropic_deferred", *, search: str = "client",
                 cache_ttl: str | None = None) -> DeferredTools:
        """The ``tools`` array of one conversation, for ``fmt`` (a deferred format, or ``anthropic`` /
        ``openai``), which expansions and later compiles only ever append to, so each request's
        array starts with the previous one's and the provider's prompt cache holds
        (:class:`~jit.selection.deferred.DeferredTools`)."""
        return DeferredTools(self.tools, fmt, search=search, cache_ttl=cache_ttl)

    def resolve(self, namespaced: str) -> tuple[str, str]:
        """Map a rendered name (or the meta-tool's listed names) back to ``(server, tool)``."""
        st = self._by_name.get(namespaced)
        if st is None:
            denied = self.denial(self.shard, namespaced) if self.denial is not None else None
            if denied is not None:  # the model guessed a tool its role may not have
                raise denied
            raise ToolNotFoundError.not_in_toolset(namespaced)
        return st.server, st.tool_name

    def record_call(self, name: str, *, ok: bool, server: str | None = None) -> bool:
        """Report that the agent called a tool for this tool set's task, and whether the call succeeded,
        so later compiles of similar tasks learn from it (docs/selection.md, "Learning from calls").
        ``name`` is a rendered name (or, with ``server``, the tool's own name on that server: a tool
        the agent reached outside this set, through a search). A harness that calls tools itself
        reports each call here; ``jit serve`` reports its own. Returns False when nothing is kept
        (learning is off, or the compile had no task). A name the set cannot resolve raises
        :class:`~jit.errors.ToolNotFoundError` (or the role's denial)."""
        if server is None:
            server, name = self.resolve(name)
        if self.learning is None or self.recorder is None:
            return False
        self.recorder(self.learning, server, name, ok=ok)
        return True

    def get(self, namespaced: str) -> ScoredTool | None:
        return self._by_name.get(namespaced)

    def legend(self) -> dict[str, Citation]:
        """The rules the tools' reasons cite (``policy.dl:99``), each once, by file and line:
        a reason names a rule by its key, the legend gives its text."""
        return self.citations.legend(self.tools) if self.citations is not None else {}

    def explain(self) -> list[dict[str, Any]]:
        """Per tool: the facts, the points and scores, the rules that fired (keys of
        :meth:`legend`), the tier and why."""
        cited = self.citations.cited if self.citations is not None else (lambda _reasons: [])
        out = []
        for s in self.tools:
            out.append(
                {
                    "name": s.name,
                    "server": s.server,
                    "tool": s.tool_name,
                    "tier": s.tier.value,
                    "wanted_tier": s.wanted.value,
                    "skeleton": s.skeleton,
                    "step": s.step,
                    "offline": s.offline,
                    "logic": s.logic,
                    "vector": s.vector,
                    "final": s.final,
                    "rank": s.rank,
                    "tokens": s.tokens,
                    "points": dict(s.points),
                    "facts": copy.deepcopy(s.facts),
                    "reasons": list(s.reasons),
                    "rules": cited(s.reasons),
                }
            )
        return out
