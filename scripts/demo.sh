#!/usr/bin/env bash
# The main job, from a fresh clone: no API key, no outside server needed.
#
#   1. ./scripts/setup.sh demo   .venv with jit and the third-party servers config.json names
#   2. jit sync                  connect to config.json's servers (time, git, and the example
#                                workspace and tracker servers in examples/servers/), discover
#                                their tools, analyze them offline, embed them
#   3. jit compile --explain     the tool set a coder shard gets for a sample task, by tier,
#                                with scores, tokens against the budget, and why
#
# Extra arguments replace the sample task: ./scripts/demo.sh "write a test for the store"
set -euo pipefail
cd "$(dirname "$0")/.."

task="${1:-Fix the crash when config.json has no servers: find where load_config reads them, add a regression test, commit the fix and open an issue about it}"

./scripts/setup.sh demo

# The servers in config.json are started by name (mcp-server-time, mcp-server-git, python).
export PATH="$PWD/.venv/bin:$PATH"
# The embedding model ships in a package; never ask a hub for it.
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
export JIT_CONFIG="$PWD/config.json"

echo "== jit sync"
jit sync
echo
echo "== jit compile --shard coder --task \"$task\" --explain"
jit compile --shard coder --task "$task" --explain
echo
# The PATH above was this script's own: say how to get the same in the user's shell.
echo "jit is installed in .venv. To run it yourself, put it (and the servers config.json starts) on PATH:"
echo "    source .venv/bin/activate"
echo "then, e.g.: jit servers; jit tools; jit compile --shard tester --task \"add a test for the parser\" --explain"
