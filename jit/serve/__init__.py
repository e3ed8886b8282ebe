"""``jit serve``: the MCP server over the catalog, its stdio wire and its HTTP guard."""
