"""``jit eval``: datasets, metrics, the baselines and the report."""
