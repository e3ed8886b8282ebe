"""Adapters that give agent frameworks jit's compiled tools and route their calls back through jit."""
