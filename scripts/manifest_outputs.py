"""Add output hashes to the manifest of a run made before the manifest recorded them.

    python scripts/manifest_outputs.py --config configs/standard.yaml

`spacelm status` (and a notebook reading a run folder) recognise a run's committed outputs
from these hashes when the stage stamps, which are never committed, are missing. Each stage
record that lacks `outputs` gets the hashes of its declared outputs as they are on disk now,
so run it on a run folder whose files are the run's own (as committed). A folder's hash recorded
over every file (before folders left out the files git ignores) is rewritten where the folder is
unchanged. The manifest lists the change under `updates`. Loads no model.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from spacelm.config import load_config  # noqa: E402
from spacelm.runner.manifest import record_outputs  # noqa: E402
from spacelm.stages import stages_for  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", required=True)
    a = ap.parse_args(argv)
    cfg = load_config(a.config)
    done = record_outputs(cfg, stages_for(cfg))
    print(f"{cfg.run_dir / 'manifest.json'}: output hashes added for " + (", ".join(done) or "no stage (all had them)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
