"""Folders and files only this user can read, on a machine other users share.

A folder is made with mode 0700 and, when it is there already, used only if it is a real
folder (never a symlink) owned by this user; a folder others may write to is tightened to
0700, since a folder we own but others write to is one they can plant files in. Files are
written with mode 0600 through a temporary file and `os.replace` (a reader never sees half a
file, and a symlink planted at the name is replaced, never followed), and read with
O_NOFOLLOW and a size cap.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path

FOLDER_MODE = 0o700
FILE_MODE = 0o600
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


class UnsafeFolder(OSError):
    """A path the store must not use: a symlink, not ours, or not what it should be."""


def private_folder(path: Path) -> Path:
    """`path`, made (with its parents) or checked: a folder of ours, mode 0700, in a folder
    nobody else can swap it out of."""
    path = Path(path)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):  # made meanwhile: checked like any other
            os.mkdir(path, FOLDER_MODE)
        info = os.lstat(path)
    _check_parent(path)
    _check_folder(path, info)
    return path


def _check_parent(path: Path) -> None:
    """Whoever may rename entries in the folder holding `path` can swap it for their own: that
    folder must be ours or the system's, and if others may write to it, sticky (as /tmp is)."""
    info = os.stat(path.parent)
    if info.st_uid not in (os.getuid(), 0):
        raise UnsafeFolder(f"{path.parent} belongs to user {info.st_uid}, not to this user")
    if info.st_mode & 0o022 and not info.st_mode & stat.S_ISVTX:
        raise UnsafeFolder(f"other users may rename what is in {path.parent}")


def _check_folder(path: Path, info: os.stat_result) -> None:
    if stat.S_ISLNK(info.st_mode):
        raise UnsafeFolder(f"{path} is a symlink; the store never follows one")
    if not stat.S_ISDIR(info.st_mode):
        raise UnsafeFolder(f"{path} is not a folder")
    if info.st_uid != os.getuid():
        raise UnsafeFolder(f"{path} belongs to user {info.st_uid}, not to this user")
    if stat.S_IMODE(info.st_mode) != FOLDER_MODE:
        os.chmod(path, FOLDER_MODE, follow_symlinks=False)


def child_folder(parent: Path, name: str, create: bool = True) -> Path | None:
    """The folder `name` inside `parent`, made if asked; None when it is not there. A symlink
    or a folder that is not ours is refused (UnsafeFolder)."""
    path = Path(parent) / name
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        if not create:
            return None
        with contextlib.suppress(FileExistsError):
            os.mkdir(path, FOLDER_MODE)
        info = os.lstat(path)
    _check_folder(path, info)
    return path


def write_private(path: Path, data: bytes, mode: int = FILE_MODE) -> None:
    """Write `data` at `path` (mode 0600 by default) all at once: a temporary file beside
    it, then renamed over it."""
    path = Path(path)
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, mode)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
        os.chmod(temporary, mode)  # the umask may have taken bits off
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def create_private(path: Path, data: bytes) -> bool:
    """Write `data` at `path` only if nothing is there yet (True when this call wrote it):
    the whole file appears at once, so a concurrent reader never sees it half written."""
    path = Path(path)
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    write_private(temporary, data)
    try:
        os.link(temporary, path)  # fails if the name exists, whatever it is
        return True
    except FileExistsError:
        return False
    finally:
        temporary.unlink(missing_ok=True)


def read_private(path: Path, max_bytes: int) -> bytes:
    """The bytes of the regular file at `path`, never through a symlink; OSError when it is
    missing, a symlink or not a regular file, ValueError when it is larger than `max_bytes`."""
    fd = os.open(path, os.O_RDONLY | _NOFOLLOW)
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(file.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise OSError(f"{Path(path).name} is not a regular file")
        if info.st_size > max_bytes:
            raise ValueError(f"{Path(path).name} is larger than {max_bytes} bytes")
        data = file.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise ValueError(f"{Path(path).name} is larger than {max_bytes} bytes")
    return data
