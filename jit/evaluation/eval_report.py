"""The report of one evaluation run: JSON, a Markdown section and a recall-against-tokens chart.

:func:`jit.evaluation.evaluate.run_evaluation` measures and returns an :class:`EvalReport`;
this module only renders what was measured (and says what machine it was).
"""

from __future__ import annotations

import itertools
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import __version__

__all__ = ["CHART_UNAVAILABLE", "EvalReport", "machine_info"]

#: Why a report has no chart: matplotlib is optional (the ``bench`` and ``test`` extras).
CHART_UNAVAILABLE = "chart skipped: matplotlib is not installed (pip install matplotlib, or jit-mcp's `bench` extra)"


def machine_info() -> dict[str, Any]:
    """What the numbers were measured on: CPU, cores, memory, Python and key packages."""
    import importlib.metadata as md
    import platform

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    ram = None
    try:
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError, AttributeError):
        pass
    # jit's own version is the code that ran (a checkout may run without being installed; the
    # distribution is `jit-mcp`, and PyPI's `jit` is another project).
    versions = {"jit": __version__}
    for pkg in ("numpy", "torch", "sentence-transformers", "sqlite-vec", "pyDatalog", "mcp", "bm25s"):
        try:
            versions[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            continue
    return {"cpu": cpu, "cores": os.cpu_count(), "ram_gib": round(ram, 1) if ram else None,
            "python": platform.python_version(), "os": f"{platform.system()} {platform.release()}",
            "packages": versions}


# --------------------------------------------------------------------------- the report


@dataclass
class EvalReport:
    """Everything one run measured; renders as JSON, a Markdown section and a chart."""

    dataset: str
    description: str
    pool: dict[str, Any]
    queries: dict[str, Any]
    all_tools: dict[str, Any]
    methods: list[dict[str, Any]]
    compile: list[dict[str, Any]]
    selection: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    per_query: list[dict[str, Any]] = field(default_factory=list)
    machine: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    #: What :meth:`write` could not write and why (e.g. :data:`CHART_UNAVAILABLE`); not part of the report.
    skipped: list[str] = field(default_factory=list, compare=False, repr=False)

    def to_json(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "skipped"}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> EvalReport:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})

    def method(self, name: str) -> dict[str, Any] | None:
        return next((m for m in self.methods if m["method"] == name), None)

    def markdown(self, *, chart: str | None = None, level: int = 3) -> str:
        """The dataset's section: pool, baselines and jit's ranking, compile() by shard."""
        budget = self.selection.get("token_budget")
        p, q = self.pool, self.queries
        sampled = f", a fixed sample of {q['sample']:,} (random.Random(0), file order)" if q.get("sample") else ""
        gold = {"gold_groups": "gold_groups (a group counts when any member is selected)",
                "gold": "gold list, each item a group of one"}.get(q["gold"], q["gold"])
        lines = [f"{'#' * level} {self.dataset}", ""]
        if self.description:
            lines += [self.description + ".", ""]
        dropped = p["duplicates_dropped"]
        dropped = f", {dropped} duplicate (server, name) rows dropped" if dropped else ""
        lines += [
            f"Pool: {p['tools']:,} tools / {p['servers']:,} servers ({' + '.join(p['files'])}{dropped}). "
            f"Queries: {q['scored']:,} scored{sampled}, {q['skipped_empty_gold']} skipped for empty gold. "
            f"Gold: {gold}.",
            f"All tools in the prompt: {self.all_tools['chars']:,} chars ≈ {self.all_tools['tokens']:,.0f} tokens "
            "(chars/4).",
            "",
            f"| method | R@5 | R@10 | R@20 | Hit@1 | MRR | nDCG@10 | R@{budget:,} tok | top-10 tok | ms/query |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for m in self.methods:
            name = m["method"] + (f" (top {m['depth']})" if m.get("depth") else "")
            lines.append(
                f"| {name} | {m['R@5']:.3f} | {m['R@10']:.3f} | {m['R@20']:.3f} | {m['Hit@1']:.3f} | {m['MRR']:.3f} "
                f"| {m['nDCG@10']:.3f} | {m['R@budget']:.3f} | {m['top10_tokens']:,.0f} | {m['ms_per_query']:.2f} |")
        lines += ["", f"R@{budget:,} tok: recall of the longest ranking prefix whose definitions fit jit's token "
                  "budget (chars/4), i.e. a plain retriever given the same budget as compile().", ""]
        if self.compile:
            s = self.selection
            lines += [
                f"compile(): budget {budget:,} tokens, final = {s['logic_weight']} × logic + {s['vector_weight']} "
                f"× vector, tiers Full ≥ {s['full_threshold']} / Condensed ≥ {s['condensed_threshold']} / "
                f"Minimal ≥ {s['minimal_threshold']}, at most {s['max_full_tools']} Full taking at most "
                f"{s.get('max_full_share', 1):.0%} of the budget{_strong_room(s)}.",
                "",
                "| shard | recall Full | Full+Condensed | any tier | tokens used | rendering ≈ tok | tools F/C/M "
                "| all tools ÷ rendering | p50 ms | p95 ms |",
                "|---|---|---|---|---|---|---|---|---|---|",
            ]
            for c in self.compile:
                t = c["tools"]
                lines.append(
                    f"| {c['shard']} | {c['recall_full']:.3f} | {c['recall_full_condensed']:.3f} | "
                    f"{c['recall_any']:.3f} | {c['tokens_used']:,.0f} | {c['render_tokens']:,.0f} | "
                    f"{t['full']:.1f} / {t['condensed']:.1f} / {t['minimal']:.1f} | "
                    f"{self.all_tools['tokens'] / max(c['render_tokens'], 1):,.0f}× | {c['p50_ms']:.1f} | "
                    f"{c['p95_ms']:.1f} |")
            lines += ["", *self._ratios(), ""]
        lines += [f"Note: {n}." for n in self.notes] + ([""] if self.notes else [])
        if chart:
            lines += [f"![recall against tokens, {self.dataset}]({chart})", ""]
        return "\n".join(lines)

    def _ratios(self) -> list[str]:
        baselines = [m for m in self.methods if m["kind"] == "baseline"]
        best = max(baselines, key=lambda m: m["R@budget"])
        out = []
        for c in self.compile:
            ratio = c["recall_any"] / best["R@budget"] if best["R@budget"] else float("inf")
            out.append(
                f"Shard {c['shard']}: compile() recalls {c['recall_any']:.3f} of gold groups in any tier "
                f"({c['recall_full_condensed']:.3f} in Full+Condensed) against {best['R@budget']:.3f} for the best "
                f"baseline given the same budget ({best['method']}), a ratio of {ratio:.2f}; sending all tools "
                f"costs {self.all_tools['tokens'] / max(c['render_tokens'], 1):,.0f}× the tokens of the rendering.")
        return out

    def chart(self, path: Path) -> bool:
        """Recall (share of gold groups selected) against tokens sent, log x axis; False (and
        nothing written) when matplotlib, an optional dependency, is not installed."""
        try:
            # Here, not at the top: matplotlib is optional and takes a second to import.
            import matplotlib
        except ImportError:
            return False
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(10, 5))
        for m in self.methods:
            pts = m["curve"]
            ax.plot([p["tokens"] for p in pts], [p["recall"] for p in pts], marker="o", markersize=4,
                    linestyle="--" if m["kind"] == "baseline" else "-", label=f"{m['method']} top-k (k={pts[0]['k']}…"
                    f"{pts[-1]['k']})" if pts else m["method"])
        # Filled markers with black edges stand apart from the ranking curves' colours.
        shard_colors = itertools.cycle(("gold", "deepskyblue", "violet", "lime"))
        for c, color in zip(self.compile, shard_colors, strict=False):
            x = c["render_tokens"]
            for key, marker, label in (("recall_full", "v", "Full"), ("recall_full_condensed", "s", "Full+Condensed"),
                                       ("recall_any", "^", "any tier")):
                ax.scatter([x], [c[key]], marker=marker, s=70, zorder=5, color=color, edgecolors="black",
                           label=f"jit compile ({c['shard']}): {label}")
        ax.scatter([self.all_tools["tokens"]], [1.0], marker="*", s=160, color="black", zorder=5,
                   label="all tools in the prompt")
        budget = self.selection.get("token_budget")
        if budget:
            ax.axvline(budget, color="grey", linewidth=0.8, linestyle=":", label=f"token budget ({budget:,})")
        ax.set_xscale("log")
        ax.set_ylim(0, 1.05)
        ax.set_xlabel("tokens sent to the model (chars/4, mean per query)")
        ax.set_ylabel("recall of gold groups")
        ax.set_title(f"{self.dataset}: {self.pool['tools']:,} tools, {self.queries['scored']:,} queries")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
        fig.tight_layout()
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=120)
        plt.close(fig)
        return True

    def _json_text(self) -> str:
        """Indented JSON, except one compact line per query (metatool has 2,000)."""
        data = self.to_json()
        rows = data.pop("per_query")
        head = json.dumps(data, indent=1, ensure_ascii=False)
        lines = ",\n".join("  " + json.dumps(r, ensure_ascii=False, separators=(",", ":")) for r in rows)
        return f'{head[:-2]},\n "per_query": [\n{lines}\n ]\n}}\n'

    def write(self, out_dir: Path) -> dict[str, Path]:
        """Write ``<dataset>.json``, ``.png`` and ``.md`` (which shows the chart) into ``out_dir``;
        returns the paths written. Without matplotlib there is no ``.png`` (the ``.md`` does not
        link one, and :attr:`skipped` says why): the measured results are never lost to it."""
        out_dir.mkdir(parents=True, exist_ok=True)
        paths = {ext: out_dir / f"{self.dataset}.{ext}" for ext in ("json", "png", "md")}
        paths["json"].write_text(self._json_text(), encoding="utf-8")
        if not self.chart(paths["png"]):
            # A chart of an earlier run would be taken for this one's (write_quality_doc links it).
            paths.pop("png").unlink(missing_ok=True)
            self.skipped.append(CHART_UNAVAILABLE)
        chart = paths["png"].name if "png" in paths else None
        paths["md"].write_text(self.markdown(chart=chart) + "\n", encoding="utf-8")
        return paths


def _strong_room(s: dict) -> str:
    """The room past the Full caps for a final score of ``strong_threshold`` or more, as the
    report's sentence says it (empty when there is none)."""
    share, strong_share = s.get("max_full_share", 1), s.get("strong_full_share", 0)
    tools = s.get("strong_full_tools", 0)
    if not s.get("max_full_tools") or (not tools and strong_share <= share):
        return ""  # no Full by score at all, or no room past either cap
    threshold = s["strong_threshold"]
    if not tools:
        return f", and Full taking up to {strong_share:.0%} with tools scoring ≥ {threshold}"
    more = f", and up to {tools} more with a final score ≥ {threshold}"
    return more + (f", Full taking up to {strong_share:.0%} with them" if strong_share > share else "")
