"""Checkpoints: a `.safetensors` file of tensors beside a `.json` file that says what they are.

Never pickle, never `torch.load`: a pickle runs code when it is read. Reading checks, in
order, and refuses with a message that says what is wrong:

1. the JSON: our format and version, a model spec we can build;
2. the tensor file's header: a safetensors header (a renamed pickle or `torch.save` zip is
   named as such), and a file long enough for every tensor the header lists (truncated);
3. the tensors against the model the JSON describes: the same names and the same shapes.

Only then are the tensors copied into a freshly built model, which is returned frozen.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors.torch import load as load_tensors
from safetensors.torch import save as save_tensors

from models.task_models import ModelSpec, SequenceModel

FORMAT = "seqlens.checkpoint"
VERSION = 1
MAX_BYTES = 64 * 2**20  # far above any model the lab trains
MAX_HEADER = 2**20


class CheckpointError(ValueError):
    """A checkpoint that cannot be used; the message says why."""


@dataclass(frozen=True)
class Checkpoint:
    model: SequenceModel
    config: dict  # the whole JSON: format, model, task, training, metrics

    @property
    def task(self) -> dict:
        return self.config.get("task", {})

    @property
    def metrics(self) -> dict:
        return self.config.get("metrics", {})


def paths(stem: Path | str) -> tuple[Path, Path]:
    stem = Path(stem)
    if stem.suffix in (".safetensors", ".json"):
        stem = stem.with_suffix("")
    return stem.with_name(stem.name + ".safetensors"), stem.with_name(stem.name + ".json")


def save(stem: Path | str, model: SequenceModel, **sections) -> tuple[Path, Path]:
    """Write `<stem>.safetensors` and `<stem>.json`; `sections` (task, training, metrics…)
    go into the JSON as they are."""
    tensor_path, config_path = paths(stem)
    tensors = {name: t.detach().contiguous().clone() for name, t in model.state_dict().items()}
    config = {
        "format": FORMAT,
        "version": VERSION,
        "model": model.spec.to_dict(),
        "seed": model.seed,
        **sections,
    }
    tensor_path.parent.mkdir(parents=True, exist_ok=True)
    tensor_path.write_bytes(save_tensors(tensors))
    config_path.write_text(json.dumps(config, indent=1, ensure_ascii=False) + "\n", "utf-8")
    return tensor_path, config_path


def read_config(config_path: Path) -> dict:
    try:
        config = json.loads(config_path.read_text(encoding="utf-8"))
    except FileNotFoundError as error:
        raise CheckpointError(f"{config_path.name}: no such file") from error
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise CheckpointError(f"{config_path.name} is not a JSON file: {error}") from error
    if not isinstance(config, dict) or config.get("format") != FORMAT:
        raise CheckpointError(f"{config_path.name} is not a SeqLens checkpoint description")
    if config.get("version") != VERSION:
        raise CheckpointError(
            f"{config_path.name} is version {config.get('version')!r}; this SeqLens reads {VERSION}"
        )
    return config


def check_header(data: bytes, name: str) -> dict:
    """The safetensors header of `data`, or a CheckpointError naming what the file is."""
    # A safetensors file opens with its header's length (8 bytes, little-endian) and the
    # header's JSON; a pickle opens with the PROTO opcode, a torch.save archive with "PK".
    (header_size,) = struct.unpack("<Q", data[:8]) if len(data) >= 8 else (None,)
    looks_right = header_size is not None and header_size <= MAX_HEADER
    if looks_right and len(data) > 8 and data[8:9] != b"{":
        looks_right = False
    if not looks_right and (data[:2] == b"PK" or (data[:1] == b"\x80" and data[1:2] <= b"\x05")):
        raise CheckpointError(
            f"{name} is a pickle (as torch.save writes), not safetensors: "
            "SeqLens never unpickles files, since reading a pickle can run code"
        )
    if len(data) < 8:
        raise CheckpointError(f"{name} is truncated: {len(data)} bytes, not even a header")
    if not looks_right:
        raise CheckpointError(f"{name} is not a safetensors file (no valid header)")
    if 8 + header_size > len(data):
        raise CheckpointError(
            f"{name} is truncated: its header needs {8 + header_size} bytes, the file has "
            f"{len(data)}"
        )
    try:
        header = json.loads(data[8 : 8 + header_size])
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise CheckpointError(f"{name} is not a safetensors file (no valid header)") from error
    if not isinstance(header, dict):
        raise CheckpointError(f"{name} is not a safetensors file (no valid header)")
    entries = {k: v for k, v in header.items() if k != "__metadata__"}
    try:
        needed = max((int(v["data_offsets"][1]) for v in entries.values()), default=0)
    except (TypeError, KeyError, IndexError, ValueError) as error:
        raise CheckpointError(f"{name} has a damaged safetensors header") from error
    if 8 + header_size + needed > len(data):
        raise CheckpointError(
            f"{name} is truncated: its tensors need {8 + header_size + needed} bytes, "
            f"the file has {len(data)}"
        )
    return entries


def check_tensors(
    tensors: dict[str, torch.Tensor], expected: dict[str, torch.Tensor], name: str
) -> None:
    """Refuse tensors whose names or shapes differ from the model the JSON describes."""
    missing = sorted(set(expected) - set(tensors))
    extra = sorted(set(tensors) - set(expected))
    wrong = [
        f"{k} {tuple(tensors[k].shape)} (expected {tuple(expected[k].shape)})"
        for k in sorted(set(tensors) & set(expected))
        if tensors[k].shape != expected[k].shape or tensors[k].dtype != expected[k].dtype
    ]
    problems = []
    if missing:
        problems.append(f"missing tensors: {', '.join(missing[:5])}")
    if extra:
        problems.append(f"tensors the model does not have: {', '.join(extra[:5])}")
    if wrong:
        problems.append(f"wrong shapes: {', '.join(wrong[:5])}")
    if problems:
        raise CheckpointError(f"{name} does not match its JSON description: {'; '.join(problems)}")


def load(stem: Path | str) -> Checkpoint:
    """The frozen model and its JSON; CheckpointError with a clear message otherwise."""
    tensor_path, config_path = paths(stem)
    config = read_config(config_path)
    try:
        spec = ModelSpec.from_dict(config.get("model") or {})
        seed = int(config.get("seed", 0))
    except (TypeError, ValueError) as error:
        raise CheckpointError(
            f"{config_path.name} describes no model we can build: {error}"
        ) from error
    try:
        size = tensor_path.stat().st_size
    except FileNotFoundError as error:
        raise CheckpointError(f"{tensor_path.name}: no such file") from error
    if size > MAX_BYTES:
        raise CheckpointError(f"{tensor_path.name} is larger than {MAX_BYTES // 2**20} MB")
    data = tensor_path.read_bytes()
    check_header(data, tensor_path.name)
    try:
        tensors = load_tensors(data)
    except Exception as error:  # safetensors raises its own error type
        raise CheckpointError(f"{tensor_path.name} could not be read: {error}") from error
    model = SequenceModel(spec, seed)
    check_tensors(tensors, model.state_dict(), tensor_path.name)
    model.load_state_dict(tensors, strict=True)
    return Checkpoint(model.freeze(), config)
