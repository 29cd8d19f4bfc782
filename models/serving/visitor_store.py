"""Each visitor's trained models, in a folder of their own, with caps and an age limit.

The store's folder is this user's own (mode 0700, owner checked, never a symlink: see
models/serving/private_files.py), by default under $XDG_STATE_HOME (~/.local/state) or
SEQLENS_VISITOR_MODELS. A visitor is known by a key the server signed
(models/serving/visitor_keys.py); their folder is named by the key's hash, so listing the
store reveals no key. Files are checkpoints (models/training/checkpoints.py), safetensors +
JSON, mode 0600.

Caps: MAX_BYTES per visitor (their oldest models go first), and for the whole store
MAX_TOTAL_BYTES and MAX_KEYS. Past a whole-store cap the oldest models of anyone go: the
models are teaching aids deleted after MAX_AGE anyway, and a refusal instead would let
whoever filled the store first stop every visitor's saving for a day. Saving is refused
(StoreRefused) when the disk's free space falls below MIN_FREE_BYTES, since the disk is
shared with everything else on the machine. `prune()` deletes every model older than MAX_AGE.
"""

from __future__ import annotations

import logging
import os
import re
import secrets
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from models.nets.task_models import ModelSpec, SequenceModel
from models.serving.private_files import UnsafeFolder, child_folder, private_folder
from models.serving.visitor_keys import Keys, LinkRefused, Links, folder_name, server_secret
from models.training import checkpoints

__all__ = ["LinkRefused", "SavedModel", "StoreRefused", "VisitorStore", "default_root"]

log = logging.getLogger(__name__)

ROOT_VAR = "SEQLENS_VISITOR_MODELS"
MB = 2**20


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "")
    return int(raw) if raw.strip().isdigit() else default


MAX_BYTES = 8 * MB  # per visitor
MAX_TOTAL_BYTES = _env_int("SEQLENS_VISITOR_TOTAL_MB", 1024) * MB  # every visitor's together
MAX_KEYS = _env_int("SEQLENS_VISITOR_MAX_KEYS", 2000)  # visitors with a folder
MIN_FREE_BYTES = _env_int("SEQLENS_VISITOR_MIN_FREE_MB", 512) * MB
MAX_AGE = 24 * 3600.0  # seconds
_FOLDER = re.compile(r"[0-9a-f]{64}")
_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,80}")
_STAMP = re.compile(r"\d{6}")


def default_root() -> Path:
    """SEQLENS_VISITOR_MODELS, else a folder of this user's state (a per-user folder in the
    temporary folder when the user has no home)."""
    if os.environ.get(ROOT_VAR):
        return Path(os.environ[ROOT_VAR])
    state = os.environ.get("XDG_STATE_HOME") or ""
    home = Path(os.path.expanduser("~"))
    if not state and home.is_dir() and os.access(home, os.W_OK):
        state = str(home / ".local" / "state")
    if state:
        return Path(state) / "seqlens" / "visitor-models"
    # Right inside the temporary folder: a folder between them could be another user's.
    return Path(tempfile.gettempdir()) / f"seqlens-{os.getuid()}"


class StoreRefused(Exception):
    """Saving refused; `reason` ("disk_low", "too_large", "unsafe") names the words the page
    shows, `params` fill them in."""

    def __init__(self, reason: str, message: str, **params):
        super().__init__(f"{reason}: {message}")
        self.reason = reason
        self.params = params


@dataclass(frozen=True)
class SavedModel:
    name: str
    kind: str
    task: dict
    metrics: dict
    saved_at: float
    stem: Path


