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


class ModelRefused(Exception):
    """A model the app will not load; `code` names the reason, `params` fill the message."""

    def __init__(self, code: str, **params):
        super().__init__(code, params)
        self.code = code
        self.params = params


@dataclass(frozen=True)
class FolderInfo:
    model_type: str
    n_params: int


def read_config(folder: Path) -> dict:
    path = Path(folder) / "config.json"
    if not path.is_file():
        raise ModelRefused("no_config")
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ModelRefused("bad_config") from error
    if not isinstance(config, dict):
        raise ModelRefused("bad_config")
    return config


def safetensors_parameters(path: Path) -> int:
    """Numbers stored in one safetensors file, from its header (8-byte length, then JSON)."""
    with open(path, "rb") as f:
        head = f.read(8)
        if len(head) != 8:
            raise ModelRefused("bad_weights")
        (length,) = struct.unpack("<Q", head)
        if length > MAX_HEADER_BYTES:
            raise ModelRefused("bad_weights")
        try:
            header = json.loads(f.read(length))
        except (UnicodeDecodeError, json.JSONDecodeError) as error:
            raise ModelRefused("bad_weights") from error
    total = 0
    for name, tensor in header.items():
        if name == "__metadata__":
            continue
        count = 1
        for size in tensor["shape"]:
            count *= int(size)
        total += count
    return total


def count_parameters(folder: Path) -> int:
    return sum(safetensors_parameters(p) for p in sorted(Path(folder).glob("*.safetensors")))


def check_folder(folder: Path, max_params: int | None) -> FolderInfo:
    """Raise ModelRefused unless `folder` holds a model of a known architecture, with
    safetensors weights, no remote code, and at most `max_params` parameters."""
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
    n_params = count_parameters(folder)
    if max_params is not None and n_params > max_params:
        raise ModelRefused("too_large", n_params=n_params, limit=max_params)
    return FolderInfo(model_type, n_params)
