"""Each visitor's trained models, in a folder of their own, with a size cap and an age limit.

A visitor is identified by a random key of 32 hex digits the page makes: the only key to
their models, so it is unguessable (128 random bits) and nothing lists the visitors. A link
may carry the key back (`parse_visitor` accepts 32 hex digits and nothing else, never a
path), so a folder name is always safe. Saving past the cap deletes that visitor's oldest models
first; `prune()` deletes every model older than the age limit, for every visitor.
Files are checkpoints (models/checkpoints.py): safetensors + JSON, nothing else.
"""

from __future__ import annotations

import os
import re
import secrets
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from models import checkpoints
from models.task_models import SequenceModel

DEFAULT_ROOT = Path(
    os.environ.get("SEQLENS_VISITOR_MODELS")
    or Path(tempfile.gettempdir()) / "seqlens-visitor-models"
)
MAX_BYTES = 8 * 2**20  # per visitor
MAX_AGE = 24 * 3600.0  # seconds
_VISITOR = re.compile(r"[0-9a-f]{32}")
_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,80}")
_STAMP = re.compile(r"\d{6}")


def new_visitor() -> str:
    """A fresh visitor key: 32 hex digits from the operating system's random source."""
    return secrets.token_hex(16)


def parse_visitor(raw: str) -> str | None:
    """The visitor key a link carries, or None when it is not exactly 32 hex digits
    (letters in either case; spaces around it are forgiven)."""
    key = raw.strip().lower() if isinstance(raw, str) else ""
    return key if _VISITOR.fullmatch(key) else None


@dataclass(frozen=True)
class SavedModel:
    name: str
    kind: str
    task: dict
    metrics: dict
    saved_at: float
    stem: Path


class VisitorStore:
    def __init__(self, root: Path = DEFAULT_ROOT, max_bytes: int = MAX_BYTES, max_age=MAX_AGE):
        self.root = Path(root)
        self.max_bytes = max_bytes
        self.max_age = max_age

    def folder(self, visitor: str) -> Path:
        if not _VISITOR.fullmatch(visitor):
            raise ValueError("a visitor id is 32 hex digits")
        return self.root / visitor

    def save(
        self, visitor: str, name: str, model: SequenceModel, stamp: str = "", **sections
    ) -> Path:
        """Save under a unique name, `<stamp>-<name>`; the visitor's oldest models go if the
        cap is passed. `stamp` (six digits, the time by default) is shared by the models of
        one run, so their names say they belong together."""
        if not _NAME.fullmatch(name):
            raise ValueError(f"not a model name: {name!r}")
        stamp = stamp or time.strftime("%H%M%S")
        if not _STAMP.fullmatch(stamp):
            raise ValueError(f"not a time stamp: {stamp!r}")
        folder = self.folder(visitor)
        stem = folder / f"{stamp}-{name}"
        n = 1
        while checkpoints.paths(stem)[1].exists():
            n += 1
            stem = folder / f"{stamp}-{name}-{n}"
        tensor_path, _ = checkpoints.save(stem, model, saved_at=time.time(), **sections)
        if tensor_path.stat().st_size > self.max_bytes:
            self._delete(stem)
            raise ValueError(f"a model over {self.max_bytes // 2**20} MB is not kept")
        self._enforce_cap(visitor)
        return stem

    def list(self, visitor: str) -> list[SavedModel]:
        """The visitor's models still on disk, newest first (unreadable ones skipped)."""
        folder = self.folder(visitor)
        saved = []
        for config_path in folder.glob("*.json") if folder.is_dir() else ():
            try:
                config = checkpoints.read_config(config_path)
                mtime = config_path.stat().st_mtime
            except (checkpoints.CheckpointError, OSError):
                continue  # unreadable, or deleted meanwhile by a prune in another process
            saved.append(
                SavedModel(
                    name=config_path.stem,
                    kind=str((config.get("model") or {}).get("kind", "")),
                    task=config.get("task") or {},
                    metrics=config.get("metrics") or {},
                    saved_at=float(config.get("saved_at", mtime)),
                    stem=config_path.with_suffix(""),
                )
            )
        return sorted(saved, key=lambda m: m.saved_at, reverse=True)

    def load(self, visitor: str, name: str) -> checkpoints.Checkpoint:
        if not _NAME.fullmatch(name):
            raise checkpoints.CheckpointError(f"not a model name: {name!r}")
        return checkpoints.load(self.folder(visitor) / name)

    def size(self, visitor: str) -> int:
        total = 0
        for path in self.folder(visitor).glob("*"):
            try:
                total += path.stat().st_size
            except OSError:
                continue  # deleted meanwhile
        return total

    def prune(self, now: float | None = None) -> int:
        """Delete every model older than the age limit; returns how many went."""
        now = time.time() if now is None else now
        removed = 0
        for folder in self.root.iterdir() if self.root.is_dir() else ():
            if not (folder.is_dir() and _VISITOR.fullmatch(folder.name)):
                continue
            for model in self.list(folder.name):
                if now - model.saved_at > self.max_age:
                    self._delete(model.stem)
                    removed += 1
            try:
                if not any(folder.iterdir()):
                    folder.rmdir()
            except OSError:
                continue  # another process saved into it, or removed it, meanwhile
        return removed

    def _enforce_cap(self, visitor: str) -> None:
        models = self.list(visitor)
        while self.size(visitor) > self.max_bytes and len(models) > 1:
            self._delete(models.pop().stem)

    @staticmethod
    def _delete(stem: Path) -> None:
        for path in checkpoints.paths(stem):
            path.unlink(missing_ok=True)
