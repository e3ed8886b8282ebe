"""Adapters that hand an agent framework jit's compiled tool set for a role and a task, calls routed back through jit."""
