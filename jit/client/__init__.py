"""The upstream MCP client: one supervised connection per configured server, discovery, the offline fallback and proxied calls."""
