#!/usr/bin/env bash
# Install the third-party MCP servers the client tests talk to, from the registries only.
# Idempotent: a second run finds everything in place and changes nothing.
#
#   mcp-server-time                          PyPI, into the project venv (stdio)
#   @modelcontextprotocol/server-everything  npm, into <repo>/.test-servers/ (stdio, Streamable HTTP, SSE)
#   @modelcontextprotocol/inspector          npm, into <repo>/.test-servers/: a client jit's authors did not write
#   @anthropic-ai/claude-code                npm, into <repo>/.test-servers/: Claude Code's CLI (`claude mcp list`)
#
# The clients are pinned: the Inspector's 0.15 line is the last to run on Node 20; Claude Code
# 2.1.197 is the version docs/serve.md checked `anthropic/alwaysLoad` against (its npm package
# ships a native binary per platform, so it runs whatever Node is here).
#
# Environment: PYTHON (default <repo>/.venv/bin/python, else python3).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
python="${PYTHON:-}"
if [[ -z "$python" ]]; then
    if [[ -x "$repo/.venv/bin/python" ]]; then python="$repo/.venv/bin/python"; else python="python3"; fi
fi

everything_version="2026.8.31"
inspector_version="0.15.0"
claude_code_version="2.1.197"
time_spec="mcp-server-time>=2025.1"

if "$python" -c 'import importlib.metadata as m; m.version("mcp-server-time")' >/dev/null 2>&1; then
    echo "install-test-servers: mcp-server-time already installed"
else
    echo "install-test-servers: installing $time_spec into $python"
    # Naming mcp too keeps pip from "solving" by downgrading the SDK jit is built on.
    "$python" -m pip install --quiet "$time_spec" "mcp>=2.3,<3"
fi

dest="$repo/.test-servers"

# npm_package NAME VERSION: install NAME@VERSION into $dest unless that version is there already.
npm_package() {
    local name="$1" version="$2" manifest="$dest/node_modules/$1/package.json" installed=""
    if [[ -f "$manifest" ]]; then
        installed="$(node -p "require('$manifest').version" 2>/dev/null || true)"
    fi
    if [[ "$installed" == "$version" ]]; then
        echo "install-test-servers: $name $installed already installed"
        return
    fi
    if ! command -v npm >/dev/null 2>&1; then
        echo "install-test-servers: npm not found; cannot install $name" >&2
        exit 1
    fi
    echo "install-test-servers: installing $name@$version into $dest"
    mkdir -p "$dest"
    [[ -f "$dest/package.json" ]] || printf '{\n  "name": "jit-test-servers",\n  "private": true\n}\n' > "$dest/package.json"
    npm install --prefix "$dest" --no-audit --no-fund --loglevel=error "$name@$version"
}

npm_package "@modelcontextprotocol/server-everything" "$everything_version"
npm_package "@modelcontextprotocol/inspector" "$inspector_version"
npm_package "@anthropic-ai/claude-code" "$claude_code_version"
