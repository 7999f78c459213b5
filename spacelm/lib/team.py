"""A team's own config (`spacelm init`): the quick or standard config with the team's corpus, golden
samples, run name, trained reranker's name and out-of-corpus subjects, and folders of its own."""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,62}")


def _project_root() -> Path:
    here = Path(__file__).resolve().parents[2]
    return here if (here / "configs").is_dir() else Path.cwd()


def _shown(path: Path, root: Path) -> str:
    """`path` relative to `root` (with ../ steps when it lies beside it), absolute when no shorter."""
    import os

    p, r = Path(path).resolve(), Path(root).resolve()
    rel = Path(os.path.relpath(p, r)).as_posix()
    return rel if rel.count("../") <= 2 else p.as_posix()


# keys whose values are paths the base config reads outside the team's folders (labelled sets)
READ_PATHS = ("path", "reference_judges", "calibration_pairs")


def rebase(value, old_home: Path, new_home: Path):
    """`value` (a config mapping or list) with each relative path under a READ_PATHS key resolved
    from `old_home` and shown from `new_home`, so a config written elsewhere reads the same folders."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k in READ_PATHS and isinstance(v, str) and not Path(v).is_absolute():
                out[k] = _shown(old_home / v, new_home)
            else:
                out[k] = rebase(v, old_home, new_home)
        return out
    if isinstance(value, list):
        return [rebase(v, old_home, new_home) for v in value]
    return value


def team_settings(base: dict, corpus: str, golden: str, name: str, subjects: str) -> dict:
    """`base` (a config as a mapping) turned into the team's: what changes, nothing else."""
    cfg = {k: v for k, v in base.items()}
    cfg["run_name"] = name
    # the base's corpus list and size belong to its corpus; check measures the team's
    corpus_cfg = {k: v for k, v in (base.get("corpus") or {}).items() if k not in ("file_list", "sized_for_chunks")}
    cfg["corpus"] = {**corpus_cfg, "raw_dir": corpus, "golden_samples": golden}
    cfg["paths"] = {
        **(base.get("paths") or {}),
        "processed_dir": f"data/processed/{name}",
        "synthetic_dir": f"data/synthetic/{name}",
    }
    retrieval = dict(base.get("retrieval") or {})
    reranker = dict(retrieval.get("reranker") or {})
    if str(reranker.get("model", "")).startswith("trained:"):
        reranker["model"] = f"trained:ce-minilm-{name}"
        retrieval["reranker"] = reranker
        cfg["retrieval"] = retrieval
    # labels marked in_domain grade the base config's corpus, not the team's: a team's run has none
    # until it labels its own (docs/team-corpus.md), so the judge check reads only the general sets
    check = dict(base.get("judge_check") or {})
    if check.get("sources"):
        check["sources"] = [s for s in check["sources"] if not (isinstance(s, dict) and s.get("in_domain"))]
        cfg["judge_check"] = check
    synth = dict(base.get("synth") or {})
    synth["unanswerable"] = {**(synth.get("unanswerable") or {}), "subjects": subjects}
    cfg["synth"] = synth
    return cfg


def write_team_config(corpus: Path, golden: Path, name: str, scale: str = "quick", out: Path | None = None) -> Path:
    """Write configs/NAME.yaml (or `out`) and data/NAME/out_of_corpus_subjects.txt; ValueError naming
    the argument and the fix for a bad name, a missing folder or file, or a config already there."""
    import yaml
    from jinja2 import Environment

    if not NAME.fullmatch(name):
        raise ValueError(f"--name {name!r}: use lower-case letters, digits, '-' and '_' (it names results/{name}/)")
    if not corpus.is_dir():
        raise ValueError(f"--corpus {corpus}: no such folder; give the folder of your .pdf/.md/.txt documents")
    if not golden.is_file():
        raise ValueError(f"--golden {golden}: no such file; docs/team-corpus.md gives the golden samples' schema")
    root = _project_root()
    out = out or root / "configs" / f"{name}.yaml"
    if out.exists():
        raise ValueError(f"{out} already exists: choose another --name or --out (init never overwrites a config)")
    base_path = root / "configs" / f"{scale}.yaml"
    base = yaml.safe_load(base_path.read_text(encoding="utf-8"))
    # a config's relative paths resolve against its project: the folder above configs/, else its own folder
    home = out.resolve().parent.parent if out.resolve().parent.name == "configs" else out.resolve().parent
    subjects = home / "data" / name / "out_of_corpus_subjects.txt"
    settings = team_settings(base, _shown(corpus, home), _shown(golden, home), name, _shown(subjects, home))
    settings = rebase(settings, root, home)
    text = (
        Environment(keep_trailing_newline=True)
        .from_string(
            resources.files("spacelm").joinpath("templates", "team_config.yaml.j2").read_text(encoding="utf-8")
        )
        .render(
            name=name,
            base=_shown(base_path, root),
            scale=scale,
            out=_shown(out, Path.cwd()),
            body=yaml.safe_dump(settings, sort_keys=False, allow_unicode=True, width=110),
        )
    )
    if not subjects.exists():
        subjects.parent.mkdir(parents=True, exist_ok=True)
        subjects.write_text(
            "# subjects an out-of-corpus question may name, one per line: those the corpus never mentions are used;\n"
            "# the space-operations list the suite ships, to be replaced by your domain's\n"
            + resources.files("spacelm").joinpath("data", "out_of_corpus_subjects.txt").read_text(encoding="utf-8"),
            encoding="utf-8",
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.partial")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(out)
    return out
