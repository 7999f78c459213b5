"""Embedded GGUF models as Hugging Face folders (config, tokenizer with its chat template,
safetensors weights), for engines that cannot read GGUF: vLLM has no GGUF loader on CPU.

The folder is written once beside the GGUF file (``<gguf stem>-hf``) and is followed by a record
beside it (``<gguf stem>-hf.json``) holding the sha256 of the GGUF it came from; the record is
written last, so a folder without a matching record is never used. The weights are the GGUF's
dequantised values (Q4_K_M → bfloat16): the same model, not the upstream full-precision one.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

from .models import EMBEDDED, ModelNotFound, file_sha256, model_path

log = logging.getLogger("spacelm")

WEIGHTS = "model.safetensors"
INSTALL_HINT = "pip install gguf accelerate (scripts/test_vllm.sh installs them into the vLLM environment)"


def export_dir(name: str) -> Path:
    """Where the Hugging Face folder of embedded model `name` lives (beside its GGUF file)."""
    m = _gguf_model(name)
    from .models import models_dir

    return models_dir() / (Path(m.weights_file).stem + "-hf")


def record_path(folder: Path) -> Path:
    return folder.with_name(folder.name + ".json")


def _gguf_model(name: str):
    if name not in EMBEDDED:
        raise ModelNotFound(f"unknown embedded model {name!r}; known: {', '.join(EMBEDDED)}")
    m = EMBEDDED[name]
    if m.kind != "gguf":
        raise ModelNotFound(
            f"embedded model {name!r} is a {m.kind} model, not a GGUF language model: "
            f"only GGUF models are exported (`spacelm models list`)"
        )
    return m


def exported(name: str) -> Path | None:
    """The finished folder of `name` when its record matches the GGUF file now on disk, else None."""
    folder = export_dir(name)
    try:
        record = json.loads(record_path(folder).read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None
    gguf = model_path(name, assemble=False) if (folder.parent / EMBEDDED[name].weights_file).exists() else None
    if gguf is None or not (folder / WEIGHTS).is_file():
        return None
    return folder if record.get("gguf_sha256") == file_sha256(gguf) else None


def export_hf(
    name: str, dtype: str = "bfloat16", convert: Callable[[Path, Path, str], None] | None = None
) -> tuple[Path, bool]:
    """Export embedded GGUF model `name` to a Hugging Face folder: (folder, written now). A no-op
    (False) when a finished export of the same GGUF exists. The GGUF is assembled and checked
    against its recorded sha256 first; the folder is built in a staging folder and moved into
    place, then the record is written."""
    m = _gguf_model(name)
    done = exported(name)
    if done is not None:
        return done, False
    gguf = model_path(name)
    sha = file_sha256(gguf)
    if sha != m.sha256:
        raise ModelNotFound(
            f"{gguf} does not match the sha256 recorded for {name!r} ({sha[:12]} != {m.sha256[:12]}): "
            f"delete it and run `spacelm models verify` to reassemble it"
        )
    folder = export_dir(name)
    staging = folder.with_name(folder.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    t0 = time.perf_counter()
    log.info("exporting %s to %s (dequantising %s; about 1-2 minutes per billion parameters)", name, folder, gguf.name)
    try:
        (convert or convert_gguf)(gguf, staging, dtype)
        if not (staging / WEIGHTS).is_file():
            raise RuntimeError(f"the conversion of {gguf} wrote no {WEIGHTS}")
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    record_path(folder).unlink(missing_ok=True)
    shutil.rmtree(folder, ignore_errors=True)
    os.replace(staging, folder)
    record = {
        "model": name,
        "upstream": m.upstream,
        "gguf": str(gguf),
        "gguf_sha256": sha,
        "dtype": dtype,
        "weights_sha256": file_sha256(folder / WEIGHTS),
        "seconds": round(time.perf_counter() - t0, 1),
    }
    tmp = record_path(folder).with_suffix(".json.tmp")
    tmp.write_text(json.dumps(record, indent=2) + "\n")
    os.replace(tmp, record_path(folder))
    return folder, True


def convert_gguf(gguf: Path, dest: Path, dtype: str) -> None:
    """Dequantise a GGUF file with transformers' GGUF loading and write config, generation
    config, tokenizer (chat template included) and the weights. The weights go through
    safetensors directly: `save_pretrained` refuses a model loaded from GGUF."""
    from ..deps import require

    torch = require("torch", "exporting a GGUF model", INSTALL_HINT)
    require("gguf", "exporting a GGUF model", INSTALL_HINT)
    require("accelerate", "exporting a GGUF model", INSTALL_HINT)
    transformers = require("transformers", "exporting a GGUF model", INSTALL_HINT)
    st = require("safetensors.torch", "exporting a GGUF model", INSTALL_HINT)
    target = getattr(torch, dtype, None)
    if not isinstance(target, torch.dtype):
        raise ValueError(f"unknown torch dtype {dtype!r} for the export (bfloat16, float16 or float32)")
    where, fname = str(gguf.parent), gguf.name
    tok = transformers.AutoTokenizer.from_pretrained(where, gguf_file=fname)
    if not tok.chat_template:
        raise ModelNotFound(f"{gguf}: the GGUF file carries no chat template (tokenizer.chat_template)")
    model = transformers.AutoModelForCausalLM.from_pretrained(where, gguf_file=fname, dtype=torch.float32)
    config = model.config
    config.dtype = target
    if hasattr(config, "quantization_config"):  # it names the GGUF file: vLLM would look for a GGUF loader
        del config.quantization_config
    config.save_pretrained(dest)
    if model.generation_config is not None:
        model.generation_config.save_pretrained(dest)
    tok.save_pretrained(dest)
    tensors, seen = {}, set()
    for key, value in model.state_dict().items():
        t = value.detach().to(target).contiguous()
        if t.data_ptr() in seen:  # tied weights share storage, which safetensors refuses
            t = t.clone()
        seen.add(t.data_ptr())
        tensors[key] = t
    st.save_file(tensors, str(dest / WEIGHTS), metadata={"format": "pt"})
    os.chmod(dest / WEIGHTS, 0o644)
    del model, tensors
