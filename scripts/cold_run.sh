#!/usr/bin/env bash
# Make a reference run cold, as docs/measured.md describes it: a clean clone of the current commit
# beside ../shared, its own .venv (scripts/setup.sh, not timed), an empty call cache (the clone has
# none), the config's trained reranker moved aside in the model store so the run trains it again,
# then one `spacelm run` process. The run's folder and the data it wrote stay in the clone; the
# last lines say how to bring the tracked ones back.
#
#   bash scripts/cold_run.sh configs/standard.yaml            # clone in ../cold-standard
#   COLD_DIR=/work/cold-x bash scripts/cold_run.sh configs/standard_answers.yaml
set -euo pipefail
config=${1:?usage: scripts/cold_run.sh configs/NAME.yaml}
here=$(cd "$(dirname "$0")/.." && pwd)
[ -f "$here/$config" ] || { echo "$config: not found under $here" >&2; exit 2; }
if ! git -C "$here" diff --quiet HEAD -- || [ -n "$(git -C "$here" ls-files --others --exclude-standard)" ]; then
  echo "$here has changes not committed: a cold run is made at a clean commit; commit or stash them" >&2
  exit 2
fi
name=$(basename "$config" .yaml)
dest=${COLD_DIR:-$(dirname "$here")/cold-$name}
[ -e "$dest" ] && { echo "$dest exists: remove it or set COLD_DIR" >&2; exit 2; }
git clone -q "$here" "$dest"
(cd "$dest" && bash scripts/setup.sh)
store=${SPACELM_MODELS_DIR:-$HOME/.cache/spacelm/models}/trained
for trained in $(grep -o 'trained:[A-Za-z0-9._-]*' "$here/$config" | cut -d: -f2 | sort -u); do
  if [ -d "$store/$trained" ]; then
    aside="$store/$trained.before-cold-$(date +%Y%m%d-%H%M%S)"
    mv "$store/$trained" "$aside"
    echo "moved $store/$trained aside to $aside"
  fi
done
cd "$dest"
# the real corpus's golden samples are committed as spans: built from the corpus beside the clone
if grep -q 'golden_samples: data/space_corpus/golden_samples.jsonl' "$config"; then
  .venv/bin/spacelm data fetch space-corpus-golden
fi
echo "cold run of $config in $dest at $(git rev-parse --short HEAD), started $(date -u +%FT%TZ)"
.venv/bin/spacelm run --config "$config"
echo "done $(date -u +%FT%TZ). Bring back the tracked outputs:"
echo "  git -C $dest status --porcelain results/ data/   # what the run changed"
echo "  rsync -a $dest/results/ $here/results/ && rsync -a $dest/data/synthetic/ $here/data/synthetic/"
