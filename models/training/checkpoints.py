"""Checkpoints: a `.safetensors` file of tensors beside a `.json` file that says what they are.

Never pickle, never `torch.load`: a pickle runs code when it is read. Reading checks, in
order, and refuses with a message that says what is wrong:

1. the JSON: at most MAX_CONFIG bytes, our format and version, a model spec whose every
   size is a whole number within `SIZE_LIMITS` (models/nets/task_models.py);
2. the tensor file's header: a safetensors header (a renamed pickle or `torch.save` zip is
   named as such), and a file long enough for every tensor the header lists (truncated);
3. the header against the model the JSON describes: the same names, shapes and types. The
   expected ones come from the model built on torch's "meta" device, which holds shapes and
   no numbers, so a description that does not match its tensors allocates nothing.

Only then are the tensors read and copied into a freshly built model, returned frozen. Any
other failure while reading is a CheckpointError too, with what went wrong.
Files are never read through a symlink, and are written whole (a temporary file renamed).
"""

from __future__ import annotations

import functools
import json
import struct
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors.torch import load as load_tensors
from safetensors.torch import save as save_tensors

from models.nets.task_models import ModelSpec, SequenceModel
from models.serving.private_files import read_private, write_private

FORMAT = "seqlens.checkpoint"
VERSION = 1
MAX_BYTES = 64 * 2**20  # far above any model the lab trains
MAX_HEADER = 2**20
MAX_CONFIG = 256 * 2**10  # a description is about 500 bytes; its task and metrics stay small
# safetensors' names of the tensor types a SequenceModel holds
_DTYPES = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.int64: "I64"}


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


def save(
    stem: Path | str, model: SequenceModel, mode: int = 0o644, **sections
) -> tuple[Path, Path]:
    """Write `<stem>.safetensors` and `<stem>.json` (file mode `mode`: 0o600 for a visitor's
    own); `sections` (task, training, metrics…) go into the JSON as they are."""
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
    text = json.dumps(config, indent=1, ensure_ascii=False) + "\n"
    write_private(tensor_path, save_tensors(tensors), mode)
    write_private(config_path, text.encode("utf-8"), mode)
    return tensor_path, config_path


def read_config(config_path: Path) -> dict:
    try:
        config = json.loads(read_private(config_path, MAX_CONFIG).decode("utf-8"))
    except FileNotFoundError as error:
        raise CheckpointError(f"{config_path.name}: no such file") from error
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise CheckpointError(f"{config_path.name} is not a JSON file: {error}") from error
    except RecursionError as error:
        raise CheckpointError(f"{config_path.name} is nested too deeply") from error
    except (OSError, ValueError) as error:  # a symlink, not a file, or too large
        raise CheckpointError(f"{config_path.name} could not be read: {error}") from error
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


def expected_tensors(spec: ModelSpec) -> dict[str, tuple[tuple[int, ...], str]]:
    """The name, shape and safetensors type of every tensor a model of `spec` holds."""
    return dict(_expected_tensors(spec))


@functools.lru_cache(maxsize=64)
def _expected_tensors(spec: ModelSpec) -> tuple:
    with torch.device("meta"):  # shapes without storage: nothing is allocated
        state = SequenceModel(spec).state_dict()
    return tuple(
        (k, (tuple(v.shape), _DTYPES.get(v.dtype, str(v.dtype)))) for k, v in state.items()
    )


def check_tensors(entries: dict, expected: dict[str, tuple[tuple, str]], name: str) -> None:
    """Refuse a header whose names, shapes or types differ from the model the JSON describes."""
    missing = sorted(set(expected) - set(entries))
    extra = sorted(set(entries) - set(expected))
    wrong = []
    for k in sorted(set(entries) & set(expected)):
        entry = entries[k] if isinstance(entries[k], dict) else {}
        shape, dtype = entry.get("shape"), entry.get("dtype")
        if not isinstance(shape, list) or tuple(shape) != expected[k][0] or dtype != expected[k][1]:
            wrong.append(f"{k} {_shown(shape)} (expected {expected[k][0]})")
    problems = []
    if missing:
        problems.append(f"missing tensors: {', '.join(missing[:5])}")
    if extra:
        problems.append(f"tensors the model does not have: {', '.join(map(_shown, extra[:5]))}")
    if wrong:
        problems.append(f"wrong shapes: {', '.join(wrong[:5])}")
    if problems:
        raise CheckpointError(f"{name} does not match its JSON description: {'; '.join(problems)}")


def _shown(value) -> str:
    """A value from a file, short enough for a message."""
    text = str(tuple(value)) if isinstance(value, list) else str(value)
    return text if len(text) <= 60 else text[:57] + "..."


def load(stem: Path | str) -> Checkpoint:
    """The frozen model and its JSON; CheckpointError with a clear message otherwise."""
    tensor_path, _ = paths(stem)
    try:
        return _load(stem)
    except CheckpointError:
        raise
    except Exception as error:  # whatever a damaged file makes go wrong, it is one refusal
        message = f"{type(error).__name__}: {str(error)[:200]}"
        raise CheckpointError(f"{tensor_path.name} could not be read: {message}") from error


def _load(stem: Path | str) -> Checkpoint:
    tensor_path, config_path = paths(stem)
    config = read_config(config_path)
    try:
        spec = ModelSpec.from_dict(config.get("model") or {})
        seed = config.get("seed", 0)
        if not isinstance(seed, int) or isinstance(seed, bool) or not 0 <= seed < 2**63:
            raise ValueError(f"the seed must be a whole number, got {seed!r:.40}")
        expected = expected_tensors(spec)
    except (TypeError, ValueError) as error:
        raise CheckpointError(
            f"{config_path.name} describes no model we can build: {error}"
        ) from error
    try:
        data = read_private(tensor_path, MAX_BYTES)
    except FileNotFoundError as error:
        raise CheckpointError(f"{tensor_path.name}: no such file") from error
    except ValueError as error:
        raise CheckpointError(
            f"{tensor_path.name} is larger than {MAX_BYTES // 2**20} MB"
        ) from error
    except OSError as error:
        raise CheckpointError(f"{tensor_path.name} could not be read: {error}") from error
    check_tensors(check_header(data, tensor_path.name), expected, tensor_path.name)
    try:
        tensors = load_tensors(data)
    except Exception as error:  # safetensors raises its own error type
        raise CheckpointError(f"{tensor_path.name} could not be read: {error}") from error
    model = SequenceModel(spec, seed)
    model.load_state_dict(tensors, strict=True)
    return Checkpoint(model.freeze(), config)
