#!/usr/bin/env bash
# Create .venv and install jit with the extras named in $1 (e.g. "test").
# Idempotent: a second run only checks. torch 2.13.0 is installed first so that
# sentence-transformers takes the CPU build instead of pulling a multi-GB CUDA one.
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-}"
python="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$python" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
if ! .venv/bin/python -c "import torch" 2>/dev/null; then
    .venv/bin/python -m pip install --quiet "torch==2.13.0"
fi
if [ -n "$extras" ]; then
    .venv/bin/python -m pip install --quiet -e ".[$extras]"
else
    .venv/bin/python -m pip install --quiet -e .
fi
