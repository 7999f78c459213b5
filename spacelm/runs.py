"""Stage bookkeeping: skip a stage whose outputs exist and whose inputs/config are unchanged,
and keep ``results/<run>/manifest.json`` describing what produced the results.

A stage's *fingerprint* is a hash of the config sections it reads and the files it consumes.
It is stored in a stamp file beside the stage's outputs; a later call with the same
fingerprint and all outputs present returns the stored summary instead of recomputing.
"""
from __future__ import annotations

import hashlib
import json
import os
import platform
import subprocess
import time
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Callable, Iterable, Optional

from .config import Config
from .io import sha256_file, write_json

PACKAGES = ["spacelm", "semchunk", "bm25s", "sentence-transformers", "torch", "faiss-cpu", "ranx", "pymupdf",
            "tokenizers", "transformers", "llama_cpp_python", "pandas", "numpy", "datasets", "openai", "vllm"]


def fingerprint(cfg: Config, sections: Iterable[str], inputs: Iterable[Path] = (), extra: Optional[dict] = None) -> str:
    """Hash of config sections + input file contents + anything else the stage depends on."""
    h = hashlib.sha256(cfg.section_hash(*sections).encode())
    for p in sorted(Path(x) for x in inputs):
        h.update(str(p.name).encode())
        h.update(sha256_file(p).encode() if p.is_file() else b"<missing>")
    if extra:
        h.update(json.dumps(extra, sort_keys=True, default=str).encode())
    return h.hexdigest()[:20]


def _stamp_path(outputs: list[Path], name: str) -> Path:
    return outputs[0].parent / f".{name}.stamp.json"


def run_stage(name: str, fp: str, outputs: list[Path], build: Callable[[], dict], force: bool = False) -> dict:
    """Run `build()` unless a fresh stamp says its outputs are already up to date.

    `build` writes the outputs and returns a JSON-able summary; the summary gains
    `skipped` and `seconds`."""
    stamp = _stamp_path(outputs, name)
    if not force and stamp.is_file() and all(p.exists() for p in outputs):
        try:
            old = json.loads(stamp.read_text())
            if old.get("fingerprint") == fp:
                summary = dict(old.get("summary", {}))
                computed = summary.get("computed_seconds", summary.get("seconds"))
                summary.update(skipped=True, seconds=0.0, computed_seconds=computed)
                return summary
        except json.JSONDecodeError:
            pass
    t0 = time.perf_counter()
    summary = build() or {}
    seconds = round(time.perf_counter() - t0, 3)
    summary = dict(summary, skipped=False, seconds=seconds, computed_seconds=seconds)
    write_json(stamp, {"stage": name, "fingerprint": fp,
                       "outputs": [os.path.relpath(p, stamp.parent) for p in outputs], "summary": summary})
    return summary


def git_commit(root: Optional[str]) -> Optional[str]:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root or ".", capture_output=True, text=True, timeout=10)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root or ".",
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return out.stdout.strip() + ("+dirty" if dirty else "") if out.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        return None


def package_versions() -> dict:
    out = {}
    for p in PACKAGES:
        try:
            out[p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            pass
    return out


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


class Manifest:
    """`results/<run>/manifest.json`, rewritten atomically after every stage."""

    def __init__(self, cfg: Config):
        self.cfg = cfg
        self.path = cfg.run_dir / "manifest.json"
        try:
            self.data = json.loads(self.path.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            self.data = {}
        self.data.update(
            run_name=cfg.run_name, config_file=cfg.source, config=cfg.to_dict(), git_commit=git_commit(cfg.root),
            python=platform.python_version(), platform=platform.platform(), packages=package_versions(),
        )
        self.data.setdefault("stages", {})
        self.data.setdefault("models", {})
        self.data["started"] = _now()
        self.data.pop("finished", None)

    def record_stage(self, name: str, summary: dict) -> None:
        self.data["stages"][name] = dict(summary, finished=_now())
        self.save()

    def record_model(self, role: str, identity: dict) -> None:
        self.data["models"][role] = identity
        self.save()

    def finish(self) -> None:
        self.data["finished"] = _now()
        self.data["total_seconds"] = round(sum(s.get("seconds", 0) for s in self.data["stages"].values()), 3)
        self.save()

    def save(self) -> None:
        write_json(self.path, self.data)