class VisitorStore:
    def __init__(
        self,
        root: Path | None = None,
        max_bytes: int = MAX_BYTES,
        max_age: float = MAX_AGE,
        max_total: int = MAX_TOTAL_BYTES,
        max_keys: int = MAX_KEYS,
        min_free: int = MIN_FREE_BYTES,
    ):
        self.root = Path(root) if root is not None else default_root()
        self.max_bytes, self.max_age = max_bytes, max_age
        self.max_total, self.max_keys, self.min_free = max_total, max_keys, min_free
        self.problem = ""  # why the folder cannot be used; then nothing is read or written
        try:
            private_folder(self.root)
            secret = server_secret(self.root)
        except (OSError, ValueError) as error:
            self.problem = str(error)
            log.error("visitor models are not saved: %s", error)
            secret = secrets.token_bytes(32)  # keys of this process only; nothing is kept
        self.keys = Keys(secret)
        self.links = Links(self.root, max_age)

    # --- keys and links ---------------------------------------------------------------

    def new_key(self) -> str:
        return self.keys.new()

    def mint_link(self, key: str) -> str:
        """A one-time token that brings `key` to the session that opens it first."""
        self._check_usable()
        try:
            return self.links.mint(self._signed(key))
        except OSError as error:  # the links folder is a symlink, not ours, or unwritable
            raise StoreRefused("unsafe", str(error)) from error

    def redeem_link(self, token) -> str:
        """The key a one-time token stands for (LinkRefused when it is used or unknown)."""
        if self.problem:
            raise LinkRefused("unknown")
        try:
            key = self.links.redeem(token)
        except OSError as error:
            log.error("a link could not be read: %s", error)
            raise LinkRefused("unknown") from error
        if not self.keys.check(key):
            raise LinkRefused("unknown")
        return key

    def link_is_live(self, token) -> bool:
        try:
            return not self.problem and self.links.is_live(token)
        except OSError:
            return False

    def _signed(self, key: str) -> str:
        if not self.keys.check(key):
            raise ValueError("not a visitor key this server issued")
        return key

    # --- models -------------------------------------------------------------------------

    def folder(self, visitor: str) -> Path:
        """Where `visitor`'s models are (ValueError for a key this server did not sign)."""
        return self.root / folder_name(self._signed(visitor))

    def refusal(self) -> StoreRefused | None:
        """Why no model can be saved now, or None."""
        if self.problem:
            return StoreRefused("unsafe", self.problem)
        try:
            free = shutil.disk_usage(self.root).free
        except OSError as error:
            return StoreRefused("unsafe", str(error))
        if free < self.min_free:
            return StoreRefused(
                "disk_low",
                f"{free // MB} MB free on the disk, below the {self.min_free // MB} MB kept free",
                free_mb=free // MB,
                margin_mb=self.min_free // MB,
            )
        return None

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
        folder_path = self.folder(visitor)
        refused = self.refusal()
        if refused is not None:
            raise refused
        try:
            folder = child_folder(self.root, folder_path.name, create=False)
            if folder is None:
                self._make_room_for_a_key()
                folder = child_folder(self.root, folder_path.name)
        except UnsafeFolder as error:
            raise StoreRefused("unsafe", str(error)) from error
        stem = folder / f"{stamp}-{name}"
        n = 1
        while any(os.path.lexists(path) for path in checkpoints.paths(stem)):
            n += 1
            stem = folder / f"{stamp}-{name}-{n}"
        tensor_path, _ = checkpoints.save(stem, model, mode=0o600, saved_at=time.time(), **sections)
        if tensor_path.stat().st_size > self.max_bytes:
            self._delete(stem)
            raise StoreRefused(
                "too_large",
                f"a model over {self.max_bytes // MB} MB is not kept",
                mb=self.max_bytes // MB,
            )
        self._enforce_cap(visitor)
        self._enforce_total(keep=stem)
        return stem

    def list(self, visitor: str) -> list[SavedModel]:
        """The visitor's models still on disk, newest first (unreadable ones skipped)."""
        return self._list_folder(self.folder(visitor).name)

    def _list_folder(self, name: str) -> list[SavedModel]:
        folder = self._existing(name)
        saved = []
        for config_path in folder.glob("*.json") if folder is not None else ():
            try:
                config = checkpoints.read_config(config_path)
                ModelSpec.from_dict(config.get("model") or {})
                mtime = os.lstat(config_path).st_mtime
                saved_at = float(config.get("saved_at", mtime))
                model = SavedModel(
                    name=config_path.stem,
                    kind=str((config.get("model") or {}).get("kind", "")),
                    task=dict(config.get("task") or {}),
                    metrics=dict(config.get("metrics") or {}),
                    saved_at=saved_at,
                    stem=config_path.with_suffix(""),
                )
            except (checkpoints.CheckpointError, OSError, TypeError, ValueError):
                continue  # malformed, or deleted meanwhile by a prune in another process
            saved.append(model)
        return sorted(saved, key=lambda m: m.saved_at, reverse=True)

    def _existing(self, name: str) -> Path | None:
        """The key folder `name` if it is there and safe to read, else None."""
        if self.problem:
            return None
        try:
            return child_folder(self.root, name, create=False)
        except UnsafeFolder as error:
            log.warning("a visitor folder is skipped: %s", error)
            return None

    def load(self, visitor: str, name: str) -> checkpoints.Checkpoint:
        if not _NAME.fullmatch(name):
            raise checkpoints.CheckpointError(f"not a model name: {name!r}")
        folder = self._existing(self.folder(visitor).name)
        if folder is None:
            raise checkpoints.CheckpointError(f"{name}.json: no such file")
        return checkpoints.load(folder / name)

    def size(self, visitor: str) -> int:
        return _folder_bytes(self._existing(self.folder(visitor).name))

    def prune(self, now: float | None = None) -> int:
        """Delete every model older than the age limit, and every expired link; returns how
        many models went."""
        now = time.time() if now is None else now
        removed = 0
        for name in self._key_folders():
            for model in self._list_folder(name):
                if now - model.saved_at > self.max_age:
                    self._delete(model.stem)
                    removed += 1
            self._remove_if_empty(name)
        try:
            if not self.problem:
                self.links.prune(now)
        except OSError as error:
            log.error("expired links could not be removed: %s", error)
        return removed

    def total_bytes(self) -> int:
        return sum(_folder_bytes(self._existing(name)) for name in self._key_folders())

    def _key_folders(self) -> list[str]:
        if self.problem:
            return []
        try:
            return [entry.name for entry in os.scandir(self.root) if _FOLDER.fullmatch(entry.name)]
        except OSError:
            return []

    def _check_usable(self) -> None:
        if self.problem:
            raise StoreRefused("unsafe", self.problem)

    def _enforce_cap(self, visitor: str) -> None:
        models = self.list(visitor)
        while self.size(visitor) > self.max_bytes and len(models) > 1:
            self._delete(models.pop().stem)

    def _enforce_total(self, keep: Path) -> None:
        """Oldest models of anyone out, until the store is within MAX_TOTAL_BYTES."""
        total = self.total_bytes()
        if total <= self.max_total:
            return
        everyone = [m for name in self._key_folders() for m in self._list_folder(name)]
        for model in sorted(everyone, key=lambda m: m.saved_at):
            if total <= self.max_total:
                break
            if model.stem != keep:
                total -= _stem_bytes(model.stem)
                self._delete(model.stem)
        for name in self._key_folders():
            self._remove_if_empty(name)

    def _make_room_for_a_key(self) -> None:
        """Below MAX_KEYS folders before a new one is made: the folders whose newest model is
        oldest go first (a folder left empty by a failed save counts as oldest)."""
        names = self._key_folders()
        if len(names) < self.max_keys:
            return
        newest = {}
        for name in names:
            models = self._list_folder(name)
            newest[name] = models[0].saved_at if models else 0.0
        for name in sorted(names, key=newest.get)[: len(names) - self.max_keys + 1]:
            for model in self._list_folder(name):
                self._delete(model.stem)
            self._remove_if_empty(name)

    def _remove_if_empty(self, name: str) -> None:
        folder = self._existing(name)
        try:
            if folder is not None and not any(folder.iterdir()):
                folder.rmdir()
        except OSError:
            pass  # another process saved into it, or removed it, meanwhile

    @staticmethod
    def _delete(stem: Path) -> None:
        for path in checkpoints.paths(stem):
            path.unlink(missing_ok=True)


def _stem_bytes(stem: Path) -> int:
    total = 0
    for path in checkpoints.paths(stem):
        try:
            total += os.lstat(path).st_size
        except OSError:
            continue
    return total


def _folder_bytes(folder: Path | None) -> int:
    total = 0
    try:
        entries = list(os.scandir(folder)) if folder is not None else []
    except OSError:
        return 0  # removed meanwhile
    for entry in entries:
        try:
            total += entry.stat(follow_symlinks=False).st_size
        except OSError:
            continue  # deleted meanwhile
    return total
