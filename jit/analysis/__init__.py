"""Tool analysis: the offline and LLM analyzers, the label vocabulary and hostile-text flags."""
