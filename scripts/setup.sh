#!/usr/bin/env bash
# Create .venv and install jit with the extras named in $1 (e.g. "test").
# Idempotent: a second run only checks. torch 2.13.0 is installed first, from PyTorch's CPU
# index ($TORCH_INDEX_URL; empty: pip's own index and find-links), so that sentence-transformers
# takes the CPU build instead of pulling PyPI's multi-GB CUDA one (PyPI's torch on Linux).
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-}"
python="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$python" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
if ! .venv/bin/python -c "import torch" 2>/dev/null; then
    index="${TORCH_INDEX_URL-https://download.pytorch.org/whl/cpu}"
    # Where that index cannot be reached (a registry-only network), pip's own index is the fallback.
    .venv/bin/python -m pip install --quiet "torch==2.13.0" ${index:+--index-url "$index"} \
        || .venv/bin/python -m pip install --quiet "torch==2.13.0"
fi
if [ -n "$extras" ]; then
    .venv/bin/python -m pip install --quiet -e ".[$extras]"
else
    .venv/bin/python -m pip install --quiet -e .
fi
