"""No committed file under results/ names a machine path (issue 42): a run's files say paths
relative to the project, `models:`/`package:`, `~/…` or `<outside the project>/<name>`
(spacelm/runner/manifest.py:public_path). Fails naming each file and line."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# a machine folder at the start of a path: /work/, /home/, /tmp/, /root/, macOS and Windows homes
MACHINE_PATH = re.compile(
    r"(?<![\w-])(?:/(?:work|home|tmp|root|Users|var/folders|mnt|dev/shm|private)/|[A-Z]:\\Users\\)"
)


def committed_files(folder: str = "results") -> list[Path]:
    """The files git tracks under `folder` (every file there when this is no git checkout)."""
    try:
        out = subprocess.run(["git", "ls-files", "-z", folder], cwd=ROOT, capture_output=True, timeout=60)
        if out.returncode == 0 and out.stdout:
            return [ROOT / f for f in out.stdout.decode().split("\0") if f]
    except (OSError, subprocess.SubprocessError):
        pass
    return [p for p in (ROOT / folder).rglob("*") if p.is_file()]


def machine_paths(path: Path) -> list[str]:
    """`file:line: text` for each line of a text file naming a machine path."""
    try:
        data = path.read_bytes()
    except OSError:
        return []
    if b"\0" in data[:8192]:  # a binary file (plot, arrow table)
        return []
    text = data.decode("utf-8", errors="replace")
    rel = path.relative_to(ROOT)
    return [
        f"{rel}:{n}: {m.group(0)!r} in {line.strip()[:160]}"
        for n, line in enumerate(text.splitlines(), 1)
        for m in [MACHINE_PATH.search(line)]
        if m
    ]


def test_no_committed_result_names_a_machine_path():
    files = [p for p in committed_files() if p.is_file()]
    assert files, "no committed files found under results/"
    found = [hit for p in files for hit in machine_paths(p)]
    assert not found, "machine paths in committed results:\n" + "\n".join(found[:50])


def test_the_scan_names_file_and_line(tmp_path, monkeypatch):
    import tests.test_results_paths as mod

    monkeypatch.setattr(mod, "ROOT", tmp_path)
    f = tmp_path / "results" / "x" / "manifest.json"
    f.parent.mkdir(parents=True)
    f.write_text(
        '{\n "processed_dir": "/tmp/scratch/processed",\n "raw": "../shared/corpus",\n'
        ' "up": "../../home/me/x", "url": "https://example.org/home/x"\n}\n'
    )
    hits = mod.machine_paths(f)
    assert len(hits) == 2 and hits[0].startswith("results/x/manifest.json:2:") and "/tmp/" in hits[0]
    assert hits[1].startswith("results/x/manifest.json:4:")
