"""Show that a run's outputs regenerate byte-identical from its cache with the code checked out.

    python scripts/regenerate.py --config configs/standard.yaml [--keep]

Run it in the checkout that made the run, with the run's call and embedding cache in place
(`paths.cache_dir`): it snapshots every output of the run (the run folder, the synthetic set,
the processed corpus), recomputes every stage with `spacelm run --force` (the models answer
from the cache: no call is made that the run did not make), and compares file by file. It
prints one line per file that differs or is missing and exits 1 if any does; 0 when all match.

Files that carry the time or place of a run are compared without it: the manifest (its timings,
start, commit and process figures), the report (its run-time section, read from the manifest),
the executed notebooks (their outputs echo timings) and the stamps. `--keep` leaves the
snapshot beside the run (as `<folder>.before-regenerate`) instead of deleting it.
"""

from __future__ import annotations

import argparse
import filecmp
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from spacelm.config import load_config  # noqa: E402
from spacelm.lib import names  # noqa: E402

# compared without their times: the whole file is time-stamped, or holds a section built from the manifest
TIMED = (names.MANIFEST, names.REPORT, names.REPORT_DETAILS)
TIMED_FOLDERS = ("notebooks",)


def output_folders(cfg) -> list[Path]:
    """The folders a run writes: its run folder, its synthetic set and its processed corpus."""
    return [cfg.run_dir, cfg.synthetic_dir, cfg.processed_dir]


def files_of(folder: Path) -> set[str]:
    """Every file below `folder` as a relative path, stamps and lock files left out."""
    if not folder.is_dir():
        return set()
    return {
        p.relative_to(folder).as_posix()
        for p in folder.rglob("*")
        if p.is_file() and not p.name.startswith(".") and "__pycache__" not in p.parts
    }


def compared(rel: str) -> bool:
    """Whether `rel` is compared byte for byte (files holding the run's times are not)."""
    parts = Path(rel).parts
    return Path(rel).name not in TIMED and not any(p in TIMED_FOLDERS for p in parts)


def differences(before: Path, after: Path) -> tuple[list[str], int]:
    """(lines naming what differs between the snapshot and the regenerated folder, files equal)."""
    old, new = files_of(before), files_of(after)
    out = [f"missing after regeneration: {after / r}" for r in sorted(old - new)]
    out += [f"new in regeneration: {after / r}" for r in sorted(new - old)]
    same = 0
    for rel in sorted(old & new):
        if not compared(rel):
            continue
        if filecmp.cmp(before / rel, after / rel, shallow=False):
            same += 1
        else:
            out.append(f"differs: {after / rel}")
    return out, same


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", required=True)
    ap.add_argument("--keep", action="store_true", help="keep the snapshot beside each output folder")
    a = ap.parse_args(argv)
    cfg = load_config(a.config)
    folders = [f for f in output_folders(cfg) if f.is_dir()]
    if not folders:
        print(f"{a.config}: no output of run '{cfg.run_name}' to regenerate", file=sys.stderr)
        return 2
    snapshots = {}
    for f in folders:
        snap = f.with_name(f.name + ".before-regenerate")
        if snap.exists():
            shutil.rmtree(snap)
        shutil.copytree(f, snap)
        snapshots[f] = snap
    cmd = [sys.executable, "-m", "spacelm.cli", "run", "--config", a.config, "--force"]
    res = subprocess.run(cmd, cwd=ROOT)
    if res.returncode != 0:
        print(f"regeneration failed ({' '.join(cmd)} exited {res.returncode}); snapshots kept", file=sys.stderr)
        return 2
    bad, same = [], 0
    for f, snap in snapshots.items():
        lines, n = differences(snap, f)
        bad += lines
        same += n
        if not a.keep:
            shutil.rmtree(snap)
    for line in bad:
        print(line)
    print(f"{same} files byte-identical; {len(bad)} differ or are missing (manifest, report, notebooks not compared)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
