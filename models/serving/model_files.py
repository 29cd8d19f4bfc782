"""What a model folder holds, read without loading it: config, weights, parameter count.

Only JSON and safetensors headers are read here (no torch, no transformers), so listing
every model the operator offers stays cheap, and a folder is refused before any of its
weights are read.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from pathlib import Path

# model_type → encoder or decoder: the BERT-, RoBERTa-, GPT-2- and Llama-style families
# (Llama-style: decoders built like Llama, with RMSNorm, rotary positions and
# grouped-query attention).
ARCHITECTURES = {
    "bert": "encoder",
    "roberta": "encoder",
    "xlm-roberta": "encoder",
    "gpt2": "decoder",
    "llama": "decoder",
    "mistral": "decoder",
}
# Pickle checkpoints: loading one can run any code it carries. Never loaded; named only
# to say why a folder holding nothing else is refused.
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl", ".pickle")
# A safetensors header is a few kB to a few MB of JSON; anything far bigger is not one.
MAX_HEADER_BYTES = 64 * 1024 * 1024
# A config.json is a few kB (a tokenizer's vocabulary is in files of its own).
MAX_CONFIG_BYTES = 4 * 1024 * 1024
# Bytes per number of each safetensors dtype (the format's own list, sub-byte ones aside).
DTYPE_BYTES = {
    "BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1,
    "I16": 2, "U16": 2, "F16": 2, "BF16": 2,
    "I32": 4, "U32": 4, "F32": 4,
    "I64": 8, "U64": 8, "F64": 8,
}  # fmt: skip
# Real tensors have at most 5 dimensions; the bound keeps a planted shape's product small.
MAX_RANK = 16
# A weights file whose config's estimate and header's count differ by more than this
# factor is not the model the config describes (heads, tied embeddings and buffers move
# real models by a few percent at most).
MISMATCH_RATIO = 2.0


class ModelRefused(Exception):
    """A model the app will not load; `code` names the reason, `params` fill the message
    shown to visitors, `detail` says more for the server's log (in English)."""

    def __init__(self, code: str, detail: str = "", **params):
        super().__init__(code, params)
        self.code = code
        self.params = params
        self.detail = detail


@dataclass(frozen=True)
class FolderInfo:
    model_type: str
    n_params: int


def _json(raw: bytes):
    """JSON from bytes; ValueError for anything that is not JSON (nested too deep for the
    parser, or numbers too long for Python, included)."""
    try:
        return json.loads(raw)
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise ValueError(f"{type(error).__name__}: {str(error)[:120]}") from error


def read_config(folder: Path) -> dict:
    path = Path(folder) / "config.json"
    if not path.is_file():
        raise ModelRefused("no_config")
    with open(path, "rb") as f:
        raw = f.read(MAX_CONFIG_BYTES + 1)
    try:
        if len(raw) > MAX_CONFIG_BYTES:
            raise ValueError(f"over {MAX_CONFIG_BYTES} bytes")
        config = _json(raw)
    except ValueError as error:
        raise ModelRefused("bad_config", detail=f"config.json: {error}") from error
    if not isinstance(config, dict):
        raise ModelRefused("bad_config", detail="config.json is not a JSON object")
    return config


def _shape_count(shape) -> int:
    """The numbers a tensor of `shape` holds; ValueError unless it is a short list of
    non-negative whole numbers."""
    if not isinstance(shape, list) or len(shape) > MAX_RANK:
        raise ValueError(f"shape {str(shape)[:40]} is not a list of at most {MAX_RANK} sizes")
    count = 1
    for size in shape:
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise ValueError(f"shape {str(shape)[:40]} holds {size!r}, not a size")
        count *= size
    return count


def _tensor_count(name: str, entry, data_bytes: int) -> int:
    """One header entry's numbers, once its dtype, shape and place in the file agree."""
    if not isinstance(entry, dict):
        raise ValueError(f"{name[:60]}: entry is {type(entry).__name__}, not an object")
    dtype = entry.get("dtype")
    if dtype not in DTYPE_BYTES:
        raise ValueError(f"{name[:60]}: unknown dtype {str(dtype)[:20]!r}")
    count = _shape_count(entry.get("shape"))
    offsets = entry.get("data_offsets")
    if (
        not isinstance(offsets, list)
        or len(offsets) != 2
        or not all(isinstance(o, int) and not isinstance(o, bool) for o in offsets)
        or not 0 <= offsets[0] <= offsets[1] <= data_bytes
        or offsets[1] - offsets[0] != count * DTYPE_BYTES[dtype]
    ):
        raise ValueError(f"{name[:60]}: data_offsets {str(offsets)[:40]} do not fit the file")
    return count


def _header_count(header, data_bytes: int) -> int:
    if not isinstance(header, dict):
        raise ValueError(f"header is {type(header).__name__}, not an object")
    metadata = header.get("__metadata__", {})
    if not isinstance(metadata, dict):
        raise ValueError("__metadata__ is not an object")
    return sum(
        _tensor_count(name, entry, data_bytes)
        for name, entry in header.items()
        if name != "__metadata__"
    )


def safetensors_parameters(path: Path) -> int:
    """Numbers stored in one safetensors file, from its header (8-byte length, then JSON),
    checked entry by entry against the format (dtype, shape, offsets inside the file)."""
    path = Path(path)
    try:
        with open(path, "rb") as f:
            head = f.read(8)
            if len(head) != 8:
                raise ValueError("shorter than 8 bytes")
            (length,) = struct.unpack("<Q", head)
            if length > MAX_HEADER_BYTES:
                raise ValueError(f"header length {length} over {MAX_HEADER_BYTES}")
            raw = f.read(length)
        if len(raw) != length:
            raise ValueError("header cut short")
        data_bytes = path.stat().st_size - 8 - length
        return _header_count(_json(raw), data_bytes)
    except ValueError as error:
        raise ModelRefused("bad_weights", detail=f"{path.name}: {error}", file=path.name) from error


def count_parameters(folder: Path) -> int:
    return sum(safetensors_parameters(p) for p in sorted(Path(folder).glob("*.safetensors")))


def check_folder(folder: Path, max_params: int | None) -> FolderInfo:
    """Raise ModelRefused unless `folder` holds a model of a known architecture, with
    safetensors weights, no remote code, and at most `max_params` parameters, counted
    both from its config (models/serving/config_size.py) and from its weights, which agree."""
    folder = Path(folder)
    config = read_config(folder)
    if "auto_map" in config:
        raise ModelRefused("remote_code")
    model_type = str(config.get("model_type", ""))
    if model_type not in ARCHITECTURES:
        raise ModelRefused("unsupported", model_type=model_type or "?")
    if not any(folder.glob("*.safetensors")):
        pickles = sorted(p.name for p in folder.iterdir() if p.suffix in PICKLE_SUFFIXES)
        if pickles:
            raise ModelRefused("pickle_only", files=", ".join(pickles[:3]))
        raise ModelRefused("no_weights")
    from models.serving.config_size import config_parameters

    claimed = config_parameters(config)
    if max_params is not None and claimed > max_params:
        raise ModelRefused("too_large", n_params=claimed, limit=max_params)
    n_params = count_parameters(folder)
    if max_params is not None and n_params > max_params:
        raise ModelRefused("too_large", n_params=n_params, limit=max_params)
    if not n_params or max(claimed, n_params) > MISMATCH_RATIO * min(claimed, n_params):
        raise ModelRefused("config_mismatch", config_params=claimed, n_params=n_params)
    return FolderInfo(model_type, n_params)
