#!/usr/bin/env bash
# The test command: set up (idempotent) and run the test suite with pytest on every core
# (pytest-xdist).
# Extra arguments go to pytest, e.g. `bash scripts/test.sh -m "not slow"` (the fast tier) or
# `-n 0` to run in one process.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# the real corpus's golden samples are committed as spans; with the corpus beside the checkout
# (../shared/space_corpus), build the file the standard configs read
if [ -d ../shared/space_corpus ] && [ ! -f data/space_corpus/golden_samples.jsonl ]; then
  .venv/bin/spacelm data fetch space-corpus-golden
fi
exec .venv/bin/python -m pytest -q -n auto "$@"
