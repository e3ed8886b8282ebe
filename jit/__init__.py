"""jit: just-in-time tool selection for agent harnesses talking to many MCP servers."""

from .errors import JitError

__version__ = "0.1.0"

__all__ = ["JitError", "__version__"]
