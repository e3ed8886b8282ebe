"""Tool analysis: the offline and LLM analyzers and the label vocabulary (hostile-text flags: jit.injection)."""
